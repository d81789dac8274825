// The product's OCI image in tests: built by `make image` (hack/image/build.ts), read back from
// its archive (config and files), and run as a container by runc (a Debian package), with no
// container engine and no registry; any image archive (the MCS suite's stand-ins, suite-images.ts)
// started as a long-running container to exec commands in, as the kubelet does.
import { execFile, spawn } from 'node:child_process';
import { closeSync, existsSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { imageArchive, repoRoot } from '../../hack/image/config.js';

const run = promisify(execFile);

let built: Promise<string> | undefined;

/** The newest modification time of the files the image is built from. */
function newestSource(): number {
    const files = ['package.json', 'package-lock.json', 'hack/bundle.ts', ...['build', 'config', 'debian', 'oci'].map((f) => `hack/image/${f}.ts`)].map((f) => join(repoRoot, f));
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
    /** The OCI image config's `config` (Entrypoint, Cmd, User, WorkingDir, Env, ExposedPorts). */
    config: { Entrypoint?: string[]; Cmd?: string[]; User?: string; WorkingDir?: string; Env?: string[]; ExposedPorts?: Record<string, object> };
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

interface RuntimeSpec {
    process: { terminal: boolean; args: string[]; env: string[] };
    root: { readonly?: boolean };
    mounts: { destination: string; type: string; source: string; options: string[] }[];
    linux: { namespaces: { type: string; path?: string }[] };
}

/** The archive unpacked by umoci into a runtime bundle, dir/bundle: rootfs + config.json from the image config (user, working directory, env, args). */
async function unpack(archive: string, dir: string): Promise<{ bundle: string; spec: RuntimeSpec }> {
    await run('tar', ['-xf', archive, '-C', dir]);
    const index = JSON.parse(readFileSync(join(dir, 'index.json'), 'utf8')) as { manifests: Descriptor[] };
    const tag = index.manifests[0]!.annotations?.['org.opencontainers.image.ref.name'];
    const bundle = join(dir, 'bundle');
    await run('umoci', ['unpack', '--image', `${dir}:${tag}`, bundle]);
    const spec = JSON.parse(readFileSync(join(bundle, 'config.json'), 'utf8')) as RuntimeSpec;
    spec.process.terminal = false;
    return { bundle, spec };
}

/**
 * Runs the image as a container with `args` after its entrypoint: runc runs the unpacked bundle
 * in new namespaces with no network but loopback. Resolves with its output.
 */
export async function runImage(archive: string, args: string[]): Promise<{ stdout: string; stderr: string }> {
    const dir = mkdtempSync(join(tmpdir(), 'mesh-endpoints-run-'));
    const id = `mesh-endpoints-${process.pid}-${Date.now()}`;
    try {
        const { bundle, spec } = await unpack(archive, dir);
        spec.process.args.push(...args);
        // As the chart runs it: a read-only root filesystem.
        spec.root.readonly = true;
        writeFileSync(join(bundle, 'config.json'), JSON.stringify(spec));
        return await run('runc', ['--root', join(dir, 'runc'), 'run', '--bundle', bundle, id], { maxBuffer: 16 << 20, timeout: 60_000 });
    } finally {
        await run('runc', ['--root', join(dir, 'runc'), 'delete', '--force', id]).catch(() => undefined);
        rmSync(dir, { recursive: true, force: true });
    }
}

export interface ContainerOptions {
    /** As a Pod's: `command` replaces the image's Entrypoint (and its Cmd), `args` its Cmd. */
    command?: string[];
    args?: string[];
    env?: Record<string, string>;
    /**
     * Its network namespace: a new one with loopback only (the default); another container's, as
     * a Pod's containers share one; or 'host', this process's, for a client of a loopback server
     * here (it must listen on nothing).
     */
    network?: 'host' | Container;
    /** Files bind-mounted read-only, path inside → file here, as the kubelet mounts /etc/hosts. */
    files?: Record<string, string>;
}

export interface Container {
    pid: number;
    /** Runs a command in it (runc exec, with its env), as `kubectl exec` does; never rejects on an exit code. */
    exec(command: string[], timeoutMs?: number): Promise<{ stdout: string; stderr: string; code: number }>;
    /** Its main process's stdout and stderr so far. */
    log(): string;
    /** Kills it and removes its bundle. */
    stop(): Promise<void>;
}

/** Starts the image as a detached container (runc run -d), its output to a file. */
export async function startContainer(archive: string, options: ContainerOptions = {}): Promise<Container> {
    const dir = mkdtempSync(join(tmpdir(), 'mesh-endpoints-container-'));
    const id = `mesh-endpoints-${process.pid}-${Date.now()}-${Math.random().toString(36).slice(2, 8)}`;
    const runc = (...args: string[]) => ['--root', join(dir, 'runc'), ...args];
    const stop = async () => {
        await run('runc', runc('delete', '--force', id)).catch(() => undefined);
        rmSync(dir, { recursive: true, force: true });
    };
    try {
        const { bundle, spec } = await unpack(archive, dir);
        const image = (await readImage(archive)).config;
        const entrypoint = options.command ?? image.Entrypoint ?? [];
        spec.process.args = [...entrypoint, ...(options.args ?? (options.command ? [] : (image.Cmd ?? [])))];
        spec.process.env.push(...Object.entries(options.env ?? {}).map(([k, v]) => `${k}=${v}`));
        spec.linux.namespaces = spec.linux.namespaces.filter((ns) => ns.type !== 'network');
        if (options.network !== 'host') spec.linux.namespaces.push({ type: 'network', ...(options.network && { path: `/proc/${options.network.pid}/ns/net` }) });
        for (const [destination, source] of Object.entries(options.files ?? {})) spec.mounts.push({ destination, type: 'bind', source, options: ['rbind', 'ro'] });
        writeFileSync(join(bundle, 'config.json'), JSON.stringify(spec));
        const logFile = join(dir, 'log');
        const out = openSync(logFile, 'w');
        try {
            // Detached without a terminal: the container keeps runc's stdout and stderr, this file.
            const code = await new Promise<number | null>((resolve, reject) => {
                spawn('runc', runc('run', '--detach', '--bundle', bundle, id), { stdio: ['ignore', out, out] }).on('error', reject).on('exit', resolve);
            });
            if (code !== 0) throw new Error(`runc run exited ${code}: ${readFileSync(logFile, 'utf8')}`);
        } finally {
            closeSync(out);
        }
        const { pid } = JSON.parse((await run('runc', runc('state', id))).stdout) as { pid: number };
        return {
            pid,
            exec: (command, timeoutMs = 10_000) =>
                run('runc', [...runc('exec'), ...spec.process.env.flatMap((e) => ['--env', e]), id, ...command], { maxBuffer: 16 << 20, timeout: timeoutMs }).then(
                    ({ stdout, stderr }) => ({ stdout, stderr, code: 0 }),
                    (err: { stdout?: string; stderr?: string; code?: number | string; message: string }) => {
                        if (typeof err.code !== 'number') throw err;
                        return { stdout: err.stdout ?? '', stderr: err.stderr ?? '', code: err.code };
                    },
                ),
            log: () => readFileSync(logFile, 'utf8'),
            stop,
        };
    } catch (error) {
        await stop();
        throw error;
    }
}
