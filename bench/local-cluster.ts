// Local control planes for the benchmarks, without node:test (startTestCluster's cleanup is a
// test hook): the caller stops each cluster in a finally; the harness's watchdog brings it
// down if this process dies first, and Cleanups runs on SIGINT/SIGTERM.
import { down } from '../src/testing/cluster.js';
import { startLocalCluster, type LocalCluster } from '../src/testing/harness.js';

export type BenchCluster = LocalCluster;

/** `bench-<pid>-<suffix>`: unique per run, and recognisable as a benchmark's. */
export function benchClusterName(suffix: string): string {
    return `bench-${process.pid}-${suffix}`.slice(0, 40);
}

export async function startBenchCluster(name: string, cleanups: Cleanups): Promise<BenchCluster> {
    // Registered before the cluster is up, so a signal during start-up still brings it down.
    const unregister = cleanups.add(() => down(name));
    try {
        const cluster = await startLocalCluster(name);
        return {
            ...cluster,
            async stop() {
                unregister();
                await cluster.stop();
            },
        };
    } catch (err) {
        unregister();
        await down(name);
        throw err;
    }
}

/** What must run if the process is interrupted in the middle of a benchmark. */
export class Cleanups {
    private readonly pending = new Set<() => Promise<unknown>>();

    /** Returns the function that unregisters `cleanup` once the caller has run it itself. */
    add(cleanup: () => Promise<unknown>): () => void {
        this.pending.add(cleanup);
        return () => this.pending.delete(cleanup);
    }

    async runAll(): Promise<void> {
        const all = [...this.pending];
        this.pending.clear();
        await Promise.allSettled(all.map((cleanup) => cleanup()));
    }
}
