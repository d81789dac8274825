// The product's OCI image in tests: built by `make image` (hack/image/build.ts), read back from
// its archive (config and files), and run as a container by runc (a Debian package), with no
// container engine and no registry.
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { appVersion, imageArchive, repoRoot } from '../../hack/image/config.js';

const run = promisify(execFile);

let built: Promise<string> | undefined;

/** The newest modification time of the files the image is built from. */
function newestSource(): number {
    const files = ['package.json', 'package-lock.json', 'hack/image/build.ts', 'hack/image/config.ts', 'hack/bundle.ts'].map((f) => join(repoRoot, f));
    for (const dir of ['src', 'hack/bundle-shims']) {
        files.push(...readdirSync(join(repoRoot, dir), { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.ts') && !f.endsWith('.test.ts')).map((f) => join(repoRoot, dir, f)));
    }
    return Math.max(...files.map((f) => statSync(f).mtimeMs));
}

/** The image archive: the one `make image` wrote, or built now (about half a minute) if none or older than its sources. */
export function productImage(): Promise<string> {
    built ??= existsSync(imageArchive()) && statSync(imageArchive()).mtimeMs >= newestSource()
        ? Promise.resolve(imageArchive())
        : run(process.execPath, ['--import', 'tsx', join(repoRoot, 'hack/image/build.ts')], { cwd: repoRoot, maxBuffer: 1 << 20 }).then(({ stdout }) => stdout.trim().split('\n').at(-1)!);
    return built;
}

/** Why this host cannot run containers, or undefined when it can (root, runc, namespaces). */
export async function cannotRunContainers(): Promise<string | undefined> {
    if (process.getuid?.() !== 0) return 'containers need root here (runc, containerd, a network namespace)';
    for (const tool of ['runc', 'containerd', 'unshare']) {
        if (!(await run('sh', ['-c', `command -v ${tool}`]).then(() => true, () => false))) return `no ${tool} on this host (apt-get install runc containerd)`;
    }
    const ns = await run('unshare', ['--net', '--mount', 'true']).then(() => undefined, (err: Error) => err.message.split('\n')[0]);
    return ns && `no new namespaces on this host: ${ns}`;
}

export interface ImageContents {
    /** The OCI image config's `config` (Entrypoint, User, WorkingDir, Env, ExposedPorts). */
    config: { Entrypoint?: string[]; User?: string; WorkingDir?: string; Env?: string[]; ExposedPorts?: Record<string, object> };
    /** Every path in its layers, without the leading "./" or "/". */
    files: string[];
    /** The reference name the archive's index gives the image. */
    refName?: string;
}

interface Descriptor {
    digest: string;
    annotations?: Record<string, string>;
}

/** The image's config and file list, read from the OCI archive. */
export async function readImage(archive: string): Promise<ImageContents> {
    const dir = mkdtempSync(join(tmpdir(), 'mesh-endpoints-oci-'));
    try {
        await run('tar', ['-xf', archive, '-C', dir]);
        const blob = (d: Descriptor) => join(dir, 'blobs', ...d.digest.split(':'));
        const index = JSON.parse(readFileSync(join(dir, 'index.json'), 'utf8')) as { manifests: Descriptor[] };
        const top = index.manifests[0]!;
        const manifest = JSON.parse(readFileSync(blob(top), 'utf8')) as { config: Descriptor; layers: Descriptor[] };
        const config = JSON.parse(readFileSync(blob(manifest.config), 'utf8')) as { config: ImageContents['config'] };
        const files: string[] = [];
        for (const layer of manifest.layers) {
            const { stdout } = await run('tar', ['-tzf', blob(layer)], { maxBuffer: 64 << 20 });
            files.push(...stdout.split('\n').filter(Boolean).map((f) => f.replace(/^\.?\//, '').replace(/\/$/, '')));
        }
        return { config: config.config, files: files.filter(Boolean), refName: top.annotations?.['org.opencontainers.image.ref.name'] };
    } finally {
        rmSync(dir, { recursive: true, force: true });
    }
}

/**
 * Runs the image as a container with `args` after its entrypoint: umoci unpacks it into a
 * runtime bundle (rootfs + config.json from the image config: user, working directory, env),
 * runc runs that in new namespaces with no network but loopback. Resolves with its output.
 */
export async function runImage(archive: string, args: string[]): Promise<{ stdout: string; stderr: string }> {
    const dir = mkdtempSync(join(tmpdir(), 'mesh-endpoints-run-'));
    const id = `mesh-endpoints-${process.pid}-${Date.now()}`;
    try {
        await run('tar', ['-xf', archive, '-C', dir]);
        await run('umoci', ['unpack', '--image', `${join(dir)}:${appVersion()}`, join(dir, 'bundle')]);
        const specFile = join(dir, 'bundle', 'config.json');
        const spec = JSON.parse(readFileSync(specFile, 'utf8')) as { process: { terminal: boolean; args: string[] }; root: { readonly?: boolean } };
        spec.process.terminal = false;
        spec.process.args.push(...args);
        // As the chart runs it: a read-only root filesystem.
        spec.root.readonly = true;
        writeFileSync(specFile, JSON.stringify(spec));
        return await run('runc', ['--root', join(dir, 'runc'), 'run', '--bundle', join(dir, 'bundle'), id], { maxBuffer: 16 << 20, timeout: 60_000 });
    } finally {
        await run('runc', ['--root', join(dir, 'runc'), 'delete', '--force', id]).catch(() => undefined);
        rmSync(dir, { recursive: true, force: true });
    }
}
