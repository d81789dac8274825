// servicemirror/: mirrors the exported Services of remote clusters, one Link per remote, as
// local Services with EndpointSlices pointing at each remote's gateway. It owns the Link
// lifecycle (a LinkWatch per Link), the mirror Services and their slices (managed-by
// service-mirror.mesh-endpoints.io), the Link status and Events. It must not write to a
// remote cluster, touch a local object without its cluster-name label, or resolve names
// itself (src/dns/ does). The pure core is link.ts, mirror.ts, endpoints.ts and status.ts.
//
// Data flows one way: informer, DNS and probe events → keys in one queue → a sync per key:
//   watch/<link>            start, restart or stop that Link's LinkWatch
//   mirror/<link>/<ns>/<n>  converge the mirror of remote Service ns/n (controller-sync.ts)
//   status/<link>           write the Link status if it changed (controller-status.ts)
//   unlink/<cluster>        delete every mirror of a cluster no Link serves any more
import type { KubeConfig, V1EndpointSlice, V1Service } from '@kubernetes/client-node';
import { LABEL_MANAGED_BY, LABEL_SERVICE_NAME } from '../endpointslice/slice.js';
import { SliceTracker } from '../endpointslice/tracker.js';
import { DEFAULT_DNS_POLICY, recordIntervalMs, type DnsPolicy, type NameState } from '../dns/name-state.js';
import { Informer } from '../kube/informer.js';
import { logFn, type Logger } from '../kube/log.js';
import type { ControllerDeps, Runnable } from '../kube/manager.js';
import { controllerRateLimiter } from '../kube/ratelimit.js';
import type { KubeRest } from '../kube/rest.js';
import { EndpointSlices, Links, Namespaces, Secrets, Services } from '../kube/resources.js';
import { NotLeaderError, SliceWriter, StaleCacheError } from '../kube/slice-writer.js';
import type { KubeObject } from '../kube/store.js';
import { LeaderQueue } from '../kube/leader-queue.js';
import { LinkStatusBook } from './controller-status.js';
import { MirrorSync } from './controller-sync.js';
import { LinkWatch } from './controller-watch.js';
import { mirrorKey, registerLocalHandlers } from './controller-events.js';
import { LinkLifecycle } from './controller-links.js';
import { GatewayReports, probeEvent, type LinkEvent } from './gateway-events.js';
import type { LinkStatus } from './link.js';
import { CLUSTER_NAME_LABEL, exportMode, LINK_ANNOTATION, MIRROR_SLICE_MANAGED_BY, MIRRORED_SERVICE_LABEL, remoteServiceName } from './mirror.js';
import { ServiceMirrorMetrics } from './metrics.js';
import type { ProbeAddressOverride } from './probe.js';

export const LEASE_NAME = 'mesh-endpoints-service-mirror';

export interface ServiceMirrorOptions extends ControllerDeps {
    /** Namespace of the Links (and their credentials Secrets) this process serves. */
    namespace: string;
    /** "host:port" DNS servers for gateway names; the system's when absent. */
    dnsServers?: string[];
    dnsPolicy?: Partial<DnsPolicy>;
    /** Per-try DNS timeout and tries (c-ares); a black-holed server fails after about their product. */
    dnsTimeoutMs?: number;
    dnsTries?: number;
    probeAddressOverride?: ProbeAddressOverride;
    maxEndpointsPerSlice?: number;
    workers?: number;
    /** Retry of a Link that cannot be served yet (missing Secret, unreadable kubeconfig). */
    linkRetryMs?: number;
    /** Changes within this window produce one Link status write. */
    statusDelayMs?: number;
    newRemoteRest?: (kubeConfig: KubeConfig) => KubeRest;
    resyncMs?: number;
}

type LocalService = V1Service & KubeObject;
type LocalSlice = V1EndpointSlice & KubeObject;
type Key = string;

export class ServiceMirrorController implements Runnable {
    readonly name = 'service-mirror';
    readonly links: Informer<KubeObject & { status?: LinkStatus }>;
    readonly services: Informer<LocalService>;
    readonly slices: Informer<LocalSlice>;
    readonly namespaces: Informer<KubeObject>;
    /** Credentials Secrets: a rotated token restarts the watch of the Links that use it. */
    readonly secrets: Informer<KubeObject>;
    readonly informers: Informer<KubeObject>[];
    readonly metrics: ServiceMirrorMetrics;
    readonly policy: DnsPolicy;
    private readonly tracker = new SliceTracker();
    private readonly mirrors: MirrorSync;
    private readonly status: LinkStatusBook;
    private readonly lifecycle: LinkLifecycle;
    private readonly reports = new GatewayReports();
    private readonly log: Logger;
    private readonly queue: LeaderQueue<Key>;

    constructor(private readonly opts: ServiceMirrorOptions) {
        this.log = opts.logger.child({ controller: this.name });
        this.policy = { ...DEFAULT_DNS_POLICY, ...opts.dnsPolicy };
        this.queue = new LeaderQueue<Key>({
            name: this.name,
            metrics: opts.queueMetrics,
            rateLimiter: controllerRateLimiter({ baseMs: 250, maxMs: 300_000 }),
            workers: opts.workers ?? 2,
            sync: (key) => this.sync(key),
            log: this.log,
            resyncMs: opts.resyncMs,
        });
        const log = logFn(this.log);
        const common = { resyncMs: opts.resyncMs, log };
        this.links = new Informer(opts.rest, { resource: Links, namespace: opts.namespace, ...common });
        this.services = new Informer(opts.rest, { resource: Services, labelSelector: `${MIRRORED_SERVICE_LABEL}=true`, ...common });
        this.services.store.indexLabel(CLUSTER_NAME_LABEL);
        this.slices = new Informer(opts.rest, { resource: EndpointSlices, labelSelector: `${LABEL_MANAGED_BY}=${MIRROR_SLICE_MANAGED_BY}`, ...common });
        this.slices.store.indexLabel(LABEL_SERVICE_NAME);
        this.slices.store.indexLabel(CLUSTER_NAME_LABEL);
        this.namespaces = new Informer(opts.rest, { resource: Namespaces, ...common });
        this.secrets = new Informer(opts.rest, { resource: Secrets, namespace: opts.namespace, ...common });
        this.informers = [this.links, this.services, this.slices, this.namespaces, this.secrets];
        this.metrics = new ServiceMirrorMetrics(opts.registry);
        const writer = new SliceWriter({
            rest: opts.rest,
            tracker: this.tracker,
            isLeader: opts.isLeader,
            fieldManager: MIRROR_SLICE_MANAGED_BY,
            changes: this.metrics.sliceWrites,
        });
        this.mirrors = new MirrorSync({
            rest: opts.rest,
            writer,
            tracker: this.tracker,
            services: this.services,
            slices: this.slices,
            namespaces: this.namespaces,
            metrics: this.metrics,
            isLeader: opts.isLeader,
            maxEndpointsPerSlice: opts.maxEndpointsPerSlice ?? 100,
        });
        this.status = new LinkStatusBook({
            rest: opts.rest,
            links: this.links,
            namespace: opts.namespace,
            isLeader: opts.isLeader,
            metrics: this.metrics,
            policy: this.policy,
            statusChanged: (link) => this.queue.addAfter(`status/${link}`, opts.statusDelayMs ?? 500),
            event: (link, event) => this.event(link, event),
            logger: this.log,
        });
        this.lifecycle = new LinkLifecycle({
            links: this.links,
            namespace: opts.namespace,
            secretVersion: (name) => this.secrets.store.get(opts.namespace, name)?.metadata?.resourceVersion,
            mirrors: this.mirrors,
            metrics: this.metrics,
            logger: this.log,
            event: (link, event) => this.event(link, event),
            watchDeps: {
                localRest: opts.rest,
                newRemoteRest: opts.newRemoteRest,
                dnsServers: opts.dnsServers,
                dnsTimeoutMs: opts.dnsTimeoutMs,
                dnsTries: opts.dnsTries,
                dnsPolicy: this.policy,
                probeOverride: opts.probeAddressOverride,
                metrics: this.metrics,
                logger: this.log,
            },
            hooks: (link) => ({
                remoteServiceChanged: (ns, name) => this.queue.add(mirrorKey(link, ns, name)),
                synced: () => this.enqueueLink(link, true),
                gatewayNameChanged: (_name, state) => this.onGatewayName(link, state),
                gatewayNameResolved: (name, state) => this.onGatewayResolved(link, name, state),
                livenessChanged: (alive, detail) => this.onLiveness(link, alive, detail),
                remoteFailed: (error) =>
                    this.event(link, { type: 'Warning', reason: 'RemoteClusterUnreachable', message: `reading the remote cluster failed: ${error}; retrying` }),
            }),
            started: (link, watch) => this.reports.seed(link, watch.nameStates, Date.now(), this.policy),
            forget: (link) => {
                this.status.forget(link);
                this.reports.forget(link);
            },
            retry: (key, ms) => this.queue.addAfter(key, ms),
            unlink: (cluster) => this.queue.add(`unlink/${cluster}`),
            retryMs: opts.linkRetryMs ?? 10_000,
        });
        registerLocalHandlers({
            links: this.links,
            secrets: this.secrets,
            services: this.services,
            slices: this.slices,
            namespaces: this.namespaces,
            tracker: this.tracker,
            lifecycle: this.lifecycle,
            queue: () => this.queue.active,
        });
    }

    /** The running watch of a Link, for tests and diagnostics. */
    watchOf(link: string): LinkWatch | undefined {
        return this.lifecycle.get(link);
    }

    /** Queues the mirrors of a Link: every remote Service and local mirror (all), or the gateway-mode ones. */
    private enqueueLink(link: string, all: boolean): void {
        const watch = this.lifecycle.get(link);
        if (!watch?.synced) return;
        for (const svc of watch.services.store.list()) {
            if (all || exportMode(svc, watch.link) === 'mirror') this.queue.add(mirrorKey(link, svc.metadata!.namespace!, svc.metadata!.name!));
        }
        if (all) {
            const cluster = watch.link.spec.targetClusterName;
            for (const local of this.services.store.byLabel(CLUSTER_NAME_LABEL, cluster)) {
                const remote = remoteServiceName(local.metadata!.name!, cluster);
                if (remote) this.queue.add(mirrorKey(link, local.metadata!.namespace!, remote));
            }
            this.queue.add(`status/${link}`);
        }
    }

    private onGatewayName(link: string, state: NameState): void {
        for (const event of this.reports.changed(link, state, Date.now(), this.policy)) this.event(link, event);
        // Only slices whose content changes are written: planSlices compares each one.
        this.enqueueLink(link, false);
        this.queue.addAfter(`status/${link}`, this.opts.statusDelayMs ?? 500);
    }

    /** Asks for a status write when the recorded time of the name's last good answer grew old. */
    private onGatewayResolved(link: string, name: string, state: NameState): void {
        const obj = this.links.store.get(this.opts.namespace, link);
        const recorded = obj?.status?.gatewayResolution?.find((e) => e.name === name)?.resolvedAt;
        const due = state.resolvedAt !== undefined && (recorded === undefined || state.resolvedAt - Date.parse(recorded) >= recordIntervalMs(this.policy));
        if (due) this.queue.addAfter(`status/${link}`, this.opts.statusDelayMs ?? 500);
    }

    private onLiveness(link: string, alive: boolean, detail: string): void {
        const watch = this.lifecycle.get(link);
        this.event(link, probeEvent(alive, detail, watch?.link.probe?.failureThreshold ?? 0));
        this.enqueueLink(link, false);
    }

    private event(link: string, event: LinkEvent): void {
        const obj = this.links.store.get(this.opts.namespace, link);
        if (obj) this.opts.events.record(obj, event.type, event.reason, event.message);
    }

    startLeading(): void {
        // What we tracked as a previous leader may have been changed by another since.
        this.tracker.reset();
        this.queue.start([
            ...this.links.store.list().map((link) => `watch/${link.metadata!.name!}`),
            ...this.clustersOfDeletedLinks().map((cluster) => `unlink/${cluster}`),
        ]);
    }

    /** Clusters whose mirrors name a Link of our namespace that no longer exists (deleted while no replica led). */
    private clustersOfDeletedLinks(): string[] {
        const clusters = new Set<string>();
        for (const svc of this.services.store.list()) {
            const [namespace, name] = (svc.metadata?.annotations?.[LINK_ANNOTATION] ?? '').split('/');
            const cluster = svc.metadata?.labels?.[CLUSTER_NAME_LABEL];
            if (namespace === this.opts.namespace && name && cluster && !this.links.store.get(namespace, name)) clusters.add(cluster);
        }
        return [...clusters];
    }

    /** Stops taking work and every remote watch; mirrors stay as they are for the next leader. */
    async stopLeading(): Promise<void> {
        await this.queue.stop();
        await this.lifecycle.stopAll();
    }

    /** Throws to be retried; a NotLeaderError too, in case the late renew succeeds (a lost term discards the queue). */
    async sync(key: Key): Promise<void> {
        const [kind, link = '', namespace = '', name = ''] = key.split('/');
        switch (kind) {
            case 'watch':
                return await this.lifecycle.sync(link);
            case 'unlink':
                return await this.lifecycle.unlink(link);
            case 'status': {
                const watch = this.lifecycle.get(link);
                if (watch) await this.status.write(watch);
                return;
            }
            case 'mirror':
                return await this.syncMirror(link, namespace, name);
        }
    }

    private async syncMirror(link: string, namespace: string, name: string): Promise<void> {
        const watch = this.lifecycle.get(link);
        if (!watch?.synced) return; // queued again once its remote caches have synced
        try {
            const outcome = await this.mirrors.sync(watch, namespace, name);
            if (this.lifecycle.get(link) === watch) this.status.record(watch, outcome, `${namespace}/${name}`);
            this.metrics.syncs.inc({ result: 'success' });
        } catch (err) {
            if (!(err instanceof NotLeaderError)) this.metrics.syncs.inc({ result: err instanceof StaleCacheError ? 'stale' : 'error' });
            throw err;
        }
    }
}
