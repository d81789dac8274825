// What the service mirror caches of a Service and of a remote EndpointSlice: only what its
// decisions and the Services it builds read (mirror.ts, headless.ts, federated.ts, endpoints.ts),
// decided once per resourceVersion by the informers' transform. A remote cluster's Services and
// slices are all cached, exported or not, and a slice may list 100 endpoints of which the mirror
// only asks whether one is ready. The compact forms keep the Kubernetes shapes, so the pure core
// reads them as it reads whole objects; property tests check that both give the same plans.
import type { V1Endpoint, V1EndpointSlice, V1Service } from '@kubernetes/client-node';
import { LABEL_SERVICE_NAME } from '../../endpointslice/slice.js';
import type { SharedValues } from '../../kube/shared-values.js';
import type { KubeObject } from '../../kube/store.js';
import { DROPPED_ANNOTATIONS, LINK_ANNOTATION } from '../api/keys.js';
import { usableEndpointIP } from '../../ip/address.js';
import { hasReadyEndpoints, SOME_USABLE_ADDRESS, WARNED_ADDRESSES_PER_SLICE } from '../plan/mirror.js';

export type CompactService = V1Service & KubeObject;
export type CompactRemoteSlice = V1EndpointSlice & KubeObject;

/**
 * What a Service is cached for:
 * - `source`: a Service mirrors are built from (a remote one, a local federated member). Its
 *   annotations that no mirror copies (kubectl's last-applied configuration, often as large as
 *   the rest of the object) and its selector are not kept.
 * - `mirror`: a Service the mirror wrote. Everything the mirror owns is kept, so that someone
 *   else's change to it (a selector, an annotation) is seen and undone.
 */
export type ServiceRole = 'source' | 'mirror';

/**
 * The Service without status, managedFields and the fields nothing here reads. Equal port lists,
 * IP family lists and label values are held once (`shared`); label sets are mostly unique.
 */
export function compactService(obj: KubeObject, role: ServiceRole, shared: SharedValues): CompactService {
    const svc = obj as CompactService;
    const text = (value: string | undefined) => (value === undefined ? undefined : shared.text(value));
    const { name, namespace, uid, resourceVersion, labels, annotations, creationTimestamp } = svc.metadata ?? {};
    const metadata: NonNullable<CompactService['metadata']> = definedOnly({ name, namespace: text(namespace), resourceVersion });
    // A source's age decides whether it is mirrored past --max-mirrors-per-link (mirror-limit.ts).
    if (role === 'source' && creationTimestamp !== undefined) metadata.creationTimestamp = (typeof creationTimestamp === 'string' ? shared.text(creationTimestamp) : creationTimestamp) as Date;
    // A mirror's uid owns its slices; a source's is read by nothing.
    if (role === 'mirror' && uid !== undefined) metadata.uid = uid;
    if (labels) metadata.labels = shared.texts(labels);
    const kept = annotations && (role === 'source' ? withoutDropped(annotations) : annotations);
    // The Link annotation is the one value all mirrors of a Link repeat.
    if (kept) metadata.annotations = LINK_ANNOTATION in kept ? { ...kept, [LINK_ANNOTATION]: shared.text(kept[LINK_ANNOTATION]!) } : kept;
    const from = svc.spec ?? {};
    const spec: NonNullable<V1Service['spec']> = {};
    if (from.type !== undefined) spec.type = shared.text(from.type);
    // A source's ClusterIP is read only as "headless or not"; a mirror's (an endpoint mirror's) is
    // an address, read as "the ClusterIPs, else the ClusterIP": the usual single one is kept once.
    if (role === 'source' ? from.clusterIP === 'None' : from.clusterIP !== undefined) spec.clusterIP = from.clusterIP;
    if (role === 'mirror' && from.clusterIPs && !(from.clusterIPs.length === 1 && from.clusterIPs[0] === from.clusterIP)) spec.clusterIPs = from.clusterIPs;
    if (from.ports) spec.ports = shared.object(from.ports.map(({ name, port, protocol, targetPort, appProtocol }) => shared.object(definedOnly({ name, port, protocol, targetPort, appProtocol }))));
    if (from.ipFamilies) spec.ipFamilies = shared.object(from.ipFamilies);
    if (from.ipFamilyPolicy !== undefined) spec.ipFamilyPolicy = shared.text(from.ipFamilyPolicy);
    if (from.selector && role === 'mirror') spec.selector = from.selector;
    // What an MCS export carries into its ServiceImport (mcs/resolve.ts), and compares across clusters.
    if (role === 'source') {
        if (from.sessionAffinity !== undefined) spec.sessionAffinity = shared.text(from.sessionAffinity);
        if (from.sessionAffinityConfig) spec.sessionAffinityConfig = shared.object(from.sessionAffinityConfig);
        if (from.internalTrafficPolicy !== undefined) spec.internalTrafficPolicy = shared.text(from.internalTrafficPolicy);
        if (from.trafficDistribution !== undefined) spec.trafficDistribution = shared.text(from.trafficDistribution);
    }
    return { apiVersion: text(svc.apiVersion), kind: text(svc.kind), metadata, spec };
}

function withoutDropped(annotations: Record<string, string>): Record<string, string> | undefined {
    if (!Object.keys(annotations).some((key) => DROPPED_ANNOTATIONS.has(key))) return annotations;
    const kept = Object.fromEntries(Object.entries(annotations).filter(([key]) => !DROPPED_ANNOTATIONS.has(key)));
    return Object.keys(kept).length > 0 ? kept : undefined;
}

/** The object without its undefined properties (built anew: deleting would leave it in V8's slower dictionary form). */
function definedOnly<T extends object>(value: T): T {
    const out: Record<string, unknown> = {};
    for (const [key, item] of Object.entries(value)) if (item !== undefined) out[key] = item;
    return out as T;
}

/**
 * Stands for "this slice has a ready endpoint" (hasReadyEndpoints reads it so): which endpoint,
 * at which address, is nothing the mirror reads. The same for every slice, so a pod that comes
 * or goes behind a Service that stays ready leaves the compact form as it was.
 */
const SOME_READY_ENDPOINT = Object.freeze({ addresses: Object.freeze([SOME_USABLE_ADDRESS]), conditions: Object.freeze({ ready: true }) }) as unknown as V1Endpoint;

/**
 * A remote EndpointSlice as the mirror reads it: which Service it belongs to and, unless
 * `hostnames` (headless mirrors are on: they read each endpoint's hostname and conditions, and
 * the ports), only whether it has a ready endpoint, as one endpoint that says so. A new version
 * of a slice whose compact form is unchanged (a pod of a Service that stays ready came or went)
 * then syncs nothing.
 */
export function compactRemoteSlice(obj: KubeObject, hostnames: boolean, shared: SharedValues): CompactRemoteSlice {
    const slice = obj as CompactRemoteSlice;
    const { name, namespace, resourceVersion, labels } = slice.metadata ?? {};
    const service = labels?.[LABEL_SERVICE_NAME];
    const metadata: NonNullable<CompactRemoteSlice['metadata']> = definedOnly({ name, namespace: namespace === undefined ? undefined : shared.text(namespace), resourceVersion });
    if (service !== undefined) metadata.labels = { [LABEL_SERVICE_NAME]: service };
    const endpoints = slice.endpoints ?? [];
    const compact = definedOnly({ apiVersion: slice.apiVersion && shared.text(slice.apiVersion), kind: slice.kind && shared.text(slice.kind), metadata }) as CompactRemoteSlice;
    if (!hostnames) {
        compact.endpoints = hasReadyEndpoints([slice]) ? [SOME_READY_ENDPOINT] : [];
        // The first refused addresses stay, for the Warning that names this slice (remoteEndpointWarnings).
        const refused = endpoints.flatMap((e) => e.addresses ?? []).filter((a) => !usableEndpointIP(a).usable).slice(0, WARNED_ADDRESSES_PER_SLICE);
        if (refused.length > 0) compact.endpoints.push({ addresses: refused, conditions: { ready: false } });
        return compact;
    }
    compact.endpoints = endpoints.map(({ addresses, hostname, conditions }) => {
        const endpoint: V1Endpoint = { addresses };
        if (hostname !== undefined) endpoint.hostname = hostname;
        if (conditions) endpoint.conditions = shared.object(definedOnly({ ready: conditions.ready, serving: conditions.serving, terminating: conditions.terminating }));
        return endpoint;
    });
    if (slice.ports) compact.ports = shared.object(slice.ports.map((port) => shared.object({ ...port })));
    // The MCS import copies a flat-network remote's endpoints by family.
    if (slice.addressType) compact.addressType = shared.text(slice.addressType);
    return compact;
}
