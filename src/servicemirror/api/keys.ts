// Label and annotation keys of Linkerd's multicluster contract, which Linkerd's destination
// controller and CLI read from our mirrors and slices, so their spelling is not ours to choose.
import type { LabelSelector } from './selector.js';

/** Remote labels under this prefix are Linkerd's bookkeeping and never copied to a mirror. */
export const MIRROR_PREFIX = 'mirror.linkerd.io/';

export const MIRRORED_SERVICE_LABEL = 'mirror.linkerd.io/mirrored-service';
export const CLUSTER_NAME_LABEL = 'mirror.linkerd.io/cluster-name';
export const EXPORTED_LABEL = 'mirror.linkerd.io/exported';
export const FEDERATED_LABEL = 'mirror.linkerd.io/federated';
export const REMOTE_DISCOVERY_LABEL = 'multicluster.linkerd.io/remote-discovery';
export const REMOTE_SERVICE_LABEL = 'multicluster.linkerd.io/remote-service';
/** On an endpoint mirror (`<hostname>-<cluster>`): the headless mirror it belongs to. */
export const HEADLESS_MIRROR_SVC_NAME_LABEL = 'mirror.linkerd.io/headless-mirror-svc-name';

/** On a federated Service: its remote members, `svc@cluster[,svc@cluster...]`. */
export const REMOTE_DISCOVERY_ANNOTATION = 'multicluster.linkerd.io/remote-discovery';
/** On a federated Service: the local member's name, when the local cluster is a member. */
export const LOCAL_DISCOVERY_ANNOTATION = 'multicluster.linkerd.io/local-discovery';

export const REMOTE_SVC_FQ_NAME_ANNOTATION = 'mirror.linkerd.io/remote-svc-fq-name';
export const REMOTE_RESOURCE_VERSION_ANNOTATION = 'mirror.linkerd.io/remote-resource-version';
export const REMOTE_GATEWAY_IDENTITY_ANNOTATION = 'mirror.linkerd.io/remote-gateway-identity';
export const OPAQUE_PORTS_ANNOTATION = 'config.linkerd.io/opaque-ports';

export const TOPOLOGY_AWARE_HINTS_ANNOTATION = 'service.kubernetes.io/topology-aware-hints';
export const TOPOLOGY_MODE_ANNOTATION = 'service.kubernetes.io/topology-mode';
export const LAST_APPLIED_ANNOTATION = 'kubectl.kubernetes.io/last-applied-configuration';

/**
 * Remote annotations a mirror never carries. Topology hints are computed from the remote
 * cluster's zones and mean nothing for endpoints that are all the gateway (Linkerd drops them
 * too). kubectl's last-applied copy describes the remote object, and would make a later
 * `kubectl apply` of the mirror compute its three-way diff against the wrong object.
 */
export const DROPPED_ANNOTATIONS: ReadonlySet<string> = new Set([
    TOPOLOGY_AWARE_HINTS_ANNOTATION,
    TOPOLOGY_MODE_ANNOTATION,
    LAST_APPLIED_ANNOTATION,
]);

/**
 * Key prefixes (the DNS part before "/") that Linkerd, this product or Kubernetes read as
 * instructions, so a remote Service's labels and annotations under them are never copied to a
 * mirror: the remote must not be able to say which Link or cluster a mirror belongs to, make
 * the local destination treat it as remote-discovery or federated, or steer the local
 * kube-proxy and EndpointSlice controller (`service.kubernetes.io/service-proxy-name`,
 * `endpointslice.kubernetes.io/skip-mirror`, `kubernetes.io/service-name`). Subdomains count
 * (`topology.kubernetes.io/`, `kubectl.kubernetes.io/`, `*.k8s.io/`), except
 * `app.kubernetes.io/`: Kubernetes' recommended labels only describe the application, nothing
 * reads them as instructions, and users select mirrors by them.
 */
const RESERVED_DOMAINS = ['mirror.linkerd.io', 'multicluster.linkerd.io', 'mesh-endpoints.io', 'kubernetes.io', 'k8s.io'];
const DESCRIPTIVE_DOMAINS = new Set(['app.kubernetes.io']);

/** Whether a label or annotation key is one only the mirror itself may set (RESERVED_DOMAINS). */
export function isReservedKey(key: string): boolean {
    const slash = key.indexOf('/');
    if (slash < 0) return false;
    const domain = key.slice(0, slash);
    if (DESCRIPTIVE_DOMAINS.has(domain)) return false;
    return RESERVED_DOMAINS.some((reserved) => domain === reserved || domain.endsWith(`.${reserved}`));
}

/** Selectors `linkerd multicluster link` writes when none is given. */
export const DEFAULT_EXPORT_SELECTOR: LabelSelector = { matchLabels: { [EXPORTED_LABEL]: 'true' } };
export const DEFAULT_REMOTE_DISCOVERY_SELECTOR: LabelSelector = { matchLabels: { [EXPORTED_LABEL]: 'remote-discovery' } };
export const DEFAULT_FEDERATED_SELECTOR: LabelSelector = { matchLabels: { [FEDERATED_LABEL]: 'member' } };

/**
 * Ours, on every mirror Service: the namespace/name of the Link it serves. A controller that
 * starts after its Link was deleted finds the mirrors the Link left by it, and never touches
 * the mirrors of another namespace's Links (or another mirror controller's).
 */
export const LINK_ANNOTATION = 'mesh-endpoints.io/link';

/** A Link by where it lives. */
export interface LinkRef {
    namespace: string;
    name: string;
}

/** `namespace/name` of a Link: the value of LINK_ANNOTATION on its mirrors. */
export const linkKey = ({ namespace, name }: LinkRef): string => `${namespace}/${name}`;

/** The Link a LINK_ANNOTATION value names; undefined when it names none (missing, or not `namespace/name`). */
export function parseLinkKey(key: string | undefined): LinkRef | undefined {
    const parts = key?.split('/');
    if (parts?.length !== 2 || !parts[0] || !parts[1]) return undefined;
    return { namespace: parts[0], name: parts[1] };
}

/** The key of the Link a mirror Service names as its writer; undefined on one Linkerd's own service mirror wrote. */
export const mirrorLinkKey = (svc: { metadata?: { annotations?: Record<string, string> } }): string | undefined => svc.metadata?.annotations?.[LINK_ANNOTATION];

/** Whether a mirror Service names Link namespace/name as the Link it serves. */
export const namesLink = (svc: { metadata?: { annotations?: Record<string, string> } }, namespace: string, name: string): boolean =>
    mirrorLinkKey(svc) === linkKey({ namespace, name });

/**
 * Ours, on every federated Service: the namespace of the Links (so of the service mirror) that
 * federate it. A federated Service naming another namespace is that service mirror's; one
 * without it was made by Linkerd or before this annotation, and is taken over.
 */
export const FEDERATION_ANNOTATION = 'mesh-endpoints.io/federation';

/** endpointslice.kubernetes.io/managed-by of the mirror's slices: ours, not Linkerd's or kube's. */
export const MIRROR_SLICE_MANAGED_BY = 'service-mirror.mesh-endpoints.io';

/**
 * Linkerd's excludedLabels/excludedAnnotations rule: an entry ending in `/*` excludes every
 * key with that prefix (`example.com/*` → `example.com/anything`); any other entry is exact.
 */
export function isExcludedKey(key: string, excluded: readonly string[]): boolean {
    return excluded.some((entry) => (entry.endsWith('/*') ? key.startsWith(entry.slice(0, -1)) : key === entry));
}
