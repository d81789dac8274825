import assert from 'node:assert/strict';
import { isIP } from 'node:net';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import {
    addressesOf,
    DEFAULT_DNS_POLICY as policy,
    initialNameState,
    nameView,
    nextWakeAt,
    onAnswer,
    onFailure,
    retryDelay,
    viewReach,
    type AddressRecord,
    type NameState,
} from './name-state.js';

const T0 = Date.UTC(2026, 0, 1);
const NAME = 'gw.example.test';
const rec = (address: string, ttl = 30): AddressRecord => ({ address, ttl });
const SERVFAIL = { code: 'SERVFAIL', message: 'server failure' } as const;
const NXDOMAIN = { code: 'NXDOMAIN', message: 'no such name' } as const;

function resolved(answers4: AddressRecord[], answers6: AddressRecord[] = [], now = T0): NameState {
    return onAnswer(initialNameState(NAME, now), answers4, answers6, now, policy).state;
}

/** Whom the change from `before` to `after`, both seen at `now`, reaches. */
const reach = (before: NameState, after: NameState, now: number) => viewReach(nameView(before, now, policy), nameView(after, now, policy));

function failTimes(state: NameState, times: number, start: number, step: number): NameState {
    let s = state;
    for (let i = 0; i < times; i++) s = onFailure(s, SERVFAIL, start + i * step, policy).state;
    return s;
}

describe('a gateway name answering DNS', () => {
    it('publishes every answer of both families, sorted by family then numerically, each once', () => {
        const state = resolved([rec('192.0.2.10'), rec('192.0.2.9'), rec('192.0.2.10')], [rec('2001:db8::2'), rec('2001:db8::1')]);
        assert.deepEqual(addressesOf(state, T0, policy), [
            { address: '192.0.2.9', family: 'IPv4', ready: true },
            { address: '192.0.2.10', family: 'IPv4', ready: true },
            { address: '2001:db8::1', family: 'IPv6', ready: true },
            { address: '2001:db8::2', family: 'IPv6', ready: true },
        ]);
        assert.equal(state.resolvedAt, T0);
    });

    it('refreshes when the shortest TTL of the A and AAAA answers runs out', () => {
        const state = resolved([rec('192.0.2.1', 45), rec('192.0.2.2', 30)], [rec('2001:db8::1', 60)]);
        assert.equal(state.ttlSeconds, 30);
        assert.equal(state.nextRefreshAt, T0 + 30_000);
    });

    it('clamps a TTL of 0 up to the minimum TTL and a TTL of a day down to the maximum', () => {
        assert.equal(resolved([rec('192.0.2.1', 0)]).nextRefreshAt, T0 + policy.minTtlMs);
        assert.equal(resolved([rec('192.0.2.1', 86_400)]).nextRefreshAt, T0 + policy.maxTtlMs);
        assert.equal(resolved([rec('192.0.2.1', 0)]).ttlSeconds, 0);
    });

    it('does not count the same answer again as a change, whatever its TTL and order', () => {
        const first = resolved([rec('192.0.2.1', 30), rec('192.0.2.2', 30)]);
        const again = onAnswer(first, [rec('192.0.2.2', 12), rec('192.0.2.1', 7)], [], T0 + 30_000, policy);
        assert.equal(reach(first, again.state, T0 + 30_000), undefined);
        assert.equal(again.state.resolvedAt, T0 + 30_000);
        assert.equal(again.state.nextRefreshAt, T0 + 30_000 + 7_000, 'refreshes at the new shortest TTL, 7 s');
    });

    it('counts a new, missing or extra address as a change the mirrors get', () => {
        const first = resolved([rec('192.0.2.1'), rec('192.0.2.2')]);
        const later = T0 + 30_000;
        const after = (v4: string[], v6: string[] = []) => onAnswer(first, v4.map((a) => rec(a)), v6.map((a) => rec(a)), later, policy).state;
        assert.equal(reach(first, after(['192.0.2.1', '192.0.2.3']), later), 'mirrors');
        assert.equal(reach(first, after(['192.0.2.1']), later), 'mirrors');
        assert.equal(reach(first, after(['192.0.2.1', '192.0.2.2'], ['2001:db8::1']), later), 'mirrors');
    });

    it('counts the first answer of a new name as a change the mirrors get', () => {
        const initial = initialNameState(NAME, T0);
        assert.equal(reach(initial, onAnswer(initial, [rec('192.0.2.1')], [], T0, policy).state, T0), 'mirrors');
    });

    it('treats one family answering while the other has no records (NODATA) as success', () => {
        const state = resolved([], [rec('2001:db8::7')]);
        assert.deepEqual(addressesOf(state, T0, policy), [{ address: '2001:db8::7', family: 'IPv6', ready: true }]);
        assert.equal(state.lastError, undefined);
        assert.equal(state.failures, 0);
    });

    it('counts an IPv4-mapped AAAA answer as the IPv4 address it maps', () => {
        const state = resolved([], [rec('::ffff:192.0.2.8')]);
        assert.deepEqual(state.addresses, [{ address: '192.0.2.8', family: 'IPv4' }]);
    });

    it('drops loopback, link-local, multicast and unspecified answers, naming each with its reason', () => {
        const state = resolved(
            [rec('127.0.0.1'), rec('192.0.2.1'), rec('169.254.0.5'), rec('224.0.0.1'), rec('0.0.0.0')],
            [rec('::1'), rec('fe80::1'), rec('2001:db8::1')],
        );
        assert.deepEqual(state.addresses.map((a) => a.address), ['192.0.2.1', '2001:db8::1']);
        assert.deepEqual(
            state.dropped.map((d) => `${d.address} ${d.reason}`),
            ['0.0.0.0 unspecified', '127.0.0.1 loopback', '169.254.0.5 link-local', '224.0.0.1 multicast', '::1 loopback', 'fe80::1 link-local'],
        );
    });
});

describe('a gateway name failing DNS', () => {
    it('publishes nothing for a name that never resolved, and records the error', () => {
        const t = onFailure(initialNameState(NAME, T0), NXDOMAIN, T0, policy);
        assert.deepEqual(addressesOf(t.state, T0, policy), []);
        assert.deepEqual(addressesOf(t.state, T0 + policy.staleWindowMs * 2, policy), []);
        assert.equal(reach(initialNameState(NAME, T0), t.state, T0), 'status', 'the mirrors had nothing and still have nothing');
        assert.deepEqual(t.state.lastError, NXDOMAIN);
    });

    it('fails a name when neither A nor AAAA has a record (empty answer)', () => {
        const good = resolved([rec('192.0.2.1')]);
        const t = onAnswer(good, [], [], T0 + 1000, policy);
        assert.equal(t.state.lastError?.code, 'NODATA');
        assert.equal(t.state.failures, 1);
        assert.deepEqual(t.state.addresses, good.addresses);
    });

    it('fails a name whose every answer is unusable, keeping the last good addresses', () => {
        const good = resolved([rec('192.0.2.1')]);
        const t = onAnswer(good, [rec('127.0.0.1')], [], T0 + 1000, policy);
        assert.equal(t.state.lastError?.code, 'UNUSABLE');
        assert.match(t.state.lastError?.message ?? '', /127\.0\.0\.1 \(loopback\)/);
        assert.deepEqual(t.state.dropped, [{ address: '127.0.0.1', family: 'IPv4', reason: 'loopback' }]);
        assert.deepEqual(addressesOf(t.state, T0 + 1000, policy), [{ address: '192.0.2.1', family: 'IPv4', ready: true }]);
    });

    it('keeps the last good addresses ready through the stale window, then marks them not ready', () => {
        const good = resolved([rec('192.0.2.1'), rec('192.0.2.2')]);
        const failedAt = T0 + 30_000;
        const first = onFailure(good, SERVFAIL, failedAt, policy);
        assert.equal(reach(good, first.state, failedAt), 'status', 'a failure within the stale window must not rewrite the mirrors');
        const failing = failTimes(first.state, 5, failedAt + 1000, 10_000);
        const deadline = failedAt + policy.staleWindowMs;
        assert.ok(addressesOf(failing, deadline, policy).every((a) => a.ready));
        assert.deepEqual(addressesOf(failing, deadline + 1, policy), [
            { address: '192.0.2.1', family: 'IPv4', ready: false },
            { address: '192.0.2.2', family: 'IPv4', ready: false },
        ]);
        assert.equal(failing.staleSince.IPv4, failedAt);
    });

    it('asks to be woken when the stale window ends, even before the next retry', () => {
        const policyWithSlowRetry = { ...policy, retryInitialMs: policy.staleWindowMs * 2, retryMaxMs: policy.staleWindowMs * 2 };
        const good = resolved([rec('192.0.2.1')]);
        const failing = onFailure(good, SERVFAIL, T0 + 1000, policyWithSlowRetry).state;
        assert.equal(nextWakeAt(failing, T0 + 1000, policyWithSlowRetry), T0 + 1000 + policy.staleWindowMs + 1);
        const afterFlip = T0 + 1000 + policy.staleWindowMs + 1;
        assert.equal(nextWakeAt(failing, afterFlip, policyWithSlowRetry), failing.nextRefreshAt);
    });

    it('recovers when DNS answers again: ready, error cleared, failure count reset', () => {
        const good = resolved([rec('192.0.2.1')]);
        const stale = failTimes(good, 3, T0 + 1000, 200_000);
        const now = T0 + 1000 + policy.staleWindowMs + 5000;
        assert.equal(addressesOf(stale, now, policy)[0]?.ready, false);
        const back = onAnswer(stale, [rec('192.0.2.1')], [], now, policy);
        assert.equal(reach(stale, back.state, now), 'mirrors');
        assert.deepEqual(addressesOf(back.state, now, policy), [{ address: '192.0.2.1', family: 'IPv4', ready: true }]);
        assert.equal(back.state.lastError, undefined);
        assert.equal(back.state.failures, 0);
        assert.deepEqual(back.state.staleSince, {});
    });

    it('retries with backoff from 1 s, doubling up to 30 s', () => {
        let state = resolved([rec('192.0.2.1')]);
        const delays: number[] = [];
        let now = T0 + 30_000;
        for (let i = 0; i < 7; i++) {
            state = onFailure(state, SERVFAIL, now, policy).state;
            delays.push(state.nextRefreshAt - now);
            now = state.nextRefreshAt;
        }
        assert.deepEqual(delays, [1000, 2000, 4000, 8000, 16_000, 30_000, 30_000]);
    });

    it('never waits longer than the maximum TTL between retries', () => {
        const tight = { ...policy, maxTtlMs: 3000 };
        assert.deepEqual([1, 2, 3, 4].map((n) => retryDelay(n, tight)), [1000, 2000, 3000, 3000]);
    });
});

describe('a gateway name where only one family fails', () => {
    it('keeps the failed family addresses while the other family answers, and retries soon', () => {
        const good = resolved([rec('192.0.2.1')], [rec('2001:db8::1')]);
        const now = T0 + 30_000;
        const t = onAnswer(good, [rec('192.0.2.2', 300)], [], now, policy, { IPv6: SERVFAIL });
        assert.deepEqual(addressesOf(t.state, now, policy), [
            { address: '192.0.2.2', family: 'IPv4', ready: true },
            { address: '2001:db8::1', family: 'IPv6', ready: true },
        ]);
        assert.deepEqual(t.state.lastError, SERVFAIL);
        assert.equal(t.state.nextRefreshAt, now + policy.retryInitialMs);
        assert.equal(t.state.staleSince.IPv6, now);
        assert.equal(t.state.staleSince.IPv4, undefined);
        const late = now + policy.staleWindowMs + 1;
        assert.deepEqual(addressesOf(t.state, late, policy).map((a) => a.ready), [true, false]);
    });
});

describe('what a name can publish', () => {
    it('never publishes a hostname, an empty string or anything but an IP, whatever DNS returns', () => {
        const anyText = fc.oneof(fc.string({ maxLength: 20 }), fc.ipV4(), fc.ipV6(), fc.domain());
        const records = fc.array(fc.record({ address: anyText, ttl: fc.nat(100_000) }), { maxLength: 5 });
        fc.assert(
            fc.property(records, records, (a4, a6) => {
                const state = onAnswer(initialNameState(NAME, T0), a4, a6, T0, policy).state;
                for (const a of addressesOf(state, T0, policy)) assert.ok(isIP(a.address) !== 0, a.address);
            }),
            { numRuns: 200 },
        );
    });
});

describe('a family the server refuses although it never had addresses', () => {
    it('is a note, not a failure: the name answered, no error, no retry backoff', () => {
        const now = T0 + 1000;
        const t = onAnswer(initialNameState(NAME, T0), [rec('192.0.2.1', 60)], [], now, policy, { IPv6: { code: 'REFUSED', message: 'AAAA refused' } });
        assert.equal(t.outcome, 'answered');
        assert.equal(t.state.lastError, undefined);
        assert.equal(t.state.failures, 0);
        assert.deepEqual(t.state.staleSince, {});
        assert.match(t.state.note ?? '', /AAAA query: REFUSED.*never had addresses/);
        assert.equal(t.state.nextRefreshAt, now + Math.min(60_000, policy.maxTtlMs));
    });
});
