// planImport: everything one imported Service should be in this cluster, from what every
// cluster of the set exports now and what exists here: the ServiceImport, its derived Service,
// the derived Service's slices (one set per source cluster), and the conditions each exporting
// cluster's ServiceExport should carry. Pure: no I/O, no clock (`now` is given), no globals.
//
// One step of object writes at a time: the ServiceImport is created first (the derived Service
// is owned by its uid), then the derived Service (the cluster allocates its ClusterIPs), then
// the import's ips and the slices. The controller plans again after each write that a later
// step needs, so a process killed between them resumes from what the cluster holds.
import type { V1Condition, V1EndpointSlice, V1Service, V1ServicePort } from '@kubernetes/client-node';
import { planSlices } from '../../endpointslice/reconciler.js';
import type { SlicePlan } from '../../endpointslice/types.js';
import { writesPlan } from '../../endpointslice/reconciler.js';
import { mirrorAddressTypes } from '../plan/endpoints.js';
import { OPAQUE_PORTS_ANNOTATION } from '../api/keys.js';
import { sourceGroups } from './endpoints.js';
import { exportersOf, invalidExport, isHeadless, resolveImport, type Resolution } from './resolve.js';
import {
    CONDITION_CONFLICT,
    CONDITION_READY,
    CONDITION_VALID,
    derivedServiceName,
    LABEL_MCS_SERVICE_NAME,
    LABEL_SOURCE_CLUSTER,
    MCS_GROUP,
    MCS_MANAGED_BY,
    MCS_OWNED_LABEL,
    type ImportPort,
    type MemberCluster,
    type ServiceExport,
    type ServiceImport,
    type ServiceImportStatus,
} from './types.js';

export interface ImportPlanInput {
    namespace: string;
    name: string;
    /** Every cluster of the set, this one included. */
    members: readonly MemberCluster[];
    /** The ServiceImport of this namespace and name here, whoever wrote it. */
    existingImport?: ServiceImport;
    /** The Service named derivedServiceName(name) here, whoever wrote it. */
    derived?: V1Service;
    /** Our slices of the derived Service. */
    slices: readonly V1EndpointSlice[];
    /** RFC 3339: the lastTransitionTime of a condition that changes now. */
    now: string;
    maxEndpointsPerSlice: number;
}

export type ObjectWrite<T> = { action: 'none' } | { action: 'create' | 'update' | 'delete'; object: T };

export interface ImportPlan {
    /** The clusters whose export is valid, oldest first (the first wins conflicts). */
    exporters: string[];
    import: ObjectWrite<ServiceImport>;
    /** The import's status, when it should change (written after `import`). */
    importStatus?: ServiceImportStatus;
    derived: ObjectWrite<V1Service>;
    slices: SlicePlan;
    /** The conditions each member's ServiceExport should carry (members with an export). */
    exportConditions: Map<string, V1Condition[]>;
    /** Why something could not be planned as wished (a name taken by someone else's object). */
    problems: string[];
}

const NONE = { action: 'none' } as const;

export function planImport(input: ImportPlanInput): ImportPlan {
    const { namespace, name } = input;
    const exporters = exportersOf(input.members);
    const problems: string[] = [];
    const existing = input.existingImport;
    const importOurs = existing !== undefined && isOurs(existing, name);
    if (existing && !importOurs) problems.push(`ServiceImport ${namespace}/${name} exists and was not created by mesh-endpoints: it is left as it is`);
    const derivedName = derivedServiceName(name);
    const derived = input.derived;
    const derivedOurs = derived !== undefined && isOurs(derived, name);
    if (derived && !derivedOurs) problems.push(`Service ${namespace}/${derivedName}, the name of the derived Service, is taken by a Service mesh-endpoints did not create`);
    // Clusters that cannot be read yet keep what the import says they export. An import of ours
    // with no clusters in its status was created by a process that died before writing the status
    // (a separate write): any unreadable cluster may be what it imports.
    const listed = new Set((importOurs ? existing.status?.clusters ?? [] : []).map((c) => c.cluster));
    const statusUnwritten = importOurs && listed.size === 0;
    const pending = input.members.filter((m) => !m.known && (statusUnwritten || listed.has(m.name))).map((m) => m.name);

    const plan: ImportPlan = {
        exporters: exporters.map((e) => e.cluster),
        import: NONE,
        derived: NONE,
        slices: writesPlan({}),
        exportConditions: new Map(),
        problems,
    };
    const resolution = exporters.length > 0 ? resolveImport(exporters) : undefined;
    const imported = resolution !== undefined || pending.length > 0;
    // A cluster the import lists cannot be read yet (a restart, its Link's watch starting): the
    // import and the conflicts are resolved once it can be. Resolving without it would flip a
    // conflict's winner, its type and the derived Service, and back again moments later.
    const holding = importOurs && pending.length > 0;
    for (const member of input.members) {
        if (holding) break;
        if (member.known && member.export) plan.exportConditions.set(member.name, exportConditions(member, resolution, importOurs && imported, input.now));
    }

    if (!imported) {
        if (importOurs) plan.import = { action: 'delete', object: existing };
        if (derivedOurs) plan.derived = { action: 'delete', object: derived };
        plan.slices = writesPlan({ deletes: [...input.slices] });
        return plan;
    }
    if (existing && !importOurs) return plan;
    if (holding) {
        // The known exporters' endpoints still follow them, into the derived Service as it is.
        const usable = derivedOurs && isHeadless(derived) === (existing.spec?.type === 'Headless') && derived.metadata?.uid !== undefined;
        if (usable) plan.slices = planDerivedSlices(input, derived, existing.spec?.ports ?? [], plan.exporters);
        return plan;
    }
    if (!resolution) return plan;

    const derivedUsable = derivedOurs && isHeadless(derived) === (resolution.spec.type === 'Headless');
    const desired = desiredImport(namespace, name, resolution, derivedUsable ? derived : undefined);
    if (!existing) {
        plan.import = { action: 'create', object: desired };
        return plan;
    }
    if (importChanged(existing, desired)) plan.import = { action: 'update', object: { ...desired, metadata: { ...desired.metadata, resourceVersion: existing.metadata?.resourceVersion } } };
    const status: ServiceImportStatus = { ...existing.status, clusters: [...new Set([...plan.exporters, ...pending])].sort().map((cluster) => ({ cluster })) };
    if (JSON.stringify(status.clusters) !== JSON.stringify(existing.status?.clusters ?? [])) plan.importStatus = status;

    if (derived && !derivedOurs) return plan;
    const wanted = desiredDerived(namespace, derivedName, name, existing, resolution);
    if (!derived) {
        plan.derived = { action: 'create', object: wanted };
        return plan;
    }
    // A ClusterIP cannot become None or the reverse: the derived Service is made anew (its slices go with it).
    if (!derivedUsable) {
        plan.derived = { action: 'delete', object: derived };
        plan.slices = writesPlan({ deletes: [...input.slices] });
        return plan;
    }
    const update = derivedUpdate(derived, wanted);
    if (update) plan.derived = { action: 'update', object: update };
    plan.slices = planDerivedSlices(input, derived, resolution.spec.ports, exporters.map((e) => e.cluster));
    return plan;
}

function isOurs(obj: { metadata?: { labels?: Record<string, string> } }, name: string): boolean {
    return obj.metadata?.labels?.[MCS_OWNED_LABEL] === name;
}

function desiredImport(namespace: string, name: string, resolution: Resolution, derived: V1Service | undefined): ServiceImport {
    const spec: NonNullable<ServiceImport['spec']> = { ...resolution.spec };
    const families = derived?.spec?.ipFamilies ?? [];
    if (families.length > 0) spec.ipFamilies = [...families];
    if (derived && resolution.spec.type === 'ClusterSetIP') {
        const ips = derived.spec?.clusterIPs ?? (derived.spec?.clusterIP ? [derived.spec.clusterIP] : []);
        if (ips.length > 0) spec.ips = [...ips];
    }
    return {
        apiVersion: `${MCS_GROUP}/v1beta1`,
        kind: 'ServiceImport',
        metadata: { name, namespace, labels: { ...resolution.labels, [MCS_OWNED_LABEL]: name }, annotations: { ...resolution.annotations } },
        spec,
    };
}

function importChanged(existing: ServiceImport, desired: ServiceImport): boolean {
    const meta = (obj: ServiceImport) => JSON.stringify([sorted(obj.metadata?.labels), sorted(obj.metadata?.annotations)]);
    return meta(existing) !== meta(desired) || canonical(existing.spec) !== canonical(desired.spec);
}

const sorted = (map: Record<string, string> | undefined) => Object.entries(map ?? {}).sort(([a], [b]) => (a < b ? -1 : 1));

/** JSON with keys sorted at every level: the apiserver may return fields in another order. */
function canonical(value: unknown): string {
    return JSON.stringify(value, (_key, v: unknown) => (v && typeof v === 'object' && !Array.isArray(v) ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : 1))) : v));
}

/**
 * The derived Service: no selector (its slices are ours), the import's ports, owned by the
 * ServiceImport (the garbage collector removes it with the import), and the winner's
 * opaque-ports annotation, which Linkerd's destination reads from the Service.
 */
function desiredDerived(namespace: string, derivedName: string, name: string, owner: ServiceImport, resolution: Resolution): V1Service {
    const w = resolution.winner.service;
    const ports: V1ServicePort[] = resolution.spec.ports.map((p) => {
        const port: V1ServicePort = { port: p.port, protocol: p.protocol ?? 'TCP', targetPort: p.port as unknown as V1ServicePort['targetPort'] };
        if (p.name) port.name = p.name;
        if (p.appProtocol) port.appProtocol = p.appProtocol;
        return port;
    });
    const annotations: Record<string, string> = {};
    const opaque = w.metadata?.annotations?.[OPAQUE_PORTS_ANNOTATION];
    if (opaque) annotations[OPAQUE_PORTS_ANNOTATION] = opaque;
    const headless = resolution.spec.type === 'Headless';
    const dual = (w.spec?.ipFamilies ?? []).length > 1 || (w.spec?.ipFamilyPolicy !== undefined && w.spec.ipFamilyPolicy !== 'SingleStack');
    const spec: NonNullable<V1Service['spec']> = { type: 'ClusterIP', ports, sessionAffinity: resolution.spec.sessionAffinity };
    const exportedFamilies = w.spec?.ipFamilies ?? [];
    if (headless) spec.clusterIP = 'None';
    if (headless && exportedFamilies.length > 0) {
        // A headless Service with no selector gets both families whatever the cluster has, and
        // its import would then promise endpoints of a family no exporter has: the exported
        // Service's own families instead, as its cluster gave them.
        spec.ipFamilies = [...exportedFamilies];
        spec.ipFamilyPolicy = exportedFamilies.length > 1 ? 'PreferDualStack' : 'SingleStack';
    } else if (dual) {
        // Dual-stack where the cluster has both families (PreferDualStack never fails for want of one).
        spec.ipFamilyPolicy = 'PreferDualStack';
    }
    if (resolution.spec.sessionAffinityConfig) spec.sessionAffinityConfig = resolution.spec.sessionAffinityConfig;
    if (resolution.spec.internalTrafficPolicy) spec.internalTrafficPolicy = resolution.spec.internalTrafficPolicy;
    return {
        apiVersion: 'v1',
        kind: 'Service',
        metadata: {
            name: derivedName,
            namespace,
            labels: { [MCS_OWNED_LABEL]: name, [LABEL_MCS_SERVICE_NAME]: name },
            annotations,
            ownerReferences: [{ apiVersion: `${MCS_GROUP}/v1beta1`, kind: 'ServiceImport', name, uid: owner.metadata!.uid!, blockOwnerDeletion: false, controller: false }],
        },
        spec,
    };
}

/** The existing derived Service brought to the wanted one (its allocated addresses kept), or null when it is already. */
function derivedUpdate(existing: V1Service, wanted: V1Service): V1Service | null {
    const pick = (svc: V1Service) => {
        const spec = svc.spec ?? {};
        return canonical([
            svc.metadata?.labels ?? {},
            svc.metadata?.annotations ?? {},
            (svc.metadata?.ownerReferences ?? []).map((r) => r.uid),
            spec.selector ?? null,
            (spec.ports ?? []).map((p) => [p.name ?? '', p.port, p.protocol ?? 'TCP', p.appProtocol ?? '', String(p.targetPort ?? p.port)]),
            spec.sessionAffinity ?? 'None',
            spec.sessionAffinity === 'ClientIP' ? spec.sessionAffinityConfig?.clientIP?.timeoutSeconds ?? 10800 : null,
            spec.internalTrafficPolicy ?? 'Cluster',
            spec.clusterIP === 'None' ? [spec.ipFamilyPolicy ?? '', spec.ipFamilies ?? []] : null,
        ]);
    };
    if (pick(existing) === pick(wanted)) return null;
    const spec = { ...existing.spec, ...wanted.spec };
    delete spec.selector;
    if (!wanted.spec?.sessionAffinityConfig) delete spec.sessionAffinityConfig;
    return { ...wanted, metadata: { ...existing.metadata, ...wanted.metadata, resourceVersion: existing.metadata?.resourceVersion }, spec };
}

/** `ports` are the import's: each exporter's endpoints are given only those it serves as they are. */
function planDerivedSlices(input: ImportPlanInput, derived: V1Service, ports: readonly ImportPort[], exporters: readonly string[]): SlicePlan {
    const addressTypes = mirrorAddressTypes(derived);
    const owner = { name: derived.metadata!.name!, namespace: input.namespace, uid: derived.metadata!.uid!, labels: {}, headless: isHeadless(derived) };
    const total = writesPlan({});
    const add = (plan: SlicePlan) => {
        total.creates.push(...plan.creates);
        total.updates.push(...plan.updates);
        total.deletes.push(...plan.deletes);
        total.endpointsAdded += plan.endpointsAdded;
        total.endpointsRemoved += plan.endpointsRemoved;
    };
    const members = new Map(input.members.map((m) => [m.name, m]));
    const bySource = new Map<string, V1EndpointSlice[]>();
    for (const slice of input.slices) {
        const source = slice.metadata?.labels?.[LABEL_SOURCE_CLUSTER] ?? '';
        const member = members.get(source);
        // A cluster still being read keeps its slices; one that left the set loses them.
        if (member && !member.known) continue;
        if (!member || !exporters.includes(source)) {
            total.deletes.push(slice);
            continue;
        }
        bySource.set(source, [...(bySource.get(source) ?? []), slice]);
    }
    for (const cluster of exporters) {
        const member = members.get(cluster)!;
        const { groups, annotations } = sourceGroups(member.endpoints, member.service!, ports, addressTypes);
        add(
            planSlices({
                owner,
                addressTypes,
                desired: groups,
                existing: bySource.get(cluster) ?? [],
                maxEndpointsPerSlice: input.maxEndpointsPerSlice,
                managedBy: MCS_MANAGED_BY,
                extraLabels: { [LABEL_MCS_SERVICE_NAME]: input.name, [LABEL_SOURCE_CLUSTER]: cluster },
                annotations,
            }),
        );
    }
    return total;
}

/** Valid, Conflict and Ready as this member's ServiceExport should say them now. */
function exportConditions(member: MemberCluster, resolution: Resolution | undefined, importExists: boolean, now: string): V1Condition[] {
    const exp = member.export as ServiceExport;
    const generation = exp.metadata?.generation;
    const invalid = invalidExport(member);
    const wanted: Omit<V1Condition, 'lastTransitionTime'>[] = [];
    if (invalid) {
        wanted.push({ type: CONDITION_VALID, status: 'False', reason: invalid.reason, message: invalid.message });
        wanted.push({ type: CONDITION_READY, status: 'False', reason: 'Failed', message: 'the export is not valid' });
    } else {
        wanted.push({ type: CONDITION_VALID, status: 'True', reason: 'Valid', message: 'the Service is exported to the clusterset' });
        const conflicts = resolution?.conflicts ?? [];
        wanted.push(
            conflicts.length > 0
                ? { type: CONDITION_CONFLICT, status: 'True', reason: conflicts[0]!.reason, message: conflicts.map((c) => c.message).join('; ') }
                : { type: CONDITION_CONFLICT, status: 'False', reason: 'NoConflicts', message: 'every exporting cluster agrees' },
        );
        wanted.push(
            importExists
                ? { type: CONDITION_READY, status: 'True', reason: 'Ready', message: 'the ServiceImport exists' }
                : { type: CONDITION_READY, status: 'False', reason: 'Pending', message: 'the ServiceImport is being created' },
        );
    }
    const before = exp.status?.conditions ?? [];
    return wanted.map((c) => {
        const old = before.find((b) => b.type === c.type);
        const since = old && old.status === c.status ? old.lastTransitionTime : now;
        const condition = { ...c, lastTransitionTime: since } as V1Condition;
        if (generation !== undefined) condition.observedGeneration = generation;
        return condition;
    });
}

/** Whether these conditions say something else than the export's (the transition times aside). */
export function conditionsChanged(exp: ServiceExport, conditions: readonly V1Condition[]): boolean {
    const key = (cs: readonly V1Condition[]) =>
        JSON.stringify(cs.map((c) => [c.type, c.status, c.reason, c.message, c.observedGeneration ?? null]).sort());
    const ours = new Set(conditions.map((c) => c.type));
    return key((exp.status?.conditions ?? []).filter((c) => ours.has(c.type))) !== key(conditions);
}
