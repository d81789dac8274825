// What the controllers of every Link share, built once by the service mirror (controller.ts):
// the process's options as given (LinkConfig), the caches they read, the writers, and the
// queues of the Link-wide work (its status, the withdrawal of an unserved Link's readiness),
// on which each Link's controller puts its own name.
import type { KubeConfig } from '../kube/kubeconfig.js';
import type { DnsPolicy } from '../dns/name-state.js';
import type { Controller, Source } from '../kube/controller.js';
import type { Informer } from '../kube/informer.js';
import type { OwnedSlice } from '../kube/slice-cache.js';
import type { Logger } from '../kube/log.js';
import type { KubeRest } from '../kube/rest.js';
import type { KubeObject, ObjectStore } from '../kube/store.js';
import type { ControllerDeps } from '../kube/manager.js';
import type { CompactService } from './cache/compact.js';
import type { LinkStatus } from './api/link.js';
import type { ServiceMirrorMetrics } from './link/metrics.js';
import type { MirrorSync } from './write/mirror-sync.js';
import type { ProbeCidr } from '../ip/probe-target.js';
import type { ProbeAddressOverride } from '../net/probe.js';
import type { KubeconfigPolicy } from '../kube/untrusted-kubeconfig.js';
import type { ClusterSet, RemoteCluster, RemoteObjectRef } from './mcs/clusterset.js';
import type { Published, SourceSet } from '../kube/sources.js';

/** The name of a Link of the service mirror's namespace: the key of the Links' reconciler and of the Link-wide work. */
export type LinkName = string & { readonly linkName: unique symbol };

export type LinkObject = KubeObject & { status?: LinkStatus; spec?: { targetClusterName?: unknown; clusterCredentialsSecret?: unknown } };

/** LinkConfig's defaults: a Link not served yet is tried again this often; status changes within this window are one write; workers per Link. */
export const DEFAULT_LINK_RETRY_MS = 10_000;
export const DEFAULT_STATUS_DELAY_MS = 500;
export const DEFAULT_LINK_WORKERS = 2;

/**
 * The service mirror's settings a Link's controller reads: ServiceMirrorOptions extends it, so
 * the process's options reach every Link as given, not copied field by field.
 */
export interface LinkConfig extends ControllerDeps {
    /** Namespace of the Links (and their credentials Secrets) this process serves. */
    namespace: string;
    /** "host:port" DNS servers for gateway names; the system's when absent. */
    dnsServers?: string[];
    /** Per-try DNS timeout and tries (c-ares); a black-holed server fails after about their product. */
    dnsTimeoutMs?: number;
    dnsTries?: number;
    probeAddressOverride?: ProbeAddressOverride;
    /** Refused probe targets allowed all the same (--probe-allow-cidrs). */
    probeAllowCidrs?: readonly ProbeCidr[];
    /** Workers per Link. */
    workers?: number;
    /** Retry of a Link that cannot be served yet (missing Secret, unreadable kubeconfig). */
    linkRetryMs?: number;
    /** Changes within this window produce one Link status write. */
    statusDelayMs?: number;
    newRemoteRest?: (kubeConfig: KubeConfig) => KubeRest;
    /** --allow-kubeconfig-exec and --allow-insecure-remote-tls: what a credentials kubeconfig may hold beyond inline material. */
    credentialsPolicy?: KubeconfigPolicy;
    /** Linkerd's --enable-headless-services (off by default, as there): the remote slices' hostnames matter. */
    enableHeadlessServices?: boolean;
    /** --max-mirrors-per-link: past it a Link mirrors its oldest exports only (mirror-limit.ts). */
    maxMirrorsPerLink?: number;
}

/** A queue of Link-wide work, as a Link's controller puts its name on it. */
export type LinkQueue = Pick<Controller<LinkName>, 'add' | 'addAfter'>;

/** What every Link's controller shares, built once by the service mirror. */
export interface LinkOptions {
    config: LinkConfig;
    /** The Links of the namespace as cached: each one's status and Events. */
    links: ObjectStore<LinkObject>;
    /** The credentials Secrets as cached: a new resourceVersion is new credentials. */
    secrets: ObjectStore<KubeObject>;
    /**
     * The local mirror Services (indexed by cluster name: those whose remote Service is gone
     * converge too), their slices as edited by others, and the namespaces: each Link's mirrors
     * watch their own cluster's part.
     */
    localMirrors: Informer<CompactService>;
    mirrorSlices: Source<OwnedSlice>;
    namespaces: Informer<KubeObject>;
    mirrors: MirrorSync;
    metrics: ServiceMirrorMetrics;
    logger: Logger;
    /** The DNS policy, defaults filled in. */
    policy: DnsPolicy;
    /** The Links' status reconciler (link-work.ts). */
    status: LinkQueue;
    /** The withdrawal of the readiness of a Link's mirrors once it has not been served for the stale window. */
    unserved: LinkQueue;
    /** What changes in the remote clusters: each Link's controller adds its remote's while its watch runs. */
    remoteChanges: SourceSet<RemoteObjectRef>;
    /** What can be read of each Link's remote cluster now, as its controller publishes it: the federated Services and MCS watch it. */
    readableRemotes: Published<RemoteCluster>;
    /** Where each Link's remote cluster is published, with its ServiceExports, Services and gateway, when MCS is served. */
    clusterSet?: ClusterSet;
}
