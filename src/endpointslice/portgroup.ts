// The churn-minimising heart of the reconciler: one port group's existing slices against its
// desired endpoints. Every choice here trades packing for writes: an endpoint stays where it is,
// leftovers go where a write is already paid for, and a write is never split in two.
import type { DiscoveryV1EndpointPort, V1Endpoint, V1EndpointSlice } from '@kubernetes/client-node';
import { EndpointSet, endpointsEqualBeyondIdentity } from './endpointset.js';
import { annotationsChanged, labelsChanged, newSlice, replacementSlice, sliceLabels, type SliceMeta } from './slice.js';
import type { AddressType } from './types.js';

export interface PortGroup {
    addressType: AddressType;
    /** Normalised; written on every slice of the group that we create or replace. */
    ports: DiscoveryV1EndpointPort[];
    existing: V1EndpointSlice[];
    /** Normalised desired endpoints; consumed by planning. */
    desired: EndpointSet;
}

export interface PortGroupPlan {
    creates: V1EndpointSlice[];
    updates: V1EndpointSlice[];
    deletes: V1EndpointSlice[];
    endpointsAdded: number;
    endpointsRemoved: number;
}

interface Unchanged {
    slice: V1EndpointSlice;
    kept: V1Endpoint[];
}

function byName(a: V1EndpointSlice, b: V1EndpointSlice): number {
    const ka = `${a.metadata?.name ?? ''}/${a.metadata?.uid ?? ''}`;
    const kb = `${b.metadata?.name ?? ''}/${b.metadata?.uid ?? ''}`;
    return ka < kb ? -1 : ka > kb ? 1 : 0;
}

/**
 * Of the slices nobody is writing yet, the one that ends closest to full after taking all the
 * remaining endpoints; -1 if none can take them all (splitting them would cost two writes).
 */
function closestToFull(unchanged: Unchanged[], remaining: number, max: number): number {
    let best = -1;
    let bestRoom = max;
    for (const [i, candidate] of unchanged.entries()) {
        const room = max - (remaining + candidate.kept.length);
        if (room >= 0 && room < bestRoom) {
            best = i;
            bestRoom = room;
            if (room === 0) break;
        }
    }
    return best;
}

export function planPortGroup(group: PortGroup, max: number, meta: SliceMeta): PortGroupPlan {
    const { desired, ports } = group;
    const labels = sliceLabels(meta);
    const updates: V1EndpointSlice[] = [];
    const deletes: V1EndpointSlice[] = [];
    const unchanged: Unchanged[] = [];
    // Endpoints beyond max in a slice written under a larger max; placed again like new ones.
    const overflow: V1Endpoint[] = [];
    let endpointsRemoved = 0;

    for (const slice of [...group.existing].sort(byName)) {
        const kept: V1Endpoint[] = [];
        let endpointChanged = false;
        const endpoints = slice.endpoints ?? [];
        // Indexed: in the unoptimised code of a first plan, for...of allocates per endpoint.
        for (let e = 0; e < endpoints.length; e++) {
            const endpoint = endpoints[e]!;
            const wanted = desired.take(endpoint);
            if (!wanted) {
                // Not desired, or a duplicate of one already kept in an earlier slice.
                endpointsRemoved++;
                continue;
            }
            if (kept.length >= max) overflow.push(wanted);
            else kept.push(wanted);
            if (!endpointsEqualBeyondIdentity(endpoint, wanted)) endpointChanged = true;
        }
        if (kept.length === 0) deletes.push(slice);
        else if (endpointChanged || kept.length !== endpoints.length) {
            updates.push(replacementSlice(slice, meta, ports, kept));
        } else if (labelsChanged(slice, labels) || annotationsChanged(slice, meta.annotations)) {
            updates.push(replacementSlice(slice, meta, ports, kept));
        } else unchanged.push({ slice, kept });
    }

    const endpointsAdded = desired.size;
    const leftovers = [...desired.sorted(), ...overflow];
    let next = 0;

    // A slice already being written takes leftovers for free; the fullest first, so the
    // emptier ones keep room for what comes later.
    const fillOrder = [...updates].sort((a, b) => b.endpoints.length - a.endpoints.length);
    for (const slice of fillOrder) {
        while (next < leftovers.length && slice.endpoints.length < max) slice.endpoints.push(leftovers[next++]!);
    }

    const creates: V1EndpointSlice[] = [];
    while (next < leftovers.length) {
        const remaining = leftovers.length - next;
        const pick = remaining < max ? closestToFull(unchanged, remaining, max) : -1;
        let target: V1EndpointSlice;
        if (pick >= 0) {
            const [{ slice, kept }] = unchanged.splice(pick, 1) as [Unchanged];
            target = replacementSlice(slice, meta, ports, kept);
            updates.push(target);
        } else {
            target = newSlice(meta, group.addressType, ports, []);
            creates.push(target);
        }
        while (next < leftovers.length && target.endpoints.length < max) target.endpoints.push(leftovers[next++]!);
    }

    return { creates, updates, deletes, endpointsAdded, endpointsRemoved };
}
