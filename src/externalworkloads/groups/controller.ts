// VMs that register themselves: the external-workloads controller's side. Watches groups,
// registration Leases and the workloads it materialised (both label-selected), and converges
// two kinds of key on the shared runtime (kube/controller.ts):
//   vm:<ns>/<group>.<vm>  one registration: read caches, planRegistration (pure), write
//   group:<ns>/<group>    the group's status, from the same caches
// Time-based changes (a heartbeat lapsing, a grace period ending) come back as requeues at the
// time the plan names; nothing about them is remembered, so a new leader plans the same.
import { Controller } from '../../kube/controller.js';
import type { EventSink } from '../../kube/events.js';
import { Informer } from '../../kube/informer.js';
import { logFn, type Logger } from '../../kube/log.js';
import type { ControllerDeps } from '../../kube/manager.js';
import { controllerRateLimiter } from '../../kube/ratelimit.js';
import { ExternalWorkloadGroups, ExternalWorkloads, Leases, objectPath } from '../../kube/resources.js';
import { isNotFound } from '../../kube/errors.js';
import type { KubeObject } from '../../kube/store.js';
import { rfc3339 } from '../../time/format.js';
import { WORKLOAD_API_VERSION, WORKLOAD_KIND } from '../types.js';
import { cacheGroupWorkload, type GroupWorkload } from './cached.js';
import { planRegistration, type PlannedEvent } from './plan.js';
import { groupStatus, statusToWrite, type GroupStatus } from './status.js';
import { GROUP_API_VERSION, GROUP_KIND, GROUP_LABEL, parseGroup, parseRegistrationLease, type ParsedGroup, type RegistrationLease } from './types.js';
import { RegistrationWriter } from './writer.js';

type CachedGroup = KubeObject & { metadata: { name: string; namespace: string }; parsed: ParsedGroup; status?: Partial<GroupStatus> };
type CachedLease = KubeObject & { metadata: { name: string; namespace: string; labels: Record<string, string> }; registration: RegistrationLease | undefined };

export interface WorkloadGroupsOptions extends ControllerDeps {
    namespace?: string;
    /** The clock plans are made at (tests move it). */
    now?: () => number;
    workers?: number;
}

const VM = 'vm:';
const GROUP = 'group:';
/** Registrations of a group planned within this long of its last status write share the next one. */
const STATUS_COALESCE_MS = 1000;

export class WorkloadGroupsController {
    readonly groups: Informer<CachedGroup>;
    readonly leases: Informer<CachedLease>;
    readonly workloads: Informer<GroupWorkload>;
    readonly informers: Informer<KubeObject>[];
    private readonly controller: Controller<string>;
    private readonly writer: RegistrationWriter;
    private readonly events: EventSink;
    private readonly log: Logger;
    private readonly now: () => number;
    /** Refused claims already reported this term: lease uid and address. */
    private readonly reported = new Set<string>();

    constructor(private readonly opts: WorkloadGroupsOptions) {
        this.log = opts.logger.child({ controller: 'workload-groups' });
        this.now = opts.now ?? Date.now;
        this.events = opts.events;
        const common = { namespace: opts.namespace, log: logFn(this.log) };
        this.groups = new Informer<CachedGroup>(opts.rest, { resource: ExternalWorkloadGroups, transform: cacheGroup, ...common });
        this.leases = new Informer<CachedLease>(opts.rest, { resource: Leases, labelSelector: GROUP_LABEL, transform: cacheLease, ...common });
        this.workloads = new Informer<GroupWorkload>(opts.rest, { resource: ExternalWorkloads, labelSelector: GROUP_LABEL, transform: (o) => cacheGroupWorkload(o), ...common });
        this.leases.store.indexLabel(GROUP_LABEL);
        this.workloads.store.indexLabel(GROUP_LABEL);
        this.informers = [this.groups, this.leases, this.workloads];
        this.writer = new RegistrationWriter(opts.rest);
        this.controller = new Controller<string>({
            name: 'workload-groups',
            reconciler: { reconcile: (key) => (key.startsWith(VM) ? this.syncRegistration(key.slice(VM.length)) : this.syncGroupStatus(key.slice(GROUP.length))) },
            metrics: opts.queueMetrics,
            events: opts.events,
            rateLimiter: controllerRateLimiter({ baseMs: 1000 }),
            workers: opts.workers ?? 4,
            log: this.log,
            resyncMs: opts.resyncMs,
        });
        this.controller.watch(this.leases, (l) => [VM + key(l.metadata.namespace, l.metadata.name)]);
        this.controller.watch(this.workloads, (w) => [VM + key(w.metadata.namespace, w.metadata.name)]);
        this.controller.watch(this.groups, (g) => [GROUP + key(g.metadata.namespace, g.metadata.name), ...this.registrationsOf(g.metadata.namespace, g.metadata.name)]);
    }

    private registrationsOf(namespace: string, group: string): string[] {
        const names = new Set<string>();
        for (const l of this.leases.store.byLabel(GROUP_LABEL, group, namespace)) names.add(l.metadata.name);
        for (const w of this.workloads.store.byLabel(GROUP_LABEL, group, namespace)) names.add(w.metadata.name);
        return [...names].map((name) => VM + key(namespace, name));
    }

    /** Every group and every registration is planned again (the runtime replays the caches); those of a group no longer there plan nothing: they are its garbage collector's. */
    startLeading(): void {
        this.reported.clear();
        this.controller.start();
    }

    stopLeading(): Promise<void> {
        return this.controller.stop();
    }

    private synced(): boolean {
        return this.informers.every((i) => i.hasSynced());
    }

    async syncRegistration(vmKey: string): Promise<{ requeueAfterMs: number } | void> {
        if (!this.synced()) return { requeueAfterMs: 1000 };
        const [namespace, name] = split(vmKey);
        const lease = this.leases.store.get(namespace, name)?.registration;
        const existing = this.workloads.store.get(namespace, name);
        const groupName = lease?.group ?? existing?.metadata.labels?.[GROUP_LABEL];
        const cachedGroup = groupName === undefined ? undefined : this.groups.store.get(namespace, groupName);
        const group = cachedGroup?.parsed.ok ? cachedGroup.parsed.group : undefined;
        const now = this.now();
        const plan = planRegistration(group, lease, existing, now);
        const applied = await this.writer.apply(plan, lease, existing, namespace, name);
        if (applied.writes > 0 && this.log.isLevelEnabled('debug')) this.log.debug({ registration: vmKey, writes: applied.writes }, 'synced');
        for (const event of plan.events) this.record(event, namespace, name, groupName, cachedGroup?.metadata.uid, applied.workloadUid);
        for (const refusal of plan.refused) {
            const id = `${lease?.uid}|${refusal.address}`;
            if (this.reported.has(id)) continue;
            if (this.reported.size >= 50_000) this.reported.clear();
            this.reported.add(id);
            this.record({ on: 'group', type: 'Warning', reason: 'AddressRefused', message: `${name}: ${refusal.why}` }, namespace, name, groupName, cachedGroup?.metadata.uid, undefined);
        }
        if (groupName !== undefined) this.controller.addCoalesced(GROUP + key(namespace, groupName), STATUS_COALESCE_MS);
        if (plan.requeueAfterMs !== undefined) return { requeueAfterMs: Math.max(1, plan.requeueAfterMs) };
    }

    async syncGroupStatus(groupKey: string): Promise<{ requeueAfterMs: number } | void> {
        if (!this.synced()) return { requeueAfterMs: 1000 };
        const [namespace, name] = split(groupKey);
        const cached = this.groups.store.get(namespace, name);
        if (!cached) return;
        if (!cached.parsed.ok) {
            // Once per term: the CRD's rules make this an object written around them (an older schema).
            if (!this.reported.has(groupKey)) {
                this.reported.add(groupKey);
                this.events.record({ apiVersion: GROUP_API_VERSION, kind: GROUP_KIND, metadata: cached.metadata }, 'Warning', 'InvalidGroup', `not served, its registrations left as they are: ${cached.parsed.why}`);
            }
            return;
        }
        const group = cached.parsed.group;
        const leases = this.leases.store.byLabel(GROUP_LABEL, name, namespace).flatMap((l) => (l.registration ? [l.registration] : []));
        const workloads = this.workloads.store.byLabel(GROUP_LABEL, name, namespace);
        const status = statusToWrite(groupStatus(group, leases, workloads, this.now()), cached.status, rfc3339(this.now()));
        if (!status) return;
        try {
            await this.opts.rest.mergePatchForMetadata(objectPath(ExternalWorkloadGroups, namespace, name, 'status'), { status });
        } catch (err) {
            if (!isNotFound(err)) throw err;
        }
        // Counts that change with time alone (a heartbeat lapsing) are brought up to date by the registrations' own requeues.
    }

    private record(event: PlannedEvent, namespace: string, name: string, group: string | undefined, groupUid: string | undefined, workloadUid: string | undefined): void {
        const target =
            event.on === 'workload'
                ? { apiVersion: WORKLOAD_API_VERSION, kind: WORKLOAD_KIND, metadata: { namespace, name, uid: workloadUid } }
                : { apiVersion: GROUP_API_VERSION, kind: GROUP_KIND, metadata: { namespace, name: group, uid: groupUid } };
        if (target.metadata.name !== undefined) this.events.record(target, event.type, event.reason, event.message);
    }
}

const key = (namespace: string, name: string) => `${namespace}/${name}`;
const split = (k: string) => k.split('/') as [string, string];

function cacheGroup(object: KubeObject): CachedGroup {
    const m = object.metadata ?? {};
    const status = (object as { status?: Partial<GroupStatus> }).status;
    return { metadata: { name: m.name ?? '', namespace: m.namespace ?? '', uid: m.uid, resourceVersion: m.resourceVersion }, parsed: parseGroup(object), status };
}

function cacheLease(object: KubeObject): CachedLease {
    const m = object.metadata ?? {};
    const registration = parseRegistrationLease(object);
    return { metadata: { name: m.name ?? '', namespace: m.namespace ?? '', uid: m.uid, resourceVersion: m.resourceVersion, labels: { [GROUP_LABEL]: m.labels?.[GROUP_LABEL] ?? '' } }, registration };
}
