// The mirrors of one Link, a reconciler on the runtime keyed by the remote Service a mirror
// stands for: which mirrors are queued when (a remote Service changed, the remote became
// readable, the gateway's addresses moved, a local mirror was edited, a namespace appeared),
// which exports the mirror limit admits, and the sync of one, whose outcome the Link status
// records. One queue per Link, under a name of its own: one Link's thousand mirrors do not wait
// behind another's, and the series are as many as Links, like the Link metrics'. It lives as
// long as the Link's controller (a term at most); the remote it reads is that controller's.
import { Controller, replayOnly, type Reconciler } from '../kube/controller.js';
import type { Logger } from '../kube/log.js';
import { controllerRateLimiter } from '../kube/ratelimit.js';
import type { KubeObject } from '../kube/store.js';
import { LABEL_SERVICE_NAME } from '../endpointslice/slice.js';
import { CLUSTER_NAME_LABEL } from './api/keys.js';
import type { LinkStatusBook } from './link/link-status.js';
import type { RemoteCluster } from './mcs/clusterset.js';
import { mirroredRemoteName } from './plan/headless.js';
import { exportMode } from './plan/mirror.js';
import { DEFAULT_MAX_MIRRORS_PER_LINK, exportRank, MirrorLimit } from './plan/mirror-limit.js';
import { DEFAULT_LINK_WORKERS, type LinkOptions } from './link-options.js';

/** The remote Service a mirror stands for, "namespace/name" (neither holds a "/"). */
export type MirrorKey = `${string}/${string}`;
export const mirrorKey = (namespace: string, name: string): MirrorKey => `${namespace}/${name}`;

function parseMirrorKey(key: MirrorKey): [namespace: string, name: string] {
    const slash = key.indexOf('/');
    return [key.slice(0, slash), key.slice(slash + 1)];
}

// "link/": a Link named "mcs" is not MCS's queue.
const queueName = (link: string) => `service-mirror/link/${link}`;

export interface LinkMirrorsDeps {
    opts: LinkOptions;
    /** The Link's name. */
    name: string;
    /** The Link's remote once it can be trusted, else undefined: nothing is planned before. */
    remote: () => RemoteCluster | undefined;
    /** The Link as parsed and its remote's Services while its remote watch runs (ready or not). */
    watched: () => Pick<RemoteCluster, 'link' | 'services'> | undefined;
    /** Where each sync's outcome is recorded. */
    status: LinkStatusBook;
    /** The Link status is to be written: at once (`now`), or within the status delay. */
    statusChanged: (now: boolean) => void;
    /** The Link as cached: where a Warning about an invalid key goes. */
    stored: () => KubeObject | undefined;
    /** The labels of the Link's metrics now. */
    labels: () => { link: string; target_cluster_name: string };
    log: Logger;
}

export class LinkMirrors implements Reconciler<MirrorKey> {
    private readonly queue: Controller<MirrorKey>;
    /** The exports of the current remote watch and those the mirror limit admits. */
    private readonly limit: MirrorLimit;
    /**
     * Mirrors queued by the last full convergence and not synced once since: the status counts
     * what the syncs report, so until they have all run a new leader would write a partial count
     * (and then the full one) over a status that was right all along.
     */
    private converging: Set<MirrorKey> | undefined;

    constructor(private readonly deps: LinkMirrorsDeps) {
        const config = deps.opts.config;
        this.limit = new MirrorLimit(config.maxMirrorsPerLink ?? DEFAULT_MAX_MIRRORS_PER_LINK);
        this.queue = new Controller<MirrorKey>({
            name: queueName(deps.name),
            reconciler: this,
            workers: config.workers ?? DEFAULT_LINK_WORKERS,
            rateLimiter: controllerRateLimiter({ baseMs: 250, maxMs: 300_000 }),
            metrics: config.queueMetrics,
            events: config.events,
            log: deps.log,
            resyncMs: config.resyncMs,
        });
        // Every mirror of the Link again at each resync (its changes are queued as they come).
        this.queue.watch(replayOnly(() => this.mirrorKeys()), (key) => [key]);
        // A remote Service that changed, or one of its slices: its mirror, and the mirrors of the
        // others whose admission changed with it (the mirror limit is an index of the remote's
        // exports, kept here as they change, before any reader of `admitted` runs).
        this.queue.watch(deps.opts.remoteChanges, (ref) => (ref.link === deps.name && ref.kind !== 'export' ? this.ranked(ref.namespace, ref.name) : []));
        this.watchLocal();
        this.queue.start(); // its life is a term
    }

    /**
     * The local side of the Link's cluster: someone else's edit or delete of a mirror or its
     * slices is undone by the sync of its remote Service (slice edits wait a little: a burst of
     * them is one sync); an edited cluster label brings the mirror to the Link of each cluster it
     * named (the update's old and new keys). The event of our own write shows what its sync
     * decided: nothing to undo. A namespace created lets the mirrors skipped for want of it be made.
     */
    private watchLocal(): void {
        const { localMirrors, mirrorSlices, namespaces, mirrors } = this.deps.opts;
        const ofCluster = (obj: KubeObject, name: string | undefined): MirrorKey[] => {
            const cluster = this.deps.watched()?.link.spec.targetClusterName;
            if (!cluster || !name || obj.metadata?.labels?.[CLUSTER_NAME_LABEL] !== cluster) return [];
            const remote = mirroredRemoteName(name, obj.metadata?.labels, cluster);
            return remote ? [mirrorKey(obj.metadata!.namespace!, remote)] : [];
        };
        // Their keys are all in mirrorKeys (replayed above): not replayed again.
        this.queue.watch(localMirrors, (svc) => ofCluster(svc, svc.metadata?.name), { ownWrites: mirrors.ownWrites, replay: false });
        this.queue.watch(mirrorSlices, (slice) => ofCluster(slice, slice.metadata?.labels?.[LABEL_SERVICE_NAME]), { delayMs: 500 });
        // A namespace going away deletes its mirrors: nothing to make.
        this.queue.watch(namespaces, (ns) => (ns.metadata?.deletionTimestamp ? [] : this.namespaceKeys(ns.metadata!.name!)), { changed: () => false, replay: false });
    }

    /** Every remote Service of the Link and every local mirror of its cluster: what a full convergence syncs. */
    private mirrorKeys(remote = this.deps.remote()): Set<MirrorKey> {
        const keys = new Set<MirrorKey>();
        if (!remote) return keys;
        for (const svc of remote.services.list()) keys.add(mirrorKey(svc.metadata!.namespace!, svc.metadata!.name!));
        const cluster = remote.link.spec.targetClusterName;
        for (const local of this.deps.opts.localMirrors.store.byLabel(CLUSTER_NAME_LABEL, cluster)) {
            const name = mirroredRemoteName(local.metadata!.name!, local.metadata?.labels, cluster);
            if (name) keys.add(mirrorKey(local.metadata!.namespace!, name));
        }
        return keys;
    }

    /** Whether every mirror of the last full convergence was synced once: the counts are whole. */
    get converged(): boolean {
        return this.converging === undefined;
    }

    /** --max-mirrors-per-link and how many remote Services would be mirrored without it. */
    get limitReport(): { max: number; exported: number } {
        return { max: this.limit.max, exported: this.limit.exported };
    }

    admitted(namespace: string, name: string): boolean {
        return this.limit.admitted(mirrorKey(namespace, name));
    }

    /** The remote watch stopped: what was ranked or pending of it is forgotten. */
    reset(): void {
        this.converging = undefined;
        this.limit.clear();
    }

    /**
     * The mirror of a remote Service that changed and, its place among the exports the mirror
     * limit admits set anew, the mirrors of the others whose admission changed with it.
     */
    private ranked(namespace: string, name: string): MirrorKey[] {
        const key = mirrorKey(namespace, name);
        const watched = this.deps.watched();
        if (!watched) return [key];
        const wasReached = this.limit.reached;
        const svc = watched.services.get(namespace, name);
        const others = this.limit.set(key, svc && exportRank(svc, watched.link)) as MirrorKey[];
        if (wasReached || this.limit.reached) this.deps.statusChanged(false);
        return [key, ...others];
    }

    /**
     * Queues every mirror of the Link (all: every remote Service and every local mirror of its
     * cluster, the limit ranked anew), or those the gateway's addresses feed.
     */
    enqueue(remote: RemoteCluster, all: boolean): void {
        const link = remote.link;
        if (all) {
            // Ranked anew from the whole cache, oldest first, so the admitted set does not depend on arrival order.
            this.limit.clear();
            const ranked = remote.services.list().flatMap((svc) => {
                const rank = exportRank(svc, link);
                return rank === undefined ? [] : [[mirrorKey(svc.metadata!.namespace!, svc.metadata!.name!), rank] as const];
            });
            for (const [key, rank] of ranked.sort(([, a], [, b]) => (a < b ? -1 : a > b ? 1 : 0))) this.limit.set(key, rank);
        }
        if (!all) {
            for (const svc of remote.services.list()) if (exportMode(svc, link) === 'mirror') this.queue.add(mirrorKey(svc.metadata!.namespace!, svc.metadata!.name!));
            return;
        }
        const queued = this.mirrorKeys(remote);
        for (const key of queued) this.queue.add(key);
        this.converging = queued.size > 0 ? queued : undefined;
    }

    /** The mirrors of one namespace. */
    private namespaceKeys(namespace: string): MirrorKey[] {
        return (this.deps.remote()?.services.list(namespace) ?? []).map((svc) => mirrorKey(namespace, svc.metadata!.name!));
    }

    /** Throws to be retried; a NotLeaderError too, in case the late renew succeeds (a lost term stops this controller). */
    async reconcile(key: MirrorKey): Promise<void> {
        const remote = this.deps.remote();
        if (!remote) return; // queued again once ready
        const [namespace, name] = parseMirrorKey(key);
        try {
            const outcome = await this.deps.opts.mirrors.sync(remote, namespace, name);
            if (this.deps.status.record(outcome, key)) {
                this.deps.opts.metrics.mirroredServices.set(this.deps.labels(), this.deps.status.mirrored);
                this.deps.statusChanged(false);
            }
        } finally {
            this.synced(key);
        }
    }

    eventTarget(): KubeObject | undefined {
        return this.deps.stored();
    }

    /** A mirror of the full convergence was synced (or tried once): the status waits for the last. */
    private synced(key: MirrorKey): void {
        if (!this.converging?.delete(key) || this.converging.size > 0) return;
        this.converging = undefined;
        this.deps.statusChanged(true);
    }

    /** Stops the work in hand, and the watches: the caches outlive the Link's controller. */
    stop(): Promise<void> {
        return this.queue.close();
    }

    /** The Link is gone: its queue's series go too (else they stay for the next term, counting on: no reset at each failover). */
    forgetSeries(): void {
        this.deps.opts.config.queueMetrics.forget(queueName(this.deps.name));
    }
}
