// The Lease a VM's agent writes: the only object it may write. Pure: the time is an argument.
import { ADDRESSES_ANNOTATION, GROUP_LABEL, registrationName, WITHDRAWN_ANNOTATION } from '../externalworkloads/groups/types.js';
import { microTime } from '../time/format.js';
import type { AgentIdentity } from './identity.js';

export interface RegistrationLeaseObject {
    apiVersion: 'coordination.k8s.io/v1';
    kind: 'Lease';
    metadata: { name: string; namespace: string; resourceVersion?: string; labels: Record<string, string>; annotations: Record<string, string> };
    spec: { holderIdentity: string; leaseDurationSeconds: number; acquireTime?: string; renewTime: string };
}

/**
 * The Lease renewed now: holder the caller, claimed addresses, and (when shutting down) the
 * withdrawal. `previous`: the stored Lease, whose acquireTime and version carry over.
 */
export function registrationLease(
    identity: AgentIdentity,
    addresses: readonly string[],
    opts: { now: Date; leaseDurationMs: number; withdrawn?: boolean; previous?: { resourceVersion?: string; acquireTime?: string } },
): RegistrationLeaseObject {
    const annotations: Record<string, string> = { [ADDRESSES_ANNOTATION]: addresses.join(',') };
    if (opts.withdrawn) annotations[WITHDRAWN_ANNOTATION] = microTime(opts.now);
    return {
        apiVersion: 'coordination.k8s.io/v1',
        kind: 'Lease',
        metadata: {
            name: registrationName(identity.group, identity.vm),
            namespace: identity.namespace,
            ...(opts.previous?.resourceVersion ? { resourceVersion: opts.previous.resourceVersion } : {}),
            labels: { [GROUP_LABEL]: identity.group },
            annotations,
        },
        spec: {
            holderIdentity: identity.username,
            leaseDurationSeconds: Math.ceil(opts.leaseDurationMs / 1000),
            acquireTime: opts.previous?.acquireTime ?? microTime(opts.now),
            renewTime: microTime(opts.now),
        },
    };
}
