// The reconciler runtime (controller-runtime's Controller): a controller is a Reconciler, one
// `reconcile(key)` that reads caches, plans and writes, plus the informers it watches and how an
// object maps to keys. The runtime owns the rest, once for every controller: the queue and its
// workers for each leadership term (LeaderQueue), rate-limited retries with backoff, what each
// kind of failure means, and one set of metrics per controller (the workqueue_* series under its
// name: depth, wait, reconcile duration, retries, drops; and reconcile_total by result).
//
// Failures, by their class (errors.ts classifies; this is the one place that acts on it):
// - conflict: requeued at once, without backoff, the first time in a row; a second conflict in
//   a row backs off like any failure, so a cache slow to catch up is not hammered.
// - invalid: a retry cannot help. A Warning Event on the object the reconciler names, a log
//   line, and no retry until an event or the next term brings the key back.
// - transient: retried with the rate limiter's backoff, given up on after maxRetries until the
//   next resync (LeaderQueue).
// It must not know what a key means: keys are opaque strings to it.
import { classifyFailure, invalidReason } from './errors.js';
import type { EventSink } from './events.js';
import type { Informer, InformerHandlers } from './informer.js';
import { LeaderQueue } from './leader-queue.js';
import type { Logger } from './log.js';
import type { RateLimiter } from './ratelimit.js';
import type { KubeObject } from './store.js';
import type { ReconcileOutcome, WorkQueueMetrics } from './workqueue-metrics.js';

/** A key to run again after a while although it succeeded (a time-based condition). */
export type ReconcileResult = void | { requeueAfterMs: number };

export interface Reconciler<K extends string> {
    /** Converges one key. Throws to say why it failed; the error's class decides what happens next. */
    reconcile(key: K): Promise<ReconcileResult>;
    /** The object a Warning Event about an invalid key is recorded on; none: the failure is logged only. */
    eventTarget?(key: K): KubeObject | undefined;
}

export interface ControllerOptions<K extends string> {
    /** The controller's name: the `name` label of its metrics and its queue. */
    name: string;
    reconciler: Reconciler<K>;
    workers: number;
    rateLimiter: RateLimiter;
    metrics: WorkQueueMetrics;
    events: EventSink;
    log: Logger;
    /** Keys given up on are queued again this often (0 = never). */
    resyncMs?: number;
    /** Retries of a failing key before it waits for the next resync; client-go's 15 by default. */
    maxRetries?: number;
}

export interface WatchOptions {
    /**
     * Changes within this window of the key's last run share its next run (WorkQueue.addCoalesced);
     * the first change to a quiet key runs at once. 0: every change is queued at once.
     */
    coalesceMs?: number;
}

export class Controller<K extends string> {
    private readonly queue: LeaderQueue<K>;
    /** Keys whose last run ended in a conflict: the next conflict in a row backs off. */
    private readonly conflicted = new Set<K>();

    constructor(private readonly opts: ControllerOptions<K>) {
        this.queue = new LeaderQueue<K>({
            name: opts.name,
            metrics: opts.metrics,
            rateLimiter: opts.rateLimiter,
            workers: opts.workers,
            sync: (key) => this.run(key),
            log: opts.log,
            resyncMs: opts.resyncMs,
            maxRetries: opts.maxRetries,
        });
    }

    /**
     * Queues the keys an object maps to on every add, update (the old object's keys and the
     * new one's: a change may move it from some keys to others) and delete. Not leading,
     * nothing is computed: the next term starts from every key anyway.
     */
    watch<T extends KubeObject>(informer: Informer<T>, keysOf: (obj: T) => Iterable<K>, options: WatchOptions = {}): void {
        const coalesceMs = options.coalesceMs ?? 0;
        const enqueue = (...objects: T[]) => {
            if (!this.queue.active) return;
            const keys = new Set<K>();
            for (const obj of objects) for (const key of keysOf(obj)) keys.add(key);
            for (const key of keys) {
                if (coalesceMs > 0) this.queue.addCoalesced(key, coalesceMs);
                else this.queue.add(key);
            }
        };
        const handlers: InformerHandlers<T> = { add: (obj) => enqueue(obj), update: (old, obj) => enqueue(old, obj), delete: (obj) => enqueue(obj) };
        informer.on(handlers);
    }

    add(key: K): void {
        this.queue.add(key);
    }

    /** A change that may come in a burst: runs at once, or at most once per window (WorkQueue.addCoalesced). */
    addCoalesced(key: K, windowMs: number): void {
        this.queue.addCoalesced(key, windowMs);
    }

    addAfter(key: K, delayMs: number): void {
        this.queue.addAfter(key, delayMs);
    }

    /** A leadership term begins: every key of `keys` is reconciled. */
    start(keys: Iterable<K>): void {
        this.conflicted.clear();
        this.queue.start(keys);
    }

    /** The term ends: no new work, and the keys in hand finish. */
    stop(): Promise<void> {
        return this.queue.stop();
    }

    private async run(key: K): Promise<void> {
        const outcome = await this.reconcileOnce(key);
        this.opts.metrics.reconciled(this.opts.name, outcome);
    }

    /** One run of the key; throws only to have it retried with backoff. */
    private async reconcileOnce(key: K): Promise<ReconcileOutcome> {
        let result: ReconcileResult;
        try {
            result = await this.opts.reconciler.reconcile(key);
        } catch (err) {
            return this.failed(key, err);
        }
        this.conflicted.delete(key);
        if (result && result.requeueAfterMs > 0) this.queue.addAfter(key, result.requeueAfterMs);
        return 'success';
    }

    private failed(key: K, err: unknown): ReconcileOutcome {
        const failure = classifyFailure(err);
        if (failure === 'conflict' && !this.conflicted.has(key)) {
            this.conflicted.add(key);
            this.opts.log.debug({ key, err }, 'conflict; running again');
            // Added while in hand: the queue runs it again as soon as this run is done.
            this.queue.add(key);
            return 'requeue';
        }
        this.conflicted.delete(key);
        if (failure === 'invalid') {
            this.opts.log.warn({ key, err }, 'invalid; not retried until the object changes');
            const target = this.opts.reconciler.eventTarget?.(key);
            if (target) this.opts.events.record(target, 'Warning', invalidReason(err), (err as Error).message);
            return 'invalid';
        }
        this.opts.metrics.reconciled(this.opts.name, 'error');
        throw err;
    }
}
