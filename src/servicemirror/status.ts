// The Link status the service mirror writes: one Mirrored condition per exported remote
// Service (Linkerd's shape) and how each gateway name resolved (our addition). Pure: the
// controller decides when to build it and writes it only when it differs from what is stored.
import { rfc3339 } from '../kube/time.js';
import type { GatewayResolutionStatus, LinkCondition, LinkStatus, ServiceStatus } from './link.js';

/** Linkerd's is linkerd.io/service-mirror; ours says which controller wrote the entry. */
export const STATUS_CONTROLLER_NAME = 'mesh-endpoints.io/service-mirror';
export const MIRRORED_CONDITION = 'Mirrored';

export type MirrorReason = 'Mirrored' | 'InvalidService' | 'MissingNamespace' | 'Error';

export interface MirrorOutcome {
    namespace: string;
    remoteName: string;
    mirrored: boolean;
    reason: MirrorReason;
    message: string;
    /** The mirror Service, once it exists. */
    localName?: string;
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

/** The status to write: mirror entries sorted by namespace and name, so order is stable. */
export function desiredLinkStatus(
    mirrorServices: Iterable<ServiceStatus>,
    gatewayResolution: GatewayResolutionStatus[] | undefined,
    conditions?: LinkCondition[],
): LinkStatus {
    const sorted = [...mirrorServices].sort((a, b) => {
        const ka = `${a.remoteRef.namespace}/${a.remoteRef.name}`;
        const kb = `${b.remoteRef.namespace}/${b.remoteRef.name}`;
        return ka < kb ? -1 : ka > kb ? 1 : 0;
    });
    const status: LinkStatus = { mirrorServices: sorted };
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
    const pick = (s: LinkStatus) => ({ m: s.mirrorServices ?? [], g: untimed(s.gatewayResolution), c: desired.conditions === undefined ? [] : s.conditions ?? [] });
    if (!sameJson(pick(have), pick(desired))) return true;
    return (desired.gatewayResolution ?? []).some((entry) => {
        if (entry.resolvedAt === undefined) return false;
        const recorded = have.gatewayResolution?.find((e) => e.name === entry.name)?.resolvedAt;
        return recorded === undefined || Date.parse(entry.resolvedAt) - Date.parse(recorded) >= recordIntervalMs;
    });
}

/** A JSON merge patch that sets our fields and removes gatewayResolution when we have none. */
export function linkStatusPatch(desired: LinkStatus): { status: Record<string, unknown> } {
    const status: Record<string, unknown> = { mirrorServices: desired.mirrorServices ?? [], gatewayResolution: desired.gatewayResolution ?? null };
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
