// The Link status the service mirror writes: counts of its mirrors and a ServicesMirrored
// condition, one entry (Linkerd's shape) only for each remote Service that is not mirrored, at
// most LISTED_NOT_MIRRORED of them, and how each gateway name resolved (our addition). Its size
// does not grow with the number of mirrors: at one entry per mirror, 2 000 mirrors made an
// 830 KB status the apiserver took 2-16 s to write. A mirrored Service shows as its mirror
// Service (`mesh-endpoints status` lists both). Pure: the controller decides when to build it
// and writes it only when it differs from what is stored.
import { rfc3339 } from '../../time/format.js';
import type { GatewayResolutionStatus, LinkCondition, LinkStatus, MirrorSummary, ServiceStatus } from '../api/link.js';

/** Linkerd's is linkerd.io/service-mirror; ours says which controller wrote the entry. */
export const STATUS_CONTROLLER_NAME = 'mesh-endpoints.io/service-mirror';
export const MIRRORED_CONDITION = 'Mirrored';

export type MirrorReason = 'Mirrored' | 'InvalidService' | 'MissingNamespace' | 'NotOwned' | 'Error';

export interface MirrorOutcome {
    namespace: string;
    remoteName: string;
    mirrored: boolean;
    reason: MirrorReason;
    message: string;
    /** The mirror Service, once it exists. */
    localName?: string;
    /**
     * What was left out of a mirror, each a Warning Event once: remote endpoint addresses (one
     * per remote EndpointSlice, remoteEndpointWarnings), endpoint mirrors whose name is taken.
     */
    warnings?: MirrorWarning[];
}

export interface MirrorWarning {
    reason: 'RemoteEndpointsRefused' | 'NotOwned';
    message: string;
}

/**
 * The status entry for one remote Service. The transition time is kept from `previous` while
 * the condition's status stays the same, so a resync does not rewrite the Link.
 * remoteRef/localRef are written in the CRD's defaulted form (group core, kind Service) so
 * that what we compare is what the apiserver stores.
 */
export function mirrorServiceStatus(outcome: MirrorOutcome, previous: ServiceStatus | undefined, now: number): ServiceStatus {
    const status = outcome.mirrored ? 'True' : 'False';
    const old = previous?.conditions?.find((c) => c.type === MIRRORED_CONDITION);
    const condition: NonNullable<ServiceStatus['conditions']>[number] = {
        type: MIRRORED_CONDITION,
        status,
        lastTransitionTime: old && old.status === status ? old.lastTransitionTime : rfc3339(now),
        reason: outcome.reason,
        message: outcome.message,
    };
    if (outcome.localName) condition.localRef = { group: 'core', kind: 'Service', name: outcome.localName, namespace: outcome.namespace };
    return {
        controllerName: STATUS_CONTROLLER_NAME,
        remoteRef: { group: 'core', kind: 'Service', name: outcome.remoteName, namespace: outcome.namespace },
        conditions: [condition],
    };
}

/** Same entry, transition time aside: whether an outcome is news. */
export function sameServiceStatus(a: ServiceStatus | undefined, b: ServiceStatus | undefined): boolean {
    const strip = (s: ServiceStatus | undefined) => s && { ...s, conditions: s.conditions?.map((c) => ({ ...c, lastTransitionTime: '' })) };
    return sameJson(strip(a), strip(b));
}

export const REMOTE_READABLE_CONDITION = 'RemoteReadable';
export const SERVICES_MIRRORED_CONDITION = 'ServicesMirrored';
/** Entries of status.mirrorServices at most: the first not-mirrored Services by namespace and name. */
export const LISTED_NOT_MIRRORED = 50;

/**
 * A mirrored Service's entry as the Link's status book keeps it: the status shows mirrored
 * Services only as a count, so their messages and times are not kept (a Link may have thousands).
 */
export const MIRRORED = 'mirrored';
export type StatusEntry = ServiceStatus | typeof MIRRORED;

export const isMirrored = (entry: StatusEntry | undefined) => entry === MIRRORED || entry?.conditions?.[0]?.status === 'True';
/** The remote Service's "namespace/name". */
export const remoteKeyOf = (entry: ServiceStatus) => `${entry.remoteRef.namespace}/${entry.remoteRef.name}`;

/** The mirrors' part of the status: the counts, and the entries it lists. */
export interface MirrorsReport {
    summary: MirrorSummary;
    /** Not-mirrored entries sorted by namespace and name, at most `limit`. */
    listed: ServiceStatus[];
}

/** Counts every entry and lists the first not-mirrored ones, so the order is stable. */
export function mirrorsReport(entries: Iterable<StatusEntry>, limit = LISTED_NOT_MIRRORED): MirrorsReport {
    const summary: MirrorSummary = { services: 0, mirrored: 0, notMirrored: 0, notMirroredByReason: [], notListed: 0 };
    const byReason = new Map<string, number>();
    const failing: ServiceStatus[] = [];
    for (const entry of entries) {
        summary.services++;
        if (entry === MIRRORED || isMirrored(entry)) {
            summary.mirrored++;
            continue;
        }
        summary.notMirrored++;
        const reason = entry.conditions?.[0]?.reason ?? 'Unknown';
        byReason.set(reason, (byReason.get(reason) ?? 0) + 1);
        failing.push(entry);
    }
    // A list, not a map: a merge patch replaces a list whole, where it would keep a map's old keys.
    summary.notMirroredByReason = [...byReason].sort(([a], [b]) => compareKeys(a, b)).map(([reason, services]) => ({ reason, services }));
    const listed = failing.sort((a, b) => compareKeys(remoteKeyOf(a), remoteKeyOf(b))).slice(0, limit);
    summary.notListed = failing.length - listed.length;
    return { summary, listed };
}

const compareKeys = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/**
 * The Link-wide condition: are all its exported remote Services mirrored? Its transition time
 * is kept from `previous` while its status stays the same.
 */
export function servicesMirroredCondition(summary: MirrorSummary, previous: LinkCondition | undefined, now: number): LinkCondition {
    const status = summary.notMirrored === 0 ? 'True' : 'False';
    const kept = previous?.type === SERVICES_MIRRORED_CONDITION && previous.status === status;
    const lastTransitionTime = kept ? previous.lastTransitionTime : rfc3339(now);
    if (status === 'True') {
        const message = summary.services === 0 ? 'no remote Service is exported through this Link' : `all ${summary.services} exported remote Services are mirrored`;
        return { type: SERVICES_MIRRORED_CONDITION, status, lastTransitionTime, reason: 'AllMirrored', message };
    }
    const reasons = summary.notMirroredByReason.map((r) => `${r.reason}: ${r.services}`).join(', ');
    const more = summary.notListed > 0 ? `the first ${summary.notMirrored - summary.notListed} are` : 'each is';
    const message = `${summary.notMirrored} of ${summary.services} exported remote Services are not mirrored (${reasons}); ${more} listed in status.mirrorServices, and the Link's Warning Events say why`;
    return { type: SERVICES_MIRRORED_CONDITION, status, lastTransitionTime, reason: 'NotAllMirrored', message };
}

export const MIRROR_LIMIT_CONDITION = 'MirrorLimitReached';

/**
 * MirrorLimitReached=True while the remote exports more Services than --max-mirrors-per-link
 * (only the oldest `max` are mirrored); absent otherwise, so Links within their limit keep
 * the status they had. Its transition time is kept from `previous`.
 */
export function mirrorLimitCondition(max: number, exported: number, previous: LinkCondition | undefined, now: number): LinkCondition | undefined {
    if (exported <= max) return undefined;
    const lastTransitionTime = previous?.type === MIRROR_LIMIT_CONDITION && previous.status === 'True' ? previous.lastTransitionTime : rfc3339(now);
    const message = `the remote exports ${exported} Services, more than --max-mirrors-per-link=${max}: the ${max} oldest (by creation time, then namespace/name) are mirrored, the other ${exported - max} are not`;
    return { type: MIRROR_LIMIT_CONDITION, status: 'True', lastTransitionTime, reason: 'TooManyExports', message };
}

/** Whether the remote cluster can be read now, and since when. */
export interface RemoteHealth {
    readable: boolean;
    since: number;
    /** Why not, while not readable. */
    error?: string;
}

/** The kind of a failure to read the remote: what the condition's reason and the Events tell. */
export function remoteFailureReason(error: string): 'Unauthorized' | 'Forbidden' | 'Unreachable' {
    return /\b401\b|unauthorized/i.test(error) ? 'Unauthorized' : /\b403\b|forbidden/i.test(error) ? 'Forbidden' : 'Unreachable';
}

/**
 * The RemoteReadable condition. Its transition time is kept from `previous` while its status
 * stays the same, so a restart finds it as written and writes nothing.
 */
export function remoteReadableCondition(health: RemoteHealth, previous: LinkCondition | undefined): LinkCondition {
    const status = health.readable ? 'True' : 'False';
    const kept = previous?.type === REMOTE_READABLE_CONDITION && previous.status === status;
    const lastTransitionTime = kept ? previous.lastTransitionTime : rfc3339(health.since);
    if (health.readable) return { type: REMOTE_READABLE_CONDITION, status, lastTransitionTime, reason: 'Synced', message: 'the remote cluster is read and watched' };
    const error = health.error ?? 'unknown error';
    const reason = remoteFailureReason(error);
    const message = `the remote cluster cannot be read (${error}); mirrors stay as they are, retrying`;
    return { type: REMOTE_READABLE_CONDITION, status, lastTransitionTime, reason, message };
}

/** The status to write. */
export function desiredLinkStatus(mirrors: MirrorsReport, gatewayResolution: GatewayResolutionStatus[] | undefined, conditions?: LinkCondition[]): LinkStatus {
    const status: LinkStatus = { mirrorServices: mirrors.listed, mirrorSummary: mirrors.summary };
    if (gatewayResolution !== undefined && gatewayResolution.length > 0) status.gatewayResolution = gatewayResolution;
    if (conditions !== undefined) status.conditions = conditions;
    return status;
}

/**
 * Whether writing `desired` would change the fields of `current` we own (federatedServices is
 * not ours). The times of a gateway name (resolvedAt, nextRefreshAt, lastErrorAt) and its TTL
 * move with every resolution and are not news by themselves: they are written along with real
 * changes, and on their own only once the recorded resolvedAt is older than `recordIntervalMs`
 * (a restarted process counts the stale window from it).
 */
export function linkStatusDiffers(current: unknown, desired: LinkStatus, recordIntervalMs = Infinity): boolean {
    const have = (current ?? {}) as LinkStatus;
    const untimed = (entries: GatewayResolutionStatus[] | undefined) =>
        (entries ?? []).map(({ resolvedAt: _r, nextRefreshAt: _n, lastErrorAt: _l, ttlSeconds: _t, ...rest }) => rest);
    const pick = (s: LinkStatus) => ({
        m: s.mirrorServices ?? [],
        s: s.mirrorSummary ?? null,
        g: untimed(s.gatewayResolution),
        c: desired.conditions === undefined ? [] : s.conditions ?? [],
    });
    if (!sameJson(pick(have), pick(desired))) return true;
    return (desired.gatewayResolution ?? []).some((entry) => {
        if (entry.resolvedAt === undefined) return false;
        const recorded = have.gatewayResolution?.find((e) => e.name === entry.name)?.resolvedAt;
        return recorded === undefined || Date.parse(entry.resolvedAt) - Date.parse(recorded) >= recordIntervalMs;
    });
}

/** A JSON merge patch that sets our fields and removes gatewayResolution when we have none. */
export function linkStatusPatch(desired: LinkStatus): { status: Record<string, unknown> } {
    const status: Record<string, unknown> = {
        mirrorServices: desired.mirrorServices ?? [],
        mirrorSummary: desired.mirrorSummary ?? null,
        gatewayResolution: desired.gatewayResolution ?? null,
    };
    if (desired.conditions !== undefined) status.conditions = desired.conditions;
    return { status };
}

/**
 * Whether `a` and `b` are the same JSON, whatever the order of object keys (the apiserver
 * re-orders those of custom resources) and with undefined properties as absent: what
 * canonicalJson(a) === canonicalJson(b) says, without building either string. A Link status of
 * 2 000 mirrors is compared at every status sync; canonicalising it took ~0.4 s each time.
 */
export function sameJson(a: unknown, b: unknown): boolean {
    if (a === b) return true;
    if (a === null || b === null || typeof a !== 'object' || typeof b !== 'object') return false;
    if (Array.isArray(a) !== Array.isArray(b)) return false;
    if (Array.isArray(a)) {
        const other = b as unknown[];
        return a.length === other.length && a.every((item, i) => sameJson(item, other[i]));
    }
    const [x, y] = [a as Record<string, unknown>, b as Record<string, unknown>];
    let defined = 0;
    for (const key in x) {
        if (x[key] === undefined) continue;
        if (!sameJson(x[key], y[key])) return false;
        defined++;
    }
    for (const key in y) if (y[key] !== undefined) defined--;
    return defined === 0;
}

/** JSON with object keys sorted and undefined dropped: the apiserver re-orders keys of custom resources. */
export function canonicalJson(value: unknown): string {
    return JSON.stringify(value, (_key, v: unknown) => {
        if (v === null || typeof v !== 'object' || Array.isArray(v)) return v;
        return Object.fromEntries(Object.entries(v as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
    });
}
