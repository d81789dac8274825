// A group's status from what the caches hold and the time: how many VMs are registered, ready,
// expired, on the current template, and how many claimed addresses were refused. Pure.
import { READY } from '../health/readiness.js';
import type { GroupWorkload } from './cached.js';
import { heartbeatState } from './heartbeat.js';
import { claimedAddresses } from './materialise.js';
import { GENERATION_ANNOTATION, type RegistrationLease, type WorkloadGroup } from './types.js';

export interface GroupCondition {
    type: string;
    status: 'True' | 'False';
    reason: string;
    message: string;
    lastTransitionTime?: string;
    observedGeneration?: number;
}

export interface GroupStatus {
    observedGeneration: number;
    registered: number;
    ready: number;
    expired: number;
    current: number;
    refusedAddresses: number;
    conditions: GroupCondition[];
}

export function groupStatus(group: WorkloadGroup, leases: readonly RegistrationLease[], workloads: readonly GroupWorkload[], now: number): GroupStatus {
    const live = workloads.filter((w) => !w.deleting);
    const ready = live.filter((w) => w.conditions.some((c) => c.type === READY && c.status === 'True')).length;
    const current = live.filter((w) => w.metadata.annotations?.[GENERATION_ANNOTATION] === String(group.generation)).length;
    let expired = 0;
    let refusedAddresses = 0;
    for (const lease of leases) {
        if (heartbeatState(lease, group, now).state === 'expired') expired++;
        refusedAddresses += claimedAddresses(lease.addresses, group).refused.length;
    }
    const rolledOut = current === live.length;
    return {
        observedGeneration: group.generation,
        registered: live.length,
        ready,
        expired,
        current,
        refusedAddresses,
        conditions: [
            {
                type: 'TemplateRolledOut',
                status: rolledOut ? 'True' : 'False',
                reason: rolledOut ? 'AllCurrent' : 'RollingOut',
                message: `${current} of ${live.length} workloads have generation ${group.generation}'s template`,
                observedGeneration: group.generation,
            },
            {
                type: 'AddressesAccepted',
                status: refusedAddresses === 0 ? 'True' : 'False',
                reason: refusedAddresses === 0 ? 'AllInRange' : 'AddressesRefused',
                message: refusedAddresses === 0 ? 'every claimed address is usable and in the group’s ranges' : `${refusedAddresses} claimed addresses refused (see the group’s Warning Events)`,
                observedGeneration: group.generation,
            },
        ],
    };
}

/** The status to write, with each condition's lastTransitionTime kept while its status holds; undefined when the stored one already says it. */
export function statusToWrite(next: GroupStatus, stored: Partial<GroupStatus> | undefined, at: string): GroupStatus | undefined {
    const conditions = next.conditions.map((c) => {
        const before = stored?.conditions?.find((s) => s.type === c.type);
        return { ...c, lastTransitionTime: before?.status === c.status && before.lastTransitionTime ? before.lastTransitionTime : at };
    });
    const merged = { ...next, conditions };
    return normalised(merged) === normalised(stored ?? {}) ? undefined : merged;
}

/** The status's fields in one order, for comparing what was stored with what would be written. */
function normalised(s: Partial<GroupStatus>): string {
    const conditions = (s.conditions ?? []).map(({ type, status, reason, message, lastTransitionTime, observedGeneration }) => ({ type, status, reason, message, lastTransitionTime, observedGeneration }));
    const { observedGeneration, registered, ready, expired, current, refusedAddresses } = s;
    return JSON.stringify({ observedGeneration, registered, ready, expired, current, refusedAddresses, conditions });
}
