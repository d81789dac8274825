// The whole plan of one Service's slices, as one pure function: the Service, the cached
// workloads (any of them: selection happens here) and the Service's existing slices in; the
// writes and the problems worth a Warning Event out. No I/O, no clock, no state: the controller
// reads its caches, calls this and writes what it returns; the tests and the oracle call it too.
import type { V1EndpointSlice, V1Service } from '@kubernetes/client-node';
import { planSlices, writesPlan } from '../endpointslice/reconciler.js';
import { owningService } from '../endpointslice/slice.js';
import type { SlicePlan } from '../endpointslice/types.js';
import type { CachedWorkload, CompactWorkload } from './compact.js';
import { desiredGroupsOfSelected, selectsWorkload } from './desired.js';
import type { WorkloadProblem } from './types.js';

export const DEFAULT_MANAGED_BY = 'external-workloads.mesh-endpoints.io';

export interface PlanServiceOptions {
    /** endpointslice.kubernetes.io/managed-by of the slices (DEFAULT_MANAGED_BY). */
    managedBy?: string;
    /** 100, as upstream's --max-endpoints-per-slice. */
    maxEndpointsPerSlice?: number;
}

export interface ServicePlan extends SlicePlan {
    /** Malformed selected workloads first, then what the planning found, each once. */
    problems: WorkloadProblem[];
    /** Endpoints the Service serves once the plan is written. */
    endpoints: number;
}

export function planService(service: V1Service, workloads: readonly CachedWorkload[], existing: readonly V1EndpointSlice[], options: PlanServiceOptions = {}): ServicePlan {
    const selected: CompactWorkload[] = [];
    const problems: WorkloadProblem[] = [];
    // Indexed, as desired.ts's loops: for...of allocates per step in the unoptimised code of a first plan.
    for (let w = 0; w < workloads.length; w++) {
        const cached = workloads[w]!;
        if (!selectsWorkload(service, cached)) continue;
        if (cached.ok) selected.push(cached);
        else problems.push(cached.problem);
    }
    const desired = desiredGroupsOfSelected(service, selected);
    problems.push(...desired.problems);
    // No longer ours to serve: our slices go.
    if (!desired.selected) return { ...writesPlan({ deletes: [...existing] }), problems, endpoints: 0 };
    const plan = planSlices({
        owner: owningService(service),
        addressTypes: desired.addressTypes,
        desired: desired.groups,
        existing: [...existing],
        maxEndpointsPerSlice: options.maxEndpointsPerSlice ?? 100,
        managedBy: options.managedBy ?? DEFAULT_MANAGED_BY,
    });
    return { ...plan, problems, endpoints: desired.groups.reduce((n, g) => n + g.endpoints.length, 0) };
}
