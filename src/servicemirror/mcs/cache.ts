// What the MCS controller caches of the objects it reads: only what planImport reads.
import type { V1EndpointSlice } from '@kubernetes/client-node';
import type { KubeObject } from '../../kube/store.js';
import type { ServiceExport } from './types.js';

/** A ServiceExport: its identity, age (the conflict policy), spec and conditions (written back here). */
export function compactExport(obj: KubeObject): ServiceExport {
    const exp = obj as ServiceExport;
    const { name, namespace, uid, resourceVersion, generation, creationTimestamp } = exp.metadata ?? {};
    return { apiVersion: exp.apiVersion, kind: exp.kind, metadata: { name, namespace, uid, resourceVersion, generation, creationTimestamp }, spec: exp.spec ?? {}, status: exp.status ?? {} };
}

/** A local Service's own EndpointSlice (upstream's): what the import copies of it. */
export function compactSourceSlice(obj: KubeObject): V1EndpointSlice & KubeObject {
    const slice = obj as V1EndpointSlice & KubeObject;
    const { name, namespace, resourceVersion, labels } = slice.metadata ?? {};
    return { metadata: { name, namespace, resourceVersion, labels }, addressType: slice.addressType, ports: slice.ports, endpoints: slice.endpoints ?? [] };
}
