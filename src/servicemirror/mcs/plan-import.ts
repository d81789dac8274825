// planImport: the ServiceImport of one imported Service in this cluster and the conditions each
// exporting cluster's ServiceExport should carry, from what every cluster exports now, the
// ServiceImport here and the derived Service (plan-derived.ts), whose ClusterIPs are the
// import's `ips`. Pure: no I/O, no clock (`now` is given), no globals.
//
// The derived Service comes first: the import is created once it exists, with its `ips`
// complete, so it is written once; then its status (a subresource: a write of its own).
import type { V1Condition, V1Service } from '@kubernetes/client-node';
import { isHeadless, invalidExport, type Resolution } from './resolve.js';
import { canonical, importState, isOurs } from './state.js';
import {
    CONDITION_CONFLICT,
    CONDITION_READY,
    CONDITION_VALID,
    derivedServiceName,
    MCS_GROUP,
    MCS_OWNED_LABEL,
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
    /** RFC 3339: the lastTransitionTime of a condition that changes now. */
    now: string;
}

export type ObjectWrite<T> = { action: 'none' } | { action: 'create' | 'update' | 'delete'; object: T };

export interface ImportPlan {
    /** The clusters whose export is valid, oldest first (the first wins conflicts). */
    exporters: string[];
    import: ObjectWrite<ServiceImport>;
    /** The import's status, when it should change (written after `import`). */
    importStatus?: ServiceImportStatus;
    /** The conditions each member's ServiceExport should carry, once `import` is written. */
    exportConditions: Map<string, V1Condition[]>;
    /** Why something could not be planned as wished (a name taken by someone else's object). */
    problems: string[];
}

export const NONE = { action: 'none' } as const;

export function planImport(input: ImportPlanInput): ImportPlan {
    const { namespace, name, members, derived } = input;
    const existing = input.existingImport;
    const state = importState(name, members, existing);
    const problems: string[] = [];
    if (existing && !state.importOurs) problems.push(`ServiceImport ${namespace}/${name} exists and was not created by mesh-endpoints: it is left as it is`);
    const derivedForeign = derived !== undefined && !isOurs(derived, name);
    if (derivedForeign) problems.push(`Service ${namespace}/${derivedServiceName(name)}, the name of the derived Service, is taken by a Service mesh-endpoints did not create`);
    const plan: ImportPlan = { exporters: state.exporters, import: NONE, exportConditions: new Map(), problems };
    const conditions = (importExists: boolean) => {
        for (const member of members) {
            if (member.known && member.export) plan.exportConditions.set(member.name, exportConditions(member, state.resolution, importExists, input.now));
        }
    };

    if (!state.imported) {
        if (existing && state.importOurs) plan.import = { action: 'delete', object: existing };
        conditions(false);
        return plan;
    }
    if (existing && !state.importOurs) {
        conditions(false);
        return plan;
    }
    if (state.holding) return plan;
    if (!state.resolution) {
        // Kept only for a member that cannot be read yet: nothing to resolve; an invalid export here still says so.
        conditions(true);
        return plan;
    }
    const resolution = state.resolution;
    // The derived Service as the import needs it (ours, of the import's type); until the other
    // reconciler has made it so, the import is neither created nor given another spec.
    const derivedReady = derived !== undefined && !derivedForeign && isHeadless(derived) === (resolution.spec.type === 'Headless') && derived.metadata?.uid !== undefined;
    if (!derivedReady && !derivedForeign) {
        if (!existing) return plan;
    } else {
        const desired = desiredImport(namespace, name, resolution, derivedReady ? derived : undefined);
        if (!existing) plan.import = { action: 'create', object: desired };
        else if (importChanged(existing, desired)) plan.import = { action: 'update', object: { ...desired, metadata: { ...desired.metadata, resourceVersion: existing.metadata?.resourceVersion } } };
    }
    const clusters = [...new Set([...state.exporters, ...state.pending])].sort().map((cluster) => ({ cluster }));
    if (canonical(clusters) !== canonical(existing?.status?.clusters ?? [])) plan.importStatus = { ...existing?.status, clusters };
    conditions(true);
    return plan;
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
    const meta = (obj: ServiceImport) => canonical([obj.metadata?.labels ?? {}, obj.metadata?.annotations ?? {}]);
    return meta(existing) !== meta(desired) || canonical(existing.spec) !== canonical(desired.spec);
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
    const key = (cs: readonly V1Condition[]) => JSON.stringify(cs.map((c) => [c.type, c.status, c.reason, c.message, c.observedGeneration ?? null]).sort());
    const ours = new Set(conditions.map((c) => c.type));
    return key((exp.status?.conditions ?? []).filter((c) => ours.has(c.type))) !== key(conditions);
}
