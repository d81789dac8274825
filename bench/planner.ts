// Benchmark 1: the pure planners, no I/O. cluster-scale's common case per Service (10 workloads,
// one port: initial sync, one change, the slice cache taking the echo of a create); planSlices for one Service of 1 000, 10 000 and
// 50 000 endpoints (initial plan, no-op re-plan against the applied result, one endpoint
// changed), and the desired groups of one Service from 10 000 cached (compact) ExternalWorkloads. The applied result comes
// from the endpointslice testkit's FakeApiserver, i.e. slices in the form the apiserver stores.
import type { V1EndpointSlice } from '@kubernetes/client-node';
import { planSlices } from '../src/endpointslice/reconciler.js';
import { deepFreeze, FakeApiserver, group, makeEndpoint, makeInput, range } from '../src/endpointslice/testkit.js';
import type { ReconcileInput, SlicePlan } from '../src/endpointslice/types.js';
import { compactWorkload } from '../src/externalworkloads/compact.js';
import { desiredGroups } from '../src/externalworkloads/desired.js';
import { planService } from '../src/externalworkloads/plan.js';
import { ipv4, makeService, makeWorkload } from '../src/externalworkloads/testkit.js';
import { sliceProblems } from '../src/endpointslice/validate.js';
import { SharedValues } from '../src/kube/shared-values.js';
import { compactSlice } from '../src/kube/slice-cache.js';
import type { OwnedSlice } from '../src/kube/slice-cache.js';
import { timeRuns, type Report } from './stats.js';

const BENCHMARK = 'planner';
/** The controllers' default slice size. */
const MAX_ENDPOINTS_PER_SLICE = 100;

/** Warm-up and measured runs per size: enough for a stable median within a few seconds. */
const SIZES = [
    { endpoints: 1_000, warmup: 5, runs: 30 },
    { endpoints: 10_000, warmup: 3, runs: 15 },
    { endpoints: 50_000, warmup: 2, runs: 8 },
];

const writesOf = (plan: SlicePlan) => plan.creates.length + plan.updates.length + plan.deletes.length;
const writeDetail = (plan: SlicePlan) => ({
    'writes planned': writesOf(plan),
    creates: plan.creates.length,
    updates: plan.updates.length,
    deletes: plan.deletes.length,
});

function inputFor(count: number, existing: V1EndpointSlice[], notReady?: number): ReconcileInput {
    const endpoints = range(0, count).map((i) =>
        i === notReady ? makeEndpoint(i, { conditions: { ready: false, serving: true, terminating: false } }) : makeEndpoint(i),
    );
    // Frozen like the informer-cache objects the planner is handed: it must not mutate them.
    return deepFreeze(makeInput({ desired: [group(endpoints)], existing, maxEndpointsPerSlice: MAX_ENDPOINTS_PER_SLICE }));
}

/** Times `plan` and reports the writes of its last run (every run plans the same). */
function measure(report: Report, what: string, count: number, warmup: number, runs: number, plan: () => SlicePlan): SlicePlan {
    let last: SlicePlan | undefined;
    const samples = timeRuns(() => (last = plan()), warmup, runs);
    report.timing(BENCHMARK, what, count, 'endpoints', samples, writeDetail(last!));
    return last!;
}

function planSlicesBenchmark(report: Report): void {
    for (const { endpoints: count, warmup, runs } of SIZES) {
        const initialInput = inputFor(count, []);
        const initial = measure(report, 'planSlices initial plan (no slices yet)', count, warmup, runs, () => planSlices(initialInput));
        report.value(BENCHMARK, 'writes planned by the initial plan', count, 'endpoints', writesOf(initial), 'writes', count / MAX_ENDPOINTS_PER_SLICE);

        const applied = new FakeApiserver().apply(initial);
        const noopInput = { ...initialInput, existing: applied };
        const noop = measure(report, 'planSlices no-op re-plan (against the applied result)', count, warmup, runs, () => planSlices(noopInput));
        report.value(BENCHMARK, 'writes planned by the no-op re-plan', count, 'endpoints', writesOf(noop), 'writes', 0);

        const changedInput = inputFor(count, applied, Math.floor(count / 2));
        const changed = measure(report, 'planSlices re-plan with one endpoint turned not ready', count, warmup, runs, () => planSlices(changedInput));
        report.value(BENCHMARK, 'writes planned for one changed endpoint', count, 'endpoints', writesOf(changed), 'writes', 1);
    }
}

function desiredGroupsBenchmark(report: Report): void {
    const count = 10_000;
    const service = deepFreeze(makeService());
    // As the controller's cache holds them: compacted once, when they arrived.
    const workloads = deepFreeze(range(0, count).map((i) => compactWorkload(makeWorkload(`wl-${String(i).padStart(5, '0')}`, { ips: [ipv4(i)] }))));
    let endpoints = 0;
    let problems = 0;
    const samples = timeRuns(() => {
        const desired = desiredGroups(service, workloads);
        endpoints = desired.groups.reduce((n, g) => n + g.endpoints.length, 0);
        problems = desired.problems.length;
    }, 3, 15);
    report.timing(BENCHMARK, 'desired groups from cached workloads (one Service selecting every workload)', count, 'workloads', samples, {
        'endpoints desired': endpoints,
        problems,
    });
}

/** CPU milliseconds of this process so far: unlike wall time, not stretched by a loaded machine. */
function cpuMs(): number {
    const { user, system } = process.cpuUsage();
    return (user + system) / 1000;
}

/** Like timeRuns, in CPU ms. */
function cpuRuns(fn: () => void, warmup: number, runs: number): number[] {
    for (let i = 0; i < warmup; i++) fn();
    const samples: number[] = [];
    for (let i = 0; i < runs; i++) {
        const started = cpuMs();
        fn();
        samples.push(cpuMs() - started);
    }
    return samples;
}

/**
 * What the controller does for a Service of 10 000 workloads: planService (selection, desired
 * groups, the initial plan), one synchronous call. In CPU time (of the whole process, GC threads
 * included): how long the event loop is held when the process has a CPU to itself.
 */
function largeServiceBenchmark(report: Report): void {
    const count = 10_000;
    const service = deepFreeze(makeService({}, { name: 'web', uid: 'svc-uid' }));
    // As the controller's cache holds them: compacted once, when they arrived.
    const workloads = deepFreeze(range(0, count).map((i) => compactWorkload(makeWorkload(`wl-${String(i).padStart(5, '0')}`, { ips: [ipv4(i)] }))));
    const held = cpuRuns(() => planService(service, workloads, [], { managedBy: 'bench' }), 2, 8);
    report.timing(BENCHMARK, 'a Service of 10 000 workloads planned (planService, no slices yet): CPU ms holding the event loop', count, 'workloads', held);
}

/**
 * cluster-scale's common case, per Service: 10 workloads, one named port. What a sync does in
 * the pure core (desired groups, the plan, the writer's check of each slice it sends) and what
 * the informer does with the echo of a create (the slice cache's transform), timed over 1 000
 * Services per run so that a run is long enough to time. In CPU ms of the process (GC threads
 * included), which a loaded machine stretches less than wall time.
 */
function serviceSyncBenchmark(report: Report): void {
    const SERVICES = 1_000;
    const PER_SERVICE = 10;
    const shared = new SharedValues();
    const services = range(0, SERVICES).map((s) => {
        const name = `svc-${String(s).padStart(4, '0')}`;
        const service = deepFreeze(makeService({ selector: { app: name }, ports: [{ name: 'http', port: 80, protocol: 'TCP', targetPort: 'http' }] }, { name, uid: `uid-${name}` }));
        const workloads = deepFreeze(
            range(0, PER_SERVICE).map((w) =>
                compactWorkload(makeWorkload(`${name}-${w}`, { labels: { app: name }, ips: [ipv4(s * PER_SERVICE + w)] }), { shared }),
            ),
        );
        return { service, workloads };
    });
    const plan = (svc: (typeof services)[number], workloads: typeof svc.workloads, existing: V1EndpointSlice[]) => {
        const planned = planService(svc.service, workloads, existing, { maxEndpointsPerSlice: MAX_ENDPOINTS_PER_SLICE, managedBy: 'bench' });
        for (const slice of [...planned.creates, ...planned.updates]) if (sliceProblems(slice).length > 0) throw new Error('invalid plan');
        return planned;
    };

    let writes = 0;
    // The first run is what a fresh controller's initial sync meets: code not yet optimised.
    const [cold, ...initial] = cpuRuns(() => {
        writes = 0;
        for (const svc of services) writes += writesOf(plan(svc, svc.workloads, []));
    }, 0, 19).filter((_, run) => run === 0 || run > 3);
    report.timing(BENCHMARK, '1 000 Services of 10 workloads and 1 port, initial sync (desired + plan + check, no slices yet); CPU ms per 1 000 = µs per Service', SERVICES, 'Services', initial, { 'writes per 1 000 Services': writes });
    report.value(BENCHMARK, 'the same, the first 1 000 in this process (code not yet optimised, as in a fresh controller): CPU ms', SERVICES, 'Services', cold!, 'ms');

    // The slices the initial sync wrote, as the slice cache holds them, then one workload of each Service not ready.
    const cache = new SharedValues();
    const existing = services.map((svc) => new FakeApiserver().apply(plan(svc, svc.workloads, [])).map((slice) => compactSlice(structuredClone(slice) as OwnedSlice, cache)));
    const flipped = services.map((svc) => svc.workloads.map((w, i) => (i === PER_SERVICE / 2 ? { ...w, ready: false } : w)));
    const change = cpuRuns(() => {
        writes = 0;
        services.forEach((svc, i) => (writes += writesOf(plan(svc, flipped[i]!, existing[i]!))));
    }, 3, 15);
    report.timing(BENCHMARK, 'the same, one workload of each turned not ready (against its one slice); CPU ms per 1 000 = µs per Service', SERVICES, 'Services', change, { 'writes per 1 000 Services': writes });

    // The echo of each create, as the watch decoded it (a fresh object each time; made outside the timing).
    const served = existing.map((slices) => slices.map((slice) => JSON.stringify(slice)));
    const echoes: number[] = [];
    for (let run = 0; run < 18; run++) {
        const fresh = served.map((slices) => slices.map((json) => JSON.parse(json) as OwnedSlice));
        const echoCache = new SharedValues();
        const started = cpuMs();
        for (const slices of fresh) for (const slice of slices) compactSlice(slice, echoCache);
        if (run >= 3) echoes.push(cpuMs() - started);
    }
    report.timing(BENCHMARK, 'the slice cache taking the echo of their 1 000 created slices of 10 endpoints; CPU ms per 1 000 = µs per slice', SERVICES, 'slices', echoes);
}

export async function runPlannerBenchmarks(report: Report): Promise<void> {
    serviceSyncBenchmark(report);
    planSlicesBenchmark(report);
    desiredGroupsBenchmark(report);
    largeServiceBenchmark(report);
}
