// What the MCS controller caches of the objects it reads: only what planImport reads.
import type { V1EndpointSlice } from '@kubernetes/client-node';
import type { KubeObject } from '../../kube/store.js';
import { canonical } from './state.js';
import { MCS_OWNED_LABEL, type ServiceExport, type ServiceImport } from './types.js';

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

/** Whether an export changed in what any cluster imports of it (its spec, or it was made anew), not only in its conditions. */
export function exportSpecChanged(old: ServiceExport, exp: ServiceExport): boolean {
    return old.metadata?.uid !== exp.metadata?.uid || old.metadata?.generation !== exp.metadata?.generation || canonical(old.spec) !== canonical(exp.spec);
}

/** Whether an import changed in what the derived Service's plan reads of it: whose it is, its type and ports, the clusters it lists. */
export function importMattersToDerived(old: ServiceImport, imp: ServiceImport): boolean {
    const read = (i: ServiceImport) => canonical([i.metadata?.uid, i.metadata?.labels?.[MCS_OWNED_LABEL], i.spec?.type, i.spec?.ports, i.status?.clusters]);
    return read(old) !== read(imp);
}
