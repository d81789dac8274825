// Local control planes for the benchmarks (src/testing/cluster.ts), without node:test: the
// harness's startTestCluster registers its cleanup as a test hook, which a plain script has
// no runner for. Here the caller stops each cluster in a finally; a watchdog brings it down
// if this process dies first (killed, crashed), and Cleanups runs on SIGINT/SIGTERM.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { KubeRest } from '../src/kube/rest.js';
import { collectionPath, Namespaces } from '../src/kube/resources.js';
import { clustersRoot, down, up, type ClusterState } from '../src/testing/cluster.js';
import { kubeConfigFor, type TestCluster } from '../src/testing/harness.js';

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..');

export interface BenchCluster extends TestCluster {
    /** Closes the admin client and brings the cluster down (etcd data removed). */
    stop(): Promise<void>;
}

/** Stops the cluster once this process is gone, whatever the way it went. */
function watchdog(name: string): void {
    const dir = join(clustersRoot(), name);
    const cli = join(repoRoot, 'src/testing/cluster-cli.ts');
    const script =
        `while kill -0 ${process.pid} 2>/dev/null; do sleep 1; done; ` +
        `[ -d '${dir}' ] && cd '${repoRoot}' && exec node --import tsx '${cli}' down '${name}'`;
    spawn('bash', ['-c', script], { detached: true, stdio: 'ignore' }).unref();
}

/** `bench-<pid>-<suffix>`: unique per run, and recognisable as a benchmark's. */
export function benchClusterName(suffix: string): string {
    return `bench-${process.pid}-${suffix}`.slice(0, 40);
}

export async function startBenchCluster(name: string, cleanups: Cleanups): Promise<BenchCluster> {
    watchdog(name);
    // Registered before `up` returns, so a signal during start-up still brings it down.
    const unregister = cleanups.add(() => down(name));
    let state: ClusterState;
    try {
        state = await up(name, process.pid);
    } catch (err) {
        unregister();
        await down(name);
        throw err;
    }
    const admin = new KubeRest(kubeConfigFor(state));
    let counter = 0;
    return {
        state,
        admin,
        kubeConfig: (server?: string) => kubeConfigFor(state, server),
        async namespace(prefix = 'bench') {
            const ns = `${prefix}-${++counter}-${randomBytes(2).toString('hex')}`;
            await admin.create(collectionPath(Namespaces), { metadata: { name: ns } });
            return ns;
        },
        serviceAccountClient() {
            return Promise.reject(new Error('the benchmarks act as admin only'));
        },
        async stop() {
            unregister();
            admin.close();
            await down(name);
        },
    };
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
