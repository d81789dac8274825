// One registered VM: its group, its Lease, the workload that exists and the time in; what to
// write out. Pure, so the whole behaviour (register, roll, expire, come back, clean up) is the
// table of plan.test.ts; the controller only reads caches and carries the plan out.
//
//   Lease renewed ──► workload materialised, Ready=True (HeartbeatRenewed), or left to its probe
//   no renewal for the lease duration, or withdrawn ──► Ready=False at once, probe annotations off
//   still lapsed after the grace period, or the Lease gone ──► workload (and Lease) deleted
import { readyCondition, READY } from '../health/readiness.js';
import { PROBE_ANNOTATION, type WorkloadCondition } from '../types.js';
import type { GroupWorkload } from './cached.js';
import { heartbeatState, type ExpiryReason } from './heartbeat.js';
import { materialise, type AddressRefusal, type DesiredWorkload } from './materialise.js';
import type { RegistrationLease, WorkloadGroup } from './types.js';

export const HEARTBEAT_RENEWED = 'HeartbeatRenewed';

export interface PlannedEvent {
    on: 'workload' | 'group';
    type: 'Normal' | 'Warning';
    reason: string;
    message: string;
}

export interface RegistrationPlan {
    /** Create or replace the workload's metadata and spec (its status is written apart). */
    write?: { kind: 'create' | 'update'; workload: DesiredWorkload };
    /** The Ready condition to store, when the stored one differs. */
    ready?: WorkloadCondition;
    /** Delete the workload, and the Lease with it when the registration has ended. */
    delete?: { workload: boolean; lease: boolean };
    refused: AddressRefusal[];
    events: PlannedEvent[];
    /** Plan again then, although nothing changes: the heartbeat lapses or the grace period ends. */
    requeueAfterMs?: number;
}

export function planRegistration(group: WorkloadGroup | undefined, lease: RegistrationLease | undefined, existing: GroupWorkload | undefined, now: number): RegistrationPlan {
    const plan: RegistrationPlan = { refused: [], events: [] };
    if (existing?.deleting) return plan;
    // No group: the garbage collector deletes what it owned; a Lease waits for its group.
    if (!group) return plan;
    if (!lease) {
        if (existing) plan.delete = { workload: true, lease: false };
        return plan;
    }
    const heartbeat = heartbeatState(lease, group, now);
    if (heartbeat.state === 'expired' && now >= heartbeat.deleteAt) {
        plan.delete = { workload: existing !== undefined, lease: true };
        plan.events.push({ on: 'group', type: 'Normal', reason: 'Deregistered', message: `${lease.name}: ${heartbeat.message}, and the grace period (${group.graceMs / 1000}s) is over: its workload and Lease are deleted` });
        return plan;
    }
    const probed = Object.keys(group.template.annotations).some((key) => key.startsWith(PROBE_ANNOTATION));
    const live = heartbeat.state === 'live';
    const { workload, refused } = materialise(group, lease, live);
    plan.refused = refused;
    if (!existing) plan.write = { kind: 'create', workload };
    else if (!sameWorkload(existing, workload)) plan.write = { kind: 'update', workload };

    const stored = (existing?.conditions ?? []).find((c) => c.type === READY);
    if (live) {
        // With a probe, the health checks own Ready (they start from what is stored).
        if (!probed && stored?.status !== 'True') plan.ready = { ...readyCondition(true, 'the workload agent renews its heartbeat', new Date(now), stored), reason: HEARTBEAT_RENEWED };
        if (stored && stored.status !== 'True' && isExpiry(stored.reason)) {
            plan.events.push({ on: 'workload', type: 'Normal', reason: HEARTBEAT_RENEWED, message: probed ? 'heartbeat back within the grace period; ready again once its probe passes' : 'heartbeat back within the grace period: ready again' });
        }
        plan.requeueAfterMs = heartbeat.expiresAt - now;
    } else {
        if (stored?.status !== 'False' || stored.reason !== heartbeat.reason) {
            plan.ready = { ...readyCondition(false, heartbeat.message, new Date(now), stored), reason: heartbeat.reason };
            plan.events.push({ on: 'workload', type: 'Warning', reason: heartbeat.reason, message: `${heartbeat.message}; deleted at ${new Date(heartbeat.deleteAt).toISOString()} unless it comes back` });
        }
        plan.requeueAfterMs = heartbeat.deleteAt - now;
    }
    if (plan.write?.kind === 'create') plan.events.push({ on: 'workload', type: 'Normal', reason: 'Registered', message: `registered by ${lease.holder || 'its agent'} into group ${group.name}` });
    return plan;
}

const EXPIRY_REASONS: ReadonlySet<string> = new Set<ExpiryReason>(['HeartbeatExpired', 'Withdrawn', 'InvalidHeartbeat']);
function isExpiry(reason: string | undefined): boolean {
    return reason !== undefined && EXPIRY_REASONS.has(reason);
}

/** Whether the stored workload already is the desired one, in everything the controller writes. */
export function sameWorkload(existing: GroupWorkload, desired: DesiredWorkload): boolean {
    const owner = desired.metadata.ownerReferences[0]!.uid;
    return (
        existing.ownerUids.length === 1 &&
        existing.ownerUids[0] === owner &&
        sameMap(existing.metadata.labels, desired.metadata.labels) &&
        sameMap(existing.metadata.annotations, desired.metadata.annotations) &&
        JSON.stringify(existing.spec) === JSON.stringify(desired.spec)
    );
}

function sameMap(a: Record<string, string> | undefined, b: Record<string, string>): boolean {
    const keys = Object.keys(a ?? {});
    return keys.length === Object.keys(b).length && keys.every((k) => a![k] === b[k]);
}
