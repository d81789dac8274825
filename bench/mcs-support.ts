// mcs-scale's two instruments. `ImportWatch`: the ServiceImports and MCS slices of every cluster
// as watch events bring them (bench/watch.ts), and for each imported Service the arrival of the
// event that first made it imported in every cluster (its ServiceImport has spec.ips and an MCS
// slice of it has an endpoint), then the one that made it gone from every cluster (no
// ServiceImport, no MCS slice). `mcsFloor`: the apiservers' own time for the writes of a burst of
// imports, made by a plain client in every cluster at once, as many in flight as the controller.
import type { V1EndpointSlice, V1Service, V1ServicePort } from '@kubernetes/client-node';
import { ApiError } from '../src/kube/errors.js';
import type { KubeRest } from '../src/kube/rest.js';
import { collectionPath, EndpointSlices, objectPath, Services, ServiceExports, ServiceImports } from '../src/kube/resources.js';
import type { KubeObject } from '../src/kube/store.js';
import { derivedServiceName, LABEL_MCS_SERVICE_NAME, LABEL_SOURCE_CLUSTER, MCS_MANAGED_BY, MCS_OWNED_LABEL, type ServiceExport, type ServiceImport } from '../src/servicemirror/mcs/types.js';
import { inParallel, sleep } from './async.js';
import type { BenchCluster } from './local-cluster.js';
import { ObjectWatch, Waiters, type WatchEventType } from './watch.js';

export const MCS_SLICES = `endpointslice.kubernetes.io/managed-by=${MCS_MANAGED_BY}`;

/** One cluster's imports: "ns/name" keys. */
interface ClusterImports {
    present: Set<string>;
    withIps: Set<string>;
    /** key → slice name → its endpoints. */
    slices: Map<string, Map<string, number>>;
}

export class ImportWatch {
    private readonly clusters = new Map<string, ClusterImports>();
    /** "ns/name" → when it was first imported in every cluster. */
    readonly importedAt = new Map<string, number>();
    /** "ns/name" → when, imported before, it was first gone from every cluster. */
    readonly goneAt = new Map<string, number>();
    private readonly importedIn = new Map<string, number>();
    private readonly waiters = new Waiters();
    private watches: { stop(): Promise<void> }[] = [];

    static async start(clusters: ReadonlyMap<string, BenchCluster>): Promise<ImportWatch> {
        const watch = new ImportWatch();
        const fail = (err: Error) => watch.waiters.fail(err);
        for (const name of clusters.keys()) watch.clusters.set(name, { present: new Set(), withIps: new Set(), slices: new Map() });
        watch.watches = (
            await Promise.all(
                [...clusters].map(([name, c]) =>
                    Promise.all([
                        // A CRD just installed answers "storage is (re)initializing" for a while.
                        retried(() => ObjectWatch.start<ServiceImport & KubeObject>(c.admin, collectionPath(ServiceImports), '', (t, si, at) => watch.onImport(name, t, si, at), fail)),
                        ObjectWatch.start<V1EndpointSlice & KubeObject>(c.admin, collectionPath(EndpointSlices), MCS_SLICES, (t, s, at) => watch.onSlice(name, t, s, at), fail),
                    ]),
                ),
            )
        ).flat();
        return watch;
    }

    private onImport(cluster: string, type: WatchEventType, si: ServiceImport, at: number): void {
        const state = this.clusters.get(cluster)!;
        const key = `${si.metadata!.namespace}/${si.metadata!.name}`;
        if (type === 'DELETED') {
            state.present.delete(key);
            state.withIps.delete(key);
        } else {
            state.present.add(key);
            if ((si.spec?.ips ?? []).length > 0) state.withIps.add(key);
            else state.withIps.delete(key);
        }
        this.settle(key, at);
    }

    private onSlice(cluster: string, type: WatchEventType, slice: V1EndpointSlice, at: number): void {
        const name = slice.metadata?.labels?.[LABEL_MCS_SERVICE_NAME];
        if (!name) return;
        const state = this.clusters.get(cluster)!;
        const key = `${slice.metadata!.namespace}/${name}`;
        const slices = state.slices.get(key) ?? new Map<string, number>();
        state.slices.set(key, slices);
        if (type === 'DELETED') slices.delete(slice.metadata!.name!);
        else slices.set(slice.metadata!.name!, (slice.endpoints ?? []).length);
        if (slices.size === 0) state.slices.delete(key);
        this.settle(key, at);
    }

    private settle(key: string, at: number): void {
        let imported = 0;
        let gone = 0;
        for (const state of this.clusters.values()) {
            const slices = state.slices.get(key);
            if (state.withIps.has(key) && [...(slices?.values() ?? [])].some((n) => n > 0)) imported++;
            if (!state.present.has(key) && !slices) gone++;
        }
        this.importedIn.set(key, imported);
        if (imported === this.clusters.size && !this.importedAt.has(key)) this.importedAt.set(key, at);
        if (gone === this.clusters.size && this.importedAt.has(key) && !this.goneAt.has(key)) this.goneAt.set(key, at);
        this.waiters.wake(at);
    }

    /** When all of `keys` have been imported everywhere; rejects after timeoutMs, saying how many were. */
    allImported(keys: readonly string[], timeoutMs: number): Promise<number> {
        let done = 0;
        const check = () => {
            while (done < keys.length && this.importedAt.has(keys[done]!)) done++;
            return done === keys.length;
        };
        const partial = () => `${keys.filter((k) => this.importedAt.has(k)).length} of ${keys.length} imported in every cluster`;
        return this.waiters.until(`${keys.length} imports in every cluster`, check, timeoutMs, partial);
    }

    imported(key: string, timeoutMs: number): Promise<number> {
        return this.waiters.until(`${key} imported in every cluster`, () => this.importedAt.has(key), timeoutMs, () => `in ${this.importedIn.get(key) ?? 0} clusters`);
    }

    gone(key: string, timeoutMs: number): Promise<number> {
        return this.waiters.until(`${key} gone from every cluster`, () => this.goneAt.has(key), timeoutMs);
    }

    /** Endpoints of the MCS slices of `key` in each cluster (what a floor's slice should carry). */
    endpointsOf(key: string): Record<string, number> {
        return Object.fromEntries([...this.clusters].map(([name, s]) => [name, [...(s.slices.get(key)?.values() ?? [])].reduce((a, b) => a + b, 0)]));
    }

    async stop(): Promise<void> {
        await Promise.all(this.watches.map((w) => w.stop()));
    }
}

async function retried<T>(fn: () => Promise<T>, timeoutMs = 30_000): Promise<T> {
    const deadline = performance.now() + timeoutMs;
    for (;;) {
        try {
            return await fn();
        } catch (err) {
            if (!(err instanceof ApiError) || performance.now() > deadline) throw err;
            await sleep(500);
        }
    }
}

/** At most `n` of the calls through it at once, the others waiting in order. */
class Gate {
    private readonly queue: (() => void)[] = [];
    constructor(private free: number) {}

    async run<T>(fn: () => Promise<T>): Promise<T> {
        if (this.free > 0) this.free--;
        else await new Promise<void>((r) => this.queue.push(r));
        try {
            return await fn();
        } finally {
            const next = this.queue.shift();
            if (next) next();
            else this.free++;
        }
    }
}

export interface FloorCluster {
    name: string;
    cluster: BenchCluster;
    /** Endpoints of each import's slice here. */
    endpoints: number;
    /** Where the exports live: one ServiceExport status write per import here too. */
    exporting: boolean;
}

const QUERY = { fieldManager: 'bench.mesh-endpoints.io' };

/**
 * The ServiceExports the floor's status writes go to (in the exporting cluster; made before the
 * floor, untimed, as the burst's exports are the user's and not the controller's writes).
 */
export async function floorExports(cluster: BenchCluster, ns: string, names: readonly string[]): Promise<Map<string, ServiceExport>> {
    const exports = new Map<string, ServiceExport>();
    await inParallel(names, 16, async (name) => {
        exports.set(name, await cluster.admin.create<ServiceExport>(collectionPath(ServiceExports, ns), { apiVersion: 'multicluster.x-k8s.io/v1beta1', kind: 'ServiceExport', metadata: { name } }));
    });
    return exports;
}

/**
 * In every cluster at once, per import in `ns`, the writes the controller makes, shaped as it
 * shapes them: the derived Service (ClusterIP, one port), then the ServiceImport with its ips,
 * then side by side its status, one slice (owned by the Service, `endpoints` endpoints) and, in
 * the exporting cluster, the ServiceExport's conditions. Each import's chain in order; `inFlight`
 * writes at a time per cluster (its own client). Resolves with each cluster's ms from the common
 * start to its last write's answer.
 */
export async function mcsFloor(clusters: readonly FloorCluster[], ns: string, names: readonly string[], exports: Map<string, ServiceExport>, inFlight: number): Promise<Map<string, number>> {
    const started = performance.now();
    const took = new Map<string, number>();
    await Promise.all(
        clusters.map(async (fc) => {
            const rest = fc.cluster.admin.fork({ component: 'bench-floor' });
            const gate = new Gate(inFlight);
            try {
                await inParallel(names, inFlight, async (name) => floorChain(rest, gate, fc, ns, name, exports.get(name)));
                took.set(fc.name, performance.now() - started);
            } finally {
                rest.close();
            }
        }),
    );
    return took;
}

async function floorChain(rest: KubeRest, gate: Gate, fc: FloorCluster, ns: string, name: string, exp: ServiceExport | undefined): Promise<void> {
    const derived = derivedServiceName(name);
    const svc = await gate.run(() =>
        rest.create<V1Service>(
            collectionPath(Services, ns),
            {
                apiVersion: 'v1',
                kind: 'Service',
                metadata: { name: derived, namespace: ns, labels: { [MCS_OWNED_LABEL]: name, [LABEL_MCS_SERVICE_NAME]: name }, annotations: {} },
                spec: { type: 'ClusterIP', sessionAffinity: 'None', ports: [{ name: 'http', port: 80, protocol: 'TCP', targetPort: 80 as unknown as V1ServicePort['targetPort'] }] },
            },
            QUERY,
        ),
    );
    const si = await gate.run(() =>
        rest.create<ServiceImport>(
            collectionPath(ServiceImports, ns),
            {
                apiVersion: 'multicluster.x-k8s.io/v1beta1',
                kind: 'ServiceImport',
                metadata: { name, namespace: ns, labels: { [MCS_OWNED_LABEL]: name }, annotations: {} },
                spec: { type: 'ClusterSetIP', ports: [{ name: 'http', protocol: 'TCP', port: 80 }], ips: svc.spec?.clusterIPs ?? [svc.spec!.clusterIP!], ipFamilies: svc.spec?.ipFamilies ?? ['IPv4'] },
            },
            QUERY,
        ),
    );
    const now = new Date().toISOString();
    const condition = (type: string, status: string, reason: string) => ({ type, status, reason, message: reason, lastTransitionTime: now, observedGeneration: exp?.metadata?.generation ?? 1 });
    await Promise.all([
        gate.run(() => rest.replace(objectPath(ServiceImports, ns, name, 'status'), { ...si, status: { clusters: [{ cluster: 'east' }] } }, QUERY)),
        gate.run(() => rest.createForMetadata(collectionPath(EndpointSlices, ns), floorSlice(fc, ns, name, svc), QUERY)),
        fc.exporting && exp
            ? gate.run(() =>
                  rest.replace(
                      objectPath(ServiceExports, ns, name, 'status'),
                      { ...exp, status: { conditions: [condition('Valid', 'True', 'Valid'), condition('Conflict', 'False', 'NoConflicts'), condition('Ready', 'True', 'Ready')] } },
                      QUERY,
                  ),
              )
            : undefined,
    ]);
}

function floorSlice(fc: FloorCluster, ns: string, name: string, svc: V1Service): V1EndpointSlice {
    const derived = svc.metadata!.name!;
    return {
        apiVersion: 'discovery.k8s.io/v1',
        kind: 'EndpointSlice',
        metadata: {
            generateName: `${derived}-`,
            namespace: ns,
            labels: { 'endpointslice.kubernetes.io/managed-by': MCS_MANAGED_BY, 'kubernetes.io/service-name': derived, [LABEL_MCS_SERVICE_NAME]: name, [LABEL_SOURCE_CLUSTER]: 'east' },
            ownerReferences: [{ apiVersion: 'v1', kind: 'Service', name: derived, uid: svc.metadata!.uid!, controller: true, blockOwnerDeletion: true }],
        },
        addressType: 'IPv4',
        ports: [{ name: 'http', port: 8080, protocol: 'TCP' }],
        endpoints: Array.from({ length: fc.endpoints }, (_, j) => ({ addresses: [`10.200.${j}.${(Number(name.replace(/\D/g, '')) % 250) + 1}`], conditions: { ready: true, serving: true, terminating: false } })),
    };
}

/** Everything a floor left in `ns` of every cluster (no garbage collector runs here), so no controller finds it. */
export async function clearFloor(clusters: readonly BenchCluster[], ns: string): Promise<void> {
    await Promise.all(
        clusters.map(async (c) => {
            for (const rt of [EndpointSlices, ServiceImports, ServiceExports]) await c.admin.request('DELETE', collectionPath(rt, ns), { timeoutMs: 120_000 });
            // Services have no delete-collection: one by one.
            const services = await c.admin.get<{ items: V1Service[] }>(collectionPath(Services, ns));
            await inParallel(services.items, 16, async (s) => void (await c.admin.delete(objectPath(Services, ns, s.metadata!.name!))));
        }),
    );
}
