// A Service as the external-workloads controller caches it: what selection, port resolution,
// endpoint conditions and the slices' labels read (selection.ts, ports.ts, endpoint.ts), still
// shaped as a V1Service. Its status, annotations (kubectl's last-applied copy alone can be
// kilobytes) and the spec fields nothing here reads are dropped, and a new version that changes
// none of what is kept syncs nothing (sameButResourceVersion).
import type { V1Service } from '@kubernetes/client-node';
import type { KubeObject } from '../kube/store.js';

export type CachedService = V1Service & KubeObject;

export function cacheService(obj: KubeObject): CachedService {
    const { metadata, spec } = obj as V1Service;
    return withoutUndefined({
        apiVersion: obj.apiVersion,
        kind: obj.kind,
        metadata: withoutUndefined({
            name: metadata?.name,
            namespace: metadata?.namespace,
            uid: metadata?.uid,
            resourceVersion: metadata?.resourceVersion,
            labels: metadata?.labels,
            deletionTimestamp: metadata?.deletionTimestamp,
        }),
        spec: spec && withoutUndefined({
            type: spec.type,
            selector: spec.selector,
            clusterIP: spec.clusterIP,
            ipFamilies: spec.ipFamilies,
            publishNotReadyAddresses: spec.publishNotReadyAddresses,
            ports: spec.ports?.map(({ name, port, protocol, targetPort, appProtocol }) => withoutUndefined({ name, port, protocol, targetPort, appProtocol })),
        }),
    });
}

/**
 * Absent rather than undefined: a smaller object, equal field by field to the served form (built
 * anew: `delete` would slow the object down; a loop: Object.entries and fromEntries cost about 20 µs a Service).
 */
function withoutUndefined<T extends object>(value: T): T {
    const out: Record<string, unknown> = {};
    for (const key in value) if (value[key] !== undefined) out[key] = value[key];
    return out as T;
}
