// planDerived: the derived Service of one imported Service in this cluster and its slices (one
// set per source cluster), from what every cluster exports now and the ServiceImport here. The
// derived Service is written first: its ClusterIPs are the import's `ips` (plan-import.ts); its
// slices once the import is written, on the import's ports. It is not owned by the import: a
// ServiceImport deleted by hand while still exported is made again with the same ips (its
// ClusterSetIP must not change while exported), and the derived Service is deleted here, with its slices, once nothing is exported. Pure: no I/O, no clock, no globals.
import type { V1EndpointSlice, V1Service, V1ServicePort } from '@kubernetes/client-node';
import { planSlices, writesPlan } from '../../endpointslice/reconciler.js';
import type { SlicePlan } from '../../endpointslice/types.js';
import { OPAQUE_PORTS_ANNOTATION } from '../api/keys.js';
import { mirrorAddressTypes } from '../plan/endpoints.js';
import { sourceGroups } from './endpoints.js';
import { NONE, type ObjectWrite } from './plan-import.js';
import { isHeadless, type Resolution } from './resolve.js';
import { canonical, importState, isOurs } from './state.js';
import { derivedServiceName, LABEL_MCS_SERVICE_NAME, LABEL_SOURCE_CLUSTER, MCS_MANAGED_BY, MCS_OWNED_LABEL, type ImportPort, type MemberCluster, type ServiceImport } from './types.js';

export interface DerivedPlanInput {
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
    maxEndpointsPerSlice: number;
}

/** What the derived Service's slices carry: the import's ports, from these clusters. */
export interface DerivedEndpoints {
    ports: readonly ImportPort[];
    exporters: readonly string[];
}

export interface DerivedPlan {
    derived: ObjectWrite<V1Service>;
    /** Slices of ours to delete with the derived Service (it goes, or is made anew). */
    deletes: V1EndpointSlice[];
    /** The endpoints of the derived Service once `derived` is written (planDerivedSlices); none when it goes. */
    endpoints?: DerivedEndpoints;
}

export function planDerived(input: DerivedPlanInput): DerivedPlan {
    const { namespace, name, derived } = input;
    const existing = input.existingImport;
    const state = importState(name, input.members, existing);
    const derivedOurs = derived !== undefined && isOurs(derived, name);
    const drop = (): DerivedPlan => ({ derived: derivedOurs ? { action: 'delete', object: derived } : NONE, deletes: [...input.slices] });
    if (!state.imported) return drop();
    // Someone else's import, or a name taken: nothing of ours to make (the import's plan reports it).
    if ((existing && !state.importOurs) || (derived && !derivedOurs)) return { derived: NONE, deletes: [] };
    // The slices carry the ports of the import as written, never one it lacks: they follow it.
    const written = existing && state.importOurs ? existing : undefined;
    const endpointsFor = (headless: boolean): DerivedEndpoints | undefined =>
        written && (written.spec?.type === 'Headless') === headless ? { ports: written.spec?.ports ?? [], exporters: state.exporters } : undefined;
    if (state.holding) {
        // The known exporters' endpoints still follow them, into the derived Service as it is.
        return { derived: NONE, deletes: [], endpoints: derivedOurs ? endpointsFor(isHeadless(derived)) : undefined };
    }
    // Kept only for a member that cannot be read yet: nothing is resolved, nothing is deleted.
    if (!state.resolution) return { derived: NONE, deletes: [] };
    const resolution = state.resolution;
    const wanted = desiredDerived(namespace, name, resolution);
    if (!derived) return { derived: { action: 'create', object: wanted }, deletes: [], endpoints: endpointsFor(resolution.spec.type === 'Headless') };
    // A ClusterIP cannot become None or the reverse: the derived Service is made anew (its slices go with it).
    if (isHeadless(derived) !== (resolution.spec.type === 'Headless')) return drop();
    const update = derivedUpdate(derived, wanted);
    return { derived: update ? { action: 'update', object: update } : NONE, deletes: [], endpoints: endpointsFor(isHeadless(derived)) };
}

/**
 * The derived Service: no selector (its slices are ours), the import's ports, and the winner's
 * opaque-ports annotation, which Linkerd's destination reads from the Service.
 */
function desiredDerived(namespace: string, name: string, resolution: Resolution): V1Service {
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
        metadata: { name: derivedServiceName(name), namespace, labels: { [MCS_OWNED_LABEL]: name, [LABEL_MCS_SERVICE_NAME]: name }, annotations },
        spec,
    };
}

/**
 * The existing derived Service brought to the wanted one (its allocated addresses kept), or null
 * when it is already. An owner reference an earlier version set (to the import) is dropped.
 */
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
    const { ownerReferences: _dropped, ...metadata } = existing.metadata ?? {};
    return { ...wanted, metadata: { ...metadata, ...wanted.metadata, resourceVersion: existing.metadata?.resourceVersion }, spec };
}

/** The derived Service's slices: each exporter's endpoints, given only the ports the import has as that member serves them. */
export function planDerivedSlices(input: DerivedPlanInput, derived: V1Service, endpoints: DerivedEndpoints): SlicePlan {
    const addressTypes = mirrorAddressTypes(derived);
    const owner = { name: derived.metadata!.name!, namespace: input.namespace, uid: derived.metadata!.uid!, labels: {}, headless: isHeadless(derived) };
    const total = writesPlan({});
    const members = new Map(input.members.map((m) => [m.name, m]));
    const bySource = new Map<string, V1EndpointSlice[]>();
    for (const slice of input.slices) {
        const source = slice.metadata?.labels?.[LABEL_SOURCE_CLUSTER] ?? '';
        const member = members.get(source);
        // A cluster still being read keeps its slices; one that left the set loses them.
        if (member && !member.known) continue;
        if (!member || !endpoints.exporters.includes(source)) {
            total.deletes.push(slice);
            continue;
        }
        bySource.set(source, [...(bySource.get(source) ?? []), slice]);
    }
    for (const cluster of endpoints.exporters) {
        const member = members.get(cluster)!;
        const { groups, annotations } = sourceGroups(member.endpoints, member.service!, endpoints.ports, addressTypes);
        const plan = planSlices({
            owner,
            addressTypes,
            desired: groups,
            existing: bySource.get(cluster) ?? [],
            maxEndpointsPerSlice: input.maxEndpointsPerSlice,
            managedBy: MCS_MANAGED_BY,
            extraLabels: { [LABEL_MCS_SERVICE_NAME]: input.name, [LABEL_SOURCE_CLUSTER]: cluster },
            annotations,
        });
        total.creates.push(...plan.creates);
        total.updates.push(...plan.updates);
        total.deletes.push(...plan.deletes);
        total.endpointsAdded += plan.endpointsAdded;
        total.endpointsRemoved += plan.endpointsRemoved;
    }
    return total;
}
