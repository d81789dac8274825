// Does a busy client core slow the apiserver on the other core? With the apiserver and etcd on
// core 0 (bench/core-layout.ts), the same baseline of 1 010 shaped creates, alternately with the
// clients' core left to the client and with a busy-loop child on it at a given duty cycle; the
// apiserver's CPU per create and the window's time for each.
//   npx tsx hack/core-interference.ts [ROUNDS] [DUTY_PERCENT]
import { spawn } from 'node:child_process';
import { collectApiserverGarbage } from '../bench/apiserver-debug.js';
import { busyPercent, coreSplit, splitClusterCores } from '../bench/core-layout.js';
import { Cleanups, benchClusterName, startBenchCluster } from '../bench/local-cluster.js';
import { inParallel } from '../bench/parallel.js';
import { shapedSlice, spendWindow } from '../bench/write-baselines.js';
import { DEFAULT_CONCURRENT_SYNCS } from '../src/externalworkloads/controller.js';
import { collectionPath, EndpointSlices, Services } from '../src/kube/resources.js';

const ROUNDS = Number(process.argv[2] ?? 4);
const DUTY = Number(process.argv[3] ?? 60);
const N = 1_010;

const cleanups = new Cleanups();
const cluster = await startBenchCluster(benchClusterName('interference'), cleanups);
try {
    const ns = await cluster.namespace('writes');
    const owner = await cluster.admin.create<{ metadata: { uid: string } }>(collectionPath(Services, ns), { metadata: { name: 'owner' }, spec: { ports: [{ name: 'http', port: 80, targetPort: 'http' }] } } as never);
    const cores = coreSplit();
    if (!cores) throw new Error('no split of the cores here: one core, or GOMAXPROCS set');
    const restoreCores = await splitClusterCores(cluster, cores);
    for (let round = 0; round < ROUNDS * 2; round++) {
        const burn = round % 2 === 1;
        // Busy DUTY of every 10 ms, idle the rest: a client core about as busy as a controller's.
        const burner = burn
            ? spawn(process.execPath, ['-e', `setInterval(() => { const end = performance.now() + ${DUTY / 10}; while (performance.now() < end); }, 10)`], { stdio: 'ignore' })
            : undefined;
        await collectApiserverGarbage(cluster);
        const end = await spendWindow(cluster);
        const started = performance.now();
        await inParallel(Array.from({ length: N }, (_, i) => i), DEFAULT_CONCURRENT_SYNCS, async (i) => void (await cluster.admin.create(collectionPath(EndpointSlices, ns), shapedSlice(ns, 'owner', owner.metadata.uid, i), { fieldManager: 'bench.mesh-endpoints.io' })));
        const ms = performance.now() - started;
        const spend = await end();
        burner?.kill('SIGKILL');
        console.log(`${burn ? `burner ${DUTY}%` : 'no burner '}: ${(N / (ms / 1000)).toFixed(0)} creates/s, apiserver CPU per create ${((spend.apiserver.cpuSeconds * 1000) / N).toFixed(2)} ms, GCs ${spend.apiserver.gcs}, server core busy ${busyPercent(spend.coreSeconds, cores.serverCores).toFixed(0)} %, clients' core ${busyPercent(spend.coreSeconds, cores.clientCores).toFixed(0)} %`);
        await cluster.admin.request('DELETE', collectionPath(EndpointSlices, ns), { timeoutMs: 120_000 });
    }
    await restoreCores();
} finally {
    await cluster.stop();
}
