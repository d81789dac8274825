// The vocabulary shared by every EndpointSlice writer in mesh-endpoints: a source
// adapter (external workloads, service mirror) turns its objects into DesiredGroups,
// and the reconciler turns DesiredGroups + the slices that exist into a SlicePlan.
import type { DiscoveryV1EndpointPort, V1Endpoint, V1EndpointSlice } from '@kubernetes/client-node';

import type { AddressType } from '../ip/family.js';

export type { AddressType };

/** The Service that owns a set of slices: everything the reconciler needs to know of it. */
export interface OwningService {
    name: string;
    namespace: string;
    uid: string;
    /** The Service's own labels; reserved keys are filtered out by the reconciler. */
    labels: Record<string, string>;
    /** ClusterIP "None" (or empty): slices get the service.kubernetes.io/headless label. */
    headless: boolean;
}

/** Endpoints that share one address type and one resolved port list: one slice group. */
export interface DesiredGroup {
    addressType: AddressType;
    /** In the apiserver's defaulted form: name "" when unnamed, protocol set. */
    ports: DiscoveryV1EndpointPort[];
    endpoints: V1Endpoint[];
}

export interface ReconcileInput {
    owner: OwningService;
    /** Address types the owner serves; slices of any other type are deleted. */
    addressTypes: AddressType[];
    desired: DesiredGroup[];
    /** Slices carrying our managed-by label and the owner's service-name label. */
    existing: V1EndpointSlice[];
    maxEndpointsPerSlice: number;
    /** Value of endpointslice.kubernetes.io/managed-by on every slice we write. */
    managedBy: string;
    /** Extra labels and annotations the source adapter puts on every slice. */
    extraLabels?: Record<string, string>;
    annotations?: Record<string, string>;
}

export interface SlicePlan {
    /** New slices (generateName set, no name), in write order. */
    creates: V1EndpointSlice[];
    /** Full replacements of existing slices, carrying their resourceVersion. */
    updates: V1EndpointSlice[];
    deletes: V1EndpointSlice[];
    /** Desired endpoints not present in any existing slice. */
    endpointsAdded: number;
    /** Existing endpoints that are no longer desired. */
    endpointsRemoved: number;
    /** Slices after the plan is applied, and with perfect packing. */
    actualSlices: number;
    desiredSlices: number;
}
