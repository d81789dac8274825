import assert from 'node:assert/strict';
import { after, afterEach, before, describe, it } from 'node:test';
import { TestDnsServer } from '../testing/dns-server.js';
import { GatewayWatcher } from './gateway-watcher.js';
import { addressesOf, type DnsPolicy, type NameState } from './name-state.js';
import { GatewayResolver } from './resolver.js';

// Tiny TTL bounds so refreshes happen within a test's lifetime.
const basePolicy: DnsPolicy = { minTtlMs: 50, maxTtlMs: 200, staleWindowMs: 300, retryInitialMs: 20, retryMaxMs: 100 };

async function waitFor(what: string, condition: () => boolean, timeoutMs = 3000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!condition()) {
        if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}`);
        await new Promise((resolve) => setTimeout(resolve, 10));
    }
}

describe('watching gateway names over real DNS (UDP on 127.0.0.1)', () => {
    let server: TestDnsServer;
    let resolver: GatewayResolver;
    let watcher: GatewayWatcher | undefined;
    let changes: Array<{ name: string; state: NameState }>;

    before(async () => {
        server = await TestDnsServer.start();
        resolver = new GatewayResolver({ servers: [server.address], timeoutMs: 200, tries: 1 });
    });
    after(async () => {
        resolver.cancel();
        await server.close();
    });
    afterEach(() => {
        watcher?.stop();
        policy = basePolicy;
    });

    let policy = basePolicy;

    function watch(...names: string[]): GatewayWatcher {
        changes = [];
        watcher = new GatewayWatcher({ resolver, policy, onChange: (name, state) => changes.push({ name, state }) });
        watcher.setNames(names);
        return watcher;
    }

    const published = (i: number) =>
        addressesOf(changes[i]!.state, Date.now(), policy).map((a) => `${a.address} ${a.ready ? 'ready' : 'not-ready'}`);

    it('re-resolves when the clamped TTL runs out and reports only real changes', async () => {
        server.setRecords('ttl.example.test', { A: [{ address: '192.0.2.1', ttl: 0 }, { address: '192.0.2.2', ttl: 0 }] });
        watch('ttl.example.test');
        await waitFor('the first answer', () => changes.length === 1);
        assert.deepEqual(published(0), ['192.0.2.1 ready', '192.0.2.2 ready']);
        await waitFor('three refreshes', () => server.queryCount('ttl.example.test', 'A') >= 4);
        assert.equal(changes.length, 1, 'the same answer again is no change');
        server.setRecords('ttl.example.test', { A: [{ address: '192.0.2.3', ttl: 0 }], AAAA: [{ address: '2001:db8::3', ttl: 0 }] });
        await waitFor('the new answer', () => changes.length === 2);
        assert.deepEqual(published(1), ['192.0.2.3 ready', '2001:db8::3 ready']);
    });

    it('waits at least the minimum TTL between refreshes of a name with TTL 0', async () => {
        server.setRecords('floor.example.test', { A: [{ address: '192.0.2.4', ttl: 0 }] });
        const started = Date.now();
        watch('floor.example.test');
        await waitFor('three refreshes', () => server.queryCount('floor.example.test', 'A') >= 4);
        const elapsed = Date.now() - started;
        assert.ok(elapsed >= 3 * policy.minTtlMs, `3 refreshes took ${elapsed} ms, less than 3 × ${policy.minTtlMs} ms`);
    });

    it('keeps the last good addresses through SERVFAIL, marks them not ready after the stale window, and recovers', async () => {
        server.setRecords('outage.example.test', { A: [{ address: '192.0.2.5', ttl: 0 }] });
        watch('outage.example.test');
        await waitFor('the first answer', () => changes.length === 1);
        server.setBehaviour('outage.example.test', 'servfail');
        await waitFor('the error', () => changes.length === 2);
        assert.equal(changes[1]!.state.lastError?.code, 'SERVFAIL');
        assert.deepEqual(published(1), ['192.0.2.5 ready']);
        await waitFor('readiness lost', () => changes.length === 3);
        assert.deepEqual(published(2), ['192.0.2.5 not-ready']);
        server.setBehaviour('outage.example.test', 'normal');
        await waitFor('recovery', () => changes.length === 4);
        assert.deepEqual(published(3), ['192.0.2.5 ready']);
        assert.equal(changes[3]!.state.lastError, undefined);
    });

    it('gives a name that is NXDOMAIN at first its addresses as soon as it resolves', async () => {
        watch('later.example.test');
        await waitFor('the NXDOMAIN', () => changes.length === 1);
        assert.equal(changes[0]!.state.lastError?.code, 'NXDOMAIN');
        assert.deepEqual(changes[0]!.state.addresses, []);
        server.setRecords('later.example.test', { AAAA: [{ address: '2001:db8::6', ttl: 0 }] });
        await waitFor('the first answer', () => changes.length === 2);
        assert.deepEqual(published(1), ['2001:db8::6 ready']);
    });

    it('keeps the addresses of a name whose server stops answering (timeout), retrying with backoff', async () => {
        // The window counts from when the last answer expired, so it must outlast a timed-out query.
        policy = { ...basePolicy, staleWindowMs: 5000 };
        server.setRecords('silent.example.test', { A: [{ address: '192.0.2.7', ttl: 0 }] });
        watch('silent.example.test');
        await waitFor('the first answer', () => changes.length === 1);
        server.setBehaviour('silent.example.test', 'blackhole');
        await waitFor('the timeout', () => changes.length === 2);
        assert.equal(changes[1]!.state.lastError?.code, 'TIMEOUT');
        assert.deepEqual(published(1), ['192.0.2.7 ready']);
        server.setBehaviour('silent.example.test', 'normal');
        await waitFor('recovery', () => changes.length === 3);
        assert.equal(changes[2]!.state.lastError, undefined);
    });
});
