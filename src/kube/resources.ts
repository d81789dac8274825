// The API resources mesh-endpoints reads and writes, and how their URLs are formed.
export interface ResourceType {
    group: string; // '' for the core group
    version: string;
    plural: string;
    kind: string;
    namespaced: boolean;
    /** For a custom resource: its CRD, and the file of this repository that installs it. */
    crd?: { name: string; file: string };
}

export const Services: ResourceType = { group: '', version: 'v1', plural: 'services', kind: 'Service', namespaced: true };
export const Namespaces: ResourceType = { group: '', version: 'v1', plural: 'namespaces', kind: 'Namespace', namespaced: false };
export const Secrets: ResourceType = { group: '', version: 'v1', plural: 'secrets', kind: 'Secret', namespaced: true };
export const Events: ResourceType = { group: '', version: 'v1', plural: 'events', kind: 'Event', namespaced: true };
export const ConfigMaps: ResourceType = { group: '', version: 'v1', plural: 'configmaps', kind: 'ConfigMap', namespaced: true };
export const ServiceAccounts: ResourceType = {
    group: '',
    version: 'v1',
    plural: 'serviceaccounts',
    kind: 'ServiceAccount',
    namespaced: true,
};
export const EndpointSlices: ResourceType = {
    group: 'discovery.k8s.io',
    version: 'v1',
    plural: 'endpointslices',
    kind: 'EndpointSlice',
    namespaced: true,
};
export const Leases: ResourceType = {
    group: 'coordination.k8s.io',
    version: 'v1',
    plural: 'leases',
    kind: 'Lease',
    namespaced: true,
};
export const ExternalWorkloads: ResourceType = {
    group: 'workload.linkerd.io',
    version: 'v1beta1',
    plural: 'externalworkloads',
    kind: 'ExternalWorkload',
    namespaced: true,
    crd: { name: 'externalworkloads.workload.linkerd.io', file: 'charts/mesh-endpoints/crds/externalworkloads.yaml' },
};
export const ExternalWorkloadGroups: ResourceType = {
    group: 'mesh-endpoints.io',
    version: 'v1alpha1',
    plural: 'externalworkloadgroups',
    kind: 'ExternalWorkloadGroup',
    namespaced: true,
    crd: { name: 'externalworkloadgroups.mesh-endpoints.io', file: 'charts/mesh-endpoints/crds/externalworkloadgroups.yaml' },
};
export const Links: ResourceType = {
    group: 'multicluster.linkerd.io',
    version: 'v1alpha3',
    plural: 'links',
    kind: 'Link',
    namespaced: true,
    crd: { name: 'links.multicluster.linkerd.io', file: 'charts/mesh-endpoints/crds/links.yaml' },
};

export function apiVersionOf(rt: ResourceType): string {
    return rt.group ? `${rt.group}/${rt.version}` : rt.version;
}

/** `/api/v1/namespaces/ns/services`, or cluster-wide when namespace is undefined. */
export function collectionPath(rt: ResourceType, namespace?: string): string {
    const root = rt.group ? `/apis/${rt.group}/${rt.version}` : `/api/${rt.version}`;
    const ns = rt.namespaced && namespace ? `/namespaces/${encodeURIComponent(namespace)}` : '';
    return `${root}${ns}/${rt.plural}`;
}

export function objectPath(rt: ResourceType, namespace: string | undefined, name: string, subresource?: string): string {
    const path = `${collectionPath(rt, namespace)}/${encodeURIComponent(name)}`;
    return subresource ? `${path}/${subresource}` : path;
}

/** The Multi-Cluster Services API (KEP-1645, sigs.k8s.io/mcs-api v0.5.2): servicemirror/mcs/. */
export const ServiceExports: ResourceType = {
    group: 'multicluster.x-k8s.io',
    version: 'v1beta1',
    plural: 'serviceexports',
    kind: 'ServiceExport',
    namespaced: true,
    crd: { name: 'serviceexports.multicluster.x-k8s.io', file: 'charts/mesh-endpoints/files/mcs-crds/multicluster.x-k8s.io_serviceexports.yaml' },
};

export const ServiceImports: ResourceType = {
    group: 'multicluster.x-k8s.io',
    version: 'v1beta1',
    plural: 'serviceimports',
    kind: 'ServiceImport',
    namespaced: true,
    crd: { name: 'serviceimports.multicluster.x-k8s.io', file: 'charts/mesh-endpoints/files/mcs-crds/multicluster.x-k8s.io_serviceimports.yaml' },
};

/** KEP-2149's About API: the cluster-scoped ClusterProperty whose value is a cluster's name. */
export const ClusterProperties: ResourceType = { group: 'about.k8s.io', version: 'v1alpha1', plural: 'clusterproperties', kind: 'ClusterProperty', namespaced: false };
