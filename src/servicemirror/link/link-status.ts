// The status of one Link as its controller keeps it: the latest outcome of each of its mirrors,
// and the write of the status (the mirrors' counts and the not-mirrored ones, the conditions,
// status.gatewayResolution: a merge patch on the status subresource) when, and only when, it
// differs from what is stored.
import { recordIntervalMs, type DnsPolicy, type NameState } from '../../dns/name-state.js';
import { gatewayResolutionStatus } from '../../dns/resolution-status.js';
import type { GatewayEntry } from '../../dns/gateway-address.js';
import type { KubeRest } from '../../kube/rest.js';
import { Links, objectPath } from '../../kube/resources.js';
import type { Logger } from '../../kube/log.js';
import type { KubeObject } from '../../kube/store.js';
import type { LinkEvent } from './gateway-events.js';
import type { LinkCondition, LinkStatus, ServiceStatus } from '../api/link.js';
import { REMOTE_CREDENTIALS_CONDITION, remoteCredentialsCondition, type CredentialsProblem } from './credentials.js';
import {
    desiredLinkStatus,
    isMirrored,
    linkStatusDiffers,
    linkStatusPatch,
    MIRROR_LIMIT_CONDITION,
    mirrorLimitCondition,
    mirrorServiceStatus,
    MIRRORED,
    mirrorsReport,
    REMOTE_READABLE_CONDITION,
    remoteKeyOf,
    remoteReadableCondition,
    sameJson,
    sameServiceStatus,
    SERVICES_MIRRORED_CONDITION,
    servicesMirroredCondition,
    type MirrorOutcome,
    type MirrorWarning,
    type RemoteHealth,
    type StatusEntry,
} from '../plan/status.js';

export interface LinkStatusDeps {
    rest: KubeRest;
    namespace: string;
    name: string;
    /** The Link as cached now. */
    stored: () => (KubeObject & { status?: LinkStatus }) | undefined;
    policy: DnsPolicy;
    event: (event: LinkEvent) => void;
    /** Counts one status write. */
    written: () => void;
    logger: Logger;
    now?: () => number;
}

/** What the status is built from besides the mirror outcomes. */
export interface LinkStatusSource {
    /** Whether everything the status shows is known (remote caches synced, names settled). */
    complete: boolean;
    /** The gateway entries, or undefined for a Link without a gateway. */
    entries: readonly GatewayEntry[] | undefined;
    nameStates: ReadonlyMap<string, NameState>;
    /** Whether the remote can be read, once known. */
    remote: RemoteHealth | undefined;
    /** Whether the credentials were loaded (null) or why not; undefined until tried. */
    credentials?: CredentialsProblem | null;
    /** --max-mirrors-per-link and how many remote Services would be mirrored without it. */
    limit?: { max: number; exported: number };
}

export class LinkStatusBook {
    /** Remote "namespace/name" → its status entry (MIRRORED for a mirrored one). */
    private readonly entries = new Map<string, StatusEntry>();
    /** Entries with Mirrored=True, counted as they change: a Link may have thousands. */
    private mirroredCount = 0;
    /** Remote "namespace/name" → the refused remote endpoint addresses last told, for those that have some. */
    private readonly warned = new Map<string, ReadonlySet<string>>();
    /** The stored status's entries by remote key (the not-mirrored ones), for the stored status object it was built from. */
    private storedEntries: { status: LinkStatus | undefined; byKey: Map<string, ServiceStatus> } | undefined;
    /** uid and the status our last write returned: the informer may not have it yet. */
    private written: { uid: string; status: LinkStatus } | undefined;

    constructor(private readonly deps: LinkStatusDeps) {}

    private now(): number {
        return (this.deps.now ?? Date.now)();
    }

    get mirrored(): number {
        return this.mirroredCount;
    }

    /** Records how a mirror sync went; reports a failure once per change of reason. Returns whether the entry changed. */
    record(outcome: MirrorOutcome | null, remoteKey: string): boolean {
        this.recordWarnings(outcome?.warnings, remoteKey);
        const current = this.entries.get(remoteKey);
        if (outcome === null) {
            this.mirroredCount -= Number(isMirrored(current));
            return this.entries.delete(remoteKey);
        }
        this.mirroredCount += Number(outcome.mirrored) - Number(isMirrored(current));
        if (outcome.mirrored) {
            this.entries.set(remoteKey, MIRRORED);
            return current !== MIRRORED;
        }
        // A Service mirrored until now has just stopped being mirrored; else its times are kept.
        const previous = current === MIRRORED ? undefined : (current ?? this.stored(remoteKey));
        const next = mirrorServiceStatus(outcome, previous, this.now());
        if (current !== undefined && current !== MIRRORED && sameServiceStatus(current, next)) return false;
        const before = current === MIRRORED ? undefined : current?.conditions?.[0];
        if (before?.reason !== outcome.reason || before.message !== outcome.message) {
            this.deps.event({ type: 'Warning', reason: outcome.reason, message: `remote Service ${remoteKey} not mirrored: ${outcome.message}` });
        }
        this.entries.set(remoteKey, next);
        return true;
    }

    /** What was left out of a mirror (MirrorOutcome.warnings), each told once while it lasts. */
    private recordWarnings(warnings: MirrorWarning[] | undefined, remoteKey: string): void {
        const before = this.warned.get(remoteKey);
        if (!warnings?.length) {
            this.warned.delete(remoteKey);
            return;
        }
        const now = new Set(warnings.map((w) => `${w.reason} ${w.message}`));
        for (const warning of warnings) {
            if (before?.has(`${warning.reason} ${warning.message}`)) continue;
            this.deps.event({ type: 'Warning', reason: warning.reason, message: `remote Service ${remoteKey}: ${warning.message}` });
        }
        this.warned.set(remoteKey, now);
    }

    /** The entry in the stored status, so a restart keeps the transition times of listed entries. */
    private stored(remoteKey: string): ServiceStatus | undefined {
        const status = this.deps.stored()?.status;
        if (this.storedEntries === undefined || this.storedEntries.status !== status) {
            this.storedEntries = { status, byKey: new Map((status?.mirrorServices ?? []).map((entry) => [remoteKeyOf(entry), entry])) };
        }
        return this.storedEntries.byKey.get(remoteKey);
    }

    /** Whether the stored record of the name's last good answer has grown old enough to be written again. */
    recordDue(state: NameState): boolean {
        const recorded = this.deps.stored()?.status?.gatewayResolution?.find((e) => e.name === state.name)?.resolvedAt;
        return state.resolvedAt !== undefined && (recorded === undefined || state.resolvedAt - Date.parse(recorded) >= recordIntervalMs(this.deps.policy));
    }

    /**
     * Writes the Link's status if it differs from both the stored one and our last write.
     * While the rest is incomplete, only the RemoteReadable condition is written: a remote that
     * cannot be read before its first list must still say so.
     */
    async write(source: LinkStatusSource): Promise<boolean> {
        const obj = this.deps.stored();
        const uid = obj?.metadata?.uid;
        if (!obj || !uid) return false;
        const stored = obj.status?.conditions ?? [];
        const previous = (type: string) => stored.find((c) => c.type === type);
        const remote = source.remote ? remoteReadableCondition(source.remote, previous(REMOTE_READABLE_CONDITION)) : undefined;
        const credentials =
            source.credentials === undefined ? undefined : remoteCredentialsCondition(source.credentials ?? undefined, previous(REMOTE_CREDENTIALS_CONDITION), this.now());
        // Known before the remote has been read: a Link that cannot even start must say why.
        const early = [credentials, remote].filter((c): c is LinkCondition => c !== undefined);
        if (!source.complete) {
            if (early.length === 0) return false;
            // A merge patch replaces the list: the other conditions go along as stored.
            const conditions = [...early, ...stored.filter((c) => !early.some((e) => e.type === c.type))];
            if (sameJson(stored, conditions)) return false;
            return this.patch(uid, { status: { conditions } });
        }
        const resolution = source.entries ? gatewayResolutionStatus(source.entries, source.nameStates, this.now(), this.deps.policy) : undefined;
        const mirrors = mirrorsReport(this.entries.values());
        const limit = source.limit && mirrorLimitCondition(source.limit.max, source.limit.exported, previous(MIRROR_LIMIT_CONDITION), this.now());
        const conditions = [...early, servicesMirroredCondition(mirrors.summary, previous(SERVICES_MIRRORED_CONDITION), this.now()), ...(limit ? [limit] : [])];
        const desired = desiredLinkStatus(mirrors, resolution, conditions);
        const ours = this.written?.uid === uid ? this.written.status : undefined;
        const interval = recordIntervalMs(this.deps.policy);
        if (!linkStatusDiffers(obj.status, desired, interval) || (ours && !linkStatusDiffers(ours, desired, interval))) {
            this.deps.logger.debug({ mirrors: mirrors.summary.services }, 'link status unchanged');
            return false;
        }
        return this.patch(uid, linkStatusPatch(desired));
    }

    private async patch(uid: string, patch: { status: Record<string, unknown> }): Promise<boolean> {
        const stored = await this.deps.rest.mergePatch<{ status?: LinkStatus }>(objectPath(Links, this.deps.namespace, this.deps.name, 'status'), patch);
        this.written = { uid, status: stored.status ?? {} };
        this.deps.written();
        this.deps.logger.debug({ fields: Object.keys(patch.status) }, 'link status written');
        return true;
    }
}
