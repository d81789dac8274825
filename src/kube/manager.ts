// The runtime that every controller of a process shares (controller-runtime's manager):
// informers, the admin endpoint, leader election and graceful shutdown. A controller
// plugs in through `Runnable`; it never starts informers or handles signals itself.
import { Gauge, Registry, collectDefaultMetrics } from 'prom-client';
import { AdminServer } from './admin.js';
import type { Informer } from './informer.js';
import { LeaderElector, type LeaderElectionOptions } from './leaderelection.js';
import { logFn, type Logger } from './log.js';
import type { KubeRest } from './rest.js';
import type { EventSink } from './events.js';
import type { WorkQueueMetrics } from './workqueue-metrics.js';
import type { KubeObject } from './store.js';

export const METRICS_PREFIX = 'mesh_endpoints_';

export interface Runnable {
    name: string;
    /** Caches that must be synced before /readyz is ok and before this controller leads. */
    informers: Informer<KubeObject>[];
    /** This replica became the writer: reconcile everything from scratch. */
    startLeading(): void;
    /** Leadership lost or shutting down: stop taking work, finish the item in hand. */
    stopLeading(): Promise<void>;
}

/** What the manager hands every controller it runs. */
export interface ControllerDeps {
    rest: KubeRest;
    logger: Logger;
    registry: Registry;
    queueMetrics: WorkQueueMetrics;
    events: EventSink;
    /** The guard writers ask right before every write. */
    isLeader: () => boolean;
}

export interface ManagerOptions {
    rest: KubeRest;
    logger: Logger;
    registry?: Registry;
    adminAddr?: string;
    /** Without it this process always writes (a single replica, or tests). */
    leaderElection?: Omit<LeaderElectionOptions, 'onStartedLeading' | 'onStoppedLeading' | 'log'>;
}

export class Manager {
    readonly registry: Registry;
    readonly admin: AdminServer | undefined;
    readonly elector: LeaderElector | undefined;
    private readonly runnables: Runnable[] = [];
    private readonly leaderGauge: Gauge;
    private stopping: Promise<void> | undefined;

    constructor(private readonly opts: ManagerOptions) {
        this.registry = opts.registry ?? new Registry();
        if (!opts.registry) collectDefaultMetrics({ register: this.registry, prefix: METRICS_PREFIX });
        this.leaderGauge = new Gauge({
            name: `${METRICS_PREFIX}leader`,
            help: '1 while this replica holds the leader Lease and may write',
            registers: [this.registry],
        });
        if (opts.adminAddr) {
            this.admin = new AdminServer({ addr: opts.adminAddr, registry: this.registry, ready: () => this.ready() });
        }
        if (opts.leaderElection) {
            this.elector = new LeaderElector(opts.rest, {
                ...opts.leaderElection,
                log: logFn(opts.logger.child({ component: 'leader-election' })),
                onStartedLeading: () => this.onStartedLeading(),
                onStoppedLeading: () => this.onStoppedLeading(),
            });
        }
    }

    add(runnable: Runnable): void {
        this.runnables.push(runnable);
    }

    /** The guard writers ask right before every write. */
    readonly isLeader = (): boolean => (this.elector ? this.elector.isLeader() : !this.stopping);

    ready(): boolean {
        return this.runnables.every((r) => r.informers.every((i) => i.hasSynced()));
    }

    async start(): Promise<void> {
        if (this.admin) {
            const address = await this.admin.start();
            this.opts.logger.info({ address }, 'admin endpoint listening');
        }
        const informers = new Set(this.runnables.flatMap((r) => r.informers));
        for (const informer of informers) informer.start();
        await Promise.all([...informers].map((i) => i.synced));
        this.opts.logger.info('caches synced');
        if (this.elector) this.elector.start();
        else this.onStartedLeading();
    }

    private onStartedLeading(): void {
        this.leaderGauge.set(1);
        for (const r of this.runnables) r.startLeading();
    }

    private onStoppedLeading(): void {
        this.leaderGauge.set(0);
        for (const r of this.runnables) {
            r.stopLeading().catch((err: Error) => this.opts.logger.error({ err, controller: r.name }, 'stopping failed'));
        }
    }

    /** Graceful stop: finish the items in hand, release the lease, close the caches. */
    stop(): Promise<void> {
        this.stopping ??= (async () => {
            this.leaderGauge.set(0);
            await Promise.all(this.runnables.map((r) => r.stopLeading()));
            await this.elector?.stop();
            const informers = new Set(this.runnables.flatMap((r) => r.informers));
            await Promise.all([...informers].map((i) => i.stop()));
            await this.admin?.stop();
            this.opts.rest.close();
        })();
        return this.stopping;
    }

    /** SIGTERM/SIGINT stop the manager and exit 0; a second signal exits at once. */
    handleSignals(exit: (code: number) => void = process.exit): void {
        const onSignal = (signal: string) => {
            if (this.stopping) return exit(1);
            this.opts.logger.info({ signal }, 'shutting down');
            this.stop().then(
                () => exit(0),
                (err: Error) => {
                    this.opts.logger.error({ err }, 'shutdown failed');
                    exit(1);
                },
            );
        };
        process.on('SIGTERM', () => onSignal('SIGTERM'));
        process.on('SIGINT', () => onSignal('SIGINT'));
    }
}
