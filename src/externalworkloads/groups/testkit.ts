// Groups, Leases and workloads for the tables of plan.test.ts and status.test.ts.
import { cacheGroupWorkload, type GroupWorkload } from './cached.js';
import type { DesiredWorkload } from './materialise.js';
import { parseGroup, type RegistrationLease, type WorkloadGroup } from './types.js';

export const T0 = Date.parse('2026-01-01T00:00:00Z');

export function group(spec: Record<string, unknown> = {}, generation = 1): WorkloadGroup {
    const parsed = parseGroup({
        metadata: { name: 'web', namespace: 'vms', uid: 'group-uid', generation },
        spec: {
            addressRanges: ['10.20.0.0/16', 'fd00:20::/64'],
            heartbeatPeriod: '10s',
            leaseDuration: '40s',
            gracePeriod: '5m',
            template: {
                metadata: { labels: { app: 'web' }, annotations: {} },
                spec: { ports: [{ name: 'http', port: 8080 }], meshTLS: { identity: '{serviceAccount}.{namespace}.serviceaccount.identity.linkerd.cluster.local', serverName: '{vm}.web.vms' } },
            },
            ...spec,
        },
    });
    if (!parsed.ok) throw new Error(parsed.why);
    return parsed.group;
}

export function lease(fields: Partial<RegistrationLease> = {}): RegistrationLease {
    return {
        namespace: 'vms',
        name: 'web.vm-1',
        uid: 'lease-uid',
        group: 'web',
        vm: 'vm-1',
        holder: 'system:serviceaccount:vms:web.vm-1',
        renewTime: T0,
        createdAt: T0 - 60_000,
        addresses: ['10.20.0.5'],
        withdrawn: false,
        ...fields,
    };
}

/** The workload as the apiserver would hold it after `desired` was written, with a Ready condition. */
export function stored(desired: DesiredWorkload, ready?: { status: 'True' | 'False'; reason: string }): GroupWorkload {
    const conditions = ready ? [{ type: 'Ready', ...ready, lastTransitionTime: new Date(T0 - 1000).toISOString() }] : [];
    return cacheGroupWorkload({ ...desired, metadata: { ...desired.metadata, uid: 'w-uid', resourceVersion: '7' }, status: { conditions } });
}
