// Shared by the controller integration tests: running a controller in-process against
// the test cluster, counting its API writes, and reading back what it wrote.
import type { V1EndpointSlice, V1Service } from '@kubernetes/client-node';
import { Registry } from 'prom-client';
import { DEFAULT_MANAGED_BY, ExternalWorkloadsController, type ExternalWorkloadsOptions } from '../../src/externalworkloads/controller.js';
import { EventRecorder } from '../../src/kube/events.js';
import { newLogger, logFn } from '../../src/kube/log.js';
import { Manager } from '../../src/kube/manager.js';
import { KubeRest, type RequestOpts } from '../../src/kube/rest.js';
import { collectionPath, EndpointSlices, ExternalWorkloads, Services } from '../../src/kube/resources.js';
import { WorkQueueMetrics } from '../../src/kube/workqueue-metrics.js';
import type { TestCluster } from '../../src/testing/harness.js';

/** A client that counts what it sends, by method: the evidence for "writes nothing". */
export class CountingRest extends KubeRest {
    readonly counts: Record<string, number> = {};
    override request<T>(method: string, path: string, o?: RequestOpts): Promise<T> {
        if (!path.includes('/events')) this.counts[method] = (this.counts[method] ?? 0) + 1;
        return super.request<T>(method, path, o);
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
    stop(): Promise<void>;
}

export async function runExternalWorkloads(
    cluster: TestCluster,
    opts: Partial<ExternalWorkloadsOptions> & { leaseNamespace?: string; identity?: string } = {},
): Promise<RunningController> {
    const rest = new CountingRest(cluster.kubeConfig());
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
    const controller = new ExternalWorkloadsController({
        rest,
        logger,
        registry,
        queueMetrics: new WorkQueueMetrics(registry, 'mesh_endpoints'),
        events: new EventRecorder(rest, 'mesh-endpoints-external-workloads', logFn(logger)),
        isLeader: manager.isLeader,
        batchPeriodMs: 100,
        ...opts,
    });
    manager.add(controller);
    await manager.start();
    return { controller, manager, rest, registry, stop: () => manager.stop() };
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
}

/** Creates a v1beta1 ExternalWorkload, then its Ready condition through the status subresource. */
export async function createWorkload(cluster: TestCluster, ns: string, w: WorkloadSpec): Promise<void> {
    const path = collectionPath(ExternalWorkloads, ns);
    const created = await cluster.admin.create<{ metadata: { resourceVersion: string } }>(path, {
        apiVersion: 'workload.linkerd.io/v1beta1',
        kind: 'ExternalWorkload',
        metadata: { name: w.name, labels: w.labels ?? { app: 'web' }, finalizers: w.finalizers },
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
