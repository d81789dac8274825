// The work of a controller exists only while its replica leads: a fresh queue and workers
// on every term (nothing queued by an earlier term survives it), drained when the term
// ends. Events that arrive while not leading are dropped; the next term starts from all keys.
// Nothing is forgotten within a term either: a write refused by the leader guard fails the
// sync and is retried like any failure (the term ends soon if the guard stays shut), and a
// key given up on after its retries comes back at its controller's next resync (requeueDropped).
import type { Logger } from './log.js';
import type { RateLimiter } from './ratelimit.js';
import { retryLogLevel } from './errors.js';
import { runWorkers, WorkQueue, type WorkerFailure } from './workqueue.js';
import type { WorkQueueMetrics } from './workqueue-metrics.js';

export interface LeaderQueueOptions<K extends string> {
    name: string;
    metrics: WorkQueueMetrics;
    rateLimiter: RateLimiter;
    workers: number;
    sync: (key: K) => Promise<void>;
    log: Logger;
    /** Retries of a failing key before it waits for the next resync; client-go's 15 by default. */
    maxRetries?: number;
}

export class LeaderQueue<K extends string> {
    private queue: WorkQueue<K> | undefined;
    private workers: Promise<void> | undefined;
    /** The previous term's drain: a new term's workers wait for it, so no key runs twice at once. */
    private draining: Promise<void> = Promise.resolve();
    /** Keys that exhausted their retries this term, queued again at the next resync. */
    private readonly dropped = new Set<K>();

    constructor(private readonly opts: LeaderQueueOptions<K>) {}

    /** The queue of the current term, if leading. */
    get active(): WorkQueue<K> | undefined {
        return this.queue;
    }

    add(key: K): void {
        this.queue?.add(key);
    }

    addAfter(key: K, delayMs: number): void {
        this.queue?.addAfter(key, delayMs);
    }

    addCoalesced(key: K, windowMs: number): void {
        this.queue?.addCoalesced(key, windowMs);
    }

    /** Keys given up on and waiting for the next resync. */
    droppedKeys(): K[] {
        return [...this.dropped];
    }

    start(keys: Iterable<K>): void {
        const { name, metrics, rateLimiter, workers, sync } = this.opts;
        const queue = new WorkQueue<K>({ name, metrics, rateLimiter });
        this.queue = queue;
        this.dropped.clear(); // the new term syncs every key anyway
        for (const key of keys) queue.add(key);
        const previous = this.draining;
        this.workers = previous.then(() =>
            runWorkers(queue, workers, sync, (failure) => this.failed(failure), { maxRetries: this.opts.maxRetries }),
        );
    }

    private failed(failure: WorkerFailure<K>): void {
        if (failure.dropped) this.dropped.add(failure.key);
        const { error } = failure;
        const level = failure.dropped ? 'error' : retryLogLevel(error);
        const fields = { key: failure.key, err: error, failures: failure.failures, dropped: failure.dropped };
        this.opts.log[level](fields, failure.dropped ? 'sync failed; giving up until the next resync' : 'sync failed; retrying');
    }

    /** The keys given up on this term are tried again (the controller's resync). */
    requeueDropped(): void {
        if (!this.queue || this.dropped.size === 0) return;
        this.opts.log.info({ keys: this.dropped.size }, 'resync: retrying keys given up on');
        for (const key of this.dropped) this.queue.add(key);
        this.dropped.clear();
    }

    /** Stops taking work and waits for the items in hand. */
    stop(): Promise<void> {
        const [queue, workers] = [this.queue, this.workers];
        this.queue = undefined;
        this.workers = undefined;
        if (!queue) return this.draining;
        this.draining = (async () => {
            await queue.shutDownWithDrain();
            await workers;
        })();
        return this.draining;
    }
}
