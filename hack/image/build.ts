// `make image`: the product's OCI image without Docker or a registry, from parts the package
// registries serve, written as an OCI archive (hack/image/config.ts says where):
// - /nodejs/bin/node: the Node 20 linux-x64 binary from its npm package (nodePackage),
// - the shared libraries that binary loads (ldd), taken from the Debian packages that own them
//   (apt-get download + dpkg-deb -x), and the dynamic loader,
// - /app/dist: the CLI bundled as `npm run build` bundles it (hack/bundle.ts), /app/package.json,
// - /etc/passwd and /etc/group with root and nonroot (65532), /tmp, /home/nonroot;
// and nothing else: no shell, no package manager. umoci (a Debian package) writes the layer and
// the config; the archive is the OCI layout as a tar, as `ctr images import` and
// `skopeo copy oci-archive:` read it. The Dockerfile stays the way to build it with Docker.
// Downloads are cached in $MESH_ENDPOINTS_CACHE/image. Prints the archive's path last.
import { execFileSync } from 'node:child_process';
import { chmodSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, realpathSync, renameSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { bundle } from '../bundle.js';
import { appVersion, imageArchive, imageConfig, nodePackage, repoRoot } from './config.js';

const cache = join(process.env.MESH_ENDPOINTS_CACHE ?? join(homedir(), '.cache/mesh-endpoints'), 'image');

function run(cmd: string, args: string[], cwd?: string, stderr: 'inherit' | 'ignore' = 'inherit'): string {
    return execFileSync(cmd, args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', stderr], maxBuffer: 64 << 20 });
}

function needTool(tool: string, pkg: string): void {
    try {
        run('sh', ['-c', `command -v ${tool}`]);
    } catch {
        process.stderr.write(`installing ${pkg} (apt-get)...\n`);
        run('apt-get', ['install', '-y', '-qq', pkg]);
    }
}

/** The node binary of the pinned npm package, unpacked once into the cache. */
function nodeBinary(): string {
    const dir = join(cache, `${nodePackage.name}-${nodePackage.version}`);
    const bin = join(dir, 'package/bin/node');
    if (existsSync(bin)) return bin;
    mkdirSync(dir, { recursive: true });
    // npm checks the tarball against the registry's integrity hash.
    const tgz = run('npm', ['pack', '--silent', `${nodePackage.name}@${nodePackage.version}`, '--pack-destination', dir]).trim().split('\n').at(-1)!;
    run('tar', ['-xzf', join(dir, tgz), '-C', dir, 'package/bin/node']);
    rmSync(join(dir, tgz));
    return bin;
}

/** The Debian package owning a file on this machine (dpkg -S), e.g. libstdc++6:amd64. */
function owningPackage(path: string): string {
    // usrmerge: dpkg knows /lib/... while ldd may print /usr/lib/... or the other way round.
    for (const candidate of [path, path.replace(/^\/usr/, ''), `/usr${path}`]) {
        try {
            return run('dpkg', ['-S', candidate], undefined, 'ignore').split(':')[0]!.trim();
        } catch {
            /* not this spelling */
        }
    }
    throw new Error(`no Debian package owns ${path}`);
}

/** A Debian package's files, downloaded (its candidate version) and unpacked once into the cache. */
function debianPackage(pkg: string): string {
    const debs = join(cache, 'debs');
    mkdirSync(debs, { recursive: true });
    const candidate = () => run('apt-cache', ['policy', pkg]).match(/Candidate: (\S+)/)?.[1];
    let version = candidate();
    if (!version || version === '(none)') {
        // A fresh machine: apt has no package lists yet.
        run('apt-get', ['update', '-qq']);
        version = candidate();
    }
    if (!version || version === '(none)') throw new Error(`apt knows no candidate of ${pkg}`);
    const dir = join(debs, `${pkg}_${version}`);
    if (existsSync(join(dir, '.done'))) return dir;
    const before = new Set(readdirSync(debs));
    // Into a folder of root's: apt's sandbox user could not write there, and says so.
    run('apt-get', ['download', '-qq', '-o', 'APT::Sandbox::User=root', `${pkg}=${version}`], debs);
    const deb = readdirSync(debs).find((f) => f.endsWith('.deb') && !before.has(f))!;
    run('dpkg-deb', ['-x', join(debs, deb), dir]);
    rmSync(join(debs, deb));
    writeFileSync(join(dir, '.done'), '');
    return dir;
}

/** The libraries `node` loads, as `ldd` names them: soname path → the path ldd resolved. */
function sharedLibraries(bin: string): { path: string; name: string }[] {
    return run('ldd', [bin])
        .split('\n')
        .map((line) => /^\s*(?:(\S+) => )?(\/\S+) \(0x/.exec(line))
        .filter((m): m is RegExpExecArray => m !== null)
        .map((m) => ({ name: m[1] ?? basename(m[2]!), path: m[2]! }));
}

/** Copies each library from its Debian package's files to the same path in the rootfs. */
function addLibraries(rootfs: string, bin: string): string[] {
    const packages = new Set<string>();
    for (const lib of sharedLibraries(bin)) {
        const pkg = owningPackage(lib.path);
        packages.add(pkg);
        const files = debianPackage(pkg);
        // The file as the package ships it, under the directory the loader searches.
        const dir = dirname(lib.path).replace(/^\/usr\/lib/, '/lib');
        const shipped = [join(files, dir, basename(lib.path)), join(files, 'usr', dir, basename(lib.path))].find((p) => existsSync(p));
        if (!shipped) throw new Error(`${pkg} ships no ${lib.path}`);
        const target = join(rootfs, dir, basename(lib.path));
        mkdirSync(dirname(target), { recursive: true });
        copyFileSync(realpathSync(shipped), target);
        chmodSync(target, 0o755);
    }
    // The loader's path as the binary names it (/lib64/ld-linux-x86-64.so.2), pointing at the file.
    const loader = sharedLibraries(bin).find((l) => l.name.startsWith('/lib64/'));
    if (loader && !existsSync(join(rootfs, loader.name))) {
        mkdirSync(join(rootfs, dirname(loader.name)), { recursive: true });
        symlinkSync(`/lib/x86_64-linux-gnu/${basename(loader.name)}`, join(rootfs, loader.name));
    }
    return [...packages].sort();
}

function addSystemFiles(rootfs: string): void {
    for (const dir of ['etc', 'tmp', 'home/nonroot', 'app']) mkdirSync(join(rootfs, dir), { recursive: true });
    chmodSync(join(rootfs, 'tmp'), 0o1777);
    // As in distroless: the controller runs as nonroot; nothing needs a login shell.
    writeFileSync(join(rootfs, 'etc/passwd'), 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n');
    writeFileSync(join(rootfs, 'etc/group'), 'root:x:0:\nnonroot:x:65532:\n');
    writeFileSync(join(rootfs, 'etc/nsswitch.conf'), 'passwd: files\ngroup: files\nhosts: files dns\n');
    run('chown', ['65532:65532', join(rootfs, 'home/nonroot')]);
}

async function main(): Promise<void> {
    needTool('umoci', 'umoci');
    const rootfs = mkdtempSync(join(tmpdir(), 'mesh-endpoints-image-'));
    try {
        const root = join(rootfs, 'rootfs');
        mkdirSync(join(root, 'nodejs/bin'), { recursive: true });
        const node = nodeBinary();
        copyFileSync(node, join(root, 'nodejs/bin/node'));
        chmodSync(join(root, 'nodejs/bin/node'), 0o755);
        const packages = addLibraries(root, node);
        addSystemFiles(root);
        copyFileSync(join(repoRoot, 'package.json'), join(root, 'app/package.json'));
        await bundle('src/cli/main.ts', join(root, 'app/dist'));

        const layout = join(rootfs, 'layout');
        const image = `${layout}:${appVersion()}`;
        run('umoci', ['init', '--layout', layout]);
        run('umoci', ['new', '--image', image]);
        run('umoci', ['insert', '--image', image, '--history.created_by', `node ${nodePackage.version} + ${packages.join(' ')} + dist/`, root, '/']);
        const c = imageConfig;
        run('umoci', [
            'config',
            '--image',
            image,
            '--history.created_by',
            'hack/image/build.ts',
            '--config.user',
            c.user,
            '--config.workingdir',
            c.workingDir,
            ...c.entrypoint.flatMap((a) => ['--config.entrypoint', a]),
            ...c.env.flatMap((e) => ['--config.env', e]),
            ...c.exposedPorts.flatMap((p) => ['--config.exposedports', p]),
        ]);
        run('umoci', ['gc', '--layout', layout]);
        const out = imageArchive();
        mkdirSync(dirname(out), { recursive: true });
        run('tar', ['-cf', `${out}.tmp`, '-C', layout, '--owner=0', '--group=0', '--numeric-owner', '.']);
        renameSync(`${out}.tmp`, out);
        const mb = (statSync(out).size / 1e6).toFixed(1);
        process.stderr.write(`image ${appVersion()}: ${out} (${mb} MB; node ${nodePackage.version}, libraries from ${packages.join(', ')})\n`);
        process.stdout.write(`${out}\n`);
    } finally {
        rmSync(rootfs, { recursive: true, force: true });
    }
}

await main();
