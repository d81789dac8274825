import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Registry, type Histogram } from 'prom-client';
import { ItemExponentialBackoff } from './ratelimit.js';
import type { Clock } from '../time/clock.js';
import { runWorkers, WorkQueue, type WorkerFailure } from './workqueue.js';
import { WorkQueueMetrics } from './workqueue-metrics.js';

/** Time moves only when the test says so; due timers run in time order. */
class FakeClock implements Clock {
    private time = 0;
    private nextId = 1;
    private readonly timers = new Map<number, { at: number; callback: () => void }>();

    now(): number {
        return this.time;
    }
    schedule(callback: () => void, ms: number): () => void {
        const id = this.nextId++;
        this.timers.set(id, { at: this.time + ms, callback });
        return () => this.timers.delete(id);
    }
    pendingTimers(): number {
        return this.timers.size;
    }
    advance(ms: number): void {
        const end = this.time + ms;
        for (;;) {
            const due = [...this.timers].filter(([, t]) => t.at <= end).sort(([, a], [, b]) => a.at - b.at)[0];
            if (!due) break;
            this.timers.delete(due[0]);
            this.time = Math.max(this.time, due[1].at);
            due[1].callback();
        }
        this.time = end;
    }
}

/** Lets pending promise callbacks and the workers they wake run. */
/** Two turns of the event loop: a worker may take one off between keys (runWorkers pauses when its slice is used). */
const flush = async () => {
    for (let turn = 0; turn < 2; turn++) await new Promise<void>((resolve) => setImmediate(resolve));
};

/** Whether the promise has settled by the time the event loop is idle. */
async function settled(promise: Promise<unknown>): Promise<boolean> {
    let done = false;
    void promise.then(() => (done = true));
    await flush();
    return done;
}

const newQueue = (clock = new FakeClock()) => ({ clock, queue: new WorkQueue({ clock }) });

describe('WorkQueue', () => {
    it('holds a key added again while it is queued once', async () => {
        const { queue } = newQueue();
        queue.add('default/web');
        queue.add('default/db');
        queue.add('default/web');
        assert.equal(queue.len(), 2);
        assert.equal(await queue.get(), 'default/web');
        assert.equal(await queue.get(), 'default/db');
        assert.equal(queue.len(), 0);
    });

    it('makes get wait for the next add', async () => {
        const { queue } = newQueue();
        const next = queue.get();
        assert.equal(await settled(next), false);
        queue.add('default/web');
        assert.equal(await next, 'default/web');
    });

    it('processes a key re-added while in hand once more, only after done', async () => {
        const { queue } = newQueue();
        queue.add('default/web');
        const key = await queue.get();
        queue.add('default/web');
        queue.add('default/web');
        assert.equal(queue.len(), 0);
        const next = queue.get();
        assert.equal(await settled(next), false);
        queue.done('default/web');
        assert.equal(await next, key);
        queue.done('default/web');
        assert.equal(queue.len(), 0);
    });

    it('never hands one key to two workers at once', async () => {
        const { queue } = newQueue();
        const runs: string[] = [];
        const inHand = new Set<string>();
        let overlaps = 0;
        queue.add('default/web');
        const workers = runWorkers(queue, 2, async (key) => {
            if (inHand.has(key)) overlaps += 1;
            inHand.add(key);
            runs.push(key);
            if (runs.length === 1) {
                queue.add('default/web'); // an event arrives mid-sync
                queue.add('default/web');
            }
            await flush();
            inHand.delete(key);
        });
        for (let i = 0; i < 10 && runs.length < 2; i++) await flush();
        await flush();
        await queue.shutDownWithDrain();
        await workers;
        assert.deepEqual(runs, ['default/web', 'default/web']);
        assert.equal(overlaps, 0);
    });

    it('ignores done for a key that is not in hand', () => {
        const { queue } = newQueue();
        queue.add('default/web');
        queue.done('default/web');
        assert.equal(queue.len(), 1);
    });
});

describe('WorkQueue.addAfter', () => {
    it('adds the key once its delay has passed', () => {
        const { clock, queue } = newQueue();
        queue.addAfter('default/web', 100);
        clock.advance(99);
        assert.equal(queue.len(), 0);
        clock.advance(1);
        assert.equal(queue.len(), 1);
    });

    it('keeps the earliest ready time of a key already waiting', () => {
        const { clock, queue } = newQueue();
        queue.addAfter('default/web', 100);
        queue.addAfter('default/web', 500); // a later event must not postpone the batch
        queue.addAfter('default/db', 500);
        queue.addAfter('default/db', 200);
        clock.advance(100);
        assert.equal(queue.len(), 1);
        clock.advance(100);
        assert.equal(queue.len(), 2);
        clock.advance(1000);
        assert.equal(queue.len(), 2);
        assert.equal(clock.pendingTimers(), 0);
    });

    it('adds at once for a zero or negative delay', () => {
        const { clock, queue } = newQueue();
        queue.addAfter('default/web', 0);
        queue.addAfter('default/db', -5);
        assert.equal(queue.len(), 2);
        assert.equal(clock.pendingTimers(), 0);
    });

    it('does not queue a delayed key twice when it is already queued', () => {
        const { clock, queue } = newQueue();
        queue.addAfter('default/web', 10);
        queue.add('default/web');
        clock.advance(10);
        assert.equal(queue.len(), 1);
    });

    it('hands out delayed keys in ready-time order, whatever the order of the calls', async () => {
        const { clock, queue } = newQueue();
        const delays: [string, number][] = [['c', 30], ['a', 10], ['e', 50], ['b', 20], ['d', 40]];
        for (const [key, delay] of delays) queue.addAfter(key, delay);
        clock.advance(50);
        const order = [];
        while (queue.len() > 0) order.push(await queue.get());
        assert.deepEqual(order, ['a', 'b', 'c', 'd', 'e']);
    });

    it('works with node:test mock timers on the default clock', (t) => {
        t.mock.timers.enable({ apis: ['setTimeout', 'Date'], now: 0 });
        const queue = new WorkQueue();
        queue.addAfter('default/web', 1000);
        t.mock.timers.tick(999);
        assert.equal(queue.len(), 0);
        t.mock.timers.tick(1);
        assert.equal(queue.len(), 1);
        queue.shutDown();
    });
});

describe('WorkQueue.addCoalesced', () => {
    /** Runs the key like a worker: takes it, holds it for `holdMs`, releases it. */
    async function run(clock: FakeClock, queue: WorkQueue, holdMs = 0): Promise<string | undefined> {
        const key = await queue.get();
        clock.advance(holdMs);
        if (key !== undefined) queue.done(key);
        return key;
    }

    it('queues a change to a quiet key at once', () => {
        const { queue } = newQueue();
        queue.addCoalesced('default/web', 500);
        assert.equal(queue.len(), 1);
    });

    it('queues at once a change that comes a full window after the last run', async () => {
        const { clock, queue } = newQueue();
        queue.addCoalesced('default/web', 500);
        await run(clock, queue, 10);
        clock.advance(490);
        queue.addCoalesced('default/web', 500);
        assert.equal(queue.len(), 1);
    });

    it('holds changes that meet a key in hand until one window after it was handed out', async () => {
        const { clock, queue } = newQueue();
        queue.addCoalesced('default/web', 500);
        const key = await queue.get();
        clock.advance(20);
        queue.addCoalesced('default/web', 500);
        queue.addCoalesced('default/web', 500);
        queue.done(key!);
        assert.equal(queue.len(), 0, 'not at once after done');
        clock.advance(479);
        assert.equal(queue.len(), 0);
        clock.advance(1);
        assert.equal(queue.len(), 1, 'one run for both changes, one window after the first run began');
    });

    it('runs a key that is still in hand when its window ends again right after done', async () => {
        const { clock, queue } = newQueue();
        queue.addCoalesced('default/web', 100);
        const key = await queue.get();
        queue.addCoalesced('default/web', 100);
        clock.advance(300); // a slow run
        assert.equal(queue.len(), 0, 'never two runs of one key at once');
        queue.done(key!);
        assert.equal(queue.len(), 1);
    });

    it('lets a change ride along with a run already queued', async () => {
        const { clock, queue } = newQueue();
        queue.addCoalesced('default/web', 500);
        queue.addCoalesced('default/web', 500);
        assert.equal(queue.len(), 1);
        await run(clock, queue);
        clock.advance(1000);
        assert.equal(queue.len(), 0);
        assert.equal(clock.pendingTimers(), 0);
    });

    it('turns a burst of 1000 changes, one every ms, into one run at its start and one per window', async () => {
        const { clock, queue } = newQueue();
        let runs = 0;
        for (let i = 0; i < 1000; i++) {
            queue.addCoalesced('default/web', 250);
            while (queue.len() > 0) {
                await run(clock, queue, 0);
                runs++;
            }
            clock.advance(1);
        }
        clock.advance(250);
        while (queue.len() > 0) {
            await run(clock, queue, 0);
            runs++;
        }
        assert.equal(runs, 5, 'at 0, 250, 500, 750 and 1000 ms');
    });

    it('forgets when keys ran once their window has passed, so the bookkeeping stays small', async () => {
        const { clock, queue } = newQueue();
        for (let i = 0; i < 5000; i++) {
            queue.addCoalesced(`ns/svc-${i}`, 100);
            await run(clock, queue);
            clock.advance(1);
        }
        const remembered = (queue as unknown as { handedOutAt: Map<string, number> }).handedOutAt.size;
        assert.ok(remembered <= 1024 + 100, `${remembered} keys remembered`);
    });
});

describe('WorkQueue.addRateLimited', () => {
    it('delays a failing key by its backoff and counts the requeues until forget', () => {
        const { clock, queue } = newQueue();
        queue.addRateLimited('default/web');
        clock.advance(4);
        assert.equal(queue.len(), 0);
        clock.advance(1);
        assert.equal(queue.len(), 1);
        queue.addRateLimited('default/web');
        assert.equal(queue.numRequeues('default/web'), 2);
        queue.forget('default/web');
        assert.equal(queue.numRequeues('default/web'), 0);
    });
});

describe('WorkQueue shutdown', () => {
    it('resolves waiting gets with undefined', async () => {
        const { queue } = newQueue();
        const waiting = [queue.get(), queue.get()];
        queue.shutDown();
        assert.deepEqual(await Promise.all(waiting), [undefined, undefined]);
    });

    it('still hands out keys queued before shutDown, then undefined', async () => {
        const { queue } = newQueue();
        queue.add('default/web');
        queue.shutDown();
        assert.equal(await queue.get(), 'default/web');
        assert.equal(await queue.get(), undefined);
    });

    it('ignores adds of every kind after shutDown', () => {
        const { clock, queue } = newQueue();
        queue.shutDown();
        queue.add('default/web');
        queue.addAfter('default/db', 10);
        queue.addRateLimited('default/api');
        queue.addCoalesced('default/cache', 10);
        clock.advance(1000);
        assert.equal(queue.len(), 0);
        assert.equal(queue.numRequeues('default/api'), 0);
        assert.equal(clock.pendingTimers(), 0);
    });

    it('cancels delayed adds so no timer outlives the queue', () => {
        const { clock, queue } = newQueue();
        queue.addAfter('default/web', 100);
        assert.equal(clock.pendingTimers(), 1);
        queue.shutDown();
        assert.equal(clock.pendingTimers(), 0);
    });

    it('shutDownWithDrain waits for the keys in workers’ hands', async () => {
        const { queue } = newQueue();
        queue.add('default/web');
        queue.add('default/db');
        await queue.get();
        await queue.get();
        const drained = queue.shutDownWithDrain();
        queue.done('default/web');
        assert.equal(await settled(drained), false);
        queue.done('default/db');
        assert.equal(await settled(drained), true);
    });

    it('shutDownWithDrain lets workers finish the keys still queued', async () => {
        const { queue } = newQueue();
        const runs: string[] = [];
        for (const key of ['a', 'b', 'c']) queue.add(key);
        const workers = runWorkers(queue, 1, async (key) => {
            runs.push(key);
            await flush();
        });
        await Promise.resolve();
        await queue.shutDownWithDrain();
        assert.deepEqual(runs, ['a', 'b', 'c']);
        await workers;
    });

    it('shutDownWithDrain with nothing in hand resolves at once and drops what is queued', async () => {
        const { queue } = newQueue();
        queue.add('default/web');
        await queue.shutDownWithDrain();
        assert.equal(queue.len(), 0);
        assert.equal(await queue.get(), undefined);
    });
});

describe('runWorkers', () => {
    it('retries a failing key with backoff, then drops it after maxRetries', async () => {
        const clock = new FakeClock();
        const queue = new WorkQueue({ clock, rateLimiter: new ItemExponentialBackoff(5) });
        const failures: WorkerFailure<string>[] = [];
        let calls = 0;
        queue.add('default/web');
        const workers = runWorkers(
            queue,
            1,
            async () => {
                calls += 1;
                throw new Error('apiserver unavailable');
            },
            (failure) => failures.push(failure),
            { maxRetries: 3 },
        );
        await flush();
        assert.equal(calls, 1);
        for (const [delay, expectedCalls] of [[4, 1], [1, 2], [10, 3], [19, 3], [1, 4], [100_000, 4]] as const) {
            clock.advance(delay);
            await flush();
            assert.equal(calls, expectedCalls, `after another ${delay} ms`);
        }
        assert.deepEqual(
            failures.map((f) => [f.key, f.failures, f.dropped]),
            [
                ['default/web', 1, false],
                ['default/web', 2, false],
                ['default/web', 3, false],
                ['default/web', 4, true],
            ],
        );
        assert.equal(queue.numRequeues('default/web'), 0);
        queue.shutDown();
        await workers;
    });

    it('forgets a key once its handler succeeds', async () => {
        const clock = new FakeClock();
        const queue = new WorkQueue({ clock });
        let calls = 0;
        queue.add('default/web');
        const workers = runWorkers(queue, 1, async () => {
            calls += 1;
            if (calls < 3) throw new Error('conflict');
        });
        await flush();
        clock.advance(5);
        await flush();
        assert.equal(queue.numRequeues('default/web'), 2);
        clock.advance(10);
        await flush();
        assert.equal(calls, 3);
        assert.equal(queue.numRequeues('default/web'), 0);
        queue.shutDown();
        await workers;
    });

    it('gives timers a turn between keys whose handlers need no I/O (nothing to write)', async () => {
        const { queue } = newQueue();
        const order: string[] = [];
        for (let i = 0; i < 30; i++) queue.add(`default/svc-${i}`);
        setTimeout(() => order.push('timer'), 0);
        const workers = runWorkers(queue, 2, async (key) => {
            // 1 ms of work, and no await that waits for anything.
            const until = performance.now() + 1;
            while (performance.now() < until);
            order.push(key);
        });
        while (order.length < 31) await new Promise((resolve) => setTimeout(resolve, 5));
        const timerAt = order.indexOf('timer');
        assert.ok(timerAt > 0 && timerAt < 15, `the timer ran after ${timerAt} of 30 keys (a 5 ms slice holds about 5)`);
        queue.shutDown();
        await workers;
    });

    it('resolves once the queue is shut down and its workers are idle', async () => {
        const { queue } = newQueue();
        const workers = runWorkers(queue, 3, async () => {});
        assert.equal(await settled(workers), false);
        queue.shutDown();
        assert.equal(await settled(workers), true);
    });
});

describe('WorkQueueMetrics', () => {
    const sample = async (registry: Registry, metric: string, queue: string) => {
        const values = (await registry.getSingleMetric(metric)?.get())?.values ?? [];
        return values.find((v) => v.labels.name === queue && !('le' in v.labels))?.value;
    };

    it('reports depth, adds, retries and drops per queue on one shared registry', async () => {
        const registry = new Registry();
        const metrics = new WorkQueueMetrics(registry, 'mesh');
        const clock = new FakeClock();
        const slices = new WorkQueue({ name: 'endpointslices', clock, metrics });
        const mirror = new WorkQueue({ name: 'service_mirror', clock, metrics });
        slices.add('default/web');
        slices.add('default/web');
        slices.add('default/db');
        slices.addRateLimited('default/api');
        slices.drop('default/api');
        mirror.add('remote/web');
        assert.equal(await sample(registry, 'mesh_workqueue_depth', 'endpointslices'), 2);
        assert.equal(await sample(registry, 'mesh_workqueue_adds_total', 'endpointslices'), 2);
        assert.equal(await sample(registry, 'mesh_workqueue_retries_total', 'endpointslices'), 1);
        assert.equal(await sample(registry, 'mesh_workqueue_drops_total', 'endpointslices'), 1);
        assert.equal(await sample(registry, 'mesh_workqueue_depth', 'service_mirror'), 1);
        assert.equal(await sample(registry, 'mesh_workqueue_retries_total', 'service_mirror'), 0);
        clock.advance(5);
        assert.equal(await sample(registry, 'mesh_workqueue_adds_total', 'endpointslices'), 3);
    });

    it('times the wait in the queue and the work in hand', async () => {
        const registry = new Registry();
        const clock = new FakeClock();
        const queue = new WorkQueue({ name: 'q', clock, metrics: new WorkQueueMetrics(registry, 'mesh') });
        queue.add('default/web');
        clock.advance(250);
        await queue.get();
        clock.advance(2000);
        assert.equal(await sample(registry, 'mesh_workqueue_unfinished_work_seconds', 'q'), 2);
        assert.equal(await sample(registry, 'mesh_workqueue_longest_running_processor_seconds', 'q'), 2);
        queue.done('default/web');
        const sum = async (metric: string) => {
            const histogram = registry.getSingleMetric(metric) as Histogram | undefined;
            return (await histogram?.get())?.values.find((v) => v.metricName === `${metric}_sum`)?.value;
        };
        assert.equal(await sum('mesh_workqueue_queue_duration_seconds'), 0.25);
        assert.equal(await sum('mesh_workqueue_work_duration_seconds'), 2);
        assert.equal(await sample(registry, 'mesh_workqueue_unfinished_work_seconds', 'q'), 0);
    });

    it('refuses a second live queue of the same name, and frees the name at shutdown', () => {
        const metrics = new WorkQueueMetrics(new Registry(), 'mesh');
        const first = new WorkQueue({ name: 'endpointslices', metrics });
        assert.throws(() => new WorkQueue({ name: 'endpointslices', metrics }), /already reporting/);
        first.shutDown();
        assert.doesNotThrow(() => new WorkQueue({ name: 'endpointslices', metrics }).shutDown());
    });
});
