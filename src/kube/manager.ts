// The runtime that every controller of a process shares (controller-runtime's manager):
// informers, the admin endpoint, leader election and graceful shutdown. A controller
// plugs in through `Runnable`; it never starts informers or handles signals itself.
// Shutdown is bounded: items in hand get a drain budget, then every request in flight is
// aborted, the lease release has its own bound, and a last timer exits regardless.
import { Gauge, Registry, collectDefaultMetrics } from 'prom-client';
import { AdminServer } from './admin.js';
import type { Informer } from './informer.js';
import { LeaderElector, type LeaderElectionOptions } from './leaderelection.js';
import { logFn, type Logger } from './log.js';
import type { KubeRest } from './rest.js';
import type { EventSink } from './events.js';
import type { WorkQueueMetrics } from './workqueue-metrics.js';
import type { KubeObject } from './store.js';
import { backgroundClock, sleep, systemClock } from '../time/clock.js';

export const METRICS_PREFIX = 'mesh_endpoints_';

export interface Runnable {
    name: string;
    /** Caches that must be synced before /readyz is ok and before this controller leads. */
    informers: Informer<KubeObject>[];
    /**
     * Caches started and stopped with the others that neither /readyz nor leading waits for: those
     * of an optional API (a CRD that may be installed later), which the controller checks itself.
     */
    optionalInformers?: Informer<KubeObject>[];
    /** This replica became the writer: reconcile everything from scratch. */
    startLeading(): void;
    /** Leadership lost or shutting down: stop taking work, finish the item in hand. */
    stopLeading(): Promise<void>;
}

/** Runs on every replica, leader or not (a webhook the apiserver may call on any of them). */
export interface ReplicaService {
    name: string;
    /** Resolves once it serves. */
    start(): Promise<void>;
    stop(): Promise<void>;
    /** Part of /readyz. */
    ready(): boolean;
}

/** What the manager hands every controller it runs. */
export interface ControllerDeps {
    /** Manager.client: writes only while this replica leads. */
    rest: KubeRest;
    logger: Logger;
    registry: Registry;
    queueMetrics: WorkQueueMetrics;
    events: EventSink;
    /** Whether this replica leads now (what the client's writes are checked against). */
    isLeader: () => boolean;
    /** Each controller reconciles every key of its sources again, and the keys it gave up on, this often (0 = never): the one resync. */
    resyncMs?: number;
}

export interface ManagerOptions {
    rest: KubeRest;
    logger: Logger;
    registry?: Registry;
    adminAddr?: string;
    /** Without it this process always writes (a single replica, or tests). */
    leaderElection?: Omit<LeaderElectionOptions, 'onStartedLeading' | 'onStoppedLeading' | 'log'> & {
        /** The client for lease calls: its own, so writes queued behind the rate limit never delay a renew. */
        rest?: KubeRest;
    };
    /** How long the items in hand may take to finish at shutdown before their requests are aborted. */
    drainTimeoutMs?: number;
    /** After a signal, the process exits within this, whatever hangs (below Kubernetes' 30 s grace). */
    shutdownTimeoutMs?: number;
}

export const DEFAULT_DRAIN_TIMEOUT_MS = 5_000;
/** A second short of the 10 s we promise, so the exit itself fits too. */
export const DEFAULT_SHUTDOWN_TIMEOUT_MS = 9_000;

export class Manager {
    readonly registry: Registry;
    readonly admin: AdminServer | undefined;
    readonly elector: LeaderElector | undefined;
    private readonly runnables: Runnable[] = [];
    private readonly services: ReplicaService[] = [];
    private readonly leaderGauge: Gauge;
    private stopping: Promise<void> | undefined;
    /** Every informer has delivered its first list. */
    private synced = false;
    /** The Lease is ours (the elector said so); the controllers work only once `synced` too. */
    private holdsLease = false;
    /** The controllers were started in this term (and so are stopped at its end). */
    private working = false;
    /** The last term's controllers stopping (their items in hand finishing): the next term waits for it. */
    private lastTermEnded: Promise<unknown> = Promise.resolve();

    constructor(private readonly opts: ManagerOptions) {
        this.registry = opts.registry ?? new Registry();
        this.client = opts.rest.guarded(this.isLeader);
        if (!opts.registry) collectDefaultMetrics({ register: this.registry, prefix: METRICS_PREFIX });
        this.leaderGauge = new Gauge({
            name: `${METRICS_PREFIX}leader`,
            help: '1 while this replica holds the leader Lease and may write',
            registers: [this.registry],
        });
        if (opts.adminAddr) {
            this.admin = new AdminServer({ addr: opts.adminAddr, registry: this.registry, notReady: () => this.notReady() });
        }
        if (opts.leaderElection) {
            this.elector = new LeaderElector(opts.leaderElection.rest ?? opts.rest, {
                ...opts.leaderElection,
                log: logFn(opts.logger.child({ component: 'leader-election' })),
                onStartedLeading: () => this.onStartedLeading(),
                onStoppedLeading: () => this.onStoppedLeading(),
                // Every replica asks for the lease every couple of seconds: the one steady request
                // that shows, within a request timeout, that the path to the apiserver lost what it
                // carried, watches included (Informer.requestsUnansweredSince). Lease calls have a
                // client of their own, but it reaches the same apiserver as the informers.
                onUnanswered: (since) => {
                    for (const informer of [...this.informers(), ...this.optionalInformers()]) informer.requestsUnansweredSince(since);
                },
            });
        }
    }

    add(runnable: Runnable): void {
        this.runnables.push(runnable);
    }

    addService(service: ReplicaService): void {
        this.services.push(service);
    }

    /** Whether this replica's controllers work now: only while leading, and never before the caches synced. */
    readonly isLeader = (): boolean => (this.elector ? this.working && this.elector.isLeader() : !this.stopping);

    /**
     * The client every controller of this process is handed (ControllerDeps.rest): its writes
     * are sent only while isLeader says so, checked once a write may go out (after the rate
     * limiter's wait), so no writer guards itself. Reads, watches and the Lease's own client are not guarded.
     */
    readonly client: KubeRest;

    ready(): boolean {
        return this.notReady() === undefined;
    }

    /** Every informer of the runnables, once each (controllers may share one). */
    private informers(): Set<Informer<KubeObject>> {
        return new Set(this.runnables.flatMap((r) => r.informers));
    }

    private optionalInformers(): Set<Informer<KubeObject>> {
        return new Set(this.runnables.flatMap((r) => r.optionalInformers ?? []));
    }

    /** Why /readyz fails: the caches not yet synced, and what keeps them (a missing CRD); a service not serving. */
    notReady(): string | undefined {
        const services = this.services.filter((s) => !s.ready()).map((s) => `${s.name} not serving`);
        const waiting = [...this.informers()].filter((i) => !i.hasSynced());
        if (waiting.length === 0) return services.length > 0 ? services.join('; ') : undefined;
        const problems = [...new Set(waiting.flatMap((i) => i.problem() ?? []))];
        return [problems.length > 0 ? `caches not synced: ${problems.join('; ')}` : 'caches not synced', ...services].join('; ');
    }

    async start(): Promise<void> {
        if (this.admin) {
            const address = await this.admin.start();
            this.opts.logger.info({ address }, 'admin endpoint listening');
        }
        await Promise.all(this.services.map((s) => s.start()));
        const informers = this.informers();
        for (const informer of [...informers, ...this.optionalInformers()]) informer.start();
        // The Lease is sought while the caches fill (kube-controller-manager holds its Lease before it
        // even starts its informers; controller-runtime waits for its caches first): its
        // round trips then overlap the lists instead of following them. Work starts once both are done.
        this.elector?.start();
        await Promise.all([...informers].map((i) => i.synced));
        this.opts.logger.info('caches synced');
        this.synced = true;
        if (this.elector) this.startWorking();
        else {
            this.holdsLease = true;
            this.startWorking();
        }
    }

    /**
     * The Lease is won: work starts from lists made since (relistBeforeLeading), unless the first
     * ones are still under way, and never before the last term's controllers have stopped. A
     * Lease regained half a second after a cut found the last term's items still in hand (a
     * request stuck in the cut); its controllers and the new term's ran side by side, the old
     * Link controller's late stop withdrew what the new one had published, and the soak saw a
     * derived Service deleted and made again (its import's ClusterSetIP changed).
     */
    private onStartedLeading(): void {
        this.holdsLease = true;
        void this.lastTermEnded.then(() => {
            if (!this.holdsLease || this.working) return;
            if (this.synced) this.relistBeforeLeading();
            else this.startWorking();
        });
    }

    private startWorking(): void {
        if (!this.synced || !this.holdsLease || this.working || this.stopping) return;
        this.working = true;
        this.leaderGauge.set(1);
        this.opts.logger.info('caches synced and leading: controllers started');
        for (const r of this.runnables) r.startLeading();
    }

    private onStoppedLeading(): void {
        this.leaderGauge.set(0);
        this.holdsLease = false;
        if (!this.working) return;
        this.working = false;
        this.lastTermEnded = Promise.all(
            this.runnables.map((r) => r.stopLeading().catch((err: Error) => this.opts.logger.error({ err, controller: r.name }, 'stopping failed'))),
        );
    }

    /**
     * A watch may miss changes without ending (a path that broke and came back, a stalled
     * connection), and a term planned from such a cache undoes what others wrote meanwhile: the
     * soak saw a replica that retook its Lease after a cut delete a derived Service (its
     * ClusterSetIP changed), and a standby that took over delete an import whose exported Service
     * its cache had missed. So, as kube-controller-manager starts its informers once it holds its
     * Lease, each term starts from lists made after the Lease was won (an optional API's too while
     * it is served; one whose CRD is missing has nothing to list). It costs a takeover one list of
     * each cache.
     */
    private relistBeforeLeading(): void {
        this.synced = false;
        const served = [...this.optionalInformers()].filter((i) => i.hasSynced() && i.problem() === undefined);
        void Promise.all([...this.informers(), ...served].map((i) => i.relist())).then(() => {
            this.opts.logger.info('caches listed anew for the new term');
            this.synced = true;
            this.startWorking();
        });
    }

    /**
     * Graceful stop: finish the items in hand (within the drain budget, then their requests
     * are aborted), release the lease (time-bounded), close the caches.
     */
    stop(): Promise<void> {
        this.stopping ??= (async () => {
            this.leaderGauge.set(0);
            const drained = Promise.all(this.runnables.map((r) => r.stopLeading()));
            const inTime = await Promise.race([drained.then(() => true), sleep(this.opts.drainTimeoutMs ?? DEFAULT_DRAIN_TIMEOUT_MS, backgroundClock).then(() => false)]);
            if (!inTime) {
                this.opts.logger.warn('items in hand did not finish in time; aborting their requests');
                this.opts.rest.close();
                await drained;
            }
            await this.elector?.stop();
            await Promise.all([...this.informers(), ...this.optionalInformers()].map((i) => i.stop()));
            await Promise.all(this.services.map((s) => s.stop()));
            await this.admin?.stop();
            this.opts.rest.close();
            this.opts.leaderElection?.rest?.close();
        })();
        return this.stopping;
    }

    /**
     * SIGTERM/SIGINT stop the manager and exit 0; a second signal, or a stop that outlasts
     * shutdownTimeoutMs, exits 1 at once.
     */
    handleSignals(exit: (code: number) => void = process.exit): void {
        process.on('SIGTERM', () => this.onSignal('SIGTERM', exit));
        process.on('SIGINT', () => this.onSignal('SIGINT', exit));
    }

    /** What a signal does: a bounded stop, then `exit` with 0 (done) or 1 (failed, too slow, or a second signal). */
    onSignal(signal: string, exit: (code: number) => void): void {
        if (this.stopping) return exit(1);
        this.opts.logger.info({ signal }, 'shutting down');
        const limit = this.opts.shutdownTimeoutMs ?? DEFAULT_SHUTDOWN_TIMEOUT_MS;
        const cancelLastResort = systemClock.schedule(() => {
            this.opts.logger.error({ timeoutMs: limit }, 'shutdown did not finish in time; exiting');
            exit(1);
        }, limit);
        this.stop().then(
            () => {
                cancelLastResort();
                exit(0);
            },
            (err: Error) => {
                cancelLastResort();
                this.opts.logger.error({ err }, 'shutdown failed');
                exit(1);
            },
        );
    }
}
