// The gateway resolution as it appears in the Link status: one entry per hostname.
// Pure; timestamps are RFC 3339 strings because that is how status fields are read.
import { addressesOf, type DnsPolicy, type GatewayAddress, type NameState, type ResolutionError } from './name-state.js';

export interface GatewayNameStatus {
    name: string;
    addresses: GatewayAddress[];
    /** Shortest TTL of the last good answer, in seconds, as DNS gave it (before clamping). */
    ttlSeconds?: number;
    resolvedAt?: string;
    nextRefreshAt: string;
    /** Set while the name is failing, in full or for one family. */
    lastError?: ResolutionError;
    consecutiveFailures: number;
    /** Earliest moment a family of this name started failing, while it still fails. */
    staleSince?: string;
}

export function nameStatus(state: NameState, now: number, policy: DnsPolicy): GatewayNameStatus {
    const status: GatewayNameStatus = {
        name: state.name,
        addresses: addressesOf(state, now, policy),
        nextRefreshAt: new Date(state.nextRefreshAt).toISOString(),
        consecutiveFailures: state.failures,
    };
    if (state.ttlSeconds !== undefined) status.ttlSeconds = state.ttlSeconds;
    if (state.resolvedAt !== undefined) status.resolvedAt = new Date(state.resolvedAt).toISOString();
    if (state.lastError !== undefined) status.lastError = { ...state.lastError };
    const since = Object.values(state.staleSince);
    if (since.length > 0) status.staleSince = new Date(Math.min(...since)).toISOString();
    return status;
}
