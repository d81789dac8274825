// src/endpointslice/: pure planning of EndpointSlices (upstream's churn-minimising reconciler:
// desired groups + existing slices -> creates, updates, deletes), their validation against the
// apiserver's rules, and the tracker of generations we wrote. No I/O, no clock, no src/kube/.
export type { AddressType, DesiredGroup, ReconcileInput, OwningService, SlicePlan } from './types.js';
export { planSlices, MAX_ENDPOINTS_PER_SLICE_LIMIT } from './reconciler.js';
export { EndpointSet, endpointKey, endpointsEqualBeyondIdentity, normaliseEndpoint } from './endpointset.js';
export { normalisePort, normalisePorts, portMapKey } from './ports.js';
export {
    LABEL_HEADLESS,
    LABEL_MANAGED_BY,
    LABEL_SERVICE_NAME,
    RESERVED_LABELS,
    annotationsChanged,
    controllerRef,
    labelsChanged,
    newSlice,
    ownedBy,
    replacementSlice,
    sliceLabels,
    sliceNamePrefix,
    type SliceMeta,
} from './slice.js';
export { SliceTracker, type TrackedService } from './tracker.js';
export { sliceProblems } from './validate.js';
