// servicemirror/: mirrors the exported Services of remote clusters, one Link per remote, as
// local Services with EndpointSlices pointing at each remote's gateway. It owns the mirror
// Services and their slices (managed-by service-mirror.mesh-endpoints.io), the Link status
// and Events. It must not write to a remote cluster, touch a local object without its
// cluster-name label, or resolve names itself (src/dns/ does). The pure core is link.ts,
// mirror.ts, endpoints.ts and status.ts.
//
// This top level maps Links to their LinkControllers (link-controller.ts: a Link's lifetime,
// its mirrors' queue) and routes local events to them. Its queue holds Link names: a sync
// starts, changes or stops that Link's controller, and decides what spans Links: which one
// serves a cluster two Links name, and when a cluster's mirrors go (its Link is gone or moved to
// another cluster). The Links' status and unserved work have queues of their own
// (link-reconcilers.ts); federated Services (federation-controller.ts) too.
import { every } from '../time/clock.js';
import { DEFAULT_DNS_POLICY, type DnsPolicy, type NameState } from '../dns/name-state.js';
import { Informer } from '../kube/informer.js';
import { Controller, type ReconcileResult } from '../kube/controller.js';
import { logFn, type Logger } from '../kube/log.js';
import type { Runnable } from '../kube/manager.js';
import { controllerRateLimiter } from '../kube/ratelimit.js';
import { Links, Namespaces, Secrets, Services } from '../kube/resources.js';
import { SharedValues } from '../kube/shared-values.js';
import { SliceOwner } from '../kube/slice-owner.js';
import type { KubeObject } from '../kube/store.js';
import { compactService, type CompactService } from './cache/compact.js';
import { CREDENTIALS_SECRET_TYPE, linkSpecChanged, type LinkStatus } from './api/link.js';
import { LinkController } from './link-controller.js';
import type { LinkConfig, LinkName, LinkOptions } from './link-options.js';
import { LinkWork } from './link-reconcilers.js';
import { FederationController } from './federation-controller.js';
import { CLUSTER_NAME_LABEL, HEADLESS_MIRROR_SVC_NAME_LABEL, MIRROR_SLICE_MANAGED_BY, mirrorLinkKey, namesLink, MIRRORED_SERVICE_LABEL, parseLinkKey } from './api/keys.js';
import { MirrorSync } from './write/mirror-sync.js';
import { ClusterSet } from './mcs/clusterset.js';
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

type LinkObject = KubeObject & { status?: LinkStatus; spec?: { targetClusterName?: unknown; clusterCredentialsSecret?: unknown } };

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
    private readonly controllers = new Map<string, LinkController>();
    /**
     * Cluster → the Link that serves it or is starting to: taken before the first await of a
     * sync, so that the two workers, syncing two Links that name one cluster, serve it once.
     */
    private readonly claims = new Map<string, string>();
    /**
     * Link name → its gateway names' states when this process last stopped serving it: a
     * process that leads again seeds from them when they are newer than the Link status
     * record (whose write may have failed while the apiserver was down). Dropped with the Link.
     */
    private readonly gatewayMemory = new Map<string, ReadonlyMap<string, NameState>>();
    /**
     * Link name → the cluster it named when MCS was last told (ClusterSet.membershipChanged): a
     * Link's key also runs for a new Secret or a resync, which change no membership.
     */
    private readonly members = new Map<string, unknown>();
    /** What every Link's controller shares. */
    private readonly linkOptions: LinkOptions;
    private readonly linkWork: LinkWork;
    private readonly log: Logger;
    private readonly queue: Controller<string>;
    private stopResync: (() => void) | undefined;

    constructor(private readonly opts: ServiceMirrorOptions) {
        this.log = opts.logger.child({ controller: this.name });
        this.policy = { ...DEFAULT_DNS_POLICY, ...opts.dnsPolicy };
        this.queue = new Controller<string>({
            name: this.name,
            reconciler: { reconcile: (link) => this.syncLink(link) },
            metrics: opts.queueMetrics,
            events: opts.events,
            rateLimiter: controllerRateLimiter({ baseMs: 250, maxMs: 300_000 }),
            workers: 2,
            log: this.log,
            resyncMs: opts.resyncMs,
        });
        const log = logFn(this.log);
        const common = { resyncMs: opts.resyncMs, log };
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
            isLeader: opts.isLeader,
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
            ? new ClusterSet(() => this.links.store.list().map((obj) => ({ link: obj.metadata!.name!, cluster: typeof obj.spec?.targetClusterName === 'string' ? obj.spec.targetClusterName : '' })))
            : undefined;
        this.mcs =
            mcs && this.clusterSet
                ? new McsController({
                      // Its own share of the client rate limit: a burst of exports is not held to the mirror's.
                      rest: mcs.qps === undefined ? opts.rest : opts.rest.fork({ qps: mcs.qps, burst: mcs.burst }),
                      logger: this.log,
                      events: opts.events,
                      isLeader: opts.isLeader,
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
            isLeader: opts.isLeader,
            maxEndpointsPerSlice: opts.maxEndpointsPerSlice ?? 100,
            enableHeadlessServices: opts.enableHeadlessServices,
            enableNamespaceCreation: opts.enableNamespaceCreation,
        });
        this.federation = new FederationController({
            namespace: opts.namespace,
            links: this.links,
            remoteOf: (link) => this.controllers.get(link)?.readableRemote,
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
        const linkOf = (name: LinkName) => this.controllers.get(name);
        const staleWindowMs = this.policy.staleWindowMs;
        this.linkWork = new LinkWork({ config: opts, log: this.log, linkOf, namespace: opts.namespace, localMirrors: this.services.store, mirrors: this.mirrors, staleWindowMs });
        this.linkOptions = {
            config: opts,
            status: this.linkWork.status,
            unserved: this.linkWork.unserved,
            links: this.links.store,
            secrets: this.secrets.store,
            localMirrors: this.services.store,
            mirrors: this.mirrors,
            metrics: this.metrics,
            logger: this.log,
            policy: this.policy,
            federation: this.federation,
            clusterSet: this.clusterSet,
        };
        this.watch();
    }

    /** The controller of a Link while leading, for tests and diagnostics. */
    controllerOf(link: string): LinkController | undefined {
        return this.controllers.get(link);
    }

    /** The running watch of a Link's remote cluster: a new one after each restart. */
    remoteWatchOf(link: string): RemoteWatch | undefined {
        return this.controllers.get(link)?.remoteWatch;
    }

    private watch(): void {
        const name = (obj: KubeObject) => [obj.metadata!.name!];
        // Status writes (ours included) come back as updates: only a spec change matters.
        this.queue.watch(this.links, name, { changed: linkSpecChanged });
        // A rotated token restarts the remote watch of the Links that use the Secret.
        this.queue.watch(this.secrets, (secret) => this.linksUsing(secret.metadata?.name));
        // Links deleted while no replica led: their mirrors still name them, and a term starts from them.
        this.queue.watch(this.services, (svc) => this.goneLinkOf(svc));

        // Our mirrors and their slices: someone else's edit or delete is undone by the sync
        // of their remote Service. Slice edits wait a little: a burst of them is one sync.
        const mirrorChanged = (obj: KubeObject, name: string, delayMs = 0) => {
            const cluster = obj.metadata?.labels?.[CLUSTER_NAME_LABEL];
            if (cluster) this.servingCluster(cluster)?.enqueueLocalMirror(obj.metadata!.namespace!, name, obj.metadata?.labels, delayMs);
        };
        // The event of our own create or update shows what its sync decided: nothing to undo.
        const service = (svc: KubeObject) => this.mirrors.ownWrites.seen(svc, () => mirrorChanged(svc, svc.metadata!.name!));
        // An edited cluster label: the mirror is looked at by the Link of the cluster it named too.
        const updated = (old: KubeObject, svc: KubeObject) =>
            this.mirrors.ownWrites.seen(svc, () => {
                if (old.metadata?.labels?.[CLUSTER_NAME_LABEL] !== svc.metadata?.labels?.[CLUSTER_NAME_LABEL]) mirrorChanged(old, old.metadata!.name!);
                mirrorChanged(svc, svc.metadata!.name!);
            });
        const deleted = (svc: KubeObject) => {
            this.mirrors.ownWrites.forget(svc);
            mirrorChanged(svc, svc.metadata!.name!);
        };
        this.services.on({ add: service, update: updated, delete: deleted });
        this.slices.onForeignChange((_namespace, service, slice) => mirrorChanged(slice, service, 500));

        // A mirror skipped for want of its namespace is created once the namespace appears.
        this.namespaces.on({
            add: (ns) => {
                this.controllers.forEach((c) => c.enqueueNamespace(ns.metadata!.name!));
            },
        });
    }

    /** The Links whose credentials are this Secret. */
    private linksUsing(secret: string | undefined): string[] {
        return this.links.store.list().flatMap((link) => (secret !== undefined && link.spec?.clusterCredentialsSecret === secret ? [link.metadata!.name!] : []));
    }

    /**
     * The Link of our namespace a mirror names, when that Link is gone: its mirrors are removed.
     * A mirror no longer cached (its delete) asks nothing: removing the mirrors of a gone Link
     * would otherwise run that Link again for each one it removed.
     */
    private goneLinkOf(svc: KubeObject): string[] {
        if (!this.services.store.get(svc.metadata?.namespace, svc.metadata!.name!)) return [];
        const link = parseLinkKey(mirrorLinkKey(svc));
        return link?.namespace === this.opts.namespace && !this.links.store.get(link.namespace, link.name) ? [link.name] : [];
    }

    private servingCluster(cluster: string): LinkController | undefined {
        return [...this.controllers.values()].find((c) => c.servedCluster === cluster);
    }

    startLeading(): void {
        this.slices.newTerm();
        // Every Link, and every Link gone whose mirrors remain (the watches' replay).
        this.queue.start();
        this.linkWork.start();
        this.federation.start();
        this.mcs?.start();
        // In memory: every mirror is converged again (no write when nothing changed), and a
        // mirror given up on after its retries comes back.
        if (this.opts.resyncMs) this.stopResync = every(() => this.controllers.forEach((c) => c.enqueueMirrors(true)), this.opts.resyncMs);
    }

    /** Stops taking work and every Link's controller; mirrors stay as they are for the next leader. */
    async stopLeading(): Promise<void> {
        this.stopResync?.();
        await Promise.all([this.queue.stop(), this.linkWork.stop(), this.federation.stop(), this.mcs?.stop()]);
        const controllers = [...this.controllers];
        this.controllers.clear();
        this.claims.clear();
        await Promise.all(controllers.map(async ([name, c]) => this.gatewayMemory.set(name, await c.stop())));
    }

    /** Starts, updates or stops the controller of one Link, then removes the mirrors of the clusters it left. */
    private async syncLink(name: string): Promise<ReconcileResult> {
        const obj = this.links.store.get(this.opts.namespace, name);
        this.membership(name, obj);
        let controller = this.controllers.get(name);
        if (!obj) {
            this.controllers.delete(name);
            this.gatewayMemory.delete(name);
            const left = controller?.servedCluster; // stopped, it serves none
            await controller?.stop(true);
            this.release(name, undefined);
            return this.unlinkLeft(name, undefined, left);
        }
        const holder = this.claim(name, obj.spec?.targetClusterName);
        if (!controller) this.controllers.set(name, (controller = this.newLinkController(name)));
        const before = controller.linkedCluster;
        let result: ReconcileResult;
        try {
            result = await controller.reconcile(obj, holder);
        } finally {
            // Only the cluster it serves stays claimed: one it left or cannot serve (invalid, its
            // remote watch failed) keeps no other Link waiting.
            this.release(name, controller.servedCluster);
        }
        // A Link never parsed (invalid, or waiting for its cluster) keeps what it has.
        if (controller.linkedCluster !== undefined) await this.unlinkLeft(name, controller.linkedCluster, before);
        return result;
    }

    /** Tells MCS when a Link appeared, went or names another cluster (ClusterSet reads the Links as cached). */
    private membership(name: string, obj: LinkObject | undefined): void {
        const cluster = obj ? obj.spec?.targetClusterName : undefined;
        if (this.members.has(name) === (obj !== undefined) && this.members.get(name) === cluster) return;
        if (obj) this.members.set(name, cluster);
        else this.members.delete(name);
        this.clusterSet?.membershipChanged();
    }

    /**
     * The Link other than `name` that has `cluster`, claiming it first if it is free. A free
     * cluster goes to the oldest Link naming it (creationTimestamp, then name) among `name` and
     * the Links not synced yet this term, so which Link serves it depends neither on which is
     * synced first nor on which replica leads, and a Link that failed to serve keeps no other waiting.
     */
    private claim(name: string, cluster: unknown): string | undefined {
        if (typeof cluster !== 'string') return undefined;
        if (!this.claims.has(cluster)) {
            const age = (obj: LinkObject) => `${String(obj.metadata?.creationTimestamp)} ${obj.metadata!.name}`;
            const [oldest] = this.links.store
                .list()
                .filter((obj) => obj.spec?.targetClusterName === cluster && (obj.metadata!.name === name || !this.controllers.has(obj.metadata!.name!)))
                .sort((a, b) => (age(a) < age(b) ? -1 : 1));
            this.claims.set(cluster, oldest?.metadata!.name ?? name);
        }
        const holder = this.claims.get(cluster);
        return holder === name ? undefined : holder;
    }

    /** Drops the claims of Link `name`, but on `kept`. */
    private release(name: string, kept: string | undefined): void {
        for (const [cluster, link] of this.claims) if (link === name && cluster !== kept) this.claims.delete(cluster);
    }

    private newLinkController(name: string): LinkController {
        return new LinkController(this.linkOptions, name as LinkName, this.gatewayMemory.get(name));
    }

    /**
     * Removes the mirrors of the clusters a Link left, all but `kept`: `left` (the cluster it named
     * until now, whichever Link made its mirrors) and the clusters of the mirrors that name it.
     * From the mirrors as cached, not only from what changed: a removal that failed is tried
     * again, and a Link moved or deleted while no replica led is caught up.
     */
    private async unlinkLeft(link: string, kept: string | undefined, left: string | undefined): Promise<void> {
        const mirrors = this.services.store.list().filter((svc) => namesLink(svc, this.opts.namespace, link));
        const clusters = new Set(mirrors.flatMap((svc) => svc.metadata?.labels?.[CLUSTER_NAME_LABEL] ?? []));
        if (left !== undefined) clusters.add(left);
        for (const cluster of clusters) if (cluster !== kept) await this.unlinkCluster(cluster);
    }

    /** Removes the mirrors of a cluster, unless a Link (served or not) still names it. */
    private async unlinkCluster(cluster: string): Promise<void> {
        if (this.servingCluster(cluster)) return;
        if (this.links.store.list().some((obj) => obj.spec?.targetClusterName === cluster)) return;
        const removed = await this.mirrors.deleteClusterMirrors(cluster, this.opts.namespace);
        this.log.info({ cluster, removed }, 'removed the mirrors of an unlinked cluster');
    }
}
