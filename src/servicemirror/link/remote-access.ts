// Who reads a remote cluster with the credentials `mesh-endpoints link` writes, and exactly
// what each reads there: `link` grants these rules to one remote ServiceAccount per reader,
// and `check` asks the remote (SelfSubjectAccessReview) whether each token still has them.
// Pure.

/** The ServiceAccount, ClusterRole and ClusterRoleBinding `link` creates on the remote cluster for the service mirror. */
export const REMOTE_ACCESS_NAME = 'mesh-endpoints-service-mirror-remote-access';
/** The same for Linkerd's destination (remote discovery and federated Services). */
export const DESTINATION_ACCESS_NAME = 'mesh-endpoints-destination-remote-access';

/** How Linkerd's destination finds a remote cluster's credentials (controller/api/destination/watcher/cluster_store.go). */
export const DESTINATION_CLUSTER_NAME_LABEL = 'multicluster.linkerd.io/cluster-name';
export const DESTINATION_TRUST_DOMAIN_ANNOTATION = 'multicluster.linkerd.io/trust-domain';
export const DESTINATION_CLUSTER_DOMAIN_ANNOTATION = 'multicluster.linkerd.io/cluster-domain';

/** One rule of a remote reader's ClusterRole, and which mode fails without it (what `check` says). */
export interface RemoteRight {
    group: string;
    resource: string;
    verbs: readonly ('list' | 'watch')[];
    neededFor: string;
}

/**
 * What the service mirror lists and watches on the remote (src/servicemirror/link/remote-watch.ts):
 * Services (what is exported), EndpointSlices (whether a Service has ready endpoints, and the
 * hostnames of headless ones) and ServiceExports (what the remote exports to the MCS
 * clusterset). Informers only: no get, no write.
 */
export const MIRROR_RIGHTS: readonly RemoteRight[] = [
    { group: '', resource: 'services', verbs: ['list', 'watch'], neededFor: 'every mirror' },
    { group: 'discovery.k8s.io', resource: 'endpointslices', verbs: ['list', 'watch'], neededFor: 'gateway mirrors (ready endpoints) and headless mirrors (hostnames)' },
    { group: 'multicluster.x-k8s.io', resource: 'serviceexports', verbs: ['list', 'watch'], neededFor: 'MCS ServiceImports (the remote ServiceExports)' },
];

/**
 * What Linkerd's destination lists and watches on a remote for remote discovery and federated
 * Services (cluster_store.go, decodeK8sConfigFromSecret: EndpointSlices, Pods, Services and
 * Servers, plus the metadata of ReplicaSets, a pod's owner).
 */
export const DESTINATION_RIGHTS: readonly RemoteRight[] = [
    { group: '', resource: 'pods', verbs: ['list', 'watch'], neededFor: 'remote-discovery and federated Services (endpoint identities)' },
    { group: '', resource: 'services', verbs: ['list', 'watch'], neededFor: 'remote-discovery and federated Services' },
    { group: 'discovery.k8s.io', resource: 'endpointslices', verbs: ['list', 'watch'], neededFor: 'remote-discovery and federated Services (endpoints)' },
    { group: 'policy.linkerd.io', resource: 'servers', verbs: ['list', 'watch'], neededFor: 'remote-discovery and federated Services (opaque ports)' },
    { group: 'apps', resource: 'replicasets', verbs: ['list', 'watch'], neededFor: "remote-discovery and federated Services (a pod's owner)" },
];

