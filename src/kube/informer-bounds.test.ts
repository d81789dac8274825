// The pure parts of an informer's bounds on an untrusted cluster: how fast it comes back after
// failures (the integration test informer.test.ts shows it against a real apiserver), and how a
// watch event too large to read is told apart.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { reconnectDelay } from './reflector.js';
import { objectOfEventPrefix } from './watch-framing.js';

describe('reconnectDelay', () => {
    it('doubles from the initial delay up to the maximum, each within its upper half', () => {
        for (let failures = 1; failures <= 12; failures++) {
            const exp = Math.min(30_000, 500 * 2 ** (failures - 1));
            assert.equal(reconnectDelay(failures, 500, 30_000, 0, 0), exp / 2);
            assert.ok(reconnectDelay(failures, 500, 30_000, 0, 0.999999) < exp);
            assert.ok(reconnectDelay(failures, 500, 30_000, 0, 0.999999) > exp * 0.99);
        }
        assert.equal(reconnectDelay(50, 500, 30_000, 0, 1), 30_000);
    });

    it('spreads replicas out: different random draws give different delays', () => {
        const delays = new Set([0, 0.25, 0.5, 0.75].map((r) => reconnectDelay(4, 500, 30_000, 0, r)));
        assert.equal(delays.size, 4);
    });

    it('never comes back before the server’s Retry-After', () => {
        assert.equal(reconnectDelay(1, 500, 30_000, 10_000, 0.5), 10_000);
        assert.equal(reconnectDelay(10, 500, 30_000, 1_000, 0), 15_000);
    });

    it('asks a remote that fails every request at most about once per maximum once ramped up', () => {
        // 100 failures in a row: the first 7 ramp up (0.25 s .. 16 s), the rest wait 15-30 s each.
        let least = 0;
        for (let failures = 1; failures <= 100; failures++) least += reconnectDelay(failures, 500, 30_000, 0, 0);
        assert.ok(least / 1000 > 93 * 15, `${least} ms for 100 tries`);
    });
});

describe('objectOfEventPrefix', () => {
    it('reads the namespace and name an apiserver writes first, and nothing else', () => {
        assert.deepEqual(objectOfEventPrefix('{"type":"MODIFIED","object":{"kind":"Service","apiVersion":"v1","metadata":{"name":"web","namespace":"shop","uid":"u"'), { namespace: 'shop', name: 'web' });
        assert.deepEqual(objectOfEventPrefix('{"type":"ADDED","object":{"metadata":{"name":"a\\"b","generateName":"a","resourceVersion":"1"'), { name: 'a"b' });
        assert.equal(objectOfEventPrefix('{"type":"ADDED","object":{"spec":{"x":"'), undefined);
        assert.equal(objectOfEventPrefix('x'.repeat(5000)), undefined);
    });
});
