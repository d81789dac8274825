// The controllers' workqueue, with client-go's semantics: it holds keys, not objects, so
// N events for one Service collapse into one sync; a key is never in two workers' hands
// at once; failed keys come back after a rate-limited delay (runWorkers holds the retry
// policy). It must not know what a key means, talk to the API, or log.
import { systemClock, type Clock } from '../time/clock.js';
import { controllerRateLimiter, type RateLimiter } from './ratelimit.js';
import type { QueueMetrics, WorkQueueMetrics } from './workqueue-metrics.js';
import { Pacer } from './pacer.js';


export interface WorkQueueOptions {
    /** The queue's `name` label in the metrics. */
    name?: string;
    /** Paces addRateLimited; default client-go's: max(per-key 5 ms…1000 s, 10 qps burst 100). */
    rateLimiter?: RateLimiter;
    clock?: Clock;
    metrics?: WorkQueueMetrics;
}

export class WorkQueue<K extends string = string> {
    private readonly clock: Clock;
    private readonly rateLimiter: RateLimiter;
    private readonly metrics: QueueMetrics | undefined;
    /** Keys ready to be handed out, oldest first from `head` (no O(n) shift per get). */
    private queued: K[] = [];
    private head = 0;
    /** Keys that need a (re)run, with the time of the add that asked for it. */
    private readonly dirty = new Map<K, number>();
    /** Keys in a worker's hands, with the time they were handed out. */
    private readonly processing = new Map<K, number>();
    /** When each key was last handed out, for addCoalesced; entries older than its window are pruned. */
    private readonly handedOutAt = new Map<K, number>();
    private pruneHandedOutAt = 1024;
    private coalesceWindowMs = 0;
    private readonly getters: ((key: K | undefined) => void)[] = [];
    private readonly delayed: DelayedAdds<K>;
    private shuttingDown = false;
    private drainWaiters: (() => void)[] | undefined;

    constructor(options: WorkQueueOptions = {}) {
        this.clock = options.clock ?? systemClock;
        this.rateLimiter = options.rateLimiter ?? controllerRateLimiter();
        this.delayed = new DelayedAdds(this.clock, (key) => this.add(key));
        this.metrics = options.metrics?.attach(options.name ?? 'workqueue', {
            depth: () => this.len(),
            inFlightSeconds: () => {
                const now = this.clock.now();
                return [...this.processing.values()].map((since) => (now - since) / 1000);
            },
        });
    }

    /** Queues the key unless it is already waiting; a key in a worker's hands runs again after done. */
    add(key: K): void {
        if (this.shuttingDown || this.dirty.has(key)) return;
        this.dirty.set(key, this.clock.now());
        this.metrics?.added();
        if (!this.processing.has(key)) this.enqueue(key);
    }

    /**
     * Adds the key once `delayMs` has passed. A key already waiting keeps its earliest ready
     * time, so a burst of events inside a batch window yields one sync, not a postponed one.
     */
    addAfter(key: K, delayMs: number): void {
        if (this.shuttingDown) return;
        if (!(delayMs > 0)) return this.add(key);
        this.delayed.schedule(key, this.clock.now() + delayMs);
    }

    /**
     * A change to the key that may come in a burst: the key is added at once unless it was
     * handed out less than `windowMs` ago, in which case it is added when that window ends.
     * A lone change to a quiet key therefore waits for nothing, while a burst costs one run
     * at its start and at most one per window after (changes meet a key that is queued,
     * delayed or in hand, and ride along with its next run).
     */
    addCoalesced(key: K, windowMs: number): void {
        if (this.shuttingDown || this.dirty.has(key)) return;
        this.coalesceWindowMs = Math.max(this.coalesceWindowMs, windowMs);
        const last = this.handedOutAt.get(key);
        const now = this.clock.now();
        if (last === undefined || now - last >= windowMs) return this.add(key);
        this.addAfter(key, last + windowMs - now);
    }

    /** Adds the key after the rate limiter's delay, counting one more failure for it. */
    addRateLimited(key: K): void {
        if (this.shuttingDown) return;
        this.metrics?.retried();
        this.addAfter(key, this.rateLimiter.when(key, this.clock.now()));
    }

    /** Clears the key's failure count: call when it succeeded. */
    forget(key: K): void {
        this.rateLimiter.forget(key);
    }

    /** Gives up on a failing key: forgets it and counts it as dropped. */
    drop(key: K): void {
        this.rateLimiter.forget(key);
        this.metrics?.dropped();
    }

    numRequeues(key: K): number {
        return this.rateLimiter.numRequeues(key);
    }

    /** Keys ready and waiting for a worker (not those in hand or delayed). */
    len(): number {
        return this.queued.length - this.head;
    }

    /**
     * The next key, once there is one; the caller owns it until `done(key)`. Resolves
     * undefined once the queue is shut down and holds no more keys.
     */
    get(): Promise<K | undefined> {
        const key = this.takeNext();
        if (key !== undefined || this.shuttingDown) return Promise.resolve(key);
        return new Promise((resolve) => this.getters.push(resolve));
    }

    /** Releases the key; if it was added meanwhile, it is queued again now. */
    done(key: K): void {
        const since = this.processing.get(key);
        if (since === undefined) return;
        this.processing.delete(key);
        this.metrics?.finished((this.clock.now() - since) / 1000);
        if (this.dirty.has(key)) this.enqueue(key);
        if (this.drainWaiters && this.processing.size === 0 && this.len() === 0) {
            for (const resolve of this.drainWaiters.splice(0)) resolve();
        }
    }

    /**
     * Stops accepting keys and cancels delayed ones. Keys already queued are still handed
     * out (client-go does the same); getters resolve undefined once none are left.
     */
    shutDown(): void {
        if (!this.shuttingDown) {
            this.shuttingDown = true;
            this.delayed.clear();
            this.metrics?.detach();
        }
        // Getters wait only while the queue is empty, so they will never get a key now.
        for (const resolve of this.getters.splice(0)) resolve(undefined);
    }

    /**
     * Shuts down, then resolves once no key is queued or in a worker's hands. When nothing
     * is in hand at the call, no worker is running to take queued keys, so they are dropped
     * rather than waited for forever.
     */
    shutDownWithDrain(): Promise<void> {
        this.shutDown();
        if (this.processing.size === 0) {
            this.queued = [];
            this.head = 0;
            this.dirty.clear();
            return Promise.resolve();
        }
        this.drainWaiters ??= [];
        const waiters = this.drainWaiters;
        return new Promise((resolve) => waiters.push(resolve));
    }

    private enqueue(key: K): void {
        this.queued.push(key);
        const getter = this.getters.shift();
        if (getter) getter(this.takeNext());
    }

    private takeNext(): K | undefined {
        if (this.len() === 0) return undefined;
        const key = this.queued[this.head] as K;
        this.head += 1;
        // Handed-out keys are not held: an emptied queue starts over (a Link's 2 000 mirror keys stayed otherwise).
        if (this.head === this.queued.length) {
            this.queued = [];
            this.head = 0;
        } else if (this.head > 1024 && this.head * 2 > this.queued.length) {
            this.queued = this.queued.slice(this.head);
            this.head = 0;
        }
        const now = this.clock.now();
        const addedAt = this.dirty.get(key) ?? now;
        this.dirty.delete(key);
        this.processing.set(key, now);
        this.noteHandedOut(key, now);
        this.metrics?.handedOut((now - addedAt) / 1000);
        return key;
    }

    private noteHandedOut(key: K, now: number): void {
        if (this.coalesceWindowMs <= 0) return;
        this.handedOutAt.delete(key); // re-inserted last: the map stays in hand-out order
        this.handedOutAt.set(key, now);
        if (this.handedOutAt.size < this.pruneHandedOutAt) return;
        // Oldest first, so the sweep stops at the first entry still inside the window.
        for (const [k, at] of this.handedOutAt) {
            if (now - at < this.coalesceWindowMs) break;
            this.handedOutAt.delete(k);
        }
        this.pruneHandedOutAt = Math.max(1024, this.handedOutAt.size * 2);
    }
}

// setTimeout fires at once for longer delays; the timer is re-armed when it fires early.
const MAX_TIMER_MS = 2 ** 31 - 1;

/** Keys waiting for their ready time: a min-heap by time, one timer armed for the earliest. */
class DelayedAdds<K> {
    /** The truth; the heap may also hold stale entries of keys since rescheduled earlier. */
    private readonly readyAt = new Map<K, number>();
    private readonly heap: { key: K; at: number }[] = [];
    private timer: { cancel: () => void; at: number } | undefined;

    constructor(
        private readonly clock: Clock,
        private readonly ready: (key: K) => void,
    ) {}

    schedule(key: K, at: number): void {
        const current = this.readyAt.get(key);
        if (current !== undefined && current <= at) return;
        this.readyAt.set(key, at);
        this.push({ key, at });
        this.arm();
    }

    clear(): void {
        this.timer?.cancel();
        this.timer = undefined;
        this.readyAt.clear();
        this.heap.length = 0;
    }

    private fire(): void {
        this.timer = undefined;
        const now = this.clock.now();
        for (let top = this.heap[0]; top !== undefined && top.at <= now; top = this.heap[0]) {
            this.pop();
            if (this.readyAt.get(top.key) !== top.at) continue;
            this.readyAt.delete(top.key);
            this.ready(top.key);
        }
        this.arm();
    }

    private arm(): void {
        while (this.heap[0] && this.readyAt.get(this.heap[0].key) !== this.heap[0].at) this.pop();
        const next = this.heap[0];
        if (next === undefined || (this.timer && this.timer.at <= next.at)) return;
        this.timer?.cancel();
        const delay = Math.min(Math.max(0, next.at - this.clock.now()), MAX_TIMER_MS);
        this.timer = { at: next.at, cancel: this.clock.schedule(() => this.fire(), delay) };
    }

    private push(entry: { key: K; at: number }): void {
        const heap = this.heap;
        let i = heap.push(entry) - 1;
        while (i > 0) {
            const parent = (i - 1) >> 1;
            if (heap[parent]!.at <= entry.at) break;
            heap[i] = heap[parent]!;
            i = parent;
        }
        heap[i] = entry;
    }

    private pop(): void {
        const heap = this.heap;
        const last = heap.pop();
        if (last === undefined || heap.length === 0) return;
        let i = 0;
        for (;;) {
            const left = 2 * i + 1;
            if (left >= heap.length) break;
            const right = left + 1;
            const child = right < heap.length && heap[right]!.at < heap[left]!.at ? right : left;
            if (heap[child]!.at >= last.at) break;
            heap[i] = heap[child]!;
            i = child;
        }
        heap[i] = last;
    }
}

export interface WorkerFailure<K extends string> {
    key: K;
    error: unknown;
    /** Failed runs of the key in a row, this one included. */
    failures: number;
    /** True when the key was given up on (until the next event adds it again). */
    dropped: boolean;
}

export interface RunWorkersOptions {
    /** Rate-limited retries of a failing key before it is dropped; client-go controllers use 15. */
    maxRetries?: number;
}

/**
 * Runs `count` workers: each takes a key, runs the handler, and on success forgets the
 * key's failures; on failure re-adds it rate-limited, or drops it after maxRetries
 * retries. `onError` hears of every failure (`dropped` tells a retry from giving up) and
 * must not throw. Resolves once the queue is shut down and drained. The one place the
 * retry policy lives.
 */
export async function runWorkers<K extends string>(
    queue: WorkQueue<K>,
    count: number,
    handler: (key: K) => Promise<void>,
    onError?: (failure: WorkerFailure<K>) => void,
    options: RunWorkersOptions = {},
): Promise<void> {
    const maxRetries = options.maxRetries ?? 15;
    const worker = async () => {
        // A key whose sync needs no I/O (nothing to write) resolves at once, and so does get()
        // while keys wait: a run of them would hold the event loop for as long as they last (110 ms
        // in a 10 000-workload initial sync). Timers and I/O get a turn once a slice is used.
        const slicer = new Pacer();
        for (let key = await queue.get(); key !== undefined; key = await queue.get()) {
            if (slicer.due()) await slicer.pause();
            try {
                await handler(key);
                queue.forget(key);
            } catch (error) {
                const retries = queue.numRequeues(key);
                const dropped = retries >= maxRetries;
                if (dropped) queue.drop(key);
                else queue.addRateLimited(key);
                onError?.({ key, error, failures: retries + 1, dropped });
            } finally {
                queue.done(key);
            }
        }
    };
    await Promise.all(Array.from({ length: count }, worker));
}
