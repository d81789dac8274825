// The external-workloads controller: watches Services, ExternalWorkloads and our own
// EndpointSlices, and converges each Service's slices. Data flows one way: informer
// events → Service keys in the queue → syncService (read caches, plan, write). The
// planning is pure (desired.ts, endpointslice/); this file only wires and writes, and the
// reconciler runtime (kube/controller.ts) owns the queue, retries and leader gating.
import type { V1Service } from '@kubernetes/client-node';
import { LABEL_SERVICE_NAME } from '../endpointslice/slice.js';
import { Controller, replayOnly } from '../kube/controller.js';
import { Informer } from '../kube/informer.js';
import { logFn, type Logger } from '../kube/log.js';
import type { ControllerDeps, Runnable } from '../kube/manager.js';
import { controllerRateLimiter } from '../kube/ratelimit.js';
import { ExternalWorkloads, Services } from '../kube/resources.js';
import { SharedValues } from '../kube/shared-values.js';
import { SliceOwner } from '../kube/slice-owner.js';
import type { OwnedSlice } from '../kube/slice-cache.js';
import { sameButResourceVersion, type KubeObject } from '../kube/store.js';
import { selectsWorkload } from './desired.js';
import { HealthCheckMetrics } from './health/metrics.js';
import { HealthProber, type HealthCheckOptions } from './health/prober.js';
import { ReadyWriter } from './health/ready-writer.js';
import { WorkloadGroupsController } from './groups/controller.js';
import { ExternalWorkloadsMetrics } from './metrics.js';
import { serviceIndexValues, servicesIndexLookups, workloadIndexValues, workloadsIndexLookups } from './selection.js';
import { cacheService, type CachedService } from './cached-service.js';
import { cacheWorkload, type CachedWorkload } from './compact.js';
import { DEFAULT_MANAGED_BY, planService } from './plan.js';
import { WORKLOAD_API_VERSION, WORKLOAD_KIND, type WorkloadProblem } from './types.js';

export { DEFAULT_MANAGED_BY };
/**
 * Services synced at once, as upstream's --concurrent-service-endpoint-syncs. A sync mostly
 * waits on one write, so under churn across many Services two workers left changes queued
 * behind each other (measured: bench cluster-scale, churn p50 339 ms with 2).
 */
export const DEFAULT_CONCURRENT_SYNCS = 5;
/** The Lease its replicas elect a leader with (in the controller's namespace), unless --lease-name says otherwise. */
export const EXTERNAL_WORKLOADS_LEASE = 'mesh-endpoints-external-workloads';

export interface ExternalWorkloadsOptions extends ControllerDeps {
    /** Watch one namespace; every namespace when undefined. */
    namespace?: string;
    managedBy?: string;
    maxEndpointsPerSlice?: number;
    /**
     * Workload changes to a Service within this window of its last sync share one sync; the
     * first change to a quiet Service syncs at once (WorkQueue.addCoalesced).
     */
    batchPeriodMs?: number;
    workers?: number;
    /** Every cached object is re-delivered, and keys given up on are retried, this often (0 = never). */
    resyncMs?: number;
    /** Retries of a failing Service before it waits for the next resync. */
    maxRetries?: number;
    /** Probe the workloads that ask for it and write their Ready condition (health/); off when undefined. */
    healthChecks?: HealthCheckOptions;
    /** Materialise the workloads of VMs that register themselves (groups/); off when false or undefined. */
    workloadGroups?: boolean;
}

type Key = string;
const BY_LABEL = 'label';
const BY_SELECTOR = 'selector';
const keyOf = (namespace: string, name: string): Key => `${namespace}/${name}`;

export class ExternalWorkloadsController implements Runnable {
    readonly name = 'external-workloads';
    readonly services: Informer<CachedService>;
    readonly workloads: Informer<CachedWorkload>;
    readonly slices: SliceOwner;
    readonly informers: Informer<KubeObject>[];
    readonly metrics: ExternalWorkloadsMetrics;
    /** The health checks, when on: their Ready writes come back through the workload informer like anyone's. */
    readonly health: HealthProber | undefined;
    /** VMs that register themselves, when on: its caches are optional (the group CRD may come later). */
    readonly groups: WorkloadGroupsController | undefined;
    readonly optionalInformers: Informer<KubeObject>[];
    private readonly managedBy: string;
    private readonly log: Logger;
    private readonly controller: Controller<Key>;
    /** Problems already reported: workload, reason and message. */
    private readonly reported = new Set<string>();

    constructor(private readonly opts: ExternalWorkloadsOptions) {
        this.managedBy = opts.managedBy ?? DEFAULT_MANAGED_BY;
        this.log = opts.logger.child({ controller: this.name });
        const log = logFn(this.log);
        const common = { namespace: opts.namespace, log };
        this.metrics = new ExternalWorkloadsMetrics(opts.registry);
        // Both caches keep only what is read here (cached-service.ts, compact.ts); a version that
        // changes none of it is cached without telling anyone, and counted.
        const ignoreUnchanged = (resource: string) => (cached: KubeObject, next: KubeObject) => {
            const same = sameButResourceVersion(cached, next);
            if (same) this.metrics.ignoredUpdates.inc({ resource });
            return same;
        };
        this.services = new Informer<CachedService>(opts.rest, { resource: Services, transform: cacheService, unchanged: ignoreUnchanged('Service'), ...common });
        const compacting = { keepConditions: opts.healthChecks !== undefined, shared: new SharedValues() };
        this.workloads = new Informer<CachedWorkload>(opts.rest, {
            resource: ExternalWorkloads,
            transform: (obj) => cacheWorkload(obj, compacting),
            unchanged: ignoreUnchanged(WORKLOAD_KIND),
            ...common,
        });
        this.workloads.store.addIndex(BY_LABEL, workloadIndexValues);
        this.services.store.addIndex(BY_SELECTOR, serviceIndexValues);
        this.slices = new SliceOwner({ rest: opts.rest, managedBy: this.managedBy, sliceWrites: this.metrics.sliceWrites, ...common });
        this.informers = [this.services, this.workloads, this.slices.informer];
        this.controller = new Controller<Key>({
            name: this.name,
            reconciler: {
                reconcile: (key) => this.syncService(key),
                // A slice the apiserver would refuse is reported on its Service.
                eventTarget: (key) => {
                    const [namespace, name] = key.split('/') as [string, string];
                    const uid = this.services.store.get(namespace, name)?.metadata?.uid;
                    return { apiVersion: 'v1', kind: 'Service', metadata: { namespace, name, uid } };
                },
            },
            metrics: opts.queueMetrics,
            events: opts.events,
            // Upstream's 1 s base: a failing Service should not hammer the apiserver.
            rateLimiter: controllerRateLimiter({ baseMs: 1000 }),
            workers: opts.workers ?? DEFAULT_CONCURRENT_SYNCS,
            log: this.log,
            resyncMs: opts.resyncMs,
            maxRetries: opts.maxRetries,
        });
        this.registerHandlers();
        this.groups = opts.workloadGroups ? new WorkloadGroupsController({ ...opts, logger: this.log }) : undefined;
        this.optionalInformers = this.groups?.informers ?? [];
        if (opts.healthChecks) {
            this.health = new HealthProber({
                workloads: this.workloads,
                writer: new ReadyWriter({ rest: opts.rest, workloads: this.workloads }),
                events: opts.events,
                metrics: new HealthCheckMetrics(opts.registry),
                queueMetrics: opts.queueMetrics,
                logger: this.log.child({ component: 'health-checks' }),
                options: opts.healthChecks,
            });
        }
    }

    private get batchMs(): number {
        return this.opts.batchPeriodMs ?? 500;
    }

    private registerHandlers(): void {
        this.controller.watch(this.services, (svc) => [keyOf(svc.metadata!.namespace!, svc.metadata!.name!)]);
        // The Services that select a workload, before or after its change (a label change moves
        // it from some Services to others); changes in a burst share a sync.
        // Not replayed: the Services' own watch replays every one a workload could name.
        this.controller.watch(this.workloads, (w) => this.servicesSelecting(w), { coalesceMs: this.batchMs, replay: false });
        // Someone else's edit or delete of our slices is undone (the echoes of our own writes are ignored).
        const serviceOf = (slice: OwnedSlice) => {
            const service = slice.metadata?.labels?.[LABEL_SERVICE_NAME];
            return service ? [keyOf(slice.metadata!.namespace!, service)] : [];
        };
        this.controller.watch(this.slices.foreignChanges, serviceOf, { delayMs: Math.max(1000, this.batchMs) });
        // And the Services our slices name start each term: one deleted while no replica led is
        // gone from the cache, and its sync deletes the slices (else they would wait for the
        // resync). Their changes are the foreign ones above, not every echo of our own writes.
        this.controller.watch(replayOnly(() => this.slices.informer.store.list()), serviceOf);
    }

    private servicesSelecting(w: CachedWorkload): Key[] {
        const keys: Key[] = [];
        for (const lookup of servicesIndexLookups(w)) {
            for (const svc of this.services.store.byIndex(BY_SELECTOR, lookup)) {
                if (selectsWorkload(svc, w)) keys.push(keyOf(svc.metadata!.namespace!, svc.metadata!.name!));
            }
        }
        return keys;
    }

    startLeading(): void {
        this.slices.newTerm();
        this.reported.clear();
        // Every Service, and every Service our slices name: the runtime replays what is watched.
        this.controller.start();
        this.health?.start();
        this.groups?.startLeading();
    }

    async stopLeading(): Promise<void> {
        await Promise.all([this.controller.stop(), this.health?.stop(), this.groups?.stopLeading()]);
    }

    /** Converges the slices of one Service. Throws to be retried with backoff. */
    async syncService(key: Key): Promise<void> {
        const [namespace, name] = key.split('/') as [string, string];
        const service = this.services.store.get(namespace, name);
        if (!service) {
            // Gone: our slices go (nothing else may collect them).
            await this.slices.deleteAll(this.slices.slicesOf(namespace, name));
            this.slices.forgetService(namespace, name);
            this.metrics.recordService(key, 0, 0, 0);
            return;
        }
        // Plain synchronous planning: a Service of 10 000 workloads holds the loop for one
        // plan (bench planner), and the runtime's other workers wait that long, no longer.
        const existing = this.slices.currentSlices({ namespace, name, uid: service.metadata!.uid! });
        const plan = planService(service, this.candidates(service), existing, { managedBy: this.managedBy, maxEndpointsPerSlice: this.opts.maxEndpointsPerSlice });
        if (plan.problems.length > 0) this.reportProblems(plan.problems);
        const writes = await this.slices.apply(plan);
        this.metrics.endpointsAdded.observe(plan.endpointsAdded);
        this.metrics.endpointsRemoved.observe(plan.endpointsRemoved);
        this.metrics.recordService(key, plan.actualSlices, plan.desiredSlices, plan.endpoints);
        // Asked first: at the default level (info) the fields would be built for nothing at every sync that writes.
        if (writes > 0 && this.log.isLevelEnabled('debug')) this.log.debug({ service: key, writes, ...counts(plan) }, 'synced');
    }

    /** The workloads the Service may select, found through the label index: the cost follows what it selects, not the namespace. */
    private candidates(service: V1Service): CachedWorkload[] {
        const lookups = workloadsIndexLookups(service);
        if (lookups === undefined) return this.workloads.store.list(service.metadata?.namespace ?? '');
        let candidates = this.workloads.store.byIndex(BY_LABEL, lookups[0]!);
        for (const lookup of lookups.slice(1)) {
            if (candidates.length === 0) break;
            const other = this.workloads.store.byIndex(BY_LABEL, lookup);
            if (other.length < candidates.length) candidates = other;
        }
        return candidates;
    }

    /**
     * Each distinct problem is counted and reported once per leadership term, however
     * many Services select the workload and however often they sync.
     */
    private reportProblems(problems: WorkloadProblem[]): void {
        for (const p of problems) {
            const id = `${p.workload.uid || `${p.workload.namespace}/${p.workload.name}`}|${p.reason}|${p.message}`;
            if (this.reported.has(id)) continue;
            if (this.reported.size >= 50_000) this.reported.clear();
            this.reported.add(id);
            this.metrics.invalidInputs.inc({ reason: p.reason });
            this.opts.events.record(
                {
                    apiVersion: WORKLOAD_API_VERSION,
                    kind: WORKLOAD_KIND,
                    metadata: { namespace: p.workload.namespace, name: p.workload.name, uid: p.workload.uid || undefined },
                },
                'Warning',
                p.reason,
                p.message,
            );
        }
    }
}

function counts(plan: { creates: unknown[]; updates: unknown[]; deletes: unknown[] }) {
    return { creates: plan.creates.length, updates: plan.updates.length, deletes: plan.deletes.length };
}
