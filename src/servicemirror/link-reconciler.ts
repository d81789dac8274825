// The Link reconciler, on the service mirror's queue of Link names (controller.ts): a run
// starts, changes or stops that Link's controller (link-controller.ts: its remote watch, its
// credentials, its gateway), and decides what spans Links: which one serves a cluster two Links
// name (the claims), and when a cluster's mirrors go (its Link is gone or moved to another
// cluster). The controllers live for a term: stop() ends them all.
import type { NameState } from '../dns/name-state.js';
import type { ReconcileResult, Reconciler } from '../kube/controller.js';
import type { Logger } from '../kube/log.js';
import { CLUSTER_NAME_LABEL, namesLink } from './api/keys.js';
import { LinkController } from './link-controller.js';
import type { LinkName, LinkObject, LinkOptions } from './link-options.js';

export class LinkReconciler implements Reconciler<LinkName> {
    /** Link name → its controller, while this replica leads. */
    readonly controllers = new Map<string, LinkController>();
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
    private readonly namespace: string;

    constructor(
        private readonly opts: LinkOptions,
        private readonly log: Logger,
    ) {
        this.namespace = opts.config.namespace;
    }

    /** The controller that serves the cluster now. */
    servingCluster(cluster: string): LinkController | undefined {
        return [...this.controllers.values()].find((c) => c.servedCluster === cluster);
    }

    /** The term ended: every Link's controller stops, and its gateway names' states are kept for the next. */
    async stop(): Promise<void> {
        const controllers = [...this.controllers];
        this.controllers.clear();
        this.claims.clear();
        await Promise.all(controllers.map(async ([name, c]) => this.gatewayMemory.set(name, await c.stop())));
    }

    /** Starts, updates or stops the controller of one Link, then removes the mirrors of the clusters it left. */
    async reconcile(name: LinkName): Promise<ReconcileResult> {
        const obj = this.opts.links.get(this.namespace, name);
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
        if (!controller) this.controllers.set(name, (controller = new LinkController(this.opts, name, this.gatewayMemory.get(name))));
        const before = controller.linkedCluster;
        let result: ReconcileResult;
        try {
            result = await controller.serve(obj, holder);
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
        this.opts.clusterSet?.membershipChanged();
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
            const [oldest] = this.opts.links
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

    /**
     * Removes the mirrors of the clusters a Link left, all but `kept`: `left` (the cluster it named
     * until now, whichever Link made its mirrors) and the clusters of the mirrors that name it.
     * From the mirrors as cached, not only from what changed: a removal that failed is tried
     * again, and a Link moved or deleted while no replica led is caught up.
     */
    private async unlinkLeft(link: string, kept: string | undefined, left: string | undefined): Promise<void> {
        const mirrors = this.opts.localMirrors.store.list().filter((svc) => namesLink(svc, this.namespace, link));
        const clusters = new Set(mirrors.flatMap((svc) => svc.metadata?.labels?.[CLUSTER_NAME_LABEL] ?? []));
        if (left !== undefined) clusters.add(left);
        for (const cluster of clusters) if (cluster !== kept) await this.unlinkCluster(cluster);
    }

    /** Removes the mirrors of a cluster, unless a Link (served or not) still names it. */
    private async unlinkCluster(cluster: string): Promise<void> {
        if (this.servingCluster(cluster)) return;
        if (this.opts.links.list().some((obj) => obj.spec?.targetClusterName === cluster)) return;
        const removed = await this.opts.mirrors.deleteClusterMirrors(cluster, this.namespace);
        this.log.info({ cluster, removed }, 'removed the mirrors of an unlinked cluster');
    }
}
