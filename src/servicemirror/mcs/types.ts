// The Multi-Cluster Services API (KEP-1645, sigs.k8s.io/mcs-api v0.5.2) as this controller
// reads and writes it: the ServiceExport and ServiceImport shapes of v1beta1, the keys the KEP
// fixes, and the names and keys that are ours (the derived Service, our bookkeeping label).
import { createHash } from 'node:crypto';
import type { V1Condition, V1EndpointSlice, V1Service, V1SessionAffinityConfig } from '@kubernetes/client-node';
import type { GatewayAddress } from '../plan/endpoints.js';
import type { Link } from '../api/link.js';

export const MCS_GROUP = 'multicluster.x-k8s.io';

/** An object's metadata as the plans read it: structurally a cached object's (kube/store.ts), which pure code does not import. */
interface Metadata {
    name?: string;
    namespace?: string;
    uid?: string;
    resourceVersion?: string;
    generation?: number;
    creationTimestamp?: unknown;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    [key: string]: unknown;
}

interface McsObject {
    apiVersion?: string;
    kind?: string;
    metadata?: Metadata;
}

/** KEP-2149's About API: the ClusterProperty whose value is this cluster's name (kube/resources.ts: ClusterProperties). */
export const CLUSTER_ID_PROPERTY = 'cluster.clusterset.k8s.io';

/** On MCS EndpointSlices (the KEP's names). */
export const LABEL_MCS_SERVICE_NAME = 'multicluster.kubernetes.io/service-name';
export const LABEL_SOURCE_CLUSTER = 'multicluster.kubernetes.io/source-cluster';

/** endpointslice.kubernetes.io/managed-by of the derived Services' slices, and our field manager. */
export const MCS_MANAGED_BY = 'mcs.mesh-endpoints.io';
/**
 * Ours, on the ServiceImports and derived Services this controller created: the only key besides
 * the exported ones. What lacks it is someone else's and is never adopted, updated or deleted.
 */
export const MCS_OWNED_LABEL = 'mcs.mesh-endpoints.io/service-import';

/** v1beta1 ServiceExport condition types and reasons. */
export const CONDITION_VALID = 'Valid';
export const CONDITION_READY = 'Ready';
export const CONDITION_CONFLICT = 'Conflict';

export interface ServiceExport extends McsObject {
    spec?: { exportedLabels?: Record<string, string>; exportedAnnotations?: Record<string, string> };
    status?: { conditions?: V1Condition[] };
}

export interface ImportPort {
    name?: string;
    protocol?: string;
    appProtocol?: string;
    port: number;
}

export interface ServiceImportSpec {
    ports: ImportPort[];
    ips?: string[];
    type: 'ClusterSetIP' | 'Headless';
    sessionAffinity?: string;
    sessionAffinityConfig?: V1SessionAffinityConfig;
    ipFamilies?: string[];
    internalTrafficPolicy?: string;
    trafficDistribution?: string;
}

export interface ServiceImportStatus {
    clusters?: { cluster: string }[];
    conditions?: V1Condition[];
}

export interface ServiceImport extends McsObject {
    spec?: ServiceImportSpec;
    status?: ServiceImportStatus;
}

/**
 * The derived Service of an imported Service: `derived-` and ten hex digits of the SHA-256 of its
 * name, as Cilium names it. No user picks such a name by chance, and one that did keeps it: a
 * Service without our label is never adopted (the import reports it instead).
 */
export function derivedServiceName(name: string): string {
    return `derived-${createHash('sha256').update(name).digest('hex').slice(0, 10)}`;
}

/** How a member cluster's endpoints reach the derived Service's slices. */
export type SourceEndpoints =
    /** Through the remote cluster's gateway (a Link with a gateway): Linkerd's gateway mode. */
    | { kind: 'gateway'; link: Link; addresses: readonly GatewayAddress[]; alive: boolean; hasReadyEndpoints: boolean }
    /** The cluster's own endpoints (the local cluster, or a Link with no gateway: a flat network). */
    | { kind: 'slices'; slices: readonly V1EndpointSlice[] };

/** One cluster of the clusterset, as its caches say now. */
export interface MemberCluster {
    name: string;
    /**
     * False while the cluster's caches cannot be trusted yet (its watch is starting): whatever it
     * contributed is kept as it is, never deleted on a guess.
     */
    known: boolean;
    export?: ServiceExport;
    service?: V1Service;
    endpoints: SourceEndpoints;
}
