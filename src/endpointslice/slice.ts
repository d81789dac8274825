// One EndpointSlice's object shape: its name prefix, owner reference, labels and annotations.
import type { DiscoveryV1EndpointPort, V1Endpoint, V1EndpointSlice, V1OwnerReference, V1Service } from '@kubernetes/client-node';
import { isUsableGenerateName } from './names.js';
import type { AddressType, OwningService } from './types.js';

export const LABEL_SERVICE_NAME = 'kubernetes.io/service-name';
export const LABEL_MANAGED_BY = 'endpointslice.kubernetes.io/managed-by';
export const LABEL_HEADLESS = 'service.kubernetes.io/headless';

/** Keys whose value on a slice is ours to decide; a Service carrying them does not override us. */
export const RESERVED_LABELS: ReadonlySet<string> = new Set([LABEL_SERVICE_NAME, LABEL_MANAGED_BY, LABEL_HEADLESS]);

/** What a slice of one owner should say about itself, besides its endpoints and ports. */
export interface SliceMeta {
    owner: OwningService;
    managedBy: string;
    extraLabels?: Record<string, string>;
    annotations?: Record<string, string>;
}

/** "<svc>-" so generated names read "<svc>-abcde", unless that would yield invalid names. */
export function sliceNamePrefix(serviceName: string): string {
    const prefix = `${serviceName}-`;
    return isUsableGenerateName(prefix) ? prefix : serviceName;
}

export function controllerRef(owner: OwningService): V1OwnerReference {
    return { apiVersion: 'v1', kind: 'Service', name: owner.name, uid: owner.uid, controller: true, blockOwnerDeletion: true };
}

/** A slice of another Service that once had this name (deleted and recreated) is not ours to reuse. */
export function ownedBy(slice: V1EndpointSlice, owner: Pick<OwningService, 'uid'>): boolean {
    return (slice.metadata?.ownerReferences ?? []).some(
        (ref) => ref.uid === owner.uid && ref.kind === 'Service' && ref.apiVersion === 'v1',
    );
}

export function sliceLabels(meta: SliceMeta): Record<string, string> {
    const labels: Record<string, string> = {};
    // Loops over the keys, not Object.entries: this runs for every slice planned.
    const { labels: own } = meta.owner;
    for (const key in own) if (!RESERVED_LABELS.has(key)) labels[key] = own[key]!;
    const extra = meta.extraLabels;
    for (const key in extra) if (!RESERVED_LABELS.has(key)) labels[key] = extra[key]!;
    labels[LABEL_SERVICE_NAME] = meta.owner.name;
    labels[LABEL_MANAGED_BY] = meta.managedBy;
    if (meta.owner.headless) labels[LABEL_HEADLESS] = '';
    return labels;
}

function sameStringMap(a: Record<string, string> | undefined, b: Record<string, string> | undefined): boolean {
    const left = Object.entries(a ?? {});
    const right = b ?? {};
    return left.length === Object.keys(right).length && left.every(([k, v]) => Object.hasOwn(right, k) && right[k] === v);
}

/**
 * Compared as whole maps, so a label removed from the Service is removed from its slices too
 * (Linkerd only checked Service→slice, so removals never arrived). Unlike upstream, a headless
 * flip alone also counts: kube-proxy filters slices on that label.
 */
export function labelsChanged(slice: V1EndpointSlice, labels: Record<string, string>): boolean {
    return !sameStringMap(slice.metadata?.labels, labels);
}

export function annotationsChanged(slice: V1EndpointSlice, annotations: Record<string, string> | undefined): boolean {
    return !sameStringMap(slice.metadata?.annotations, annotations);
}

/** A new slice; the apiserver completes its name from generateName. */
export function newSlice(
    meta: SliceMeta,
    addressType: AddressType,
    ports: DiscoveryV1EndpointPort[],
    endpoints: V1Endpoint[],
): V1EndpointSlice {
    const slice: V1EndpointSlice = {
        apiVersion: 'discovery.k8s.io/v1',
        kind: 'EndpointSlice',
        metadata: {
            generateName: sliceNamePrefix(meta.owner.name),
            namespace: meta.owner.namespace,
            labels: sliceLabels(meta),
            ownerReferences: [controllerRef(meta.owner)],
        },
        addressType,
        ports: ports.map((port) => ({ ...port })),
        endpoints,
    };
    if (meta.annotations && Object.keys(meta.annotations).length > 0) slice.metadata!.annotations = { ...meta.annotations };
    return slice;
}

/**
 * The full replacement of an existing slice: its metadata (name, uid, resourceVersion for the
 * optimistic-concurrency PUT, finalizers) kept, our labels and annotations and contents put in.
 */
export function replacementSlice(
    existing: V1EndpointSlice,
    meta: SliceMeta,
    ports: DiscoveryV1EndpointPort[],
    endpoints: V1Endpoint[],
): V1EndpointSlice {
    // A copy of the top level only: the rest (owner references, finalizers) is sent back as it is,
    // never changed; structuredClone of it cost more than planning the slice's endpoints.
    const metadata = { ...existing.metadata };
    metadata.labels = sliceLabels(meta);
    if (meta.annotations && Object.keys(meta.annotations).length > 0) metadata.annotations = { ...meta.annotations };
    else delete metadata.annotations;
    return {
        apiVersion: 'discovery.k8s.io/v1',
        kind: 'EndpointSlice',
        metadata,
        addressType: existing.addressType,
        ports: ports.map((port) => ({ ...port })),
        endpoints,
    };
}

/** The OwningService of a Service object (its slices' owner reference, labels and headless label). */
export function owningService(service: V1Service): OwningService {
    const { name, namespace, uid, labels } = service.metadata ?? {};
    return { name: name!, namespace: namespace!, uid: uid!, labels: labels ?? {}, headless: service.spec?.clusterIP === 'None' };
}
