// Public API of endpointslice/: pure planning of EndpointSlices and the generation tracker.
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
