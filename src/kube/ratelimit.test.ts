import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ItemExponentialBackoff, MaxOf, TokenBucket, controllerRateLimiter } from './ratelimit.js';

const whenTimes = (limiter: { when(key: string, now: number): number }, key: string, times: number, now = 0) =>
    Array.from({ length: times }, () => limiter.when(key, now));

describe('ItemExponentialBackoff', () => {
    it('doubles from 5 ms and stops at 1000 s', () => {
        const delays = whenTimes(new ItemExponentialBackoff(), 'default/web', 22);
        assert.deepEqual(delays.slice(0, 6), [5, 10, 20, 40, 80, 160]);
        assert.equal(delays[17], 655_360); // 5 ms × 2^17, the last step under the cap
        assert.deepEqual(delays.slice(18), [1_000_000, 1_000_000, 1_000_000, 1_000_000]);
    });

    it('keeps each key on its own schedule', () => {
        const backoff = new ItemExponentialBackoff();
        whenTimes(backoff, 'default/web', 3);
        assert.equal(backoff.when('default/db'), 5);
        assert.equal(backoff.when('default/web'), 40);
    });

    it('counts requeues and starts over after forget', () => {
        const backoff = new ItemExponentialBackoff();
        whenTimes(backoff, 'default/web', 4);
        assert.equal(backoff.numRequeues('default/web'), 4);
        assert.equal(backoff.numRequeues('default/db'), 0);
        backoff.forget('default/web');
        assert.equal(backoff.numRequeues('default/web'), 0);
        assert.equal(backoff.when('default/web'), 5);
    });

    it('survives failure counts far past the cap', () => {
        const delays = whenTimes(new ItemExponentialBackoff(1, 1000), 'k', 1100);
        assert.equal(delays.at(-1), 1000);
    });

    it('rejects a non-positive base or a cap below the base', () => {
        assert.throws(() => new ItemExponentialBackoff(0), RangeError);
        assert.throws(() => new ItemExponentialBackoff(10, 5), RangeError);
    });
});

describe('TokenBucket', () => {
    it('lets a burst of 100 through at once, then one retry per 100 ms', () => {
        const bucket = new TokenBucket();
        assert.ok(whenTimes(bucket, 'k', 100).every((delay) => delay === 0));
        assert.deepEqual(whenTimes(bucket, 'k', 3), [100, 200, 300]);
    });

    it('refills at 10 tokens per second, minus the tokens reserved in advance', () => {
        const bucket = new TokenBucket();
        whenTimes(bucket, 'k', 101, 0); // one token borrowed from the future
        const delays = whenTimes(bucket, 'k', 10, 1000);
        assert.deepEqual(delays, [0, 0, 0, 0, 0, 0, 0, 0, 0, 100]);
    });

    it('never holds more than the burst after a long idle time', () => {
        const bucket = new TokenBucket(10, 100);
        whenTimes(bucket, 'k', 100, 0);
        const delays = whenTimes(bucket, 'k', 101, 3_600_000);
        assert.equal(delays.filter((delay) => delay === 0).length, 100);
        assert.equal(delays.at(-1), 100);
    });

    it('is shared by all keys and neither counts nor forgets them', () => {
        const bucket = new TokenBucket(1, 1);
        assert.equal(bucket.when('a', 0), 0);
        assert.equal(bucket.when('b', 0), 1000);
        bucket.forget();
        assert.equal(bucket.numRequeues(), 0);
        assert.equal(bucket.when('c', 0), 2000);
    });

    it('ignores a clock that steps backwards', () => {
        const bucket = new TokenBucket(10, 1);
        assert.equal(bucket.when('k', 5000), 0);
        assert.equal(bucket.when('k', 1000), 100);
    });

    it('rejects a non-positive rate or an empty burst', () => {
        assert.throws(() => new TokenBucket(0, 10), RangeError);
        assert.throws(() => new TokenBucket(10, 0), RangeError);
    });
});

describe('MaxOf', () => {
    it('waits for the longest delay of its limiters', () => {
        const limiter = new MaxOf(new ItemExponentialBackoff(5, 1_000_000), new TokenBucket(10, 2));
        assert.deepEqual(whenTimes(limiter, 'k', 4), [5, 10, 100, 200]);
    });

    it('reports the highest requeue count and forgets in every limiter', () => {
        const slow = new ItemExponentialBackoff(1000);
        const limiter = new MaxOf(new ItemExponentialBackoff(5), slow);
        whenTimes(limiter, 'k', 3);
        assert.equal(limiter.numRequeues('k'), 3);
        limiter.forget('k');
        assert.equal(slow.numRequeues('k'), 0);
        assert.equal(limiter.when('k', 0), 1000);
    });

    it('needs at least one limiter', () => {
        assert.throws(() => new MaxOf(), RangeError);
    });
});

describe('controllerRateLimiter', () => {
    it('defaults to client-go: 5 ms per-key backoff over a 10 qps, burst 100 bucket', () => {
        const limiter = controllerRateLimiter();
        assert.deepEqual(whenTimes(limiter, 'k', 3), [5, 10, 20]);
        const others = Array.from({ length: 97 }, (_, i) => limiter.when(`other-${i}`, 0));
        assert.ok(others.every((delay) => delay === 5));
        assert.equal(limiter.when('fresh', 0), 100); // the bucket, not the 5 ms backoff, decides
    });

    it('takes the EndpointSlice controller’s 1 s base: 1 s, 2 s, … 512 s, then 1000 s', () => {
        const limiter = controllerRateLimiter({ baseMs: 1000 });
        const delays = whenTimes(limiter, 'default/web', 15);
        assert.deepEqual(
            delays.map((ms) => ms / 1000),
            [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1000, 1000, 1000, 1000, 1000],
        );
    });
});
