// servicemirror/: mirrors the exported Services of remote clusters, one Link per remote, as
// local Services with EndpointSlices pointing at each remote's gateway. It owns the mirror
// Services and their slices (managed-by service-mirror.mesh-endpoints.io), the Link status
// and Events. It must not write to a remote cluster, touch a local object without its
// cluster-name label, or resolve names itself (src/dns/ does). The pure core is link.ts,
// mirror.ts, endpoints.ts and status.ts.
//
// This top level holds the caches (the remote clusters' changes among them, one SourceSet each
// Link adds its remote to), the writers and the terms, and builds the reconcilers, each watching
// what it needs: the Links' (link-reconciler.ts, on its queue of Link names: it starts, changes
// or stops each Link's controller, link-controller.ts, and decides what spans Links), each
// Link's mirrors (link-mirrors.ts, a queue per Link), the Links' status and unserved work
// (link-work.ts), the federated Services (federation-controller.ts) and MCS (mcs/).
import { DEFAULT_DNS_POLICY, type DnsPolicy } from '../dns/name-state.js';
import { Informer } from '../kube/informer.js';
import { Controller } from '../kube/controller.js';
import { logFn, type Logger } from '../kube/log.js';
import type { Runnable } from '../kube/manager.js';
import { controllerRateLimiter } from '../kube/ratelimit.js';
import { Links, Namespaces, Secrets, Services } from '../kube/resources.js';
import { SharedValues } from '../kube/shared-values.js';
import { SliceOwner } from '../kube/slice-owner.js';
import type { KubeObject } from '../kube/store.js';
import { compactService, type CompactService } from './cache/compact.js';
import { CREDENTIALS_SECRET_TYPE, linkSpecChanged } from './api/link.js';
import { LinkController } from './link-controller.js';
import type { LinkConfig, LinkName, LinkObject, LinkOptions } from './link-options.js';
import { LinkWork } from './link-work.js';
import { LinkReconciler } from './link-reconciler.js';
import { FederationController } from './federation-controller.js';
import { CLUSTER_NAME_LABEL, HEADLESS_MIRROR_SVC_NAME_LABEL, MIRROR_SLICE_MANAGED_BY, mirrorLinkKey, MIRRORED_SERVICE_LABEL, parseLinkKey } from './api/keys.js';
import { MirrorSync } from './write/mirror-sync.js';
import { ClusterSet, type RemoteCluster, type RemoteObjectRef } from './mcs/clusterset.js';
import { Published, SourceSet } from '../kube/sources.js';
import { McsController } from './mcs/controller.js';
import type { RemoteWatch } from './link/remote-watch.js';
import { ServiceMirrorMetrics } from './link/metrics.js';
import { formatLabelSelector, isEmptySelector, type LabelSelector } from './api/selector.js';

export const SERVICE_MIRROR_LEASE = 'mesh-endpoints-service-mirror';

export interface ServiceMirrorOptions extends LinkConfig {
    dnsPolicy?: Partial<DnsPolicy>;
    maxEndpointsPerSlice?: number;
    /** Linkerd's --enable-namespace-creation (off by default, as there). */
    enableNamespaceCreation?: boolean;
    /**
     * The local cluster as a member of federated services (Linkerd's local service mirror):
     * local Services the selector selects join `<name>-federated` as local-discovery, their
     * labels and annotations minus the excluded ones. Absent or an empty selector: no local member.
     */
    localFederation?: { selector: LabelSelector; excludedLabels: string[]; excludedAnnotations: string[] };
    /**
     * The Multi-Cluster Services API (mcs/): served whenever its CRDs are installed, unless this
     * is absent (--mcs=false). `clusterName` is --cluster-name; without it the ClusterProperty names us.
     */
    mcs?: {
        clusterName?: string;
        /** Imports each of MCS's reconcilers converges at once (--mcs-workers). */
        workers?: number;
        /** MCS's own client rate limit (--mcs-api-qps, --mcs-api-burst), apart from the process's; qps 0: none. */
        qps?: number;
        burst?: number;
    };
}

export class ServiceMirrorController implements Runnable {
    readonly name = 'service-mirror';
    readonly links: Informer<LinkObject>;
    readonly services: Informer<CompactService>;
    readonly namespaces: Informer<KubeObject>;
    /** Credentials Secrets: a rotated token restarts the remote watch of the Links that use it. */
    readonly secrets: Informer<KubeObject>;
    /** Local Services selected as federated members (when local membership is on). */
    readonly localMembers: Informer<CompactService> | undefined;
    readonly slices: SliceOwner;
    readonly informers: Informer<KubeObject>[];
    /** The MCS API's caches: its CRDs may be installed later, so nothing waits for them. */
    readonly optionalInformers: Informer<KubeObject>[];
    /** The MCS controller, unless --mcs=false. */
    readonly mcs: McsController | undefined;
    /** The clusters the Links point at, as MCS reads them (unless --mcs=false). */
    private readonly clusterSet: ClusterSet | undefined;
    readonly metrics: ServiceMirrorMetrics;
    readonly policy: DnsPolicy;
    private readonly mirrors: MirrorSync;
    private readonly federation: FederationController;
    /** The Links' reconciler, which holds each Link's controller while this replica leads. */
    private readonly linkReconciler: LinkReconciler;
    /** What every Link's controller shares. */
    private readonly linkOptions: LinkOptions;
    private readonly linkWork: LinkWork;
    private readonly log: Logger;
    private readonly queue: Controller<LinkName>;
    /** What changes in the remote clusters, each Link's while its remote watch runs: the mirrors, federation and MCS watch it. */
    private readonly remoteChanges = new SourceSet<RemoteObjectRef>();
    /** What can be read of each Link's remote cluster now, as its controller publishes it: federation and MCS watch it. */
    private readonly readableRemotes = new Published<RemoteCluster>();

    constructor(private readonly opts: ServiceMirrorOptions) {
        this.log = opts.logger.child({ controller: this.name });
        this.policy = { ...DEFAULT_DNS_POLICY, ...opts.dnsPolicy };
        this.queue = new Controller<LinkName>({
            name: this.name,
            reconciler: { reconcile: (link) => this.linkReconciler.reconcile(link) },
            metrics: opts.queueMetrics,
            events: opts.events,
            rateLimiter: controllerRateLimiter({ baseMs: 250, maxMs: 300_000 }),
            workers: 2,
            log: this.log,
            resyncMs: opts.resyncMs,
        });
        const log = logFn(this.log);
        const common = { log };
        this.links = new Informer(opts.rest, { resource: Links, namespace: opts.namespace, ...common });
        // Services are cached as the mirror reads them (compact.ts).
        const shared = new SharedValues();
        this.services = new Informer(opts.rest, {
            resource: Services,
            labelSelector: `${MIRRORED_SERVICE_LABEL}=true`,
            transform: (svc) => compactService(svc, 'mirror', shared),
            ...common,
        });
        this.services.store.indexLabel(CLUSTER_NAME_LABEL);
        this.services.store.indexLabel(HEADLESS_MIRROR_SVC_NAME_LABEL);
        this.namespaces = new Informer(opts.rest, { resource: Namespaces, ...common });
        this.secrets = new Informer(opts.rest, { resource: Secrets, namespace: opts.namespace, fieldSelector: `type=${CREDENTIALS_SECRET_TYPE}`, ...common });
        this.metrics = new ServiceMirrorMetrics(opts.registry);
        this.slices = new SliceOwner({
            rest: opts.rest,
            managedBy: MIRROR_SLICE_MANAGED_BY,
            sliceWrites: this.metrics.sliceWrites,
            indexLabels: [CLUSTER_NAME_LABEL],
            ...common,
        });
        const local = opts.localFederation;
        this.localMembers =
            local && !isEmptySelector(local.selector)
                ? new Informer(opts.rest, {
                      resource: Services,
                      labelSelector: formatLabelSelector(local.selector),
                      transform: (svc) => compactService(svc, 'source', shared),
                      ...common,
                  })
                : undefined;
        this.informers = [this.links, this.services, this.slices.informer, this.namespaces, this.secrets, ...(this.localMembers ? [this.localMembers] : [])];
        const mcs = opts.mcs;
        this.clusterSet = mcs
            ? new ClusterSet(
                  () => this.links.store.list().map((obj) => ({ link: obj.metadata!.name!, cluster: typeof obj.spec?.targetClusterName === 'string' ? obj.spec.targetClusterName : '' })),
                  this.remoteChanges,
                  this.readableRemotes,
              )
            : undefined;
        this.mcs =
            mcs && this.clusterSet
                ? new McsController({
                      // Its own share of the client rate limit: a burst of exports is not held to the mirror's.
                      rest: mcs.qps === undefined ? opts.rest : opts.rest.fork({ qps: mcs.qps, burst: mcs.burst }),
                      logger: this.log,
                      events: opts.events,
                      queueMetrics: opts.queueMetrics,
                      clusterName: mcs.clusterName,
                      clusterSet: this.clusterSet,
                      namespaces: this.namespaces,
                      maxEndpointsPerSlice: opts.maxEndpointsPerSlice ?? 100,
                      workers: mcs.workers,
                      resyncMs: opts.resyncMs,
                  })
                : undefined;
        this.optionalInformers = this.mcs?.informers ?? [];
        this.mirrors = new MirrorSync({
            rest: opts.rest,
            owner: this.slices,
            services: this.services,
            namespaces: this.namespaces,
            metrics: this.metrics,
            maxEndpointsPerSlice: opts.maxEndpointsPerSlice ?? 100,
            enableHeadlessServices: opts.enableHeadlessServices,
            enableNamespaceCreation: opts.enableNamespaceCreation,
        });
        this.federation = new FederationController({
            namespace: opts.namespace,
            links: this.links,
            remoteOf: (link) => this.linkReconciler.controllers.get(link)?.readableRemote,
            remoteChanges: this.remoteChanges,
            readableRemotes: this.readableRemotes,
            servedLink: (link) => this.linkReconciler.controllers.get(link)?.servedLink,
            services: this.services,
            localMembers: this.localMembers,
            excludedLabels: local?.excludedLabels ?? [],
            excludedAnnotations: local?.excludedAnnotations ?? [],
            writes: this.mirrors,
            ensureNamespace: (ns, cluster) => this.mirrors.ensureNamespace(ns, cluster),
            // An Event on the Link that serves the cluster.
            event: (cluster, event) => this.servingCluster(cluster)?.event(event),
            queueMetrics: opts.queueMetrics,
            events: opts.events,
            logger: this.log,
            resyncMs: opts.resyncMs,
        });
        const linkOf = (name: LinkName) => this.linkReconciler.controllers.get(name);
        const staleWindowMs = this.policy.staleWindowMs;
        this.linkWork = new LinkWork({ config: opts, log: this.log, linkOf, namespace: opts.namespace, localMirrors: this.services.store, mirrors: this.mirrors, staleWindowMs });
        this.linkOptions = {
            config: opts,
            status: this.linkWork.status,
            unserved: this.linkWork.unserved,
            links: this.links.store,
            secrets: this.secrets.store,
            localMirrors: this.services,
            mirrorSlices: this.slices.foreignChanges,
            namespaces: this.namespaces,
            mirrors: this.mirrors,
            metrics: this.metrics,
            logger: this.log,
            policy: this.policy,
            clusterSet: this.clusterSet,
            remoteChanges: this.remoteChanges,
            readableRemotes: this.readableRemotes,
        };
        this.linkReconciler = new LinkReconciler(this.linkOptions, this.log);
        this.watch();
    }

    /** The controller of a Link while leading, for tests and diagnostics. */
    controllerOf(link: string): LinkController | undefined {
        return this.linkReconciler.controllers.get(link);
    }

    /** The running watch of a Link's remote cluster: a new one after each restart. */
    remoteWatchOf(link: string): RemoteWatch | undefined {
        return this.linkReconciler.controllers.get(link)?.remoteWatch;
    }

    /** The Links' own sources; each Link's mirrors watch their part of our mirrors, their slices, the namespaces and the remotes (link-mirrors.ts). */
    private watch(): void {
        const name = (obj: KubeObject) => [obj.metadata!.name! as LinkName];
        // Status writes (ours included) come back as updates: only a spec change matters.
        this.queue.watch(this.links, name, { changed: linkSpecChanged });
        // A rotated token restarts the remote watch of the Links that use the Secret.
        this.queue.watch(this.secrets, (secret) => this.linksUsing(secret.metadata?.name));
        // Links deleted while no replica led: their mirrors still name them, and a term starts from them.
        this.queue.watch(this.services, (svc) => this.goneLinkOf(svc));
    }

    /** The Links whose credentials are this Secret. */
    private linksUsing(secret: string | undefined): LinkName[] {
        return this.links.store.list().flatMap((link) => (secret !== undefined && link.spec?.clusterCredentialsSecret === secret ? [link.metadata!.name! as LinkName] : []));
    }

    /**
     * The Link of our namespace a mirror names, when that Link is gone: its mirrors are removed.
     * A mirror no longer cached (its delete) asks nothing: removing the mirrors of a gone Link
     * would otherwise run that Link again for each one it removed.
     */
    private goneLinkOf(svc: KubeObject): LinkName[] {
        if (!this.services.store.get(svc.metadata?.namespace, svc.metadata!.name!)) return [];
        const link = parseLinkKey(mirrorLinkKey(svc));
        return link?.namespace === this.opts.namespace && !this.links.store.get(link.namespace, link.name) ? [link.name as LinkName] : [];
    }

    private servingCluster(cluster: string): LinkController | undefined {
        return this.linkReconciler.servingCluster(cluster);
    }

    startLeading(): void {
        this.slices.newTerm();
        // Every Link, and every Link gone whose mirrors remain (the watches' replay).
        // The Link-wide queues first: a Link's controller asks for its status as it starts.
        this.linkWork.start();
        this.queue.start();
        this.federation.start();
        this.mcs?.start();
    }

    /** Stops taking work and every Link's controller; mirrors stay as they are for the next leader. */
    async stopLeading(): Promise<void> {
        await Promise.all([this.queue.stop(), this.linkWork.stop(), this.federation.stop(), this.mcs?.stop()]);
        await this.linkReconciler.stop();
    }
}
