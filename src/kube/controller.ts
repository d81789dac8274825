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
//   next resync.
// Resync is the runtime's too, and only here: every resyncMs of a term, every key the watched
// sources map to is reconciled again (in memory: a converged key writes nothing), with the keys
// given up on. Informers do not re-deliver their contents.
// It must not know what a key means: keys are opaque strings to it.
import { classifyFailure, invalidReason } from './errors.js';
import type { EventSink } from './events.js';
import { Informer, type InformerHandlers } from './informer.js';
import { LeaderQueue } from './leader-queue.js';
import { Pacer } from './pacer.js';
import type { Logger } from './log.js';
import type { OwnWrites, Written } from './own-writes.js';
import type { RateLimiter } from './ratelimit.js';
import type { KubeObject } from './store.js';
import type { ReconcileOutcome, WorkQueueMetrics } from './workqueue-metrics.js';
import { every } from '../time/clock.js';

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
    /** Every key the watched sources map to, and every key given up on, is queued again this often during a term (0 = never). */
    resyncMs?: number;
    /** Retries of a failing key before it waits for the next resync; client-go's 15 by default. */
    maxRetries?: number;
}

/**
 * What a controller watches: an informer, or any other cache that tells its changes (a remote
 * cluster's, as controller-runtime's raw sources). `list` is what it holds now: replayed through
 * the watch's keysOf at the start of each term and at every resync.
 */
export interface Source<T> {
    /** Tells `handlers` every change; may return what stops that (Controller.close calls it). */
    on(handlers: InformerHandlers<T>): (() => void) | void;
    list(): Iterable<T>;
}

export interface WatchOptions<T> {
    /**
     * Changes within this window of the key's last run share its next run (WorkQueue.addCoalesced);
     * the first change to a quiet key runs at once. 0: every change is queued at once.
     */
    coalesceMs?: number;
    /** Whether an update matters to this controller (a named spec-changed predicate); default: every update. */
    changed?: (old: T, obj: T) => boolean;
    /**
     * The controller's own writes of this kind: their echoes queue nothing (own-writes.ts). An
     * event is judged only by a watch it has keys in, so several controllers may share one
     * OwnWrites over one cache, each watching its own part of it (the Links' mirrors).
     */
    ownWrites?: OwnWrites;
    /** Each change is queued after this delay (a burst of edits to undo is one run), not at once. */
    delayMs?: number;
    /**
     * false: the source's contents are not replayed at a term's start or a resync, because every
     * key they map to is replayed through another watch (a workload maps only to Services the
     * Services' watch replays): the pass over each object would find nothing new, and a pass over
     * tens of thousands held the event loop for tens of milliseconds at each term. Default true.
     */
    replay?: boolean;
}

/**
 * A source whose changes reach the controller another way (its own echoes filtered, say, or
 * pushed by what owns the cache) but whose contents each term and each resync replay.
 */
export function replayOnly<T>(list: () => Iterable<T>): Source<T> {
    return { on: () => undefined, list };
}

/** An informer as a source (its cache is what it holds); a source as it is. */
export function asSource<T>(source: Informer<T & KubeObject> | Source<T>): Source<T> {
    if (!(source instanceof Informer)) return source;
    return { on: (handlers) => source.on(handlers as InformerHandlers<T & KubeObject>), list: () => source.store.list() };
}

export class Controller<K extends string> {
    private readonly queue: LeaderQueue<K>;
    /** Keys whose last run ended in a conflict: the next conflict in a row backs off. */
    private readonly conflicted = new Set<K>();
    /** Every key the watched sources map their contents to now, one function per watch. */
    private readonly replays: (() => Iterable<K>)[] = [];
    /** What ends each subscription to a source (close). */
    private readonly unsubscribes: (() => void)[] = [];
    private stopResync: (() => void) | undefined;

    constructor(private readonly opts: ControllerOptions<K>) {
        this.queue = new LeaderQueue<K>({
            name: opts.name,
            metrics: opts.metrics,
            rateLimiter: opts.rateLimiter,
            workers: opts.workers,
            sync: (key) => this.run(key),
            log: opts.log,
            maxRetries: opts.maxRetries,
        });
    }

    /**
     * Queues the keys an object maps to on every add, update (the old object's keys and the
     * new one's: a change may move it from some keys to others) and delete. Not leading,
     * nothing is computed: the next term starts from every key the sources map to.
     */
    watch<T extends KubeObject>(from: Informer<T>, keysOf: (obj: T) => Iterable<K>, options?: WatchOptions<T>): void;
    watch<T>(from: Source<T>, keysOf: (obj: T) => Iterable<K>, options?: WatchOptions<T>): void;
    watch<T>(from: Informer<T & KubeObject> | Source<T>, keysOf: (obj: T) => Iterable<K>, options: WatchOptions<T> = {}): void {
        const source = asSource<T>(from);
        const { coalesceMs = 0, delayMs = 0, ownWrites: own, changed } = options;
        const keysFor = (...objects: T[]) => {
            const keys = new Set<K>();
            for (const obj of objects) for (const key of keysOf(obj)) keys.add(key);
            return keys;
        };
        const enqueue = (keys: Set<K>) => {
            if (!this.queue.active) return;
            for (const key of keys) {
                if (delayMs > 0) this.queue.addAfter(key, delayMs);
                else if (coalesceMs > 0) this.queue.addCoalesced(key, coalesceMs);
                else this.queue.add(key);
            }
        };
        // The keys first: an event with none here is another watch's to judge (ownWrites).
        const whenForeign = (obj: T, keys: Set<K>, then: () => void) => {
            if (keys.size === 0) return;
            if (own) own.seen(obj as Written, then);
            else then();
        };
        const unsubscribe = source.on({
            add: (obj) => {
                if (!this.queue.active) return;
                const keys = keysFor(obj);
                whenForeign(obj, keys, () => enqueue(keys));
            },
            update: (old, obj) => {
                if (!this.queue.active) return;
                const keys = keysFor(old, obj);
                whenForeign(obj, keys, () => (!changed || changed(old, obj)) && enqueue(keys));
            },
            delete: (obj) => {
                own?.forget(obj as Written);
                if (this.queue.active) enqueue(keysFor(obj));
            },
        });
        if (unsubscribe) this.unsubscribes.push(unsubscribe);
        if (options.replay === false) return;
        this.replays.push(function* () {
            for (const obj of source.list()) yield* keysOf(obj);
        });
    }

    /**
     * Any change of `source` queues every key the watched sources map to now, or those `which`
     * keeps for that change: for what is no key's object but changes many (a remote cluster
     * became readable, a namespace appeared, the cluster got its name).
     */
    resyncOn<T extends KubeObject>(from: Informer<T>, which?: (obj: T, key: K) => boolean): void;
    resyncOn<T>(from: Source<T>, which?: (obj: T, key: K) => boolean): void;
    resyncOn<T>(from: Informer<T & KubeObject> | Source<T>, which?: (obj: T, key: K) => boolean): void {
        const resync = (obj: T) => this.resync(which && ((key) => which(obj, key)));
        const unsubscribe = asSource<T>(from).on({ add: resync, update: (_, obj) => resync(obj), delete: resync });
        if (unsubscribe) this.unsubscribes.push(unsubscribe);
    }

    /**
     * Queues every key the sources map to now, or those `which` keeps: for what changes many
     * keys at once and is no object of a source (a remote cluster became readable, a namespace
     * appeared). Not leading, nothing.
     */
    resync(which?: (key: K) => boolean): void {
        this.replay(which).catch((err: unknown) => this.opts.log.error({ err }, 'replaying the watched sources failed'));
    }

    /**
     * Queues every key the watched sources map to now, each once, as the workers start on the
     * first: a pass over every cached object (the prober's 21 000 workloads at SCALE=large) gives
     * timers and I/O a turn every slice (kube/pacer.ts), and ends with its term.
     */
    private async replay(which?: (key: K) => boolean): Promise<void> {
        const term = this.queue.active;
        if (!term) return;
        const pacer = new Pacer();
        const queued = new Set<K>();
        for (const replay of this.replays) {
            for (const key of replay()) {
                if (pacer.due()) {
                    await pacer.pause();
                    if (this.queue.active !== term) return;
                }
                if (queued.has(key) || (which && !which(key))) continue;
                queued.add(key);
                term.add(key);
            }
        }
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

    /** A leadership term begins: every key of `keys` and every key the watched sources map to is reconciled. */
    start(keys: Iterable<K> = []): void {
        this.conflicted.clear();
        this.queue.start(keys);
        this.resync();
        const { resyncMs } = this.opts;
        if (resyncMs)
            this.stopResync = every(() => {
                this.resync();
                this.queue.requeueDropped();
            }, resyncMs);
    }

    /** The term ends: no new work, and the keys in hand finish. */
    stop(): Promise<void> {
        this.stopResync?.();
        this.stopResync = undefined;
        return this.queue.stop();
    }

    /** The controller is done for good (it lives shorter than its sources): its term ends and nothing it watched tells it more. */
    close(): Promise<void> {
        for (const unsubscribe of this.unsubscribes.splice(0)) unsubscribe();
        return this.stop();
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
        // Conflicts in a row stay one streak until a run succeeds: each backs off longer than the
        // last (a cache left behind by a stalled watch made 100 refused writes a second when every
        // other conflict was run again at once and so reset the backoff).
        if (failure !== 'conflict') this.conflicted.delete(key);
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
