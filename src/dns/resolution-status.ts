// The Link's status.gatewayResolution: one item per gatewayAddress entry, in the shape the
// Link CRD (charts/mesh-endpoints/crds/links.yaml) declares. Pure; timestamps are RFC 3339.
import type { AddressType } from '../endpointslice/types.js';
import { rfc3339 } from '../time/format.js';
import { usableEndpointIP } from '../ip/address.js';
import { compareAddresses, type GatewayEntry } from './gateway-address.js';
import { addressesOf, initialNameState, RESOLUTION_ERROR_CODES, type DnsPolicy, type NameState, type ResolutionErrorCode, type ResolvedAddress } from './name-state.js';

export interface GatewayNameStatus {
    /** The entry: an IP literal in canonical form, or the hostname lowercased, without the root dot. */
    name: string;
    /** Published addresses, ready or not. */
    addresses: string[];
    /** Those of `addresses` published not ready: their name has failed for longer than the stale window. */
    notReadyAddresses?: string[];
    /** Shortest TTL of the last good answer, in seconds, as DNS gave it (before clamping). */
    ttlSeconds?: number;
    resolvedAt?: string;
    nextRefreshAt?: string;
    /** "CODE: detail", while the name fails in full or for one family. */
    lastError?: string;
    lastErrorAt?: string;
    /**
     * Per family, while it fails: when its last good answer went stale. The stale window counts
     * from here, in this process and in the next one.
     */
    staleSince?: Partial<Record<AddressType, string>>;
    /** Something worth knowing that is no failure, e.g. a server refusing AAAA for a v4-only name. */
    note?: string;
}

export function nameStatus(state: NameState, now: number, policy: DnsPolicy): GatewayNameStatus {
    const published = addressesOf(state, now, policy);
    const status: GatewayNameStatus = {
        name: state.name,
        addresses: published.map((a) => a.address),
        nextRefreshAt: rfc3339(state.nextRefreshAt),
    };
    const notReady = published.filter((a) => !a.ready).map((a) => a.address);
    if (notReady.length > 0) status.notReadyAddresses = notReady;
    // The CRD field is an int32; RFC 2181 caps TTLs there too, but a resolver may not.
    if (state.ttlSeconds !== undefined) status.ttlSeconds = Math.min(state.ttlSeconds, 2 ** 31 - 1);
    if (state.resolvedAt !== undefined) status.resolvedAt = rfc3339(state.resolvedAt);
    if (state.lastError !== undefined) status.lastError = `${state.lastError.code}: ${state.lastError.message}`;
    if (state.lastError !== undefined && state.lastErrorAt !== undefined) status.lastErrorAt = rfc3339(state.lastErrorAt);
    const stale = Object.entries(state.staleSince).filter(([family]) => state.addresses.some((a) => a.family === family));
    if (stale.length > 0) status.staleSince = Object.fromEntries(stale.map(([family, at]) => [family, rfc3339(at)]));
    if (state.note !== undefined) status.note = state.note;
    return status;
}

/**
 * The state a name starts from in a process that finds this status, written by itself or
 * another replica before: the last good addresses with when they were resolved, and, if the
 * name was failing, since when. Its first resolution is due now. Nothing to seed from (no
 * addresses, no time) gives undefined: the name then waits for its own first answer.
 * Addresses that are not usable endpoint IPs (an edited status) are left out.
 */
export function seedNameState(status: GatewayNameStatus, now: number): NameState | undefined {
    const resolvedAt = parseTime(status.resolvedAt);
    const addresses: ResolvedAddress[] = [];
    for (const text of status.addresses ?? []) {
        const ip = usableEndpointIP(text);
        if (ip.usable) addresses.push({ address: ip.address, family: ip.family });
    }
    if (resolvedAt === undefined || addresses.length === 0) return undefined;
    const staleSince: NameState['staleSince'] = {};
    for (const family of ['IPv4', 'IPv6'] as const) {
        const since = parseTime(status.staleSince?.[family]);
        if (since !== undefined && addresses.some((a) => a.family === family)) staleSince[family] = since;
    }
    const lastError = parseError(status.lastError);
    return {
        ...initialNameState(status.name, now),
        addresses: addresses.sort(compareAddresses),
        ttlSeconds: status.ttlSeconds,
        resolvedAt,
        lastError,
        lastErrorAt: lastError === undefined ? undefined : parseTime(status.lastErrorAt),
        staleSince,
        note: status.note,
    };
}

/**
 * The seed of a name for a new watcher: what this process itself last knew of it (kept from an
 * earlier term as leader), or what the Link status recorded, whichever holds the later good
 * answer. The record may lag what this process learned: a status write can fail (the apiserver
 * restarting is also what costs the lease), and the record is refreshed only every quarter
 * window. Either is due for resolution now.
 */
export function newerSeed(remembered: NameState | undefined, recorded: NameState | undefined, now: number): NameState | undefined {
    const mine = remembered && remembered.resolvedAt !== undefined ? { ...remembered, nextRefreshAt: now } : undefined;
    if (!mine) return recorded;
    if (!recorded) return mine;
    return (recorded.resolvedAt ?? -Infinity) > mine.resolvedAt! ? recorded : mine;
}

function parseTime(text: string | undefined): number | undefined {
    const ms = text === undefined ? NaN : Date.parse(text);
    return Number.isFinite(ms) ? ms : undefined;
}

const ERROR_CODES: ReadonlySet<string> = new Set(RESOLUTION_ERROR_CODES);

/** "CODE: detail" as nameStatus writes it. */
function parseError(text: string | undefined): NameState['lastError'] {
    if (text === undefined) return undefined;
    const split = text.indexOf(': ');
    const code = split > 0 ? text.slice(0, split) : '';
    return ERROR_CODES.has(code) ? { code: code as ResolutionErrorCode, message: text.slice(split + 2) } : { code: 'OTHER', message: text };
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
