import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Registry } from 'prom-client';
import { LeaderQueue } from './leader-queue.js';
import { newLogger } from './log.js';
import { controllerRateLimiter } from './ratelimit.js';
import { NotLeaderError } from './errors.js';
import { WorkQueueMetrics } from './workqueue-metrics.js';

function leaderQueue(sync: (key: string) => Promise<void>) {
    return new LeaderQueue<string>({
        name: 'test',
        metrics: new WorkQueueMetrics(new Registry(), 'test'),
        rateLimiter: controllerRateLimiter(),
        workers: 2,
        sync,
        log: newLogger('silent'),
    });
}

describe('LeaderQueue', () => {
    it('processes the keys it starts with, and nothing while not leading', async () => {
        const seen: string[] = [];
        const q = leaderQueue(async (key) => void seen.push(key));
        q.add('before'); // not leading: dropped
        q.start(['a', 'b']);
        q.add('c');
        await new Promise((r) => setTimeout(r, 20));
        await q.stop();
        q.add('after');
        assert.deepEqual(seen.sort(), ['a', 'b', 'c']);
        assert.equal(q.active, undefined);
    });

    it('never runs a key of a new term while the previous term still holds it', async () => {
        let running = 0;
        let overlapped = false;
        const finished: string[] = [];
        const q = leaderQueue(async (key) => {
            running++;
            if (running > 1) overlapped = true;
            await new Promise((r) => setTimeout(r, 50));
            running--;
            finished.push(key);
        });
        q.start(['svc']);
        await new Promise((r) => setTimeout(r, 10)); // term 1 holds svc
        const stopped = q.stop();
        q.start(['svc']); // term 2 begins before term 1 has drained
        await stopped;
        await new Promise((r) => setTimeout(r, 100));
        await q.stop();
        assert.equal(overlapped, false);
        assert.deepEqual(finished, ['svc', 'svc']);
    });
});

async function until(condition: () => boolean, timeoutMs = 10_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!condition()) {
        if (Date.now() > deadline) assert.fail('condition not met in time');
        await new Promise((r) => setTimeout(r, 5));
    }
}

describe('LeaderQueue retries', () => {
    const fastQueue = (sync: (key: string) => Promise<void>, extra: { maxRetries?: number } = {}) =>
        new LeaderQueue<string>({
            name: 'retries',
            metrics: new WorkQueueMetrics(new Registry(), 'test'),
            rateLimiter: controllerRateLimiter({ baseMs: 1, maxMs: 5 }),
            workers: 1,
            sync,
            log: newLogger('silent'),
            ...extra,
        });

    it('re-queues a key whose write the leader guard refused, and runs it once the guard opens', async () => {
        let guardOpen = false;
        const synced: string[] = [];
        const q = fastQueue(async (key) => {
            if (!guardOpen) throw new NotLeaderError();
            synced.push(key);
        });
        q.start(['svc']);
        await new Promise((r) => setTimeout(r, 30));
        assert.deepEqual(synced, []);
        guardOpen = true;
        await until(() => synced.length === 1);
        await q.stop();
        assert.deepEqual(synced, ['svc']);
    });

});
