// What the controller knows about one gateway hostname, and how a DNS answer or failure
// changes it. Pure: the caller passes `now` (ms since the epoch) and owns all timers.
//
// Failure policy: a failed name keeps its last good addresses, ready, for policy.staleWindowMs;
// after that they stay published but ready: false, until DNS answers again. Retries back off
// from retryInitialMs, doubling per consecutive failure, capped at retryMaxMs (and never
// longer than maxTtlMs): with the defaults (1 s → 30 s) a name is retried about a dozen
// times within a 5-minute stale window, and an outage costs at most 2 queries per 30 s.
import type { AddressType } from '../endpointslice/types.js';
import { parseIP, usableEndpointIP } from '../ip/address.js';
import { compareAddresses, type UnusableReason } from './gateway-address.js';

export interface DnsPolicy {
    /** Floor of the refresh interval: a TTL of 0 must not turn into a query loop. */
    minTtlMs: number;
    /** Ceiling of the refresh interval, so a long TTL does not hide a moved gateway for days. */
    maxTtlMs: number;
    /** How long the last good addresses of a failing name stay ready. */
    staleWindowMs: number;
    retryInitialMs: number;
    retryMaxMs: number;
}

export const DEFAULT_DNS_POLICY: DnsPolicy = {
    minTtlMs: 5_000,
    maxTtlMs: 3_600_000,
    staleWindowMs: 300_000,
    retryInitialMs: 1_000,
    retryMaxMs: 30_000,
};

/**
 * How old the time of a name's last good answer may grow in the cluster's record (the Link
 * status) before it is written again, although nothing else changed. A process that starts
 * while DNS fails counts the stale window from that record, so it errs early by at most this
 * much, never late; a quarter of the window costs one small status write per Link per 75 s
 * with the defaults, and nothing when the window is long.
 */
export function recordIntervalMs(policy: DnsPolicy): number {
    return policy.staleWindowMs / 4;
}

export const RESOLUTION_ERROR_CODES = [
    'NXDOMAIN',
    'NODATA',
    'SERVFAIL',
    'TIMEOUT',
    'REFUSED',
    'UNREACHABLE',
    // Records came back, but every one of them is an address Kubernetes rejects.
    'UNUSABLE',
    'OTHER',
] as const;

export type ResolutionErrorCode = (typeof RESOLUTION_ERROR_CODES)[number];

export interface ResolutionError {
    code: ResolutionErrorCode;
    message: string;
}

/** One A or AAAA record as the resolver returns it; ttl in seconds. */
export interface AddressRecord {
    address: string;
    ttl: number;
}

export interface ResolvedAddress {
    address: string;
    family: AddressType;
}

export interface GatewayAddress extends ResolvedAddress {
    ready: boolean;
}

export interface DroppedAddress extends ResolvedAddress {
    reason: UnusableReason;
}

/** Hard failures of one family's query while the other family answered. */
export type FamilyErrors = Partial<Record<AddressType, ResolutionError>>;

/** Both queries for one name, as the resolver reports them. */
export interface NameResolution {
    v4: AddressRecord[];
    v6: AddressRecord[];
    /** Set when neither family gave a record; the name failed. */
    error?: ResolutionError;
    /** Hard failures (not NODATA) of one family while the other gave records. */
    familyErrors: FamilyErrors;
}

export interface NameState {
    readonly name: string;
    /** Usable addresses of the last good answer of each family, sorted. */
    readonly addresses: readonly ResolvedAddress[];
    /** Shortest TTL (s) among the records of the last good answer. */
    readonly ttlSeconds: number | undefined;
    readonly resolvedAt: number | undefined;
    readonly nextRefreshAt: number;
    /** Consecutive resolutions that failed in full or for one family. */
    readonly failures: number;
    /** The error of the current failure streak; cleared by a full answer. */
    readonly lastError: ResolutionError | undefined;
    readonly lastErrorAt: number | undefined;
    /** Per family, when its current failure streak began; absent while the family answers. */
    readonly staleSince: Partial<Record<AddressType, number>>;
    /** Answers of the last resolution that were left out, with the reason. */
    readonly dropped: readonly DroppedAddress[];
    /**
     * A family that has never had addresses and failed while the other answered (a server
     * that REFUSEs AAAA, common in the wild): worth a note, not a failing gateway.
     */
    readonly note: string | undefined;
}

export interface Transition {
    state: NameState;
    /** How the resolution went; a failed one left lastError set to why. */
    outcome: 'answered' | 'partly-answered' | 'failed';
}

const FAMILIES: readonly AddressType[] = ['IPv4', 'IPv6'];

export function initialNameState(name: string, now: number): NameState {
    return {
        name,
        addresses: [],
        ttlSeconds: undefined,
        resolvedAt: undefined,
        nextRefreshAt: now,
        failures: 0,
        lastError: undefined,
        lastErrorAt: undefined,
        staleSince: {},
        dropped: [],
        note: undefined,
    };
}

export function onResolution(state: NameState, resolution: NameResolution, now: number, policy: DnsPolicy): Transition {
    if (resolution.error !== undefined) return onFailure(state, resolution.error, now, policy);
    return onAnswer(state, resolution.v4, resolution.v6, now, policy, resolution.familyErrors);
}

/**
 * A resolution in which at least one family's query answered (records or NODATA). A family
 * listed in `familyErrors` failed hard and keeps its previous addresses, going stale as a
 * whole failed name would; the name is then retried with backoff rather than at TTL expiry.
 */
export function onAnswer(
    state: NameState,
    answers4: readonly AddressRecord[],
    answers6: readonly AddressRecord[],
    now: number,
    policy: DnsPolicy,
    familyErrors: FamilyErrors = {},
): Transition {
    const answers: Record<AddressType, readonly AddressRecord[]> = { IPv4: answers4, IPv6: answers6 };
    const { usable, dropped } = sortOut(answers);
    const recordCount = answers4.length + answers6.length;
    if (recordCount === 0) {
        const hard = familyErrors.IPv4 ?? familyErrors.IPv6;
        return onFailure(state, hard ?? { code: 'NODATA', message: `${state.name} has no A or AAAA records` }, now, policy);
    }
    if (usable.length === 0) {
        const listed = dropped.map((d) => `${d.address} (${d.reason})`).join(', ');
        return onFailure(state, { code: 'UNUSABLE', message: `every answer is unusable: ${listed}` }, now, policy, dropped);
    }

    const staleSince = { ...state.staleSince };
    const kept: ResolvedAddress[] = [];
    const failing: FamilyErrors = {};
    const notes: string[] = [];
    for (const family of FAMILIES) {
        const error = familyErrors[family];
        const previous = state.addresses.filter((a) => a.family === family);
        if (error === undefined) {
            delete staleSince[family];
        } else if (previous.length === 0) {
            delete staleSince[family];
            notes.push(`${family === 'IPv4' ? 'A' : 'AAAA'} query: ${error.code} (${error.message}); this family never had addresses`);
        } else {
            staleSince[family] ??= staleStart(state, now, policy);
            failing[family] = error;
            kept.push(...previous);
        }
    }
    const ttlSeconds = Math.min(...[...answers4, ...answers6].map((r) => r.ttl));
    const ttlDelay = clampTtl(ttlSeconds, policy);
    const partial = failing.IPv4 ?? failing.IPv6;
    const failures = partial === undefined ? 0 : state.failures + 1;
    const next: NameState = {
        ...state,
        addresses: distinct([...usable, ...kept]).sort(compareAddresses),
        ttlSeconds,
        resolvedAt: now,
        nextRefreshAt: now + (partial === undefined ? ttlDelay : Math.min(ttlDelay, retryDelay(failures, policy))),
        failures,
        lastError: partial,
        lastErrorAt: partial === undefined ? undefined : now,
        staleSince,
        dropped,
        note: notes.length > 0 ? notes.join('; ') : undefined,
    };
    const outcome = partial === undefined ? 'answered' : 'partly-answered';
    return { state: next, outcome };
}

/** A resolution in which no family gave an address: NXDOMAIN, SERVFAIL, timeout, empty answer. */
export function onFailure(
    state: NameState,
    error: ResolutionError,
    now: number,
    policy: DnsPolicy,
    dropped: readonly DroppedAddress[] = [],
): Transition {
    const staleSince = { ...state.staleSince };
    for (const family of FAMILIES) staleSince[family] ??= staleStart(state, now, policy);
    const failures = state.failures + 1;
    const next: NameState = {
        ...state,
        nextRefreshAt: now + retryDelay(failures, policy),
        failures,
        lastError: error,
        lastErrorAt: now,
        staleSince,
        dropped,
    };
    return { state: next, outcome: 'failed' };
}

/** The addresses to publish for this name now; [] when it never resolved. */
export function addressesOf(state: NameState, now: number, policy: DnsPolicy): GatewayAddress[] {
    return state.addresses.map((a) => ({ ...a, ready: familyReady(state, a.family, now, policy) }));
}

/**
 * What a name shows at `now`: the mirrors get its addresses and their readiness; the Link
 * status and Events, besides, its error kind, the answers dropped as unusable and its note.
 */
export interface NameView {
    readonly addresses: readonly GatewayAddress[];
    readonly errorCode: ResolutionErrorCode | undefined;
    /** `address (reason)` of each answer left out. */
    readonly dropped: readonly string[];
    readonly note: string | undefined;
}

export function nameView(state: NameState, now: number, policy: DnsPolicy): NameView {
    const dropped = state.dropped.map((d) => `${d.address} (${d.reason})`);
    return { addresses: addressesOf(state, now, policy), errorCode: state.lastError?.code, dropped, note: state.note };
}

/**
 * Whom a change from the view last told reaches. A name that starts or stops failing within
 * its stale window reaches only the status: rewriting every mirror of the Link for it is waste.
 */
export function viewReach(told: NameView, now: NameView): 'mirrors' | 'status' | undefined {
    if (JSON.stringify(told.addresses) !== JSON.stringify(now.addresses)) return 'mirrors';
    return JSON.stringify(told) === JSON.stringify(now) ? undefined : 'status';
}

/**
 * When the caller must look at this name again: its refresh, or the moment a stale family's
 * addresses stop being ready (that flip happens with no DNS event to trigger it).
 */
export function nextWakeAt(state: NameState, now: number, policy: DnsPolicy): number {
    let wake = state.nextRefreshAt;
    for (const family of FAMILIES) {
        const since = state.staleSince[family];
        if (since === undefined || !state.addresses.some((a) => a.family === family)) continue;
        const flip = since + policy.staleWindowMs + 1;
        if (flip > now) wake = Math.min(wake, flip);
    }
    return wake;
}

export function retryDelay(failures: number, policy: DnsPolicy): number {
    const exponent = Math.min(Math.max(failures - 1, 0), 30);
    return Math.min(policy.retryInitialMs * 2 ** exponent, policy.retryMaxMs, policy.maxTtlMs);
}

/**
 * When a failing family's addresses became stale: when the last good answer expired (its TTL,
 * clamped, after it was received), or now if that is earlier. Inside one process the two agree
 * to within a query's duration; for a state seeded from the cluster after a restart, the window
 * counts from the last good answer anyone recorded, not from the restart.
 */
function staleStart(state: NameState, now: number, policy: DnsPolicy): number {
    if (state.resolvedAt === undefined) return now;
    return Math.min(now, state.resolvedAt + clampTtl(state.ttlSeconds ?? 0, policy));
}

function clampTtl(ttlSeconds: number, policy: DnsPolicy): number {
    return clamp(ttlSeconds * 1000, policy.minTtlMs, policy.maxTtlMs);
}

function familyReady(state: NameState, family: AddressType, now: number, policy: DnsPolicy): boolean {
    const since = state.staleSince[family];
    return since === undefined || now <= since + policy.staleWindowMs;
}

/** Canonical, usable addresses of both families, and what was left out with the reason. */
function sortOut(answers: Record<AddressType, readonly AddressRecord[]>): {
    usable: ResolvedAddress[];
    dropped: DroppedAddress[];
} {
    const usable = new Map<string, ResolvedAddress>();
    const dropped: DroppedAddress[] = [];
    for (const family of FAMILIES) {
        for (const record of answers[family]) {
            // An IPv4-mapped AAAA answer is unmapped and counted as IPv4, like a literal.
            const parsed = parseIP(record.address);
            if (!parsed.ok) {
                dropped.push({ address: record.address, family, reason: 'invalid' });
                continue;
            }
            const ip = { address: parsed.address, family: parsed.family };
            const usability = usableEndpointIP(ip.address);
            if (usability.usable) usable.set(ip.address, ip);
            else dropped.push({ ...ip, reason: usability.reason });
        }
    }
    const byText = (a: DroppedAddress, b: DroppedAddress) =>
        a.family === b.family ? a.address.localeCompare(b.address) : a.family === 'IPv4' ? -1 : 1;
    return { usable: [...usable.values()].sort(compareAddresses), dropped: dropped.sort(byText) };
}

function distinct(addresses: ResolvedAddress[]): ResolvedAddress[] {
    return [...new Map(addresses.map((a) => [a.address, a])).values()];
}

function clamp(value: number, min: number, max: number): number {
    return Math.min(Math.max(value, min), max);
}
