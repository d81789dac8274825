// Benchmark 2: the external-workloads controller end to end, in-process (as the integration
// tests run it) against a real local kube-apiserver + etcd: 1 000 ExternalWorkloads selected by
// one Service. Times are read off a watch on the Service's slices (when the apiserver had the
// state), writes off the controller's own counting client.
import type { V1EndpointSlice } from '@kubernetes/client-node';
import { DEFAULT_MANAGED_BY, type ExternalWorkloadsController } from '../src/externalworkloads/controller.js';
import { installCrds } from '../src/testing/crds.js';
import { createService, createWorkload, metricValue, runExternalWorkloads, setReady, type RunningController } from '../test/integration/support.js';
import { benchClusterName, startBenchCluster, type BenchCluster, type Cleanups } from './local-cluster.js';
import { inParallel, sleep } from './async.js';
import { SliceWatch } from './watch.js';
import { median, type Report } from './stats.js';

const BENCHMARK = 'external-workloads';
const WORKLOADS = 1_000;
const SLICE_SIZE = 100;
const FLIPS = 5;
const RESYNC_MS = 2_000;
const RESYNC_PERIODS = 3;
/** Longer than the controller's 1 s requeue after its own slice events: any follow-up write lands in the window. */
const SETTLE_MS = 1_500;

const workloadName = (i: number) => `vm-${String(i).padStart(4, '0')}`;

const endpointsOf = (slices: V1EndpointSlice[]) => slices.flatMap((s) => s.endpoints ?? []);

function converged(slices: V1EndpointSlice[]): boolean {
    const endpoints = endpointsOf(slices);
    return slices.length === WORKLOADS / SLICE_SIZE && endpoints.length === WORKLOADS && endpoints.every((e) => e.conditions?.ready === true);
}

function isNotReady(slices: V1EndpointSlice[], workload: string): boolean {
    return endpointsOf(slices).some((e) => e.targetRef?.name === workload && e.conditions?.ready === false);
}

/** Durations of every syncService call from now on (the controller's workers call it by name). */
function timeSyncs(controller: ExternalWorkloadsController): number[] {
    const durations: number[] = [];
    const sync = controller.syncService.bind(controller);
    controller.syncService = async (key: string) => {
        const started = performance.now();
        await sync(key);
        durations.push(performance.now() - started);
    };
    return durations;
}

const successfulSyncs = (running: RunningController) =>
    metricValue(running.registry, 'mesh_endpoints_reconcile_total', { name: 'external-workloads', result: 'success' });

async function setUp(cluster: BenchCluster, report: Report): Promise<string> {
    const started = performance.now();
    await installCrds(cluster.admin);
    const ns = await cluster.namespace();
    const indexes = Array.from({ length: WORKLOADS }, (_, i) => i);
    await inParallel(indexes, 8, (i) =>
        createWorkload(cluster, ns, {
            name: workloadName(i),
            ips: [`10.${1 + (i >> 8)}.${i & 255}.7`],
            ports: [{ name: 'http', port: 8080 }],
            ready: true,
        }),
    );
    await createService(cluster, ns, {
        metadata: { name: 'web' },
        spec: { selector: { app: 'web' }, ports: [{ name: 'http', port: 80, targetPort: 'http' as never }] },
    });
    report.value(BENCHMARK, 'set-up: CRDs, workloads (create + Ready status) and the Service', WORKLOADS, 'workloads', performance.now() - started, 'ms');
    return ns;
}

/** First controller: initial sync, then single workloads turning not ready. */
async function initialSyncAndChanges(cluster: BenchCluster, ns: string, watch: SliceWatch, report: Report): Promise<void> {
    const started = performance.now();
    const running = await runExternalWorkloads(cluster, { namespace: ns });
    try {
        const cachesSynced = performance.now();
        const convergedAt = await watch.until('10 slices of 100 ready endpoints', converged, 120_000);
        report.value(BENCHMARK, 'controller start to caches synced', WORKLOADS, 'workloads', cachesSynced - started, 'ms');
        report.value(BENCHMARK, 'controller start to converged slices (10 x 100 ready, seen by a watch)', WORKLOADS, 'workloads', convergedAt - started, 'ms');
        await sleep(SETTLE_MS);
        report.value(BENCHMARK, 'API writes of the initial sync', WORKLOADS, 'workloads', running.rest.writes(), 'writes', WORKLOADS / SLICE_SIZE, {
            creates: running.rest.counts.POST ?? 0,
            updates: running.rest.counts.PUT ?? 0,
            deletes: running.rest.counts.DELETE ?? 0,
        });

        const latencies: number[] = [];
        const writes: number[] = [];
        for (let k = 0; k < FLIPS; k++) {
            const workload = workloadName(100 * k + 50);
            running.rest.reset();
            const changedAt = performance.now();
            await setReady(cluster, ns, workload, false);
            const seenAt = await watch.until(`${workload} not ready`, (slices) => isNotReady(slices, workload), 30_000);
            latencies.push(seenAt - changedAt);
            await sleep(SETTLE_MS);
            writes.push(running.rest.writes());
        }
        report.timing(BENCHMARK, 'one workload turned not ready: status write to updated slice (batch period 100 ms)', WORKLOADS, 'workloads', latencies);
        report.value(BENCHMARK, 'API writes per workload turned not ready (median of the flips)', WORKLOADS, 'workloads', median(writes), 'writes', 1, {
            'max writes of a flip': Math.max(...writes),
            flips: FLIPS,
        });
    } finally {
        await running.stop();
    }
}

/** Second controller, with the informers' periodic resync: a restart and resyncs that change nothing. */
async function noOpRestartAndResyncs(cluster: BenchCluster, ns: string, report: Report): Promise<void> {
    const started = performance.now();
    const running = await runExternalWorkloads(cluster, { namespace: ns, resyncMs: RESYNC_MS });
    try {
        while ((await successfulSyncs(running)) < 1) await sleep(10);
        report.value(BENCHMARK, 'controller restart on converged slices: start to first sync done', WORKLOADS, 'workloads', performance.now() - started, 'ms');
        await sleep(SETTLE_MS);
        report.value(BENCHMARK, 'API writes of a restart on converged slices', WORKLOADS, 'workloads', running.rest.writes(), 'writes', 0);

        running.rest.reset();
        const durations = timeSyncs(running.controller);
        await sleep(RESYNC_MS * RESYNC_PERIODS + 500);
        report.value(BENCHMARK, `API writes of no-op resyncs (every ${RESYNC_MS / 1000} s, over ${RESYNC_PERIODS} periods)`, WORKLOADS, 'workloads', running.rest.writes(), 'writes', 0, {
            syncs: durations.length,
        });
        if (durations.length > 0) report.timing(BENCHMARK, 'duration of one no-op sync of the Service (in-process)', WORKLOADS, 'workloads', durations);
    } finally {
        await running.stop();
    }
}

export async function runExternalWorkloadsBenchmark(report: Report, cleanups: Cleanups): Promise<void> {
    const cluster = await startBenchCluster(benchClusterName('ew'), cleanups);
    try {
        const ns = await setUp(cluster, report);
        const watch = await SliceWatch.start(cluster.admin, ns, `kubernetes.io/service-name=web,endpointslice.kubernetes.io/managed-by=${DEFAULT_MANAGED_BY}`);
        try {
            await initialSyncAndChanges(cluster, ns, watch, report);
            await noOpRestartAndResyncs(cluster, ns, report);
        } finally {
            await watch.stop();
        }
    } finally {
        await cluster.stop();
    }
}
