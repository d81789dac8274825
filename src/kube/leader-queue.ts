// The work of a controller exists only while its replica leads: a fresh queue and workers
// on every term (nothing queued by an earlier term survives it), drained when the term
// ends. Events that arrive while not leading are dropped; the next term starts from all keys.
import type { Logger } from './log.js';
import type { RateLimiter } from './ratelimit.js';
import { StaleCacheError } from './slice-writer.js';
import { runWorkers, WorkQueue } from './workqueue.js';
import type { WorkQueueMetrics } from './workqueue-metrics.js';

export interface LeaderQueueOptions<K extends string> {
    name: string;
    metrics: WorkQueueMetrics;
    rateLimiter: RateLimiter;
    workers: number;
    sync: (key: K) => Promise<void>;
    log: Logger;
}

export class LeaderQueue<K extends string> {
    private queue: WorkQueue<K> | undefined;
    private workers: Promise<void> | undefined;
    /** The previous term's drain: a new term's workers wait for it, so no key runs twice at once. */
    private draining: Promise<void> = Promise.resolve();

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

    start(keys: Iterable<K>): void {
        const { name, metrics, rateLimiter, workers, sync, log } = this.opts;
        const queue = new WorkQueue<K>({ name, metrics, rateLimiter });
        this.queue = queue;
        for (const key of keys) queue.add(key);
        const previous = this.draining;
        this.workers = previous.then(() =>
            runWorkers(queue, workers, sync, (failure) => {
                // A stale cache is expected right after our own writes; it retries quietly.
                const level = failure.dropped ? 'error' : failure.error instanceof StaleCacheError ? 'debug' : 'warn';
                log[level]({ key: failure.key, err: failure.error, failures: failure.failures, dropped: failure.dropped }, 'sync failed');
            }),
        );
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
