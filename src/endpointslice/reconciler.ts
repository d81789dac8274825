// endpointslice/ owns the pure planning of EndpointSlices: given what a Service should serve and
// the slices that exist, which slices to create, replace and delete, with as few writes as
// possible (a port of k8s.io/endpointslice's reconciler). It must not do I/O, read clocks, log
// or mutate its inputs (they are informer-cache objects); writing the plan is the caller's job.
import type { V1EndpointSlice } from '@kubernetes/client-node';
import { EndpointSet, inNormalForm } from './endpointset.js';
import { planPortGroup, type PortGroup } from './portgroup.js';
import { normalisePorts, portMapKey } from './ports.js';
import { LABEL_MANAGED_BY, LABEL_SERVICE_NAME, ownedBy, replacementSlice, type SliceMeta } from './slice.js';
import type { AddressType, ReconcileInput, OwningService, SlicePlan } from './types.js';

/** The apiserver rejects slices of more endpoints than this. */
export const MAX_ENDPOINTS_PER_SLICE_LIMIT = 1000;

/** Another controller's slices (by managed-by) and another Service's are never touched. */
function managedHere(slice: V1EndpointSlice, input: ReconcileInput): boolean {
    const meta = slice.metadata;
    return (
        meta?.namespace === input.owner.namespace &&
        meta.labels?.[LABEL_SERVICE_NAME] === input.owner.name &&
        meta.labels?.[LABEL_MANAGED_BY] === input.managedBy
    );
}

function groupKey(addressType: string, portsKey: string): string {
    return `${addressType} ${portsKey}`;
}

/**
 * Desired and existing slices side by side per (address type, port set). Groups of the same
 * ports written in another order or defaulting merge into one, as the apiserver would see them.
 */
function portGroups(input: ReconcileInput, existing: V1EndpointSlice[], supported: Set<AddressType>): Map<string, PortGroup> {
    const groups = new Map<string, PortGroup>();
    for (const want of input.desired) {
        if (!supported.has(want.addressType)) continue;
        const key = groupKey(want.addressType, portMapKey(want.ports));
        let group = groups.get(key);
        if (!group) {
            group = { addressType: want.addressType, ports: normalisePorts(want.ports), existing: [], desired: new EndpointSet([], { toTake: existing.length > 0 }) };
            groups.set(key, group);
        }
        // Indexed: in the unoptimised code of a first plan, for...of allocates per endpoint.
        for (let e = 0; e < want.endpoints.length; e++) {
            const endpoint = want.endpoints[e]!;
            // The API requires at least one address; such an endpoint cannot be served anyway.
            if (endpoint.addresses.length > 0) group.desired.add(inNormalForm(endpoint));
        }
    }
    for (const slice of existing) {
        const addressType = slice.addressType as AddressType;
        const key = groupKey(addressType, portMapKey(slice.ports));
        let group = groups.get(key);
        if (!group) {
            // No longer desired: planning it against an empty set deletes all of its slices.
            group = { addressType, ports: normalisePorts(slice.ports), existing: [], desired: new EndpointSet() };
            groups.set(key, group);
        }
        group.existing.push(slice);
    }
    // Most Services have one group: nothing to order.
    return groups.size < 2 ? groups : new Map([...groups.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

/**
 * Each create that a delete of the same address type could absorb becomes a replacement of the
 * deleted slice: one write instead of two. Only our own slices are reused; a slice of an
 * earlier Service of the same name is on its way to the garbage collector. addressType is
 * immutable, hence the match on it.
 */
function recycle(plan: Pick<SlicePlan, 'creates' | 'updates' | 'deletes'>, owner: OwningService, meta: SliceMeta): void {
    if (plan.deletes.length === 0) return;
    for (let c = plan.creates.length - 1; c >= 0; c--) {
        const create = plan.creates[c]!;
        const d = plan.deletes.findIndex((s) => s.addressType === create.addressType && ownedBy(s, owner));
        if (d < 0) continue;
        const [reused] = plan.deletes.splice(d, 1) as [V1EndpointSlice];
        plan.creates.splice(c, 1);
        plan.updates.push(replacementSlice(reused, meta, create.ports ?? [], create.endpoints));
    }
}

/** A plan of just these writes, planned by no reconciler (so with no endpoint counts). */
export function writesPlan(writes: Partial<Pick<SlicePlan, 'creates' | 'updates' | 'deletes'>>): SlicePlan {
    return { creates: [], updates: [], deletes: [], endpointsAdded: 0, endpointsRemoved: 0, actualSlices: 0, desiredSlices: 0, ...writes };
}

export function planSlices(input: ReconcileInput): SlicePlan {
    const max = input.maxEndpointsPerSlice;
    if (!Number.isInteger(max) || max < 1 || max > MAX_ENDPOINTS_PER_SLICE_LIMIT) {
        throw new RangeError(`maxEndpointsPerSlice must be an integer in 1..${MAX_ENDPOINTS_PER_SLICE_LIMIT}, got ${max}`);
    }
    const meta: SliceMeta = {
        owner: input.owner,
        managedBy: input.managedBy,
        extraLabels: input.extraLabels,
        annotations: input.annotations,
    };
    const supported = new Set(input.addressTypes);
    // A slice already being deleted cannot be written; counting it would keep us from
    // creating its replacement until the garbage collector is done.
    const existing = input.existing.filter((s) => !s.metadata?.deletionTimestamp && managedHere(s, input));

    const plan: SlicePlan = {
        creates: [],
        updates: [],
        deletes: [],
        endpointsAdded: 0,
        endpointsRemoved: 0,
        actualSlices: 0,
        desiredSlices: 0,
    };
    // Slices deleted for their owner or address type do not count in endpointsRemoved (as
    // upstream): their endpoints were never this Service's to serve in that form.
    const reconcilable: V1EndpointSlice[] = [];
    for (const slice of existing) {
        if (supported.has(slice.addressType as AddressType) && ownedBy(slice, input.owner)) reconcilable.push(slice);
        else plan.deletes.push(slice);
    }

    for (const group of portGroups(input, reconcilable, supported).values()) {
        plan.desiredSlices += Math.ceil(group.desired.size / max);
        const part = planPortGroup(group, max, meta);
        plan.creates.push(...part.creates);
        plan.updates.push(...part.updates);
        plan.deletes.push(...part.deletes);
        plan.endpointsAdded += part.endpointsAdded;
        plan.endpointsRemoved += part.endpointsRemoved;
    }

    recycle(plan, input.owner, meta);
    plan.actualSlices = existing.length - plan.deletes.length + plan.creates.length;
    return plan;
}
