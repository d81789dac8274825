// What the group controller keeps of a workload it materialised: what it compares with the
// desired workload, the Ready condition it writes back, and the owner it was made for. Pure.
import type { WorkloadCondition } from '../types.js';
import type { DesiredWorkload } from './materialise.js';

export interface GroupWorkload {
    metadata: { name: string; namespace: string; uid?: string; resourceVersion?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
    ownerUids: string[];
    spec: DesiredWorkload['spec'];
    conditions: WorkloadCondition[];
    deleting: boolean;
}

type Raw = {
    metadata?: GroupWorkload['metadata'] & { ownerReferences?: Array<{ uid?: string }>; deletionTimestamp?: unknown };
    spec?: { meshTLS?: { identity?: string; serverName?: string }; ports?: DesiredWorkload['spec']['ports']; workloadIPs?: Array<{ ip?: string }> };
    status?: { conditions?: WorkloadCondition[] };
};

/** The informer's transform. Anything odd (written by hand around the CRD) reads as absent, so the plan rewrites it. */
export function cacheGroupWorkload(object: unknown): GroupWorkload {
    const o = (object ?? {}) as Raw;
    const m = o.metadata ?? ({} as NonNullable<Raw['metadata']>);
    return {
        metadata: { name: m.name, namespace: m.namespace, uid: m.uid, resourceVersion: m.resourceVersion, labels: m.labels, annotations: m.annotations },
        ownerUids: (m.ownerReferences ?? []).map((r) => r.uid ?? ''),
        spec: {
            meshTLS: { identity: o.spec?.meshTLS?.identity ?? '', serverName: o.spec?.meshTLS?.serverName ?? '' },
            ports: (o.spec?.ports ?? []).map((p) => ({ ...(p.name ? { name: p.name } : {}), port: p.port, protocol: p.protocol ?? 'TCP' })),
            workloadIPs: (o.spec?.workloadIPs ?? []).map((x) => ({ ip: x.ip ?? '' })),
        },
        conditions: Array.isArray(o.status?.conditions) ? o.status.conditions : [],
        deleting: m.deletionTimestamp != null,
    };
}
