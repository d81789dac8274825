// The network namespace a real node lives in (src/testing/node.ts). Tests may only use
// addresses inside namespaces they create, so a test process that wants a node runs itself
// again inside a new network and mount namespace (`unshare --net --mount`): etcd,
// kube-apiserver, the controllers, containerd, the kubelet and the Pods' CNI bridge all start
// from there and never touch the host's interfaces. Inside, loopback is up and carries the
// node's address NODE_IP (the kubelet refuses a 127/8 node IP); the folders the kubelet and
// containerd use whatever their config says are tmpfs mounts private to the namespace.
// When the inner process ends, the outer one kills whatever still runs in that network
// namespace (shims, containers) and removes the cgroups and the empty mount points it made.
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, readlinkSync, rmdirSync } from 'node:fs';
import { join } from 'node:path';
import { down, listClusters, readState } from './cluster.js';

/** The node's address, on the namespace's loopback. */
export const NODE_IP = '10.213.0.1';
/** The Pods' addresses, on the CNI bridge inside the namespace. */
export const POD_CIDR = '10.214.0.0/24';
const MARKER = 'MESH_ENDPOINTS_NODE_NAMESPACE';
/**
 * The kubelet's cgroup parent: everything of the node's Pods is under it, in every hierarchy.
 * Named after this run (the outer process's pid, the marker inside), so that two runs on one
 * machine never kill each other's containers; a further node's is `<NODE_CGROUP>-<name>`.
 */
export const NODE_CGROUP = `mesh-endpoints-node-${process.env[MARKER] ?? process.pid}`;

/** Folders the kubelet 1.35 and containerd 1.6 write to whatever their config says. */
export const HARD_CODED_DIRS = ['/var/lib/kubelet', '/var/log/containers', '/var/lib/cni', '/run/containerd'];
const MADE_DIRS = 'MESH_ENDPOINTS_NODE_MADE_DIRS';

/** Inside the namespace: the mount points the outer process made on the host (removed at the end). */
export function madeMountPoints(): string[] {
    return (process.env[MADE_DIRS] ?? '').split(':').filter(Boolean);
}

/**
 * From outside: ends a kept namespace (`cluster up NAME --node`) that process `pid` runs in,
 * every process in it and the node's cgroups (`cgroup`), and removes the mount points made for it.
 */
export function tearDownNodeNamespace(pid: number, madeDirs: string[], cgroup: string): void {
    killNetns(netnsOf(pid));
    killNodeCgroups(cgroup);
    removeMountPoints(madeDirs);
}

/** The network namespace process `pid` runs in, unless it is gone or runs in ours. */
export function netnsOf(pid: number | undefined): string | undefined {
    try {
        const netns = readlinkSync(`/proc/${pid}/ns/net`);
        return netns === readlinkSync('/proc/self/ns/net') ? undefined : netns;
    } catch {
        return undefined;
    }
}

function removeMountPoints(dirs: string[]): void {
    for (const d of [...dirs].reverse()) {
        try {
            rmdirSync(d);
        } catch {
            /* not empty: someone else's now */
        }
    }
}

export function inNodeNamespace(): boolean {
    return !!process.env[MARKER];
}

/**
 * Runs this process again (same node flags, same script and arguments, same stdio) inside a
 * new network and mount namespace, and exits with its code: call it before anything else
 * starts. Under `node --test` the inner process reports through the same stdout.
 */
export async function reexecInNodeNamespace(opts: { keep?: boolean } = {}): Promise<never> {
    const made = HARD_CODED_DIRS.filter((d) => !existsSync(d));
    for (const d of made) mkdirSync(d, { recursive: true });
    const setup = [
        'set -e',
        'ip link set lo up',
        `ip addr add ${NODE_IP}/32 dev lo`,
        ...HARD_CODED_DIRS.map((d) => `mount -t tmpfs -o mode=0755 tmpfs ${d}`),
        'exec "$@"',
    ].join('\n');
    const child = spawn('unshare', ['--net', '--mount', '--propagation', 'private', '--', 'bash', '-c', setup, 'node-namespace', process.execPath, ...process.execArgv, ...process.argv.slice(1)], {
        stdio: 'inherit',
        // The marker names this run: what the inner process starts in namespaces of its own
        // (child-namespace.ts) inherits it, and is found by it when the run ends.
        env: { ...process.env, [MARKER]: String(process.pid), [MADE_DIRS]: made.join(':') },
    });
    // The namespace, known once the inner process runs: what still runs in it at the end is ours.
    let netns: string | undefined;
    const learn = setInterval(() => (netns ??= netnsOf(child.pid)), 20);
    for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => child.kill(signal));
    const code = await new Promise<number>((done) => child.on('exit', (c, s) => done(c ?? (s ? 1 : 0))));
    clearInterval(learn);
    // `cluster up NAME --node`: what it started lives on in the namespace until `cluster down NAME`.
    if (opts.keep && code === 0) process.exit(0);
    killNetns(netns);
    killMarked(String(process.pid));
    killNodeCgroups();
    // Clusters the inner process started, when it could not bring them down itself (killed).
    for (const name of listClusters().filter((n) => readState(n)?.ownerPid === child.pid)) await down(name);
    removeMountPoints(made);
    process.exit(code);
}

/** Kills every process in network namespace `netns`. */
export function killNetns(netns: string | undefined): void {
    if (netns) killWhere((pid) => readlinkSync(`/proc/${pid}/ns/net`) === netns);
}

/** Kills every process of run `marker` (its environment says so), wherever it runs. */
function killMarked(marker: string): void {
    const entry = `${MARKER}=${marker}`;
    killWhere((pid) => readFileSync(`/proc/${pid}/environ`, 'latin1').split('\0').includes(entry));
}

/** Kills every process for which `matches` holds (not this one). */
function killWhere(matches: (pid: string) => boolean): void {
    for (const pid of readdirSync('/proc').filter((p) => /^\d+$/.test(p) && Number(p) !== process.pid)) {
        try {
            if (matches(pid)) process.kill(Number(pid), 'SIGKILL');
        } catch {
            /* gone meanwhile, or not ours to read */
        }
    }
}

/**
 * Every process in a node's cgroups (the containers, in their own network namespaces) killed, and
 * the cgroups removed: `cgroup` and its further nodes' (`<cgroup>-<name>`), by default this run's.
 */
export function killNodeCgroups(cgroup = NODE_CGROUP): void {
    const root = '/sys/fs/cgroup';
    if (!existsSync(root)) return;
    const ours = (name: string) => name === cgroup || name.startsWith(`${cgroup}-`);
    for (const top of readdirSync(root).flatMap((h) => (existsSync(join(root, h)) ? readdirSync(join(root, h)).filter(ours).map((n) => join(root, h, n)) : []))) {
        const dirs = (readdirSync(top, { recursive: true, withFileTypes: true }) as { name: string; parentPath?: string; path?: string; isDirectory(): boolean }[])
            .filter((e) => e.isDirectory())
            .map((e) => join(e.parentPath ?? e.path ?? top, e.name))
            .sort((a, b) => b.length - a.length);
        for (const dir of [...dirs, top]) {
            for (let attempt = 0; attempt < 50; attempt++) {
                try {
                    rmdirSync(dir);
                    break;
                } catch {
                    killProcsOf(dir);
                    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 20);
                }
            }
        }
    }
}

function killProcsOf(dir: string): void {
    try {
        for (const pid of readFileSync(join(dir, 'cgroup.procs'), 'utf8').split('\n').filter(Boolean)) {
            try {
                process.kill(Number(pid), 'SIGKILL');
            } catch {
                /* gone */
            }
        }
    } catch {
        /* gone */
    }
}
