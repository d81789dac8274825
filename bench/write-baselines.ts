// The apiserver's own pace, the baselines cluster-scale's initial-sync rows divide by: slice
// creates and updates from one client at the controller's concurrency, plain and shaped as the
// controller shapes its slices, each window after a forced Go GC of the apiserver ("The
// apiserver's pace" in docs/benchmarks.md).
import type { V1EndpointSlice } from '@kubernetes/client-node';
import { DEFAULT_CONCURRENT_SYNCS } from '../src/externalworkloads/controller.js';
import { collectionPath, EndpointSlices, Services, objectPath } from '../src/kube/resources.js';
import { apiserverSpend, collectApiserverGarbage, spentSince, type ApiserverSpend } from './apiserver-debug.js';
import { ipOf, listAsInformers, wlName } from './cluster-scale-objects.js';
import { machineCpuSeconds, type CpuSeconds } from './controller-process.js';
import type { BenchCluster } from './local-cluster.js';
import { inParallel, sleep } from './async.js';
import type { Report } from './stats.js';


/**
 * EndpointSlice writes per second this apiserver takes from one client at the controller's
 * concurrency (its workers), over `n` writes: as many as the initial sync's, since a window of
 * a few hundred creates moves with one Go garbage collection. `when` names a measurement taken
 * later than the first, on an apiserver in another state.
 */
export async function apiserverWriteRate(benchmark: string, cluster: BenchCluster, report: Report, n: number, when = ''): Promise<{ createRate: number; ownedRate: number }> {
    const ns = await cluster.namespace('writes');
    const slice = (i: number): V1EndpointSlice => ({
        apiVersion: 'discovery.k8s.io/v1',
        kind: 'EndpointSlice',
        metadata: { name: `rate-${i}`, namespace: ns, labels: { 'kubernetes.io/service-name': `rate-${i % 40}` } },
        addressType: 'IPv4',
        ports: [{ name: 'http', port: 8080, protocol: 'TCP' }],
        endpoints: Array.from({ length: 10 }, (_, j) => ({ addresses: [ipOf(i * 10 + j + 1)], conditions: { ready: true } })),
    });
    const indexes = Array.from({ length: n }, (_, i) => i);
    await collectApiserverGarbage(cluster);
    let started = performance.now();
    const created: V1EndpointSlice[] = [];
    await inParallel(indexes, DEFAULT_CONCURRENT_SYNCS, async (i) => void created.push(await cluster.admin.create(collectionPath(EndpointSlices, ns), slice(i))));
    const createRate = n / ((performance.now() - started) / 1000);
    started = performance.now();
    await inParallel(created, DEFAULT_CONCURRENT_SYNCS, async (s) => {
        s.endpoints[0]!.conditions = { ready: false };
        await cluster.admin.replace(objectPath(EndpointSlices, ns, s.metadata!.name!), s);
    });
    const updateRate = n / ((performance.now() - started) / 1000);
    report.value(benchmark, `baseline: apiserver EndpointSlice creates per second (one client, ${DEFAULT_CONCURRENT_SYNCS} at a time)${when}`, n, 'slices', createRate, 'writes/s');
    report.value(benchmark, `baseline: apiserver EndpointSlice updates per second (one client, ${DEFAULT_CONCURRENT_SYNCS} at a time)${when}`, n, 'slices', updateRate, 'writes/s');
    const ownedRate = await ownedSliceCreateRate(cluster, ns, n);
    report.value(benchmark, `baseline: creates per second of slices as the controller writes them (owner reference, target references, generated name)${when}`, n, 'slices', ownedRate, 'writes/s', undefined, {
        'to the plain slices rate': ownedRate / createRate,
    });
    return { createRate, ownedRate };
}

/**
 * Slice `i` of `ownerName` as the controller shapes its slices (ownedSliceCreateRate says how):
 * `endpoints` endpoints, numbered from `first`.
 */
function shapedSlice(ns: string, ownerName: string, ownerUid: string, i: number, endpoints = 10, first = i * 10): V1EndpointSlice {
    return {
        apiVersion: 'discovery.k8s.io/v1',
        kind: 'EndpointSlice',
        metadata: {
            generateName: `${ownerName}-`,
            namespace: ns,
            labels: { 'endpointslice.kubernetes.io/managed-by': 'bench.mesh-endpoints.io', 'kubernetes.io/service-name': ownerName },
            ownerReferences: [{ apiVersion: 'v1', kind: 'Service', name: ownerName, uid: ownerUid, controller: true, blockOwnerDeletion: true }],
        },
        addressType: 'IPv4',
        ports: [{ name: 'http', port: 8080, protocol: 'TCP' }],
        endpoints: Array.from({ length: endpoints }, (_, j) => ({
            addresses: [ipOf(100_000 + first + j)],
            conditions: { ready: false, serving: false, terminating: false },
            targetRef: { kind: 'ExternalWorkload', namespace: ns, name: wlName(ownerName, first + j), uid: `00000000-0000-4000-8000-${String(first + j).padStart(12, '0')}`, apiVersion: 'workload.linkerd.io/v1beta1' },
        })),
    };
}

/**
 * Slice `i` of a mix of slices shaped as ours, `sliceSizes[i]` endpoints each, their endpoints
 * numbered on from the slices before (distinct across the mix).
 */
function shapedSlicesOfMix(ns: string, ownerName: string, ownerUid: string, sliceSizes: number[]): (i: number) => V1EndpointSlice {
    let endpoints = 0;
    const firsts = sliceSizes.map((size) => (endpoints += size) - size);
    return (i) => shapedSlice(ns, ownerName, ownerUid, i, sliceSizes[i], firsts[i]);
}

/**
 * The same creates with slices shaped as the controller's: a controller reference to their
 * Service (with blockOwnerDeletion, so the apiserver's OwnerReferencesPermissionEnforcement
 * checks it), a target reference per endpoint, all three conditions, a generated name and the
 * fieldManager; each asking for the stored metadata only, as the controller's writer does. The
 * apiserver takes these more slowly than the plain ones; the difference is its work, not the
 * controller's.
 */
async function ownedSliceCreateRate(cluster: BenchCluster, ns: string, n: number): Promise<number> {
    const owner = await cluster.admin.create<{ apiVersion: string; kind: string; metadata: { name: string; uid?: string }; spec: object }>(collectionPath(Services, ns), {
        apiVersion: 'v1',
        kind: 'Service',
        metadata: { name: 'owner' },
        spec: { ports: [{ name: 'http', port: 80, targetPort: 'http' }] },
    });
    const slice = (i: number) => shapedSlice(ns, owner.metadata.name, owner.metadata.uid!, i);
    await collectApiserverGarbage(cluster);
    const started = performance.now();
    await inParallel(
        Array.from({ length: n }, (_, i) => i),
        DEFAULT_CONCURRENT_SYNCS,
        async (i) => void (await cluster.admin.createForMetadata(collectionPath(EndpointSlices, ns), slice(i), { fieldManager: 'bench.mesh-endpoints.io' })),
    );
    return n / ((performance.now() - started) / 1000);
}

export interface PairSide {
    ms: number;
    spend: WindowSpend;
}

/**
 * What one side of a pair cost: the apiserver's spend, this process's CPU (the baseline's client
 * and watches, or the bench's watch during a sync) and the whole machine's CPU, busy and idle.
 * With the machine busy throughout both windows, the pair's ratio follows the CPU per write.
 */
export interface WindowSpend {
    apiserver: ApiserverSpend;
    benchCpuSeconds: number;
    machineBusySeconds: number;
    machineIdleSeconds: number;
    /** Each core's share of the machine's spend, by core number. */
    coreSeconds: Map<number, CpuSeconds>;
}

/** Starts measuring a window; the returned function ends it. */
export async function spendWindow(cluster: BenchCluster): Promise<() => Promise<WindowSpend>> {
    const apiserver0 = await apiserverSpend(cluster);
    const bench0 = process.cpuUsage();
    const machine0 = machineCpuSeconds();
    return async () => {
        const machine = machineCpuSeconds();
        const bench = process.cpuUsage(bench0);
        return {
            apiserver: spentSince(apiserver0, await apiserverSpend(cluster)),
            benchCpuSeconds: (bench.user + bench.system) / 1e6,
            machineBusySeconds: machine.busy - machine0.busy,
            machineIdleSeconds: machine.idle - machine0.idle,
            coreSeconds: new Map([...machine.cores].map(([core, { busy, idle }]) => [core, { busy: busy - machine0.cores.get(core)!.busy, idle: idle - machine0.cores.get(core)!.idle }])),
        };
    };
}

/**
 * One pair's baseline: a create of a slice shaped as ours for each of `sliceSizes` (its endpoints:
 * the same mix as the sync writes, so the apiserver encodes, stores and sends as much), at the
 * controller's concurrency, asking for the stored metadata only as its writer does, on the
 * apiserver as the controller's sync finds it. As before the controller's start, a full Go GC
 * first; then what any controller does before its first write and the apiserver pays for during
 * it: its informers' lists of the workloads and Services (their garbage is collected during the
 * writes) and a watch of its slices (each create is sent to it), plus the bench's own watch.
 * Without these the baseline's window held no GC cycle of the apiserver and the sync's one.
 */
export async function pairBaseline(cluster: BenchCluster, ns: string, ownerUid: string, scaleNs: string, sliceSizes: number[]): Promise<PairSide & { rate: number }> {
    const n = sliceSizes.length;
    const slice = shapedSlicesOfMix(ns, 'owner', ownerUid, sliceSizes);
    const watches = new AbortController();
    try {
        await collectApiserverGarbage(cluster);
        await listAsInformers(cluster, scaleNs);
        for (let i = 0; i < 2; i++) {
            const list = await cluster.admin.get<{ metadata: { resourceVersion: string } }>(collectionPath(EndpointSlices, ns), { limit: 1 });
            void cluster.admin
                .watch(collectionPath(EndpointSlices, ns), { resourceVersion: list.metadata.resourceVersion, allowWatchBookmarks: true }, watches.signal, () => undefined, () => undefined)
                .catch(() => undefined);
        }
        await sleep(300); // the watches registered
        const endWindow = await spendWindow(cluster);
        const started = performance.now();
        await inParallel(
            Array.from({ length: n }, (_, i) => i),
            DEFAULT_CONCURRENT_SYNCS,
            async (i) =>
                void (await cluster.admin.createForMetadata(collectionPath(EndpointSlices, ns), slice(i), {
                    fieldManager: 'bench.mesh-endpoints.io',
                })),
        );
        const ms = performance.now() - started;
        return { ms, rate: n / (ms / 1000), spend: await endWindow() };
    } finally {
        watches.abort();
        await cluster.admin.request('DELETE', collectionPath(EndpointSlices, ns), { timeoutMs: 120_000 });
    }
}
