// The Link-wide work, as reconcilers on the runtime keyed by the Link's name, each on one queue
// that every Link shares (a Link's mirrors have a queue of their own, link-mirrors.ts):
// - the status: written from what is observed of the Link when it runs (its remote's health,
//   its credentials, its gateway names, the mirror limit, and the outcome of each mirror's last
//   sync), so a run that finds nothing new writes nothing;
// - the unserved: once a Link has not been served for the stale window, every endpoint of its
//   mirrors is made not ready, like the addresses of a failing gateway name, never left ready
//   forever.
// A Link's controller queues its name; a name whose controller is gone (the Link deleted, the
// term over) has nothing to do.
import { Controller, type ReconcileResult, type Reconciler } from '../kube/controller.js';
import type { Logger } from '../kube/log.js';
import { controllerRateLimiter } from '../kube/ratelimit.js';
import type { KubeObject, ObjectStore } from '../kube/store.js';
import { systemClock, type Clock } from '../time/clock.js';
import { formatDuration } from '../time/duration.js';
import { namesLink } from './api/keys.js';
import type { CompactService } from './cache/compact.js';
import type { LinkEvent } from './link/gateway-events.js';
import type { LinkStatusBook, LinkStatusSource } from './link/link-status.js';
import { DEFAULT_LINK_WORKERS, type LinkConfig, type LinkName } from './link-options.js';
import type { MirrorSync } from './write/mirror-sync.js';

/** What the status reconciler reads of a Link's controller. */
export interface ObservedLink {
    /** The outcome of each mirror's last sync, and the writer of the status. */
    readonly status: LinkStatusBook;
    /** Everything else the status shows, as it is now. */
    readonly observed: LinkStatusSource;
    stored(): KubeObject | undefined;
}

export class LinkStatusReconciler implements Reconciler<LinkName> {
    constructor(private readonly linkOf: (name: LinkName) => ObservedLink | undefined) {}

    /** Throws to be retried; a NotLeaderError too, in case the late renew succeeds (a lost term stops this controller). */
    async reconcile(name: LinkName): Promise<void> {
        const link = this.linkOf(name);
        if (link) await link.status.write(link.observed);
    }

    eventTarget(name: LinkName): KubeObject | undefined {
        return this.linkOf(name)?.stored();
    }
}

/** What the unserved reconciler reads of a Link's controller. */
export interface UnservedLink {
    /** Since when the Link cannot be served (invalid, duplicate, its remote watch cannot start); undefined while served. */
    readonly unservedSince: number | undefined;
    event(event: LinkEvent): void;
    stored(): KubeObject | undefined;
}

export interface UnservedDeps {
    linkOf: (name: LinkName) => UnservedLink | undefined;
    /** The Links' namespace. */
    namespace: string;
    /** The local mirror Services: those that name the Link are its mirrors. */
    localMirrors: ObjectStore<CompactService>;
    mirrors: Pick<MirrorSync, 'withdrawReadiness'>;
    staleWindowMs: number;
    clock?: Clock;
}

export class UnservedReconciler implements Reconciler<LinkName> {
    constructor(private readonly deps: UnservedDeps) {}

    async reconcile(name: LinkName): Promise<ReconcileResult> {
        const link = this.deps.linkOf(name);
        if (link?.unservedSince === undefined) return;
        // Queued for an earlier spell of being unserved (served in between): the window runs on.
        const dueMs = link.unservedSince + this.deps.staleWindowMs + 1 - (this.deps.clock ?? systemClock).now();
        if (dueMs > 0) return { requeueAfterMs: dueMs };
        const mirrors = this.deps.localMirrors.list().filter((svc) => namesLink(svc, this.deps.namespace, name));
        if ((await this.deps.mirrors.withdrawReadiness(mirrors)) === 0) return;
        const window = formatDuration(this.deps.staleWindowMs);
        link.event({ type: 'Warning', reason: 'MirrorsNotReady', message: `the Link has not been served for longer than ${window}: every endpoint of its mirrors is not ready until it is` });
    }

    eventTarget(name: LinkName): KubeObject | undefined {
        return this.deps.linkOf(name)?.stored();
    }
}

export interface LinkWorkDeps extends Omit<UnservedDeps, 'linkOf'> {
    config: LinkConfig;
    log: Logger;
    /** The controller of a Link while this replica leads. */
    linkOf: (name: LinkName) => (ObservedLink & UnservedLink) | undefined;
}

/** The two queues of Link-wide work, for a leadership term. */
export class LinkWork {
    readonly status: Controller<LinkName>;
    readonly unserved: Controller<LinkName>;

    constructor({ config, log, ...deps }: LinkWorkDeps) {
        // Each its own rate limiter: a Link's status failing does not back its withdrawal off.
        const common = () => ({
            rateLimiter: controllerRateLimiter({ baseMs: 250, maxMs: 300_000 }),
            metrics: config.queueMetrics,
            events: config.events,
            log,
            resyncMs: config.resyncMs,
        });
        const status = new LinkStatusReconciler(deps.linkOf);
        this.status = new Controller<LinkName>({ name: 'service-mirror/link-status', reconciler: status, workers: config.workers ?? DEFAULT_LINK_WORKERS, ...common() });
        this.unserved = new Controller<LinkName>({ name: 'service-mirror/link-unserved', reconciler: new UnservedReconciler(deps), workers: 1, ...common() });
    }

    /** A term begins: nothing is queued until a Link's controller asks. */
    start(): void {
        this.status.start();
        this.unserved.start();
    }

    async stop(): Promise<void> {
        await Promise.all([this.status.stop(), this.unserved.stop()]);
    }
}
