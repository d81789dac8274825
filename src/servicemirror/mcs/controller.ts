// The MCS controller (KEP-1645) of one cluster of the clusterset: this cluster plus the clusters
// its Links point at. No hub: every cluster's controller reads every member's ServiceExports and
// Services (the remote ones through the Links' remote watches) and writes only here: the
// ServiceImport, its derived Service and their slices, and the conditions of this cluster's own
// ServiceExports. Each cluster computes the same resolution from the same exports, so each
// exporting cluster's ServiceExport says the same Conflict.
//
// Its queue holds Service keys (namespace/name); a sync reads the caches, plans (plan.ts) and
// writes, a step at a time. Served while the CRDs are installed (picked up live) and this
// cluster has a name (--cluster-name, else the ClusterProperty cluster.clusterset.k8s.io).
import type { V1EndpointSlice, V1Service } from '@kubernetes/client-node';
import { LABEL_MANAGED_BY, LABEL_SERVICE_NAME } from '../../endpointslice/slice.js';
import type { AddressType } from '../../endpointslice/types.js';
import type { EventSink } from '../../kube/events.js';
import { Informer } from '../../kube/informer.js';
import { Controller } from '../../kube/controller.js';
import { logFn, type Logger } from '../../kube/log.js';
import { controllerRateLimiter } from '../../kube/ratelimit.js';
import { isNotFound, type KubeRest, type WriteOpts } from '../../kube/rest.js';
import { collectionPath, EndpointSlices, objectPath, Services } from '../../kube/resources.js';
import { SharedValues } from '../../kube/shared-values.js';
import { SliceOwner } from '../../kube/slice-owner.js';
import type { KubeObject, ObjectStore } from '../../kube/store.js';
import type { WorkQueueMetrics } from '../../kube/workqueue-metrics.js';
import { compactService } from '../cache/compact.js';
import type { GatewayAddress } from '../plan/endpoints.js';
import type { Link } from '../api/link.js';
import { exportMode, hasReadyEndpoints } from '../plan/mirror.js';
import { compactExport, compactSourceSlice } from './cache.js';
import { conditionsChanged, planImport, type ImportPlan, type ImportPlanInput } from './plan.js';
import {
    CLUSTER_ID_PROPERTY,
    ClusterProperties,
    derivedServiceName,
    LABEL_MCS_SERVICE_NAME,
    MCS_MANAGED_BY,
    optionalApiLog,
    MCS_OWNED_LABEL,
    ServiceExports,
    ServiceImports,
    type MemberCluster,
    type ServiceExport,
    type ServiceImport,
} from './types.js';

/** Upstream's endpointslice controller: the slices the local cluster's own endpoints are copied from. */
const UPSTREAM_MANAGED_BY = 'endpointslice-controller.k8s.io';

/** A Link's remote cluster, once everything MCS reads of it can be trusted. */
export interface McsRemote {
    link: Link;
    services: ObjectStore<V1Service & KubeObject>;
    slices: ObjectStore<V1EndpointSlice & KubeObject>;
    exports: ObjectStore<ServiceExport>;
    gatewayAddresses(families: readonly AddressType[], now: number): GatewayAddress[];
    gatewayAlive: boolean;
}

/** A cluster a Link points at; `remote` is absent while its watch is starting or cannot run. */
export interface McsLinkMember {
    cluster: string;
    remote?: McsRemote;
}

export interface McsOptions {
    rest: KubeRest;
    logger: Logger;
    events: EventSink;
    isLeader: () => boolean;
    queueMetrics: WorkQueueMetrics;
    /** --cluster-name; else the ClusterProperty is read. */
    clusterName?: string;
    /** The clusters the Links point at, as the service mirror serves them now. */
    linkMembers: () => McsLinkMember[];
    maxEndpointsPerSlice: number;
    resyncMs?: number;
    /** How often membership and the cluster name are looked at again (default 2 s). */
    membershipPollMs?: number;
}

/** Why MCS is not served now, or undefined when it is. */
export type McsState = { serving: true; cluster: string } | { serving: false; reason: string };

type Local<T> = T & KubeObject;

export class McsController {
    readonly exports: Informer<ServiceExport>;
    readonly imports: Informer<ServiceImport>;
    /** Every local Service: exported ones are read whole-enough, derived ones as written. */
    readonly services: Informer<Local<V1Service>>;
    /** Upstream's slices of local Services. */
    readonly sourceSlices: Informer<Local<V1EndpointSlice>>;
    readonly slices: SliceOwner;
    readonly informers: Informer<KubeObject>[];
    private readonly queue: Controller<string>;
    private readonly log: Logger;
    private readonly guarded: WriteOpts;
    private clusterName: string | undefined;
    private clusterNameProblem: string | undefined;
    private pollTimer: NodeJS.Timeout | undefined;
    private membership = '';
    private leading = false;

    constructor(private readonly opts: McsOptions) {
        this.log = opts.logger.child({ controller: 'mcs' });
        this.clusterName = opts.clusterName;
        this.guarded = { whileLeader: () => opts.isLeader() };
        const log = logFn(this.log);
        const common = { resyncMs: opts.resyncMs, log };
        const shared = new SharedValues();
        const optional = { ...common, log: optionalApiLog(log) };
        this.exports = new Informer<ServiceExport>(opts.rest, { resource: ServiceExports, transform: compactExport, ...optional });
        this.imports = new Informer<ServiceImport>(opts.rest, { resource: ServiceImports, ...optional });
        this.services = new Informer<Local<V1Service>>(opts.rest, {
            resource: Services,
            // A derived Service is read as written (its uid owns slices, its ClusterIPs are the import's).
            transform: (svc) => (svc.metadata?.labels?.[MCS_OWNED_LABEL] !== undefined ? (withoutManagedFields(svc) as Local<V1Service>) : compactService(svc, 'source', shared)),
            ...common,
        });
        this.sourceSlices = new Informer<Local<V1EndpointSlice>>(opts.rest, {
            resource: EndpointSlices,
            labelSelector: `${LABEL_MANAGED_BY}=${UPSTREAM_MANAGED_BY}`,
            transform: compactSourceSlice,
            ...common,
        });
        this.sourceSlices.store.indexLabel(LABEL_SERVICE_NAME);
        this.slices = new SliceOwner({ rest: opts.rest, managedBy: MCS_MANAGED_BY, isLeader: opts.isLeader, indexLabels: [LABEL_MCS_SERVICE_NAME], ...common });
        this.informers = [this.exports, this.imports, this.services, this.sourceSlices, this.slices.informer];
        this.queue = new Controller<string>({
            name: 'service-mirror/mcs',
            reconciler: { reconcile: (key) => this.sync(key) },
            metrics: opts.queueMetrics,
            events: opts.events,
            rateLimiter: controllerRateLimiter({ baseMs: 100, maxMs: 60_000 }),
            workers: 2,
            log: this.log,
            resyncMs: opts.resyncMs,
        });
        this.registerHandlers();
    }

    /** Whether MCS is served, and if not, why. */
    state(): McsState {
        const missing = [this.exports, this.imports].map((i) => i.problem()).filter((p) => p !== undefined);
        if (missing.length > 0) return { serving: false, reason: missing.join('; ') };
        if (!this.clusterName) return { serving: false, reason: this.clusterNameProblem ?? 'the cluster name is not known yet' };
        if (!this.informers.every((i) => i.hasSynced())) return { serving: false, reason: 'caches not synced yet' };
        return { serving: true, cluster: this.clusterName };
    }

    private registerHandlers(): void {
        const key = (namespace: string | undefined, name: string | undefined) => {
            if (namespace && name) this.queue.add(`${namespace}/${name}`);
        };
        const byObject = (obj: KubeObject) => key(obj.metadata?.namespace, obj.metadata?.name);
        this.exports.on({ add: byObject, update: (_, o) => byObject(o), delete: byObject });
        this.imports.on({ add: byObject, update: (_, o) => byObject(o), delete: byObject });
        // A Service or its slices matter when it is exported or imported here.
        const service = (namespace: string | undefined, name: string | undefined) => {
            if (namespace && name && (this.exports.store.get(namespace, name) || this.imports.store.get(namespace, name))) key(namespace, name);
        };
        const svc = (obj: Local<V1Service>) => {
            const importName = obj.metadata?.labels?.[MCS_OWNED_LABEL];
            if (importName !== undefined) key(obj.metadata?.namespace, importName);
            else service(obj.metadata?.namespace, obj.metadata?.name);
        };
        this.services.on({ add: svc, update: (_, o) => svc(o), delete: svc });
        const slice = (obj: Local<V1EndpointSlice>) => service(obj.metadata?.namespace, obj.metadata?.labels?.[LABEL_SERVICE_NAME]);
        this.sourceSlices.on({ add: slice, update: (_, o) => slice(o), delete: slice });
        this.slices.onForeignChange((namespace, _service, s) => key(namespace, s.metadata?.labels?.[LABEL_MCS_SERVICE_NAME]));
    }

    /** A remote Service, slice or ServiceExport changed. */
    remoteChanged(remote: McsRemote | undefined, namespace: string, name: string): void {
        if (this.imports.store.get(namespace, name) || this.exports.store.get(namespace, name) || remote?.exports.get(namespace, name)) this.queue.add(`${namespace}/${name}`);
    }

    /** A Link's cluster became readable, stopped, or its gateway's addresses changed: every key it may feed. */
    clusterChanged(): void {
        this.enqueueAll();
    }

    /** A namespace appeared here: the imports of the remote exports in it can be created now. */
    namespaceAdded(namespace: string): void {
        for (const key of this.allKeys()) if (key.startsWith(`${namespace}/`)) this.queue.add(key);
    }

    start(): void {
        this.leading = true;
        this.slices.newTerm();
        this.membership = this.membershipKey();
        this.queue.start(this.allKeys());
        let polls = 0;
        const poll = () => {
            if (!this.leading) return;
            // The cluster's name rarely appears later: looked for every fifth poll.
            const lookUp = polls++ % 5 === 0 ? this.lookUpClusterName() : Promise.resolve();
            void lookUp.finally(() => {
                const membership = this.membershipKey();
                if (membership !== this.membership) {
                    this.membership = membership;
                    this.enqueueAll();
                }
                if (this.leading) this.pollTimer = setTimeout(poll, this.opts.membershipPollMs ?? 2_000);
            });
        };
        poll();
    }

    async stop(): Promise<void> {
        this.leading = false;
        clearTimeout(this.pollTimer);
        await this.queue.stop();
    }

    /** KEP-2149: the ClusterProperty cluster.clusterset.k8s.io names this cluster (unless --cluster-name does). */
    private async lookUpClusterName(): Promise<void> {
        if (this.opts.clusterName) return;
        try {
            const property = await this.opts.rest.get<{ spec?: { value?: string } }>(objectPath(ClusterProperties, undefined, CLUSTER_ID_PROPERTY));
            const value = property.spec?.value;
            if (value && value !== this.clusterName) this.log.info({ cluster: value }, 'this cluster is named by its ClusterProperty');
            this.clusterName = value || undefined;
            this.clusterNameProblem = value ? undefined : `ClusterProperty ${CLUSTER_ID_PROPERTY} has no spec.value`;
        } catch (err) {
            this.clusterName = undefined;
            const problem = isNotFound(err)
                ? `no --cluster-name and no ClusterProperty ${CLUSTER_ID_PROPERTY}: MCS is not served until this cluster has a name`
                : `reading ClusterProperty ${CLUSTER_ID_PROPERTY} failed: ${(err as Error).message}`;
            // Said once per change; a warning only where MCS could otherwise be served (its CRDs are there).
            if (problem !== this.clusterNameProblem) this.log[this.exports.problem() === undefined ? 'warn' : 'info']({ problem }, 'MCS not served');
            this.clusterNameProblem = problem;
        }
    }

    /** What, if it changes, may change every import: serving or not, and which members are known. */
    private membershipKey(): string {
        const state = this.state();
        const members = this.opts.linkMembers().map((m) => `${m.cluster}:${m.remote ? 'known' : 'unknown'}`);
        return JSON.stringify([state.serving ? state.cluster : state.reason, members.sort()]);
    }

    private enqueueAll(): void {
        for (const key of this.allKeys()) this.queue.add(key);
    }

    /** Every key there may be work for: each export here or in a readable remote, each import here. */
    private allKeys(): Set<string> {
        const keys = new Set<string>();
        const add = (obj: KubeObject) => keys.add(`${obj.metadata!.namespace}/${obj.metadata!.name}`);
        this.exports.store.list().forEach(add);
        this.imports.store.list().forEach(add);
        for (const member of this.opts.linkMembers()) member.remote?.exports.list().forEach(add);
        return keys;
    }

    /** The clusterset as it concerns one Service now: this cluster first, then each Link's. */
    private members(namespace: string, name: string, cluster: string): MemberCluster[] {
        const members: MemberCluster[] = [
            {
                name: cluster,
                known: true,
                export: this.exports.store.get(namespace, name),
                service: this.services.store.get(namespace, name),
                endpoints: { kind: 'slices', slices: this.sourceSlices.store.byLabel(LABEL_SERVICE_NAME, name, namespace) },
            },
        ];
        const now = Date.now();
        for (const member of this.opts.linkMembers()) {
            if (member.cluster === cluster) continue; // a Link back to ourselves adds nothing
            const remote = member.remote;
            if (!remote) {
                members.push({ name: member.cluster, known: false, endpoints: { kind: 'slices', slices: [] } });
                continue;
            }
            const slices = remote.slices.byLabel(LABEL_SERVICE_NAME, name, namespace);
            const service = remote.services.get(namespace, name);
            // Through the gateway, unless there is none (a flat network) or the Link exports this
            // Service in remote-discovery mode (Linkerd's destination reads the remote's endpoints).
            const direct = remote.link.gateway === null || (service !== undefined && exportMode(service, remote.link) === 'remote-discovery');
            members.push({
                name: member.cluster,
                known: true,
                export: remote.exports.get(namespace, name),
                service,
                endpoints: direct
                    ? { kind: 'slices', slices }
                    : { kind: 'gateway', link: remote.link, addresses: remote.gatewayAddresses(['IPv4', 'IPv6'], now), alive: remote.gatewayAlive, hasReadyEndpoints: hasReadyEndpoints(slices) },
            });
        }
        return members;
    }

    /** Converges one imported Service; throws to be retried. */
    private async sync(key: string): Promise<void> {
        const state = this.state();
        if (!state.serving) return; // every key is queued again once it is
        const [namespace, name] = key.split('/') as [string, string];
        const derivedName = derivedServiceName(name);
        // What this sync wrote, read back from the answers: the caches may not have it yet.
        const written: { import?: ServiceImport | null; derived?: V1Service | null } = {};
        for (let pass = 0; pass < 4; pass++) {
            const derived = 'derived' in written ? written.derived ?? undefined : this.services.store.get(namespace, derivedName);
            const input: ImportPlanInput = {
                namespace,
                name,
                members: this.members(namespace, name, state.cluster),
                existingImport: 'import' in written ? written.import ?? undefined : this.imports.store.get(namespace, name),
                derived,
                slices: this.slices.currentSlices({ namespace, name: derivedName, uid: derived?.metadata?.uid ?? '' }),
                now: new Date().toISOString(),
                maxEndpointsPerSlice: this.opts.maxEndpointsPerSlice,
            };
            const plan = planImport(input);
            if (!(await this.apply(plan, input, written))) {
                await this.writeExportStatus(plan, input, state.cluster);
                this.report(plan, input);
                return;
            }
        }
        this.queue.add(key); // not done in four steps: the next sync goes on from what was written
    }

    /** Writes one step of the plan; true when the next step needs a plan of its own. */
    private async apply(plan: ImportPlan, input: ImportPlanInput, written: { import?: ServiceImport | null; derived?: V1Service | null }): Promise<boolean> {
        const { rest } = this.opts;
        const { namespace, name } = input;
        const importPath = objectPath(ServiceImports, namespace, name);
        const query = { fieldManager: MCS_MANAGED_BY };
        const slices = () => this.slices.apply(plan.slices);
        if (plan.import.action === 'delete') {
            await slices();
            if (plan.derived.action === 'delete') await this.deleteObject(objectPath(Services, namespace, derivedServiceName(name)), plan.derived.object as KubeObject);
            await this.deleteObject(importPath, plan.import.object);
            written.import = null;
            this.log.info({ namespace, name }, 'no cluster exports it any more: ServiceImport deleted');
            return false;
        }
        if (plan.import.action === 'create') {
            written.import = await rest.create<ServiceImport>(collectionPath(ServiceImports, namespace), plan.import.object, query, this.guarded);
            this.log.info({ namespace, name, exporters: plan.exporters }, 'ServiceImport created');
            return true;
        }
        if (plan.import.action === 'update') written.import = await rest.replace<ServiceImport>(importPath, plan.import.object, query, this.guarded);
        if (plan.importStatus) {
            const current = written.import ?? input.existingImport!;
            written.import = await rest.replace<ServiceImport>(`${importPath}/status`, { ...current, status: plan.importStatus }, query, this.guarded);
        }
        if (plan.derived.action === 'create') {
            written.derived = await rest.create<V1Service>(collectionPath(Services, namespace), plan.derived.object, query, this.guarded);
            return true;
        }
        if (plan.derived.action === 'delete') {
            await slices();
            await this.deleteObject(objectPath(Services, namespace, derivedServiceName(name)), plan.derived.object as KubeObject);
            written.derived = null;
            return true;
        }
        if (plan.derived.action === 'update') written.derived = await rest.replace<V1Service>(objectPath(Services, namespace, derivedServiceName(name)), plan.derived.object, query, this.guarded);
        await slices();
        return false;
    }

    private async deleteObject(path: string, obj: KubeObject): Promise<void> {
        const uid = obj.metadata?.uid;
        await this.opts.rest
            .delete(path, undefined, { kind: 'DeleteOptions', apiVersion: 'v1', preconditions: uid ? { uid } : undefined }, this.guarded)
            .catch((err: unknown) => {
                if (!isNotFound(err)) throw err;
            });
    }

    /** This cluster's ServiceExport says what the plan found (the other clusters' controllers write theirs). */
    private async writeExportStatus(plan: ImportPlan, input: ImportPlanInput, cluster: string): Promise<void> {
        const exp = input.members[0]?.export;
        const conditions = plan.exportConditions.get(cluster);
        if (!exp || !conditions || !conditionsChanged(exp, conditions)) return;
        const ours = new Set(conditions.map((c) => c.type));
        const status = { conditions: [...(exp.status?.conditions ?? []).filter((c) => !ours.has(c.type)), ...conditions] };
        await this.opts.rest.replace(objectPath(ServiceExports, input.namespace, input.name, 'status'), { ...exp, status }, { fieldManager: MCS_MANAGED_BY }, this.guarded);
    }

    private report(plan: ImportPlan, input: ImportPlanInput): void {
        if (plan.problems.length === 0) return;
        const message = plan.problems.join('; ');
        this.log.warn({ namespace: input.namespace, name: input.name, problem: message }, 'import not converged');
        const exp = input.members[0]?.export;
        if (exp) this.opts.events.record(exp, 'Warning', 'ImportBlocked', message);
    }
}

function withoutManagedFields<T extends KubeObject>(obj: T): T {
    if (!obj.metadata?.managedFields) return obj;
    const { managedFields: _dropped, ...metadata } = obj.metadata;
    return { ...obj, metadata };
}
