// The second layout of cluster-scale's pairs, as on a cluster whose control plane has nodes of
// its own: the apiserver and etcd on the first half of this machine's cores, the clients (this
// process with its watches, and the controllers it starts, which inherit its affinity) on the
// rest. On shared cores a pair's ratio is the machine's CPU per create, the controller's own
// included ("The ratio is CPU per create" in docs/benchmarks.md); split, it says whether the
// controller keeps up with what the apiserver's cores can take.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import type { CpuSeconds } from './controller-process.js';

export interface CoreLayout {
    serverCores: number[];
    clientCores: number[];
}

/** The cores this process may run on ("Cpus_allowed_list: 0-3,6"). */
export function allowedCores(): number[] {
    const list = /^Cpus_allowed_list:\s*(\S+)$/m.exec(readFileSync('/proc/self/status', 'utf8'))![1]!;
    return list.split(',').flatMap((range) => {
        const [from, to = from] = range.split('-').map(Number) as [number, number?];
        return Array.from({ length: to! - from + 1 }, (_, i) => from + i);
    });
}

/** Every thread of `pid` on `cores`; the threads it starts later inherit it. */
function pin(pid: number, cores: number[]): void {
    execFileSync('taskset', ['--all-tasks', '--pid', '--cpu-list', cores.join(','), String(pid)], { stdio: 'ignore' });
}

/**
 * Puts `serverPids` on the first half of the allowed cores and this process on the rest, until
 * the returned function puts all of them back on every allowed core. Undefined with fewer than two
 * cores, or with GOMAXPROCS set in the environment the apiserver and etcd inherited (their Go
 * runtimes would then keep two Ps on one core).
 */
export function splitCores(serverPids: number[]): { layout: CoreLayout; restore: () => void } | undefined {
    const all = allowedCores();
    if (all.length < 2 || process.env.GOMAXPROCS) return undefined;
    const half = Math.floor(all.length / 2);
    const layout = { serverCores: all.slice(0, half), clientCores: all.slice(half) };
    for (const pid of serverPids) pin(pid, layout.serverCores);
    pin(process.pid, layout.clientCores);
    return {
        layout,
        restore: () => {
            for (const pid of [...serverPids, process.pid]) pin(pid, all);
        },
    };
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
