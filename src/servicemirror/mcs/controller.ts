// The MCS controller (KEP-1645) of one cluster of the clusterset: this cluster plus the clusters
// its Links point at. No hub: every cluster's controller reads every member's ServiceExports and
// Services (the remote ones through the ClusterSet the Links publish into) and writes only here:
// the ServiceImport, its derived Service and their slices, and the conditions of this cluster's
// own ServiceExports. Each cluster computes the same resolution from the same exports, so each
// exporting cluster's ServiceExport says the same Conflict.
//
// Two reconcilers on the shared runtime, keyed by the imported Service (namespace/name), as
// Cilium's mcsapi has one controller per object it writes: the derived Service and its slices
// (derived-reconciler.ts), and the ServiceImport with the export's conditions
// (import-reconciler.ts). Each reacts to the other's writes through its watches. Served while
// the CRDs are installed (picked up live) and this cluster has a name (--cluster-name, else the
// ClusterProperty cluster.clusterset.k8s.io).
import type { V1EndpointSlice, V1Service } from '@kubernetes/client-node';
import { LABEL_MANAGED_BY, LABEL_SERVICE_NAME } from '../../endpointslice/slice.js';
import { Controller } from '../../kube/controller.js';
import type { EventSink } from '../../kube/events.js';
import { Informer } from '../../kube/informer.js';
import { logFn, optionalApiLog, type Logger } from '../../kube/log.js';
import { controllerRateLimiter } from '../../kube/ratelimit.js';
import type { KubeRest } from '../../kube/rest.js';
import { EndpointSlices, Services, ClusterProperties, ServiceExports, ServiceImports } from '../../kube/resources.js';
import { SharedValues } from '../../kube/shared-values.js';
import { SliceOwner } from '../../kube/slice-owner.js';
import type { KubeObject } from '../../kube/store.js';
import type { WorkQueueMetrics } from '../../kube/workqueue-metrics.js';
import { compactService } from '../cache/compact.js';
import type { ClusterSet, RemoteObjectRef } from './clusterset.js';
import { compactExport, compactSourceSlice, importMattersToDerived } from './cache.js';
import { DerivedReconciler } from './derived-reconciler.js';
import { ImportReconciler } from './import-reconciler.js';
import { concernsMcs, type McsCaches } from './members.js';
import { CLUSTER_ID_PROPERTY, LABEL_MCS_SERVICE_NAME, MCS_MANAGED_BY, MCS_OWNED_LABEL, type ServiceExport, type ServiceImport } from './types.js';

/** Upstream's endpointslice controller: the slices the local cluster's own endpoints are copied from. */
const UPSTREAM_MANAGED_BY = 'endpointslice-controller.k8s.io';

/**
 * Imports each reconciler converges at once. Each run has at most one write in flight, so at
 * most twice this many writes go to this cluster's apiserver at once: enough to keep a real
 * apiserver busy (bench/mcs-scale.ts), far below its own in-flight limits (200 mutating).
 */
export const DEFAULT_MCS_WORKERS = 16;

export interface McsOptions {
    /** This cluster's apiserver, through MCS's own share of the client rate limit. */
    rest: KubeRest;
    logger: Logger;
    events: EventSink;
    queueMetrics: WorkQueueMetrics;
    /** --cluster-name; else the ClusterProperty is read. */
    clusterName?: string;
    /** The clusters the Links point at. */
    clusterSet: ClusterSet;
    /** This cluster's namespaces: an import waits for its namespace. */
    namespaces: Informer<KubeObject>;
    maxEndpointsPerSlice: number;
    workers?: number;
    resyncMs?: number;
}

/** Why MCS is not served now, or undefined when it is. */
export type McsState = { serving: true; cluster: string } | { serving: false; reason: string };

type Local<T> = T & KubeObject;
type ClusterProperty = KubeObject & { spec?: { value?: string } };

const keyOf = (namespace: string | undefined, name: string | undefined): string[] => (namespace && name ? [`${namespace}/${name}`] : []);

export class McsController {
    readonly caches: McsCaches;
    readonly slices: SliceOwner;
    readonly informers: Informer<KubeObject>[];
    private readonly clusterProperties: Informer<ClusterProperty> | undefined;
    private readonly imports: Controller<string>;
    private readonly derived: Controller<string>;
    private readonly log: Logger;
    /** The state last logged, so each change is said once. */
    private lastState = '';

    constructor(private readonly opts: McsOptions) {
        this.log = opts.logger.child({ controller: 'mcs' });
        const log = logFn(this.log);
        const common = { log };
        const optional = { ...common, log: optionalApiLog(log) };
        const shared = new SharedValues();
        const services = new Informer<Local<V1Service>>(opts.rest, {
            resource: Services,
            // A derived Service is read as written (its uid owns slices, its ClusterIPs are the import's).
            transform: (svc) => (svc.metadata?.labels?.[MCS_OWNED_LABEL] !== undefined ? (withoutManagedFields(svc) as Local<V1Service>) : compactService(svc, 'source', shared)),
            ...common,
        });
        const sourceSlices = new Informer<Local<V1EndpointSlice>>(opts.rest, { resource: EndpointSlices, labelSelector: `${LABEL_MANAGED_BY}=${UPSTREAM_MANAGED_BY}`, transform: compactSourceSlice, ...common });
        sourceSlices.store.indexLabel(LABEL_SERVICE_NAME);
        this.caches = {
            exports: new Informer<ServiceExport>(opts.rest, { resource: ServiceExports, transform: compactExport, ...optional }),
            imports: new Informer<ServiceImport>(opts.rest, { resource: ServiceImports, ...optional }),
            services,
            sourceSlices,
            clusterSet: opts.clusterSet,
        };
        this.clusterProperties = opts.clusterName ? undefined : new Informer<ClusterProperty>(opts.rest, { resource: ClusterProperties, ...optional });
        this.slices = new SliceOwner({ rest: opts.rest, managedBy: MCS_MANAGED_BY, indexLabels: [LABEL_MCS_SERVICE_NAME], ...common });
        this.informers = [this.caches.exports, this.caches.imports, services, sourceSlices, this.slices.informer, ...(this.clusterProperties ? [this.clusterProperties] : [])];

        const deps = { rest: opts.rest, caches: this.caches, serving: () => this.serving(), log: this.log, events: opts.events };
        const importReconciler = new ImportReconciler(deps);
        const derivedReconciler = new DerivedReconciler(deps, this.slices, opts.maxEndpointsPerSlice);
        const controller = (name: string, reconciler: ImportReconciler | DerivedReconciler) =>
            new Controller<string>({
                name: `service-mirror/mcs-${name}`,
                reconciler,
                metrics: opts.queueMetrics,
                events: opts.events,
                rateLimiter: controllerRateLimiter({ baseMs: 100, maxMs: 60_000 }),
                workers: opts.workers ?? DEFAULT_MCS_WORKERS,
                log: this.log,
                resyncMs: opts.resyncMs,
            });
        this.imports = controller('imports', importReconciler);
        this.derived = controller('derived', derivedReconciler);
        this.watch(importReconciler, derivedReconciler);
    }

    private watch(importReconciler: ImportReconciler, derivedReconciler: DerivedReconciler): void {
        const { exports, imports, services, sourceSlices, clusterSet } = this.caches;
        const concerns = (namespace: string | undefined, name: string | undefined) => (namespace && name && concernsMcs(this.caches, namespace, name) ? keyOf(namespace, name) : []);
        const byObject = (obj: KubeObject) => keyOf(obj.metadata?.namespace, obj.metadata?.name);
        // A derived Service is its import's; any other Service matters when exported or imported.
        const byService = (svc: Local<V1Service>) => {
            const importName = svc.metadata?.labels?.[MCS_OWNED_LABEL];
            return importName !== undefined ? keyOf(svc.metadata?.namespace, importName) : concerns(svc.metadata?.namespace, svc.metadata?.name);
        };
        const byRemote = (ref: RemoteObjectRef) => concerns(ref.namespace, ref.name);

        this.imports.watch(exports, byObject, { ownWrites: importReconciler.exportWrites });
        this.imports.watch(imports, byObject, { ownWrites: importReconciler.importWrites });
        this.imports.watch(services, byService);
        // A remote Service's endpoints are the derived Service's business only.
        this.imports.watch(clusterSet, (ref) => (ref.kind === 'endpoints' ? [] : byRemote(ref)));

        // The derived Service does not depend on what an export says, only on whether there is one.
        this.derived.watch(exports, byObject, { changed: () => false });
        // The import as written gives the slices their ports and, while a member cannot be read, their clusters.
        this.derived.watch(imports, byObject, { changed: importMattersToDerived });
        this.derived.watch(services, byService, { ownWrites: derivedReconciler.serviceWrites });
        this.derived.watch(sourceSlices, (slice) => concerns(slice.metadata?.namespace, slice.metadata?.labels?.[LABEL_SERVICE_NAME]));
        this.derived.watch(clusterSet, byRemote);
        this.derived.watch(this.slices.foreignChanges, (slice) => keyOf(slice.metadata?.namespace, slice.metadata?.labels?.[LABEL_MCS_SERVICE_NAME]));

        for (const controller of [this.imports, this.derived]) {
            // A cluster readable or not, a gateway moved: any import may change.
            controller.resyncOn(clusterSet.membership);
            // A namespace appeared: the imports into it can be made now.
            controller.resyncOn(this.opts.namespaces, (ns, key) => key.startsWith(`${ns.metadata?.name}/`));
            if (this.clusterProperties) controller.resyncOn(this.clusterProperties);
        }
    }

    /** Whether MCS is served, and if not, why. */
    state(): McsState {
        const missing = [this.caches.exports, this.caches.imports].map((i) => i.problem()).filter((p) => p !== undefined);
        if (missing.length > 0) return { serving: false, reason: missing.join('; ') };
        const cluster = this.opts.clusterName ?? this.clusterProperties?.store.get(undefined, CLUSTER_ID_PROPERTY)?.spec?.value;
        if (!cluster) {
            const problem = this.clusterProperties?.problem();
            return { serving: false, reason: problem ?? `no --cluster-name and no ClusterProperty ${CLUSTER_ID_PROPERTY} with a spec.value: MCS is not served until this cluster has a name` };
        }
        if (!this.informers.every((i) => i.hasSynced())) return { serving: false, reason: 'caches not synced yet' };
        return { serving: true, cluster };
    }

    /** This cluster's name while MCS is served; each change of state is logged once. */
    private serving(): string | undefined {
        const state = this.state();
        const summary = state.serving ? state.cluster : state.reason;
        if (summary !== this.lastState) {
            this.lastState = summary;
            if (state.serving) this.log.info({ cluster: state.cluster }, 'MCS served');
            else this.log.info({ reason: state.reason }, 'MCS not served');
        }
        return state.serving ? state.cluster : undefined;
    }

    start(): void {
        this.slices.newTerm();
        this.imports.start();
        this.derived.start();
        // Keys seen before the caches were whole waited: they are all looked at once they are.
        // (The ClusterProperty's informer is not waited for: its CRD may never be installed, and its events resync anyway.)
        void Promise.all(this.informers.filter((i) => i !== this.clusterProperties).map((i) => i.synced)).then(() => {
            this.imports.resync();
            this.derived.resync();
        });
    }

    async stop(): Promise<void> {
        await Promise.all([this.imports.stop(), this.derived.stop()]);
    }
}

function withoutManagedFields<T extends KubeObject>(obj: T): T {
    if (!obj.metadata?.managedFields) return obj;
    const { managedFields: _dropped, ...metadata } = obj.metadata;
    return { ...obj, metadata };
}
