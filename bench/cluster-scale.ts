// Benchmark: the external-workloads controller at cluster scale, run as users run it (the
// compiled CLI in a process of its own, so its RSS and CPU are its own) against a real local
// kube-apiserver + etcd. Every time is read off watches (when the apiserver had the state);
// writes off the controller's own /metrics; RSS and CPU off /proc. Each figure sits next to a
// baseline measured in the same run: the apiserver's own write rate, a status write's round trip.
//
// Default scale: 1 000 Services x 10 workloads, plus one Service of 1 000 for the burst.
// SCALE=large adds one Service of 10 000 workloads.
import { loadavg } from 'node:os';
import type { V1EndpointSlice } from '@kubernetes/client-node';
import { DEFAULT_MANAGED_BY } from '../src/externalworkloads/controller.js';
import type { KubeRest } from '../src/kube/rest.js';
import type { KubeObject } from '../src/kube/store.js';
import { collectionPath, EndpointSlices, ExternalWorkloads, Leases, Services, objectPath } from '../src/kube/resources.js';
import { installCrds } from '../src/testing/crds.js';
import { collectApiserverGarbage } from './apiserver-debug.js';
import { createClusterScaleObjects, slicesFor, sliceSizesOf, wlName, type ServiceSpec } from './cluster-scale-objects.js';
import { ControllerProcess, controllerEntry, metricFrom } from './controller-process.js';
import { busyPercent, coreSplit, describeSplit, splitClusterCores, type CoreLayout } from './core-layout.js';
import { benchClusterName, startBenchCluster, type BenchCluster, type Cleanups } from './local-cluster.js';
import { inParallel, sleep } from './async.js';
import { median, percentile, type Report } from './stats.js';
import { ObjectWatch, Waiters, type WatchEventType } from './watch.js';
import { apiserverWriteRate, pairBaseline, spendWindow, type PairSide } from './write-baselines.js';

const BENCHMARK = 'cluster-scale';
const large = process.env.SCALE === 'large';
/** BENCH_SERVICES=100 for a quick comparison of two builds (a slow old build need not take an hour). */
const SERVICES = Number(process.env.BENCH_SERVICES ?? 1_000);
const PER_SERVICE = 10;
const BURST_WORKLOADS = 1_000;
const BIG_SERVICE_WORKLOADS = large ? 10_000 : 0;
const LONE_CHANGES = 20;
const CHURN_CHANGES = 1_000;
const CHURN_SECONDS = 10;
const SETTLE_MS = 2_000;
const CONCURRENCY = 16;
const CHURN_IN_FLIGHT = 16;
/** (baseline, fresh controller's initial sync) pairs after the main run: their ratios and the median. */
const SYNC_PAIRS = Number(process.env.BENCH_SYNC_PAIRS ?? 5);

const svcName = (i: number) => `svc-${String(i % SERVICES).padStart(4, '0')}`;
/** Every slice of our controller in the namespace, with per-endpoint readiness and waiters. */
class EndpointWatch {
    readonly slices = new Map<string, V1EndpointSlice>();
    /** "service/workload" → ready. */
    readonly ready = new Map<string, boolean>();
    endpoints = 0;
    events = 0;
    lastEventAt = 0;
    private readonly waiters = new Waiters();
    private watch: ObjectWatch<V1EndpointSlice & KubeObject> | undefined;

    constructor(
        private readonly rest: KubeRest,
        private readonly namespace: string,
    ) {}

    async start(): Promise<void> {
        this.watch = await ObjectWatch.start<V1EndpointSlice & KubeObject>(
            this.rest,
            collectionPath(EndpointSlices, this.namespace),
            `endpointslice.kubernetes.io/managed-by=${DEFAULT_MANAGED_BY}`,
            (type, slice, at) => this.apply(type, slice, at),
            (err) => this.waiters.fail(err),
        );
    }

    private apply(type: WatchEventType, slice: V1EndpointSlice, at: number): void {
        this.events++;
        this.lastEventAt = at;
        const name = slice.metadata!.name!;
        const service = slice.metadata?.labels?.['kubernetes.io/service-name'] ?? '';
        const old = this.slices.get(name);
        if (old) this.endpoints -= old.endpoints?.length ?? 0;
        if (type === 'DELETED') this.slices.delete(name);
        else {
            this.slices.set(name, slice);
            this.endpoints += slice.endpoints?.length ?? 0;
            for (const e of slice.endpoints ?? []) this.ready.set(`${service}/${e.targetRef?.name}`, e.conditions?.ready === true);
        }
        this.waiters.wake(at);
    }

    /** When the endpoint of `workload` in `service`'s slices shows ready === want. */
    endpointReady(service: string, workload: string, want: boolean, timeoutMs: number): Promise<number> {
        const key = `${service}/${workload}`;
        return this.waiters.until(`${key} ready=${want}`, () => this.ready.get(key) === want, timeoutMs);
    }

    until(what: string, check: () => boolean, timeoutMs: number): Promise<number> {
        return this.waiters.until(what, check, timeoutMs);
    }

    readyCount(service: string): number {
        let n = 0;
        for (const slice of this.slices.values()) {
            if (slice.metadata?.labels?.['kubernetes.io/service-name'] !== service) continue;
            for (const e of slice.endpoints ?? []) if (e.conditions?.ready) n++;
        }
        return n;
    }

    async stop(): Promise<void> {
        await this.watch?.stop();
    }
}

class Semaphore {
    private readonly waiting: (() => void)[] = [];
    constructor(private free: number) {}
    async take(): Promise<void> {
        if (this.free > 0) return void this.free--;
        await new Promise<void>((resolve) => this.waiting.push(resolve));
    }
    give(): void {
        const next = this.waiting.shift();
        if (next) next();
        else this.free++;
    }
}

const WRITES = 'mesh_endpoints_external_workloads_endpointslice_changes_total';
async function controllerWrites(controller: ControllerProcess): Promise<number> {
    const { text } = await controller.get('/metrics');
    return ['create', 'update', 'delete'].map((op) => metricFrom(text, WRITES, `operation="${op}"`) || 0).reduce((a, b) => a + b, 0);
}

/** One 250 ms window of the controller's event loop, and how long its main thread waited for a CPU in it. */
interface LoopWindow {
    p99: number;
    max: number;
    runQueueWait: number;
}

/**
 * While `work` runs: every 250 ms the controller's event-loop delay (prom-client's
 * monitorEventLoopDelay figures, reset at each scrape) next to the time its main thread waited
 * for a CPU, how long /healthz took to answer, and the Lease's renewTime (its gaps show whether
 * renewals kept their period). The machine's load average at the start and end goes with them.
 */
async function sampleWhile<T>(controller: ControllerProcess, admin: KubeRest, leaseNs: string, work: Promise<T>) {
    const windows: LoopWindow[] = [];
    const healthz: number[] = [];
    const renewals: number[] = [];
    const loadBefore = loadavg()[0]!;
    const schedBefore = controller.mainThreadSchedMs();
    let sched = schedBefore;
    let readyAt: number | undefined;
    let done = false;
    const finished = work.finally(() => (done = true));
    const sampler = (async () => {
        while (!done) {
            const [metrics, health, , lease] = await Promise.all([
                controller.get('/metrics').catch(() => undefined),
                controller.get('/healthz').catch(() => undefined),
                readyAt === undefined ? controller.get('/readyz').then((r) => r.text === 'ok' && (readyAt ??= performance.now())).catch(() => undefined) : undefined,
                admin.get<{ spec?: { renewTime?: string } }>(objectPath(Leases, leaseNs, 'mesh-endpoints-external-workloads')).catch(() => undefined),
            ]);
            const now = controller.mainThreadSchedMs();
            if (metrics) {
                windows.push({
                    p99: metricFrom(metrics.text, 'mesh_endpoints_nodejs_eventloop_lag_p99_seconds') * 1000,
                    max: metricFrom(metrics.text, 'mesh_endpoints_nodejs_eventloop_lag_max_seconds') * 1000,
                    runQueueWait: now.waiting - sched.waiting,
                });
            }
            sched = now;
            if (health) healthz.push(health.ms);
            const renewTime = lease?.spec?.renewTime ? Date.parse(lease.spec.renewTime) : undefined;
            if (renewTime && renewals[renewals.length - 1] !== renewTime) renewals.push(renewTime);
            await sleep(250);
        }
    })();
    const result = await finished;
    await sampler;
    const schedAfter = controller.mainThreadSchedMs();
    const gaps = renewals.slice(1).map((t, i) => t - renewals[i]!);
    const measured = windows.filter((w) => Number.isFinite(w.p99));
    const worst = measured.reduce<LoopWindow>((a, b) => (b.p99 > a.p99 ? b : a), { p99: 0, max: 0, runQueueWait: 0 });
    // A delay longer than all the waiting for a CPU in its window cannot be the machine's alone:
    // at least the difference is the controller's own work holding the loop.
    const beyondWait = Math.max(0, ...measured.map((w) => w.max - w.runQueueWait));
    return {
        result,
        readyAt,
        loop: {
            worstP99: worst.p99,
            max: Math.max(0, ...measured.map((w) => w.max)),
            'run-queue wait in the worst window (ms)': worst.runQueueWait,
            'longest delay beyond the run-queue wait of its window (ms)': beyondWait,
            windows: measured.length,
            'main thread run-queue wait, whole sync (ms)': schedAfter.waiting - schedBefore.waiting,
            'main thread on a CPU, whole sync (ms)': schedAfter.onCpu - schedBefore.onCpu,
            'load average at start': loadBefore,
            'load average at end': loadavg()[0]!,
            'controller nice (BENCH_CONTROLLER_NICE)': Number(process.env.BENCH_CONTROLLER_NICE ?? 0),
        },
        healthzMax: Math.max(0, ...healthz),
        healthzP99: percentile(healthz, 99),
        renewalGapMax: gaps.length > 0 ? Math.max(...gaps) : Number.NaN,
        samples: healthz.length,
    };
}

async function setUp(cluster: BenchCluster, ns: string, services: ServiceSpec[], report: Report): Promise<void> {
    const started = performance.now();
    const workloads = await createClusterScaleObjects(cluster, ns, services);
    report.value(BENCHMARK, 'set-up: workloads and Services created', workloads, 'workloads', performance.now() - started, 'ms');
}

/**
 * SYNC_PAIRS times, alternately: the baseline as a controller's sync finds the apiserver
 * (pairBaseline, the sync's slices: `sliceSizes` endpoints each), then a fresh controller's
 * initial sync (its slices deleted first). Each pair's ratio of caches synced → last write to
 * the slices ÷ the baseline's rate, and the median:
 * one pair moves with the machine, the median less ("The apiserver's pace" in docs/benchmarks.md).
 * Every pair runs twice in a row: on shared cores, then with the apiserver and etcd on cores of
 * their own (bench/core-layout.ts), where a machine has two or more.
 */
async function syncPairs(entry: string, cluster: BenchCluster, ns: string, leaseNs: string, watch: EndpointWatch, synced: () => boolean, sliceSizes: number[], report: Report, cleanups: Cleanups): Promise<void> {
    if (SYNC_PAIRS <= 0) return;
    const minimumWrites = sliceSizes.length;
    const pairsNs = await cluster.namespace('pairs');
    const owner = await cluster.admin.create<{ metadata: { uid: string } }>(collectionPath(Services, pairsNs), {
        metadata: { name: 'owner' },
        spec: { ports: [{ name: 'http', port: 80, targetPort: 'http' }] },
    } as never);
    const perCreate = (seconds: number) => (seconds * 1000) / minimumWrites;
    const idlePercent = ({ spend }: PairSide) => (100 * spend.machineIdleSeconds) / (spend.machineBusySeconds + spend.machineIdleSeconds);
    const split = coreSplit();
    const ratios = { shared: [] as number[], split: [] as number[] };

    /** One pair, on shared cores or (`cores`) split. */
    const onePair = async (pair: number, cores: CoreLayout | undefined): Promise<void> => {
        const load = loadavg()[0]!;
        const restoreCores = cores && (await splitClusterCores(cluster, cores));
        try {
            const base = await pairBaseline(cluster, pairsNs, owner.metadata.uid, ns, sliceSizes);
            await cluster.admin.request('DELETE', collectionPath(EndpointSlices, ns), { query: { labelSelector: `endpointslice.kubernetes.io/managed-by=${DEFAULT_MANAGED_BY}` }, timeoutMs: 120_000 });
            await watch.until('the slices deleted', () => watch.slices.size === 0, 120_000);
            await collectApiserverGarbage(cluster);
            const controller = await ControllerProcess.start(entry, 'external-workloads', ['--kubeconfig', cluster.state.kubeconfig, '--namespace', leaseNs, '--watch-namespace', ns], cleanups);
            let sync: PairSide;
            let controllerCpuSeconds: number;
            try {
                while ((await controller.get('/readyz').catch(() => undefined))?.text !== 'ok') await sleep(20);
                const syncedAt = performance.now();
                const controllerCpu0 = controller.cpuSeconds();
                const endWindow = await spendWindow(cluster);
                const doneAt = await watch.until('every slice of the initial sync', synced, 30 * 60_000);
                controllerCpuSeconds = controller.cpuSeconds() - controllerCpu0;
                sync = { ms: doneAt - syncedAt, spend: await endWindow() };
            } finally {
                await controller.stop();
            }
            const ratio = sync.ms / ((minimumWrites / base.rate) * 1000);
            const where = cores ? `, ${describeSplit(cores)}` : '';
            const coresBusy: Record<string, number> = cores
                ? {
                      'apiserver and etcd cores busy, baseline (%)': busyPercent(base.spend.coreSeconds, cores.serverCores),
                      'apiserver and etcd cores busy, sync (%)': busyPercent(sync.spend.coreSeconds, cores.serverCores),
                      "clients' cores busy, baseline (%)": busyPercent(base.spend.coreSeconds, cores.clientCores),
                      "clients' cores busy, sync (%)": busyPercent(sync.spend.coreSeconds, cores.clientCores),
                  }
                : {};
            (cores ? ratios.split : ratios.shared).push(ratio);
            report.value(BENCHMARK, `initial sync, pair ${pair + 1} of ${SYNC_PAIRS}${where}: caches synced (/readyz, 20 ms probes) to last slice write, ratio to minimum writes / the pair's baseline`, minimumWrites, 'slices', ratio, 'x', undefined, {
                'caches synced to last slice write (ms)': sync.ms,
                "the pair's baseline, creates/s": base.rate,
                ...coresBusy,
                'machine CPU per create, baseline (ms)': perCreate(base.spend.machineBusySeconds),
                'machine CPU per create, sync (ms)': perCreate(sync.spend.machineBusySeconds),
                'machine idle, baseline (%)': idlePercent(base),
                'machine idle, sync (%)': idlePercent(sync),
                'apiserver CPU per create, baseline (ms)': perCreate(base.spend.apiserver.cpuSeconds),
                'apiserver CPU per create, sync (ms)': perCreate(sync.spend.apiserver.cpuSeconds),
                "the baseline client's CPU per create (ms)": perCreate(base.spend.benchCpuSeconds),
                'controller CPU per create (ms)': perCreate(controllerCpuSeconds),
                "the bench's watch, CPU per create during the sync (ms)": perCreate(sync.spend.benchCpuSeconds),
                'apiserver Go GCs, baseline': base.spend.apiserver.gcs,
                'apiserver Go GCs, sync': sync.spend.apiserver.gcs,
                'apiserver MB allocated, baseline': base.spend.apiserver.allocatedMb,
                'apiserver MB allocated, sync': sync.spend.apiserver.allocatedMb,
                'load average at start': load,
            });
        } finally {
            await restoreCores?.();
        }
    };

    for (let pair = 0; pair < SYNC_PAIRS; pair++) {
        await onePair(pair, undefined);
        if (split) await onePair(pair, split);
    }
    const summary = (of: number[]) => ({ min: Math.min(...of), max: Math.max(...of) });
    report.value(BENCHMARK, `initial sync, ${SYNC_PAIRS} pairs: median ratio`, minimumWrites, 'slices', median(ratios.shared), 'x', undefined, summary(ratios.shared));
    if (split) {
        report.value(BENCHMARK, `initial sync, ${SYNC_PAIRS} pairs, ${describeSplit(split)}: median ratio`, minimumWrites, 'slices', median(ratios.split), 'x', undefined, summary(ratios.split));
    }
}

async function setReady(cluster: BenchCluster, ns: string, name: string, ready: boolean): Promise<number> {
    await cluster.admin.mergePatch(`${collectionPath(ExternalWorkloads, ns)}/${name}/status`, {
        status: { conditions: [{ type: 'Ready', status: ready ? 'True' : 'False', lastTransitionTime: new Date().toISOString().replace(/\.\d+Z$/, 'Z') }] },
    });
    return performance.now();
}

export async function runClusterScaleBenchmark(report: Report, cleanups: Cleanups): Promise<void> {
    const entry = controllerEntry();
    const cluster = await startBenchCluster(benchClusterName('scale'), cleanups);
    try {
        await installCrds(cluster.admin);
        const services: ServiceSpec[] = Array.from({ length: SERVICES }, (_, i) => ({ name: svcName(i), workloads: PER_SERVICE }));
        services.push({ name: 'burst', workloads: BURST_WORKLOADS });
        if (BIG_SERVICE_WORKLOADS > 0) services.push({ name: 'big', workloads: BIG_SERVICE_WORKLOADS });
        const totalWorkloads = services.reduce((n, s) => n + s.workloads, 0);
        const sliceSizes = sliceSizesOf(services);
        const minimumWrites = sliceSizes.length;
        const { createRate: writeRate, ownedRate } = await apiserverWriteRate(BENCHMARK, cluster, report, minimumWrites);
        const ns = await cluster.namespace('scale');
        const leaseNs = await cluster.namespace('lease');
        await setUp(cluster, ns, services, report);
        // Again with the workloads and Services present, as the controller finds the apiserver:
        // the service-mirror bench saw the apiserver slow down as it held more objects.
        const present = await apiserverWriteRate(BENCHMARK, cluster, report, minimumWrites, ', objects present (just before the sync)');
        const scale = `${SERVICES} Services x ${PER_SERVICE} + ${BURST_WORKLOADS}${BIG_SERVICE_WORKLOADS ? ` + ${BIG_SERVICE_WORKLOADS}` : ''}`;

        const watch = new EndpointWatch(cluster.admin, ns);
        await watch.start();
        await collectApiserverGarbage(cluster);
        const controller = await ControllerProcess.start(entry, 'external-workloads', ['--kubeconfig', cluster.state.kubeconfig, '--namespace', leaseNs, '--watch-namespace', ns], cleanups);
        try {
            // Initial sync.
            const cpuBefore = controller.cpuSeconds();
            const sync = await sampleWhile(
                controller,
                cluster.admin,
                leaseNs,
                watch.until('every slice of the initial sync', () => watch.endpoints === totalWorkloads && watch.slices.size === minimumWrites, 30 * 60_000),
            );
            const syncMs = sync.result - controller.startedAt;
            await sleep(SETTLE_MS);
            const writes = await controllerWrites(controller);
            const ideal = (minimumWrites / writeRate) * 1000;
            const idealOwned = (minimumWrites / ownedRate) * 1000;
            const idealPresent = (minimumWrites / present.ownedRate) * 1000;
            report.value(BENCHMARK, `initial sync (${scale}): process start to last slice write`, totalWorkloads, 'workloads', syncMs, 'ms', undefined, {
                'minimum writes / apiserver create rate (ms)': ideal,
                'ratio to that': syncMs / ideal,
                'ratio to minimum writes / create rate of slices shaped as ours': syncMs / idealOwned,
                'same, that rate measured with the objects present': syncMs / idealPresent,
            });
            if (sync.readyAt !== undefined) {
                report.value(BENCHMARK, 'initial sync: caches synced (/readyz ok, 250 ms probes) to last slice write', totalWorkloads, 'workloads', sync.result - sync.readyAt, 'ms', undefined, {
                    'process start to /readyz ok (ms)': sync.readyAt - controller.startedAt,
                    'ratio to minimum writes / create rate': (sync.result - sync.readyAt) / ideal,
                    'ratio to minimum writes / create rate of slices shaped as ours': (sync.result - sync.readyAt) / idealOwned,
                    'same, that rate measured with the objects present': (sync.result - sync.readyAt) / idealPresent,
                });
            }
            report.value(BENCHMARK, 'initial sync: slice writes', totalWorkloads, 'workloads', writes, 'writes', minimumWrites);
            report.value(BENCHMARK, 'initial sync: controller CPU', totalWorkloads, 'workloads', controller.cpuSeconds() - cpuBefore, 's');
            const heapMb = await controller.heapUsedMb();
            report.value(BENCHMARK, 'initial sync: controller peak RSS', totalWorkloads, 'workloads', controller.peakRssMb(), 'MB', undefined, {
                'RSS after (MB)': controller.rssMb(),
                'V8 heap used after (MB)': heapMb,
                'heap per workload (KB)': (heapMb * 1024) / totalWorkloads,
            });
            const { worstP99, max, ...loopDetail } = sync.loop;
            report.value(BENCHMARK, 'initial sync: event-loop delay p99, worst 250 ms window', totalWorkloads, 'workloads', worstP99, 'ms', undefined, { 'max delay (ms)': max, ...loopDetail });
            report.value(BENCHMARK, 'initial sync: /healthz answer time, max', sync.samples, 'probes', sync.healthzMax, 'ms', undefined, { p99: sync.healthzP99 });
            report.value(BENCHMARK, 'initial sync: longest gap between Lease renewals (retry period 2 s)', totalWorkloads, 'workloads', sync.renewalGapMax, 'ms');

            // Lone changes: one workload of a quiet Service turns ready; its slice, seen by a watch.
            const lone: number[] = [];
            const roundTrips: number[] = [];
            let writesBefore = await controllerWrites(controller);
            for (let i = 0; i < LONE_CHANGES; i++) {
                const service = svcName(i * 37);
                const workload = wlName(service, 0);
                const sentAt = performance.now();
                const writtenAt = await setReady(cluster, ns, workload, true);
                const seenAt = await watch.endpointReady(service, workload, true, 60_000);
                roundTrips.push(writtenAt - sentAt);
                lone.push(seenAt - writtenAt);
                await sleep(300);
            }
            const loneWrites = (await controllerWrites(controller)) - writesBefore;
            report.timing(BENCHMARK, 'lone change: workload status written to slice updated (seen by a watch)', LONE_CHANGES, 'changes', lone, { 'slice writes per change': loneWrites / LONE_CHANGES });
            report.timing(BENCHMARK, 'baseline: the status write round trip itself', LONE_CHANGES, 'changes', roundTrips);

            // Churn: readiness flips spread evenly over CHURN_SECONDS across the Services.
            writesBefore = await controllerWrites(controller);
            const flips = Array.from({ length: CHURN_CHANGES }, (_, k) => {
                const service = svcName((k * 7919) % SERVICES);
                return { service, workload: wlName(service, 1 + (k % (PER_SERVICE - 1))), at: (k * CHURN_SECONDS * 1000) / CHURN_CHANGES };
            });
            const churnStart = performance.now();
            // At most CHURN_IN_FLIGHT status writes at once: a loaded apiserver that takes fewer than
            // 100 writes/s stretches the churn (its duration is reported) instead of timing writes out.
            const slots = new Semaphore(CHURN_IN_FLIGHT);
            const churn = await sampleWhile(
                controller,
                cluster.admin,
                leaseNs,
                Promise.all(
                    flips.map(async (flip) => {
                        await sleep(flip.at - (performance.now() - churnStart));
                        await slots.take();
                        try {
                            const want = !(watch.ready.get(`${flip.service}/${flip.workload}`) ?? false);
                            // A status write the loaded apiserver did not answer in time is counted, not fatal.
                            const writtenAt = await setReady(cluster, ns, flip.workload, want).catch(() => undefined);
                            if (writtenAt === undefined) return undefined;
                            return (await watch.endpointReady(flip.service, flip.workload, want, 120_000)) - writtenAt;
                        } finally {
                            slots.give();
                        }
                    }),
                ),
            );
            const churnMs = performance.now() - churnStart;
            await sleep(SETTLE_MS);
            const churnWrites = (await controllerWrites(controller)) - writesBefore;
            const lat = churn.result.filter((x): x is number => x !== undefined);
            report.value(BENCHMARK, `churn: ${CHURN_CHANGES} readiness flips over ${CHURN_SECONDS} s, status write to slice, p50`, CHURN_CHANGES, 'changes', percentile(lat, 50), 'ms', undefined, {
                p90: percentile(lat, 90),
                p99: percentile(lat, 99),
                max: Math.max(...lat),
                'slice writes per change': churnWrites / CHURN_CHANGES,
                'event-loop p99 worst window (ms)': churn.loop.worstP99,
                'its run-queue wait (ms)': churn.loop['run-queue wait in the worst window (ms)'],
                'status writes that failed': CHURN_CHANGES - lat.length,
                'churn took (s)': churnMs / 1000,
            });

            // Burst: every workload of one Service turns ready at once.
            writesBefore = await controllerWrites(controller);
            const burstNames = Array.from({ length: BURST_WORKLOADS }, (_, i) => wlName('burst', i));
            const burstStart = performance.now();
            await inParallel(burstNames, CONCURRENCY, async (name) => void (await setReady(cluster, ns, name, true)));
            const burstWritten = performance.now();
            const burstDone = await watch.until('the burst published', () => watch.readyCount('burst') === BURST_WORKLOADS, 120_000);
            await sleep(SETTLE_MS);
            const burstWrites = (await controllerWrites(controller)) - writesBefore;
            report.value(BENCHMARK, `burst: ${BURST_WORKLOADS} workloads of one Service turn ready at once: slice writes`, BURST_WORKLOADS, 'changes', burstWrites, 'writes', undefined, {
                'minimum (its slices)': slicesFor(BURST_WORKLOADS),
                'status writes took (ms)': burstWritten - burstStart,
                'last status write to all published (ms)': burstDone - burstWritten,
            });
            report.value(BENCHMARK, 'controller RSS after all of the above', totalWorkloads, 'workloads', controller.rssMb(), 'MB', undefined, { 'peak (MB)': controller.peakRssMb() });
        } finally {
            await controller.stop();
        }
        try {
            const synced = () => watch.endpoints === totalWorkloads && watch.slices.size === minimumWrites;
            await syncPairs(entry, cluster, ns, leaseNs, watch, synced, sliceSizes, report, cleanups);
        } finally {
            await watch.stop();
        }
    } finally {
        await cluster.stop();
    }
}
