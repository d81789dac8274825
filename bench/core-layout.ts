// The second layout of cluster-scale's pairs, as on a cluster whose control plane has nodes of
// its own: the apiserver and etcd on the first half of this machine's cores, the clients (this
// process with its watches, and the controllers it starts, which inherit its affinity) on the
// rest. On shared cores a pair's ratio is the machine's CPU per create, the controller's own
// included ("The ratio is CPU per create" in docs/benchmarks.md); split, it says whether the
// controller keeps up with what the apiserver's cores can take.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { waitForGoMaxProcs } from './apiserver-debug.js';
import type { CpuSeconds } from './controller-process.js';
import type { BenchCluster } from './local-cluster.js';

export interface CoreLayout {
    serverCores: number[];
    clientCores: number[];
}

/** The cores this process may run on ("Cpus_allowed_list: 0-3,6"). */
function allowedCores(): number[] {
    const list = /^Cpus_allowed_list:\s*(\S+)$/m.exec(readFileSync('/proc/self/status', 'utf8'))![1]!;
    return list.split(',').flatMap((range) => {
        const [from, to = from] = range.split('-').map(Number) as [number, number?];
        return Array.from({ length: to! - from + 1 }, (_, i) => from + i);
    });
}

/**
 * The first half of the allowed cores for the servers, the rest for the clients. Undefined with
 * fewer than two cores, or with GOMAXPROCS set in the environment the apiserver and etcd
 * inherited (their Go runtimes would then keep two Ps on one core).
 */
export function coreSplit(): CoreLayout | undefined {
    const all = allowedCores();
    if (all.length < 2 || process.env.GOMAXPROCS) return undefined;
    const half = Math.floor(all.length / 2);
    return { serverCores: all.slice(0, half), clientCores: all.slice(half) };
}

export function describeSplit({ serverCores, clientCores }: CoreLayout): string {
    return `the apiserver and etcd on core ${serverCores.join(',')}, the clients on ${clientCores.join(',')}`;
}

/** Every thread of `pid` on `cores`; the threads it starts later inherit it. */
function pin(pid: number, cores: number[]): void {
    execFileSync('taskset', ['--all-tasks', '--pid', '--cpu-list', cores.join(','), String(pid)], { stdio: 'ignore' });
}

/**
 * Puts the cluster's apiserver and etcd on the layout's server cores and this process on its
 * client cores, once their Go runtimes have followed; the returned function puts all of them back
 * on every core of the layout, the same way.
 */
export async function splitClusterCores(cluster: BenchCluster, layout: CoreLayout): Promise<() => Promise<void>> {
    const servers = [cluster.state.apiserverPid, cluster.state.etcdPid];
    const all = [...layout.serverCores, ...layout.clientCores];
    const restore = async () => {
        for (const pid of [...servers, process.pid]) pin(pid, all);
        await waitForGoMaxProcs(cluster, all.length);
    };
    for (const pid of servers) pin(pid, layout.serverCores);
    pin(process.pid, layout.clientCores);
    try {
        await waitForGoMaxProcs(cluster, layout.serverCores.length);
    } catch (err) {
        await restore().catch(() => undefined);
        throw err;
    }
    return restore;
}

/** The busy share of `cores` in a window, from each core's CPU seconds spent in it, in %. */
export function busyPercent(spentPerCore: Map<number, CpuSeconds>, cores: number[]): number {
    let busy = 0;
    let idle = 0;
    for (const core of cores) {
        busy += spentPerCore.get(core)!.busy;
        idle += spentPerCore.get(core)!.idle;
    }
    return (100 * busy) / (busy + idle);
}
