import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Registry } from 'prom-client';
import type { Clock } from '../time/clock.js';
import { GatewayWatcher } from './gateway-watcher.js';
import { GatewayDnsMetrics } from './metrics.js';
import { addressesOf, DEFAULT_DNS_POLICY, type NameResolution, type NameState } from './name-state.js';
import type { NameResolver } from './resolver.js';

const T0 = Date.UTC(2026, 0, 1);
const policy = DEFAULT_DNS_POLICY;

class FakeClock implements Clock {
    t = T0;
    private timers: Array<{ at: number; fn: () => void }> = [];

    now(): number {
        return this.t;
    }

    schedule(fn: () => void, ms: number): () => void {
        const timer = { at: this.t + ms, fn };
        this.timers.push(timer);
        return () => {
            this.timers = this.timers.filter((t) => t !== timer);
        };
    }

    get pending(): number {
        return this.timers.length;
    }

    /** Fires every timer due within `ms`, in order, letting the resolutions they start finish. */
    async advance(ms: number): Promise<void> {
        const end = this.t + ms;
        for (;;) {
            const next = [...this.timers].sort((a, b) => a.at - b.at)[0];
            if (next === undefined || next.at > end) break;
            this.timers = this.timers.filter((t) => t !== next);
            this.t = next.at;
            next.fn();
            await settle();
        }
        this.t = end;
    }
}

const settle = () => new Promise((resolve) => setImmediate(resolve));

const answer = (v4: string[], ttl = 30): NameResolution => ({ v4: v4.map((address) => ({ address, ttl })), v6: [], familyErrors: {} });
const failure = (code: 'SERVFAIL' | 'NXDOMAIN' | 'TIMEOUT'): NameResolution => ({
    v4: [],
    v6: [],
    familyErrors: {},
    error: { code, message: code },
});

class ScriptedResolver implements NameResolver {
    readonly replies = new Map<string, NameResolution>();
    calls: string[] = [];
    hold?: Promise<void>;

    async resolve(name: string): Promise<NameResolution> {
        this.calls.push(name);
        if (this.hold) await this.hold;
        return this.replies.get(name) ?? failure('NXDOMAIN');
    }
}

function setup(options: { policy?: typeof policy; registry?: Registry } = {}) {
    const clock = new FakeClock();
    const resolver = new ScriptedResolver();
    const changes: Array<{ name: string; state: NameState; reach: string }> = [];
    const metrics = options.registry ? new GatewayDnsMetrics(options.registry, () => clock.now()).forTarget('east') : undefined;
    const watcher = new GatewayWatcher({
        resolver,
        clock,
        policy: options.policy ?? policy,
        onChange: (name, state, { reach }) => changes.push({ name, state, reach }),
        ...(metrics ? { metrics } : {}),
    });
    const readiness = (i: number) => {
        const change = changes[i];
        assert.ok(change, `change ${i} exists`);
        return addressesOf(change.state, clock.now(), options.policy ?? policy).map((a) => `${a.address} ${a.ready}`);
    };
    return { clock, resolver, changes, watcher, readiness };
}

describe('watching gateway names (fake clock)', () => {
    it('resolves a new name at once and reports its first answer', async () => {
        const { resolver, changes, watcher } = setup();
        resolver.replies.set('gw.example.test', answer(['192.0.2.1']));
        watcher.setNames(['GW.example.test.']);
        await settle();
        assert.deepEqual(resolver.calls, ['gw.example.test']);
        assert.equal(changes.length, 1);
        assert.deepEqual(changes[0]?.state.addresses, [{ address: '192.0.2.1', family: 'IPv4' }]);
    });

    it('re-resolves when the TTL runs out and stays quiet while the answer is the same', async () => {
        const { clock, resolver, changes, watcher } = setup();
        resolver.replies.set('gw.example.test', answer(['192.0.2.1'], 30));
        watcher.setNames(['gw.example.test']);
        await settle();
        await clock.advance(29_999);
        assert.equal(resolver.calls.length, 1);
        await clock.advance(1);
        assert.equal(resolver.calls.length, 2);
        await clock.advance(90_000);
        assert.equal(resolver.calls.length, 5);
        assert.equal(changes.length, 1);
        resolver.replies.set('gw.example.test', answer(['192.0.2.2'], 30));
        await clock.advance(30_000);
        assert.equal(changes.length, 2);
        assert.deepEqual(changes[1]?.state.addresses.map((a) => a.address), ['192.0.2.2']);
        assert.equal(changes[1]?.reach, 'mirrors');
    });

    it('reports a failure as an error change, then the loss of readiness when the stale window ends', async () => {
        const slowRetry = { ...policy, retryInitialMs: 120_000, retryMaxMs: 120_000 };
        const { clock, resolver, changes, watcher, readiness } = setup({ policy: slowRetry });
        resolver.replies.set('gw.example.test', answer(['192.0.2.1'], 30));
        watcher.setNames(['gw.example.test']);
        await settle();
        resolver.replies.set('gw.example.test', failure('SERVFAIL'));
        await clock.advance(30_000);
        assert.equal(changes.length, 2, 'the new error kind is reported');
        assert.deepEqual(readiness(1), ['192.0.2.1 true']);
        assert.equal(changes[1]?.state.lastError?.code, 'SERVFAIL');
        await clock.advance(slowRetry.staleWindowMs + 1);
        // Retries at +120 s and +240 s changed nothing; the flip at +300 s came with no query.
        assert.equal(resolver.calls.length, 4);
        assert.equal(changes.length, 3);
        assert.equal(clock.t, T0 + 30_000 + slowRetry.staleWindowMs + 1);
        assert.deepEqual(readiness(2), ['192.0.2.1 false']);
        resolver.replies.set('gw.example.test', answer(['192.0.2.1'], 30));
        await clock.advance(120_000);
        assert.equal(changes.length, 4);
        assert.deepEqual(readiness(3), ['192.0.2.1 true']);
        assert.equal(changes[3]?.state.lastError, undefined);
        // Only the failure within the stale window spared the mirrors.
        assert.deepEqual(changes.map((c) => c.reach), ['mirrors', 'status', 'mirrors', 'mirrors']);
    });

    it('reports a change of error kind even when no address changes', async () => {
        const { clock, resolver, changes, watcher } = setup();
        watcher.setNames(['gw.example.test']);
        await settle();
        assert.equal(changes[0]?.state.lastError?.code, 'NXDOMAIN');
        await clock.advance(1000);
        assert.equal(changes.length, 1, 'the same error again is no change');
        resolver.replies.set('gw.example.test', failure('TIMEOUT'));
        await clock.advance(2000);
        assert.equal(changes.length, 2);
        assert.equal(changes[1]?.state.lastError?.code, 'TIMEOUT');
        assert.deepEqual(changes[1]?.state.addresses, []);
    });

    it('gives a name that failed from the start its addresses as soon as it resolves', async () => {
        const { clock, resolver, changes, watcher } = setup();
        watcher.setNames(['late.example.test']);
        await settle();
        assert.deepEqual(changes[0]?.state.addresses, []);
        resolver.replies.set('late.example.test', answer(['192.0.2.9']));
        await clock.advance(policy.retryInitialMs);
        assert.deepEqual(changes.at(-1)?.state.addresses, [{ address: '192.0.2.9', family: 'IPv4' }]);
    });

    it('leaves the other names of the Link alone when one fails', async () => {
        const { clock, resolver, changes, watcher } = setup();
        resolver.replies.set('a.example.test', answer(['192.0.2.1'], 30));
        resolver.replies.set('b.example.test', answer(['192.0.2.2'], 30));
        watcher.setNames(['a.example.test', 'b.example.test']);
        await settle();
        resolver.replies.set('b.example.test', failure('SERVFAIL'));
        await clock.advance(30_000 + policy.staleWindowMs + 1);
        assert.deepEqual(addressesOf(watcher.stateOf('a.example.test')!, clock.t, policy)[0]?.ready, true);
        assert.deepEqual(addressesOf(watcher.stateOf('b.example.test')!, clock.t, policy)[0]?.ready, false);
        assert.ok(changes.filter((c) => c.name === 'a.example.test').length === 1);
    });

    it('stops resolving a name removed from the Link and ignores its late answer', async () => {
        const { clock, resolver, changes, watcher } = setup();
        resolver.replies.set('gw.example.test', answer(['192.0.2.1'], 30));
        let release = () => {};
        resolver.hold = new Promise((resolve) => (release = resolve));
        watcher.setNames(['gw.example.test']);
        watcher.setNames([]);
        release();
        await settle();
        await clock.advance(120_000);
        assert.equal(changes.length, 0);
        assert.equal(resolver.calls.length, 1);
        assert.equal(watcher.stateOf('gw.example.test'), undefined);
    });

    it('shares one resolution among concurrent refreshNow calls', async () => {
        const { resolver, watcher } = setup();
        resolver.replies.set('gw.example.test', answer(['192.0.2.1']));
        let release = () => {};
        resolver.hold = new Promise((resolve) => (release = resolve));
        watcher.setNames(['gw.example.test']);
        const both = Promise.all([watcher.refreshNow('gw.example.test'), watcher.refreshNow('gw.example.test')]);
        release();
        await both;
        assert.equal(resolver.calls.length, 1);
        resolver.hold = undefined;
        await watcher.refreshNow('gw.example.test');
        assert.equal(resolver.calls.length, 2);
    });

    it('cancels every timer on stop', async () => {
        const { clock, resolver, watcher } = setup();
        resolver.replies.set('gw.example.test', answer(['192.0.2.1'], 30));
        watcher.setNames(['gw.example.test']);
        await settle();
        assert.equal(clock.pending, 1);
        watcher.stop();
        assert.equal(clock.pending, 0);
        await clock.advance(60_000);
        assert.equal(resolver.calls.length, 1);
    });

    it('hands an error thrown by onChange to onError and keeps watching', async () => {
        const clock = new FakeClock();
        const resolver = new ScriptedResolver();
        resolver.replies.set('gw.example.test', answer(['192.0.2.1'], 30));
        const errors: string[] = [];
        const watcher = new GatewayWatcher({
            resolver,
            clock,
            onChange: () => {
                throw new Error('status write failed');
            },
            onError: (name, error) => errors.push(`${name}: ${(error as Error).message}`),
        });
        watcher.setNames(['gw.example.test']);
        await settle();
        assert.deepEqual(errors, ['gw.example.test: status write failed']);
        await clock.advance(30_000);
        assert.equal(resolver.calls.length, 2);
    });

    it('exports resolutions, dropped answers, addresses and seconds until refresh to the given registry', async () => {
        const registry = new Registry();
        const { clock, resolver, watcher } = setup({ registry });
        resolver.replies.set('gw.example.test', answer(['192.0.2.1', '127.0.0.1'], 30));
        watcher.setNames(['gw.example.test']);
        await settle();
        await clock.advance(10_000);
        const text = await registry.metrics();
        assert.match(text, /gateway_dns_resolutions_total\{target_cluster_name="east",result="success"\} 1/);
        assert.match(text, /gateway_dns_dropped_answers_total\{target_cluster_name="east",reason="loopback"\} 1/);
        assert.match(text, /gateway_dns_addresses\{target_cluster_name="east",name="gw.example.test",ready="true"\} 1/);
        assert.match(text, /gateway_dns_seconds_until_refresh\{target_cluster_name="east",name="gw.example.test"\} 20/);
        watcher.setNames([]);
        const after = await registry.metrics();
        assert.doesNotMatch(after, /name="gw.example.test"/);
    });
});
