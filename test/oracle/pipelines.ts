// The pure path of each controller, from source objects to the plan the writer would send:
// what the property tests (unit and integration) drive with hostile input.
import type { V1EndpointSlice, V1Service } from '@kubernetes/client-node';
import { planSlices } from '../../src/endpointslice/reconciler.js';
import { owningService } from '../../src/endpointslice/slice.js';
import type { SlicePlan } from '../../src/endpointslice/types.js';
import { cacheWorkload } from '../../src/externalworkloads/compact.js';
import { planService, type ServicePlan } from '../../src/externalworkloads/plan.js';
import { desiredMirrorGroups, type MirrorGroupsInput } from '../../src/servicemirror/plan/endpoints.js';
import { MIRROR_SLICE_MANAGED_BY } from '../../src/servicemirror/api/keys.js';

/** The slices' owner, as the controllers derive it. */
export const ownerOf = owningService;

/** ExternalWorkloadsController.syncService without the cluster: raw workloads → their cached form → planService. */
export function externalWorkloadsPlan(service: V1Service, rawWorkloads: unknown[], existing: V1EndpointSlice[], maxEndpointsPerSlice: number): ServicePlan {
    return planService(service, rawWorkloads.map((raw) => cacheWorkload(raw)), existing, { maxEndpointsPerSlice });
}

/** The mirror's sync without the cluster: gateway addresses → plan. */
export function mirrorPlan(input: MirrorGroupsInput, existing: V1EndpointSlice[]): SlicePlan {
    const groups = desiredMirrorGroups(input);
    return planSlices({
        owner: ownerOf(input.mirror),
        addressTypes: groups.addressTypes,
        desired: groups.groups,
        existing,
        maxEndpointsPerSlice: 100,
        managedBy: MIRROR_SLICE_MANAGED_BY,
        extraLabels: groups.extraLabels,
        annotations: groups.annotations,
    });
}
