// Image parts from Debian packages, for every image hack/image builds (the product's, build.ts;
// the MCS suite's stand-ins, standins.ts): a package's files (apt-get download + dpkg-deb -x,
// cached per version in $MESH_ENDPOINTS_CACHE/image/debs), the package owning a file here
// (dpkg -S), and a binary's shared libraries as ldd resolves them on this machine, copied from
// their packages' files into a rootfs with the dynamic loader.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, copyFileSync, existsSync, mkdirSync, readdirSync, realpathSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { basename, dirname, join } from 'node:path';

export const imageCache = join(process.env.MESH_ENDPOINTS_CACHE ?? join(homedir(), '.cache/mesh-endpoints'), 'image');

export function run(cmd: string, args: string[], cwd?: string, stderr: 'inherit' | 'ignore' = 'inherit'): string {
    return execFileSync(cmd, args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', stderr], maxBuffer: 64 << 20 });
}

export function needTool(tool: string, pkg: string): void {
    try {
        run('sh', ['-c', `command -v ${tool}`]);
    } catch {
        process.stderr.write(`installing ${pkg} (apt-get)...\n`);
        run('apt-get', ['install', '-y', '-qq', pkg]);
    }
}

/** Installs the packages not installed here, so that ldd and dpkg -S resolve their binaries' libraries. */
export function needPackages(pkgs: string[]): void {
    const missing = pkgs.filter((pkg) => {
        try {
            return !run('dpkg-query', ['-W', '-f', '${Status}', pkg], undefined, 'ignore').includes('ok installed');
        } catch {
            return true;
        }
    });
    if (missing.length === 0) return;
    process.stderr.write(`installing ${missing.join(' ')} (apt-get)...\n`);
    try {
        run('apt-get', ['install', '-y', '-qq', ...missing]);
    } catch {
        // A fresh machine: apt has no package lists yet.
        run('apt-get', ['update', '-qq']);
        run('apt-get', ['install', '-y', '-qq', ...missing]);
    }
}

/** The candidate version apt would install of each package, in one apt-cache call; undefined when it knows none. */
export function candidateVersions(pkgs: string[]): Map<string, string | undefined> {
    const versions = new Map<string, string | undefined>(pkgs.map((pkg) => [pkg, undefined]));
    let pkg: string | undefined;
    for (const line of run('apt-cache', ['policy', ...pkgs]).split('\n')) {
        // A header is `pkg:` (or `pkg:arch:` where apt knows more than one architecture).
        pkg = /^([^\s:]+)(?::[^\s:]+)?:$/.exec(line)?.[1] ?? pkg;
        const candidate = /^\s+Candidate: (\S+)/.exec(line)?.[1];
        if (pkg && versions.has(pkg) && candidate && candidate !== '(none)') versions.set(pkg, candidate);
    }
    return versions;
}

/** A fingerprint of apt's package lists (names, sizes, times): while it holds, so do the candidates. */
export function aptListsStamp(): string {
    const lists = '/var/lib/apt/lists';
    const files = existsSync(lists) ? readdirSync(lists).filter((f) => f.includes('_Packages') || f.endsWith('Release')) : [];
    const hash = createHash('sha256');
    for (const f of files.sort()) {
        const st = statSync(join(lists, f));
        hash.update(`${f} ${st.size} ${st.mtimeMs}\n`);
    }
    return hash.digest('hex').slice(0, 16);
}

/** The Debian package owning a file on this machine (dpkg -S), e.g. libstdc++6:amd64. */
export function owningPackage(path: string): string {
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

/** A Debian package's candidate version, asking apt for package lists first on a fresh machine. */
export function debianVersion(pkg: string): string {
    const candidate = () => candidateVersions([pkg]).get(pkg);
    // A fresh machine: apt has no package lists yet.
    const version = candidate() ?? (run('apt-get', ['update', '-qq']), candidate());
    if (!version) throw new Error(`apt knows no candidate of ${pkg}`);
    return version;
}

/** A Debian package's files, downloaded (its candidate version) and unpacked once into the cache. */
export function debianPackage(pkg: string): string {
    const debs = join(imageCache, 'debs');
    mkdirSync(debs, { recursive: true });
    const version = debianVersion(pkg);
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

/** The libraries a binary loads, as `ldd` names them: soname path → the path ldd resolved. */
function sharedLibraries(bin: string): { path: string; name: string }[] {
    return run('ldd', [bin])
        .split('\n')
        .map((line) => /^\s*(?:(\S+) => )?(\/\S+) \(0x/.exec(line))
        .filter((m): m is RegExpExecArray => m !== null)
        .map((m) => ({ name: m[1] ?? basename(m[2]!), path: m[2]! }));
}

/** Copies each library of a dynamic binary from its Debian package's files to the same path in the rootfs; returns those packages. */
export function addLibraries(rootfs: string, bin: string): string[] {
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
