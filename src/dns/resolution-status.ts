// The Link's status.gatewayResolution: one item per gatewayAddress entry, in the shape the
// Link CRD (charts/mesh-endpoints/crds/links.yaml) declares. Pure; timestamps are RFC 3339.
import type { GatewayEntry } from './gateway-address.js';
import { addressesOf, type DnsPolicy, type NameState } from './name-state.js';

export interface GatewayNameStatus {
    /** The entry: an IP literal in canonical form, or the hostname lowercased, without the root dot. */
    name: string;
    /** Published addresses, ready or not (readiness is on the slices). */
    addresses: string[];
    /** Shortest TTL of the last good answer, in seconds, as DNS gave it (before clamping). */
    ttlSeconds?: number;
    resolvedAt?: string;
    nextRefreshAt?: string;
    /** "CODE: detail", while the name fails in full or for one family. */
    lastError?: string;
    lastErrorAt?: string;
}

export function nameStatus(state: NameState, now: number, policy: DnsPolicy): GatewayNameStatus {
    const status: GatewayNameStatus = {
        name: state.name,
        addresses: addressesOf(state, now, policy).map((a) => a.address),
        nextRefreshAt: rfc3339(state.nextRefreshAt),
    };
    // The CRD field is an int32; RFC 2181 caps TTLs there too, but a resolver may not.
    if (state.ttlSeconds !== undefined) status.ttlSeconds = Math.min(state.ttlSeconds, 2 ** 31 - 1);
    if (state.resolvedAt !== undefined) status.resolvedAt = rfc3339(state.resolvedAt);
    if (state.lastError !== undefined) status.lastError = `${state.lastError.code}: ${state.lastError.message}`;
    if (state.lastError !== undefined && state.lastErrorAt !== undefined) status.lastErrorAt = rfc3339(state.lastErrorAt);
    return status;
}

/**
 * Every entry in spec order: a literal resolves to itself; a hostname the watcher has not
 * reported on yet shows only its name.
 */
export function gatewayResolutionStatus(
    entries: readonly GatewayEntry[],
    states: ReadonlyMap<string, NameState>,
    now: number,
    policy: DnsPolicy,
): GatewayNameStatus[] {
    return entries.map((entry) => {
        if (entry.kind === 'ip') return { name: entry.address, addresses: [entry.address] };
        const state = states.get(entry.name);
        return state === undefined ? { name: entry.name, addresses: [] } : nameStatus(state, now, policy);
    });
}

function rfc3339(ms: number): string {
    // Whole seconds, like every other timestamp the apiserver writes.
    return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace('.000Z', 'Z');
}
