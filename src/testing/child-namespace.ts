// A host of the test's own beside the node namespace (node-namespace.ts): a second node, a VM, a
// gateway. It is a new network namespace (and, for a node, a new mount namespace) made from
// inside the node namespace and held by one `sleep` process; a veth pair joins it to the node
// namespace, which routes to it. Processes start in it through `nsenter` of the holder, which
// execs without forking (no --pid), so the pid a caller tracks is the process's own.
// Traps of this machine:
// - a veth created in the node namespace with its peer named `netns <holder pid>` lands straight
//   in the child: nothing is ever added to the host's interfaces;
// - the addresses live on each side's loopback (/32) and the veths carry none: routes with
//   `onlink` reach the other side's loopback address as a next hop;
// - the kubelet and containerd write to fixed folders (/var/lib/kubelet, ...): a node's child
//   mounts its own tmpfs over them, private to its mount namespace, so two nodes never share them;
// - ip_forward is 0 in a new namespace: both sides forward, as the routers they are.
// Ending it kills every process in its network namespace; the mount namespace and the veth go
// with the last of them.
import { execFile, spawn } from 'node:child_process';
import { promisify } from 'node:util';
import { killNetns, netnsOf, NODE_IP } from './node-namespace.js';
import { signalGroup } from './processes.js';

const run = promisify(execFile);

export interface ChildNamespaceOptions {
    /** Short name (veth names are `me-<name>` here and `me-<name>-in` there: at most 6 characters). */
    name: string;
    /** Its addresses, on its loopback; the first is its own source address. */
    addresses: string[];
    /** More prefixes the node namespace routes to it (a node's Pod CIDR). */
    routes?: string[];
    /** Folders that get a private tmpfs in a mount namespace of its own. */
    privateDirs?: string[];
}

export interface ChildNamespace {
    name: string;
    holderPid: number;
    /** `cmd args` as run inside it: a command line for execFile or startProcess. */
    command(cmd: string, args: string[]): [string, string[]];
    /** Runs a command inside it and returns its stdout. */
    exec(cmd: string, args: string[]): Promise<string>;
    /** Adds an address to its loopback, routed from the node namespace. */
    addAddress(address: string): Promise<void>;
    removeAddress(address: string): Promise<void>;
    /** Kills every process in it; its veth and mounts go with them. */
    stop(): void;
}

export async function startChildNamespace(opts: ChildNamespaceOptions): Promise<ChildNamespace> {
    if (opts.name.length > 6) throw new Error(`child namespace name ${opts.name}: at most 6 characters (veth names)`);
    const mounts = (opts.privateDirs ?? []).map((d) => `mount -t tmpfs -o mode=0755 tmpfs ${d}`);
    const setup = ['set -e', 'ip link set lo up', ...opts.addresses.map((a) => `ip addr add ${a}/32 dev lo`), ...mounts, 'exec sleep infinity'].join('\n');
    const unshare = ['--net', ...(mounts.length ? ['--mount', '--propagation', 'private'] : []), '--', 'bash', '-c', setup];
    const holder = spawn('unshare', unshare, { detached: true, stdio: ['ignore', 'ignore', 'pipe'] });
    holder.unref();
    // What it says if its set-up fails, for the error.
    let said = '';
    holder.stderr.on('data', (d: Buffer) => (said += d.toString()));
    const holderPid = holder.pid;
    if (holderPid === undefined) throw new Error(`could not start the namespace ${opts.name}`);
    const enter = ['-t', String(holderPid), '--net', ...(mounts.length ? ['--mount'] : []), '--'];
    const command = (cmd: string, args: string[]): [string, string[]] => ['nsenter', [...enter, cmd, ...args]];
    const exec = async (cmd: string, args: string[]) => (await run(...command(cmd, args), { maxBuffer: 16 << 20 })).stdout;
    const outside = `me-${opts.name}`;
    const inside = `${outside}-in`;
    // Known once the holder has unshared: until then, the holder is all there is.
    let netns: string | undefined;
    const stop = () => {
        if (netns) killNetns(netns);
        else signalGroup(holderPid, 'SIGKILL');
    };
    try {
        // The holder's set-up is done once its loopback carries the addresses.
        await waitUntil(`namespace ${opts.name}`, async () => (await exec('ip', ['-4', 'addr', 'show', 'lo']).catch(() => '')).includes(`${opts.addresses[0]}/32`));
        netns = netnsOf(holderPid);
        await run('ip', ['link', 'add', outside, 'type', 'veth', 'peer', 'name', inside, 'netns', String(holderPid)]);
        await run('ip', ['link', 'set', outside, 'up']);
        for (const prefix of [...opts.addresses.map((a) => `${a}/32`), ...(opts.routes ?? [])]) {
            await run('ip', ['route', 'add', prefix, 'via', opts.addresses[0]!, 'dev', outside, 'onlink']);
        }
        await run('sysctl', ['-qw', 'net.ipv4.ip_forward=1']);
        await exec('ip', ['link', 'set', inside, 'up']);
        await exec('ip', ['route', 'add', 'default', 'via', NODE_IP, 'dev', inside, 'onlink']);
        await exec('sysctl', ['-qw', 'net.ipv4.ip_forward=1']);
    } catch (err) {
        stop();
        throw new Error(`namespace ${opts.name}: ${(err as Error).message}${said && `; its set-up said: ${said.trim()}`}`);
    }
    return {
        name: opts.name,
        holderPid,
        command,
        exec,
        async addAddress(address) {
            await exec('ip', ['addr', 'add', `${address}/32`, 'dev', 'lo']);
            await run('ip', ['route', 'add', `${address}/32`, 'via', opts.addresses[0]!, 'dev', outside, 'onlink']);
        },
        async removeAddress(address) {
            await exec('ip', ['addr', 'del', `${address}/32`, 'dev', 'lo']);
            await run('ip', ['route', 'del', `${address}/32`]);
        },
        stop,
    };
}

async function waitUntil(what: string, check: () => Promise<boolean>): Promise<void> {
    for (let i = 0; i < 100; i++) {
        if (await check()) return;
        await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error(`${what} not set up after 5 s`);
}
