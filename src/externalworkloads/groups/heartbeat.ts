// Whether a VM's registration is alive, from its Lease and the time: nothing is remembered, so
// a restarted or newly elected controller reaches the same verdict from the same objects.
// Pure: the time is an argument.
//
// The Lease's renewTime is written by the VM, on the VM's clock. The group's own durations
// decide (the Lease's leaseDurationSeconds is the agent's to write and is not trusted), and a
// renewTime further ahead than the group's lease duration is no heartbeat at all: otherwise a
// VM could write a time years ahead once and never expire. Within that bound a fast clock
// buys a VM at most one lease duration, as it would a kubelet.
import type { RegistrationLease, WorkloadGroup } from './types.js';

export type HeartbeatState =
    /** Renewed within the lease duration: ready (subject to its probe) until `expiresAt`. */
    | { state: 'live'; expiresAt: number }
    /** Lapsed, withdrawn or unreadable: not ready; the workload goes at `deleteAt`. */
    | { state: 'expired'; reason: ExpiryReason; since: number; deleteAt: number; message: string };

export type ExpiryReason = 'HeartbeatExpired' | 'Withdrawn' | 'InvalidHeartbeat';

export function heartbeatState(lease: RegistrationLease, group: Pick<WorkloadGroup, 'leaseDurationMs' | 'graceMs'>, now: number): HeartbeatState {
    const { leaseDurationMs, graceMs } = group;
    const expired = (reason: ExpiryReason, since: number, message: string): HeartbeatState => ({ state: 'expired', reason, since, deleteAt: since + graceMs, message });
    const renewed = lease.renewTime;
    if (renewed === undefined || renewed > now + leaseDurationMs) {
        const why = renewed === undefined ? 'carries no renewTime' : `has a renewTime ${Math.round((renewed - now) / 1000)}s ahead of the controller's clock (is the VM's clock synchronised?)`;
        // Counted from the Lease's creation, stamped by the apiserver: the grace period still ends.
        return expired('InvalidHeartbeat', lease.createdAt ?? now, `the registration Lease ${why}; not ready until a valid heartbeat`);
    }
    if (lease.withdrawn) return expired('Withdrawn', renewed, 'the workload agent withdrew the registration (it is shutting down)');
    const expiresAt = renewed + leaseDurationMs;
    if (now < expiresAt) return { state: 'live', expiresAt };
    return expired('HeartbeatExpired', expiresAt, `no heartbeat since ${new Date(renewed).toISOString()} (lease duration ${leaseDurationMs / 1000}s)`);
}
