// Shared by the controller integration tests: running a controller in-process against
// the test cluster, counting its API writes, and reading back what it wrote.
import type { V1Endpoint, V1EndpointSlice, V1Service } from '@kubernetes/client-node';
import { Registry } from 'prom-client';
import { DEFAULT_MANAGED_BY, ExternalWorkloadsController, type ExternalWorkloadsOptions } from '../../src/externalworkloads/controller.js';
import { EventRecorder } from '../../src/kube/events.js';
import { newLogger, logFn } from '../../src/kube/log.js';
import { Manager } from '../../src/kube/manager.js';
import { KubeRest, type RequestOpts } from '../../src/kube/rest.js';
import { ApiError } from '../../src/kube/errors.js';
import { collectionPath, EndpointSlices, Events, ExternalWorkloads, objectPath, Services } from '../../src/kube/resources.js';
import type { KubeObject } from '../../src/kube/store.js';
import { WorkQueueMetrics } from '../../src/kube/workqueue-metrics.js';
import { eventually, type TestCluster } from '../../src/testing/harness.js';

/** A client that counts what it sends, by method: the evidence for "writes nothing". */
export class CountingRest extends KubeRest {
    readonly counts: Record<string, number> = {};
    /** Every write the apiserver refused (Events included): the evidence for "never sends a slice it rejects". */
    readonly rejected: RejectedWrite[] = [];
    override request<T>(method: string, path: string, o?: RequestOpts): Promise<T> {
        if (!path.includes('/events')) this.counts[method] = (this.counts[method] ?? 0) + 1;
        const sent = super.request<T>(method, path, o);
        if (method === 'GET') return sent;
        return sent.catch((err: unknown) => {
            const api = err instanceof ApiError ? err : undefined;
            this.rejected.push({ method, path, code: api?.code ?? 0, reason: api?.reason ?? '', message: (err as Error).message });
            throw err;
        });
    }
    writes(): number {
        return (this.counts.POST ?? 0) + (this.counts.PUT ?? 0) + (this.counts.DELETE ?? 0) + (this.counts.PATCH ?? 0);
    }
    reset(): void {
        for (const k of Object.keys(this.counts)) delete this.counts[k];
    }
}

export interface RunningController {
    controller: ExternalWorkloadsController;
    manager: Manager;
    rest: CountingRest;
    registry: Registry;
    /** Resolves once the caches have synced (and election has begun). */
    started: Promise<void>;
    stop(): Promise<void>;
}

export async function runExternalWorkloads(
    cluster: TestCluster,
    opts: Partial<Omit<ExternalWorkloadsOptions, 'rest'>> & {
        rest?: CountingRest;
        leaseNamespace?: string;
        identity?: string;
        /** false: return at once, without waiting for the caches (which may never sync, e.g. when a list is refused). */
        waitForSync?: boolean;
    } = {},
): Promise<RunningController> {
    // The admin's by default; a ServiceAccount's to prove RBAC.
    const rest = opts.rest ?? new CountingRest(cluster.kubeConfig());
    const logger = newLogger(process.env.TEST_LOG_LEVEL ?? 'silent');
    const registry = new Registry();
    const manager = new Manager({
        rest,
        logger,
        registry,
        leaderElection: opts.leaseNamespace
            ? {
                  namespace: opts.leaseNamespace,
                  name: 'mesh-endpoints-external-workloads',
                  identity: opts.identity,
                  leaseDurationMs: 4000,
                  renewDeadlineMs: 2500,
                  retryPeriodMs: 500,
              }
            : undefined,
    });
    // The Manager's client, as the process has (writes only while leading), or one guarded as the test says.
    const client = opts.isLeader ? rest.guarded(opts.isLeader) : manager.client;
    const controller = new ExternalWorkloadsController({
        logger,
        registry,
        queueMetrics: new WorkQueueMetrics(registry, 'mesh_endpoints'),
        events: new EventRecorder(client, 'mesh-endpoints-external-workloads', logFn(logger)),
        isLeader: manager.isLeader,
        batchPeriodMs: 100,
        ...opts,
        rest: client,
    });
    manager.add(controller);
    const started = manager.start();
    if (opts.waitForSync ?? true) await started;
    return { controller, manager, rest, registry, started, stop: () => manager.stop() };
}

export async function slicesOf(cluster: TestCluster, ns: string, service: string, managedBy = DEFAULT_MANAGED_BY) {
    const list = await cluster.admin.get<{ items: V1EndpointSlice[] }>(collectionPath(EndpointSlices, ns), {
        labelSelector: `kubernetes.io/service-name=${service},endpointslice.kubernetes.io/managed-by=${managedBy}`,
    });
    return list.items;
}

export function addressesOf(slices: V1EndpointSlice[]): string[] {
    return slices.flatMap((s) => (s.endpoints ?? []).flatMap((e) => e.addresses)).sort();
}

export function sizesOf(slices: V1EndpointSlice[]): number[] {
    return slices.map((s) => s.endpoints?.length ?? 0).sort((a, b) => b - a);
}

export async function createService(cluster: TestCluster, ns: string, svc: V1Service): Promise<V1Service> {
    return cluster.admin.create<V1Service>(collectionPath(Services, ns), { apiVersion: 'v1', kind: 'Service', ...svc });
}

export interface WorkloadSpec {
    name: string;
    labels?: Record<string, string>;
    ips: string[];
    ports?: { name?: string; port: number; protocol?: string }[];
    ready?: boolean;
    finalizers?: string[];
    annotations?: Record<string, string>;
}

/** Creates a v1beta1 ExternalWorkload, then its Ready condition through the status subresource. */
export async function createWorkload(cluster: TestCluster, ns: string, w: WorkloadSpec): Promise<void> {
    const path = collectionPath(ExternalWorkloads, ns);
    const created = await cluster.admin.create<{ metadata: { resourceVersion: string } }>(path, {
        apiVersion: 'workload.linkerd.io/v1beta1',
        kind: 'ExternalWorkload',
        metadata: { name: w.name, labels: w.labels ?? { app: 'web' }, annotations: w.annotations, finalizers: w.finalizers },
        spec: {
            meshTLS: { identity: `${w.name}.ns.serviceaccount.identity.linkerd.cluster.local`, serverName: w.name },
            workloadIPs: w.ips.map((ip) => ({ ip })),
            ports: w.ports ?? [{ name: 'http', port: 8080 }],
        },
    } as never);
    if (w.ready ?? true) await setReady(cluster, ns, w.name, true, created.metadata.resourceVersion);
}

export async function setReady(cluster: TestCluster, ns: string, name: string, ready: boolean, _rv?: string): Promise<void> {
    await cluster.admin.mergePatch(`${collectionPath(ExternalWorkloads, ns)}/${name}/status`, {
        status: { conditions: [{ type: 'Ready', status: ready ? 'True' : 'False', lastTransitionTime: new Date().toISOString().replace(/\.\d+Z$/, 'Z') }] },
    });
}

export async function metricValue(registry: Registry, name: string, labels: Record<string, string> = {}): Promise<number> {
    const metric = await registry.getSingleMetric(name)?.get();
    const match = metric?.values.find((v) => Object.entries(labels).every(([k, val]) => v.labels[k] === val));
    return match?.value ?? 0;
}

export interface RejectedWrite {
    method: string;
    path: string;
    /** 0 for a transport failure. */
    code: number;
    reason: string;
    message: string;
}

/** An object change, as a write returned it (or a deletion), that a test waits for the controller to act on. */
export interface ObjectChange {
    informer: 'services' | 'workloads' | 'slices';
    namespace: string;
    name: string;
    /** The resourceVersion the write returned; the informer must have delivered this or later. */
    resourceVersion?: string;
    deleted?: boolean;
}

/**
 * Watches a controller from outside: which informer events it has been handed and which
 * Service syncs finished without error, on one shared clock of ticks. A test asserting an
 * absence ("no slices") waits with `syncedAfter` for a sync that began after the controller
 * saw the change, so it is not merely looking before the controller did anything.
 */
export class SyncLog {
    private tick = 0;
    /** informer/namespace/name → what was last delivered, at which tick. */
    private readonly delivered = new Map<string, { tick: number; resourceVersion: bigint; deleted: boolean }>();
    /** Service key → start tick of the latest sync that succeeded. */
    private readonly succeeded = new Map<string, number>();
    /** Service key → syncs that succeeded. */
    private readonly counts = new Map<string, number>();

    constructor(controller: ExternalWorkloadsController) {
        const sync = controller.syncService.bind(controller);
        controller.syncService = async (key: string) => {
            const started = ++this.tick;
            await sync(key);
            this.succeeded.set(key, Math.max(started, this.succeeded.get(key) ?? 0));
            this.counts.set(key, (this.counts.get(key) ?? 0) + 1);
        };
        const informers = { services: controller.services, workloads: controller.workloads, slices: controller.slices.informer };
        for (const [which, informer] of Object.entries(informers)) {
            const seen = (obj: KubeObject, deleted: boolean) => {
                const { namespace, name, resourceVersion } = obj.metadata ?? {};
                this.delivered.set(`${which}/${namespace}/${name}`, { tick: ++this.tick, resourceVersion: BigInt(resourceVersion ?? 0), deleted });
            };
            informer.on({ add: (o) => seen(o, false), update: (_, o) => seen(o, false), delete: (o) => seen(o, true) });
        }
    }

    /** Syncs of `namespace/name` that succeeded so far. */
    count(key: string): number {
        return this.counts.get(key) ?? 0;
    }

    /** Resolves once a sync of `key` that started after the controller's cache held `change` has succeeded. */
    async syncedAfter(key: string, change: ObjectChange, timeoutMs = 15_000): Promise<void> {
        const wanted = BigInt(change.resourceVersion ?? 0);
        await eventually(`a sync of ${key} after ${change.informer} ${change.namespace}/${change.name} changed`, () => {
            const seen = this.delivered.get(`${change.informer}/${change.namespace}/${change.name}`);
            if (!seen || (change.deleted ? !seen.deleted : seen.resourceVersion < wanted)) return false;
            return (this.succeeded.get(key) ?? 0) > seen.tick;
        }, timeoutMs);
    }
}

export interface EventSummary {
    type?: string;
    reason?: string;
    message?: string;
    count?: number;
    involvedObject: { kind?: string; name?: string; uid?: string; apiVersion?: string };
}

/** The Events recorded about one object, read from the apiserver. */
export async function eventsAbout(cluster: TestCluster, ns: string, name: string, reason?: string): Promise<EventSummary[]> {
    const fields = [`involvedObject.name=${name}`, ...(reason ? [`reason=${reason}`] : [])];
    const list = await cluster.admin.get<{ items: EventSummary[] }>(collectionPath(Events, ns), { fieldSelector: fields.join(',') });
    return list.items;
}

/** A CRD with every CEL rule removed: the schema as it was before the rules existed. */
export function withoutCelRules<T>(crd: T): T {
    const strip = (node: unknown): unknown => {
        if (Array.isArray(node)) return node.map(strip);
        if (typeof node !== 'object' || node === null) return node;
        return Object.fromEntries(
            Object.entries(node)
                .filter(([key]) => key !== 'x-kubernetes-validations')
                .map(([key, value]) => [key, strip(value)]),
        );
    };
    return strip(crd) as T;
}

/** The status of the workload's Ready condition as stored, undefined without one. */
export async function workloadReady(cluster: TestCluster, ns: string, name: string): Promise<string | undefined> {
    const workload = await cluster.admin.get<{ status?: { conditions?: { type: string; status: string }[] } }>(objectPath(ExternalWorkloads, ns, name));
    return workload.status?.conditions?.find((c) => c.type === 'Ready')?.status;
}

export async function workloadUid(cluster: TestCluster, ns: string, name: string): Promise<string> {
    const workload = await cluster.admin.get<{ metadata: { uid: string } }>(objectPath(ExternalWorkloads, ns, name));
    return workload.metadata.uid;
}

/** Endpoints of all slices, by the workload their targetRef names. */
export function endpointsByWorkload(slices: V1EndpointSlice[]): Map<string, V1Endpoint[]> {
    const byName = new Map<string, V1Endpoint[]>();
    for (const slice of slices) {
        for (const endpoint of slice.endpoints ?? []) {
            const name = endpoint.targetRef?.name ?? '';
            byName.set(name, [...(byName.get(name) ?? []), endpoint]);
        }
    }
    return byName;
}
