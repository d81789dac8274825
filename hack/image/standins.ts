// Stand-ins for the two images the MCS conformance suite's Pods run, which cannot be pulled here:
// built from Debian packages by the product image's own builder (debian.ts, oci.ts), carrying the
// tools the specs exec (../shared/mcs-conformance: k8s_objects.go, conformance_suite.go, the DNS
// specs), not the upstream images' contents.
// - docker.io/nicolaka/netshoot:v0.15, the request Pods: Args only (`/bin/sh -ec "while :; ...`),
//   so the config has a Cmd and no Entrypoint; exec'd through `sh -c` (dash, /bin/sh), `nc -v -w 2
//   -4 host port` (netcat-openbsd, /usr/bin/nc) and `nslookup -type=A|AAAA|SRV name.`, grep, tail,
//   awk, sleep (busybox-static: its nslookup takes -type= and prints what the suite's regexes read).
// - docker.io/alpine/socat:1.7.4.4, the hello Pods: `/bin/sh -c <script>` with grep -qE, tr, awk,
//   echo (busybox-static) and socat 1.7.4.4 (Debian's socat 1.7.4.4-2), whose SYSTEM: runs /bin/sh.
//   Entrypoint `socat`, as upstream's; the Pods set their Command.
// Both: every busybox applet as a symlink where `busybox --install -s` puts it (but where a
// package's binary goes), each binary's libraries and loader (ldd, dpkg -S: the packages are
// installed here first), /etc/passwd, /etc/group, /etc/nsswitch.conf (hosts: files dns), /tmp.
// Each archive is cached in $MESH_ENDPOINTS_CACHE/image/standins/<name>-<tag>/, keyed by the
// versions of every package in it and the hash of this builder's sources; packages.json records
// them, so a second call asks apt nothing while its package lists are unchanged. As a script,
// prints the images last, as JSON ({archive, baseName}[], what src/testing/node.ts's importImage
// takes).
import { createHash } from 'node:crypto';
import { chmodSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { addLibraries, aptListsStamp, candidateVersions, debianPackage, debianVersion, imageCache, needPackages, run } from './debian.js';
import { type OciConfig, writeOciArchive } from './oci.js';

interface Standin {
    /** The repository, as `ctr images import --base-name` takes it; the tag is the archive's ref name. */
    baseName: string;
    tag: string;
    /** The dynamic binaries beside busybox: a file of a Debian package, installed at `path`. */
    binaries: { pkg: string; file: string; path: string; version?: RegExp }[];
    config: OciConfig;
}

const PATH = 'PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

export const standins: Standin[] = [
    {
        baseName: 'docker.io/nicolaka/netshoot',
        tag: 'v0.15',
        binaries: [
            // Not busybox's sh: it runs its own applets before PATH (Debian's busybox-static is
            // built with FEATURE_SH_STANDALONE), so `sh -c "echo hi | nc -v ..."` ran busybox's
            // nc, which has no -v or -4. dash finds /usr/bin/nc on the PATH.
            { pkg: 'dash', file: 'bin/dash', path: 'bin/sh' },
            { pkg: 'netcat-openbsd', file: 'bin/nc.openbsd', path: 'usr/bin/nc' },
        ],
        config: { cmd: ['/bin/sh'], env: [PATH] },
    },
    {
        baseName: 'docker.io/alpine/socat',
        tag: '1.7.4.4',
        // The tag names socat's version: Debian's must be the same release.
        binaries: [{ pkg: 'socat', file: 'usr/bin/socat', path: 'usr/bin/socat', version: /^1\.7\.4\.4-/ }],
        config: { entrypoint: ['socat'], env: [PATH] },
    },
];

export interface StandinImage {
    archive: string;
    baseName: string;
}

const here = dirname(fileURLToPath(import.meta.url));
const BUSYBOX = 'busybox-static';

function folder(s: Standin): string {
    return join(imageCache, 'standins', `${basename(s.baseName)}-${s.tag}`);
}

/** The archive's path for these package versions and this builder's sources. */
function archiveOf(s: Standin, versions: Map<string, string | undefined>): string {
    const hash = createHash('sha256');
    for (const file of ['standins.ts', 'debian.ts', 'oci.ts']) hash.update(readFileSync(join(here, file)));
    for (const [pkg, version] of [...versions].sort(([a], [b]) => a.localeCompare(b))) hash.update(`\n${pkg}=${version}`);
    return join(folder(s), `${hash.digest('hex').slice(0, 16)}-oci.tar`);
}

/** What the last build recorded: every package's version, and apt's lists then. */
interface Recorded {
    apt: string;
    packages: Record<string, string>;
}

/** The archive built before, when its packages' candidates and the builder are unchanged. */
function cached(s: Standin): string | undefined {
    const file = join(folder(s), 'packages.json');
    if (!existsSync(file)) return undefined;
    const recorded = JSON.parse(readFileSync(file, 'utf8')) as Recorded;
    // Unchanged lists, unchanged candidates: no apt-cache call (a second or more each, here).
    const stamp = aptListsStamp();
    const versions = recorded.apt === stamp ? new Map(Object.entries(recorded.packages)) : candidateVersions(Object.keys(recorded.packages));
    const archive = archiveOf(s, versions);
    if (!existsSync(archive)) return undefined;
    if (recorded.apt !== stamp) writeFileSync(file, `${JSON.stringify({ ...recorded, apt: stamp })}\n`);
    return archive;
}

/** Every stand-in's archive if all are cached and current, else undefined. */
export function cachedStandins(): StandinImage[] | undefined {
    const images = standins.map((s) => ({ archive: cached(s), baseName: s.baseName }));
    return images.every((i): i is StandinImage => i.archive !== undefined) ? images : undefined;
}

/** busybox at /bin/busybox and a symlink to it for each applet, where `busybox --install -s` puts them, but `taken`. */
function addBusybox(rootfs: string, taken: Set<string>): void {
    const busybox = join(debianPackage(BUSYBOX), 'bin/busybox');
    mkdirSync(join(rootfs, 'bin'), { recursive: true });
    copyFileSync(busybox, join(rootfs, 'bin/busybox'));
    chmodSync(join(rootfs, 'bin/busybox'), 0o755);
    // Run from the package's files: it is static. Lines like bin/sh, usr/bin/awk, sbin/ip.
    for (const applet of run(busybox, ['--list-full']).split('\n').filter(Boolean)) {
        if (applet === 'bin/busybox' || taken.has(basename(applet))) continue;
        mkdirSync(join(rootfs, dirname(applet)), { recursive: true });
        symlinkSync('/bin/busybox', join(rootfs, applet));
    }
}

function addSystemFiles(rootfs: string): void {
    for (const dir of ['etc', 'tmp', 'root']) mkdirSync(join(rootfs, dir), { recursive: true });
    chmodSync(join(rootfs, 'tmp'), 0o1777);
    chmodSync(join(rootfs, 'root'), 0o700);
    writeFileSync(join(rootfs, 'etc/passwd'), 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n');
    writeFileSync(join(rootfs, 'etc/group'), 'root:x:0:\nnogroup:x:65534:\n');
    // nc resolves through glibc (its files and dns sources are built into libc6 2.36).
    writeFileSync(join(rootfs, 'etc/nsswitch.conf'), 'passwd: files\ngroup: files\nhosts: files dns\n');
}

function build(s: Standin): string {
    needPackages(s.binaries.map((b) => b.pkg));
    for (const b of s.binaries) {
        const version = debianVersion(b.pkg);
        if (b.version && !b.version.test(version)) throw new Error(`${s.baseName}:${s.tag} wants ${b.pkg} ${b.version.source}, apt has ${version}`);
    }
    const dir = mkdtempSync(join(tmpdir(), 'mesh-endpoints-standin-'));
    try {
        const rootfs = join(dir, 'rootfs');
        const packages = new Set([BUSYBOX]);
        for (const b of s.binaries) {
            const target = join(rootfs, b.path);
            mkdirSync(dirname(target), { recursive: true });
            copyFileSync(join(debianPackage(b.pkg), b.file), target);
            chmodSync(target, 0o755);
            packages.add(b.pkg);
            for (const lib of addLibraries(rootfs, target)) packages.add(lib);
        }
        addBusybox(rootfs, new Set(s.binaries.map((b) => basename(b.path))));
        addSystemFiles(rootfs);
        const versions = candidateVersions([...packages]);
        const out = archiveOf(s, versions);
        writeOciArchive({
            rootfs,
            tag: s.tag,
            out,
            layerCreatedBy: [...versions].map(([pkg, version]) => `${pkg}=${version}`).sort().join(' '),
            configCreatedBy: 'hack/image/standins.ts',
            config: s.config,
        });
        for (const old of readdirSync(folder(s)).filter((f) => f.endsWith('-oci.tar') && f !== basename(out))) rmSync(join(folder(s), old));
        const recorded: Recorded = { apt: aptListsStamp(), packages: Object.fromEntries(versions) as Record<string, string> };
        writeFileSync(join(folder(s), 'packages.json'), `${JSON.stringify(recorded, null, 2)}\n`);
        process.stderr.write(`${s.baseName}:${s.tag} (stand-in): ${out} (${(statSync(out).size / 1e6).toFixed(1)} MB; ${[...packages].sort().join(', ')})\n`);
        return out;
    } finally {
        rmSync(dir, { recursive: true, force: true });
    }
}

/** Every stand-in's archive, built now where not cached. */
export function buildStandins(): StandinImage[] {
    return standins.map((s) => ({ archive: cached(s) ?? build(s), baseName: s.baseName }));
}

if (import.meta.url === `file://${process.argv[1]}`) {
    process.stdout.write(`${JSON.stringify(buildStandins())}\n`);
}
