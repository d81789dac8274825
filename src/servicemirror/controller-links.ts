// The lifecycle of Links in the controller's namespace: a Link added starts its LinkWatch, a
// change of its spec or of its credentials Secret replaces it, a deletion stops it and removes
// its mirrors. Each Link's watch is
// its own: nothing here restarts another Link's. A Link that cannot be served yet (missing
// Secret, unreadable kubeconfig) is retried on a fixed period, with a Warning Event.
import type { Informer } from '../kube/informer.js';
import type { Logger } from '../kube/log.js';
import type { KubeObject } from '../kube/store.js';
import type { NameState } from '../dns/name-state.js';
import { seedNameState } from '../dns/resolution-status.js';
import type { MirrorSync } from './controller-sync.js';
import { LinkSetupError, LinkWatch, type LinkWatchDeps, type LinkWatchHooks } from './controller-watch.js';
import { formatDuration, type LinkEvent } from './gateway-events.js';
import { parseLink, type LinkStatus } from './link.js';
import type { ServiceMirrorMetrics } from './metrics.js';

export interface LinkLifecycleDeps {
    links: Informer<KubeObject>;
    namespace: string;
    /** resourceVersion of a credentials Secret as cached, undefined when it does not exist. */
    secretVersion: (name: string) => string | undefined;
    mirrors: MirrorSync;
    metrics: ServiceMirrorMetrics;
    logger: Logger;
    event: (link: string, event: LinkEvent) => void;
    watchDeps: LinkWatchDeps;
    hooks: (link: string) => LinkWatchHooks;
    /** A Link's watch started; its gateway names hold their seeds. */
    started: (link: string, watch: LinkWatch) => void;
    /** A Link's watch stopped: drop what the controller kept about it. */
    forget: (link: string) => void;
    retry: (key: string, delayMs: number) => void;
    /** Asks for the removal of every mirror of a cluster (done only if no Link serves it). */
    unlink: (cluster: string) => void;
    retryMs: number;
}

const targetOf = (obj: KubeObject) => (obj as { spec?: { targetClusterName?: unknown } }).spec?.targetClusterName;

export class LinkLifecycle {
    private readonly watches = new Map<string, LinkWatch>();

    constructor(private readonly deps: LinkLifecycleDeps) {}

    get(link: string): LinkWatch | undefined {
        return this.watches.get(link);
    }

    all(): LinkWatch[] {
        return [...this.watches.values()];
    }

    forCluster(cluster: string): LinkWatch | undefined {
        return this.all().find((w) => w.link.spec.targetClusterName === cluster);
    }

    /** Brings the Link's watch in line with the Link as the cache has it now. */
    async sync(name: string): Promise<void> {
        const obj = this.deps.links.store.get(this.deps.namespace, name);
        const running = this.watches.get(name);
        if (!obj) {
            if (running) await this.stop(name, running, true);
            return;
        }
        const parsed = parseLink(obj);
        if ('error' in parsed) {
            // Mirrors are kept: a typo in a Link must not take every mirrored Service away.
            this.deps.event(name, { type: 'Warning', reason: 'InvalidLink', message: `Link not served: ${parsed.error}` });
            if (running) await this.stop(name, running, false);
            return;
        }
        // A new uid (deleted and created again), a new spec or new credentials: a new watch.
        const secret = this.deps.secretVersion(parsed.link.spec.clusterCredentialsSecret) ?? 'none';
        const specKey = `${obj.metadata?.uid} ${secret} ${JSON.stringify((obj as { spec?: unknown }).spec)}`;
        if (running?.specKey === specKey) return;
        for (const warning of parsed.warnings) this.deps.event(name, { type: 'Warning', reason: 'InvalidSelector', message: warning });
        const cluster = parsed.link.spec.targetClusterName;
        const seeds = this.seeds(obj, running);
        if (running) await this.stop(name, running, running.link.spec.targetClusterName !== cluster);
        const other = this.forCluster(cluster);
        if (other) {
            const message = `Link ${other.link.metadata.name} already mirrors cluster ${JSON.stringify(cluster)}; this Link waits until it is gone`;
            this.deps.event(name, { type: 'Warning', reason: 'DuplicateTargetCluster', message });
            this.deps.retry(`watch/${name}`, this.deps.retryMs);
            return;
        }
        let watch: LinkWatch;
        try {
            watch = await LinkWatch.start(parsed.link, specKey, this.deps.watchDeps, this.deps.hooks(name), seeds);
        } catch (err) {
            const reason = err instanceof LinkSetupError ? err.reason : 'RemoteWatchFailed';
            const message = `cannot watch cluster ${JSON.stringify(cluster)}: ${(err as Error).message}; retrying every ${formatDuration(this.deps.retryMs)}`;
            this.deps.event(name, { type: 'Warning', reason, message });
            this.deps.retry(`watch/${name}`, this.deps.retryMs);
            return;
        }
        this.watches.set(name, watch);
        this.deps.started(name, watch);
        this.deps.metrics.remoteWatches.set(this.watches.size);
        for (const error of watch.gatewayErrors) this.deps.event(name, { type: 'Warning', reason: 'InvalidGatewayAddress', message: error });
        this.deps.logger.info({ link: name, cluster, restarted: running !== undefined }, 'watching remote cluster');
    }

    /**
     * What a new watch of the Link starts its gateway names from: the watch it replaces (a
     * spec edit, rotated credentials) or else the Link's status, the record that the last
     * writer, this process or another, left of each name's last good answer.
     */
    private seeds(obj: KubeObject, running: LinkWatch | undefined): Map<string, NameState> {
        const seeds = new Map(running?.nameStates ?? []);
        const now = Date.now();
        for (const entry of (obj as { status?: LinkStatus }).status?.gatewayResolution ?? []) {
            if (seeds.has(entry.name)) continue;
            const seed = seedNameState(entry, now);
            if (seed) seeds.set(entry.name, seed);
        }
        return seeds;
    }

    private async stop(name: string, watch: LinkWatch, removeMirrors: boolean): Promise<void> {
        this.watches.delete(name);
        this.deps.metrics.remoteWatches.set(this.watches.size);
        await watch.stop();
        this.deps.forget(name);
        this.deps.logger.info({ link: name, cluster: watch.link.spec.targetClusterName, removeMirrors }, 'stopped watching remote cluster');
        if (removeMirrors) this.deps.unlink(watch.link.spec.targetClusterName);
    }

    /** Removes the mirrors of a cluster, unless a Link (running or not) still names it. */
    async unlink(cluster: string): Promise<void> {
        if (this.forCluster(cluster)) return;
        if (this.deps.links.store.list().some((obj) => targetOf(obj) === cluster)) return;
        const removed = await this.deps.mirrors.deleteClusterMirrors(cluster, this.deps.namespace);
        this.deps.logger.info({ cluster, removed }, 'removed the mirrors of an unlinked cluster');
    }

    /** Leadership lost or shutting down: every watch stops, every mirror stays. */
    async stopAll(): Promise<void> {
        const watches = [...this.watches.entries()];
        this.watches.clear();
        this.deps.metrics.remoteWatches.set(0);
        await Promise.all(watches.map(async ([name, watch]) => {
            await watch.stop();
            this.deps.forget(name);
        }));
    }
}
