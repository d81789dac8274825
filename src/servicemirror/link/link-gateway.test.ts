import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Registry } from 'prom-client';
import type { DnsPolicy, NameState } from '../../dns/name-state.js';
import { newLogger } from '../../kube/log.js';
import { TestDnsServer } from '../../testing/dns-server.js';
import { LinkGateway } from './link-gateway.js';
import { ServiceMirrorMetrics } from './metrics.js';
import { testLink } from '../api/testkit.js';

// Refreshes every 50 ms; a failing name stays published for 5 s.
const policy: DnsPolicy = { minTtlMs: 50, maxTtlMs: 200, staleWindowMs: 5_000, retryInitialMs: 20, retryMaxMs: 100 };
const NAME = 'gw.link-gateway.test';

const newGateway = (changed: (mirrorsChanged: boolean) => void, server: TestDnsServer, remembered?: ReadonlyMap<string, NameState>) =>
    new LinkGateway({
        name: 'east',
        policy,
        dnsServers: [server.address],
        dnsTimeoutMs: 200,
        dnsTries: 1,
        metrics: new ServiceMirrorMetrics(new Registry()),
        logger: newLogger('silent'),
        event: () => undefined,
        recorded: () => [],
        remembered,
        changed,
        resolved: () => undefined,
    });

async function waitFor(what: string, condition: () => boolean, timeoutMs = 5_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!condition()) {
        if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}`);
        await new Promise((resolve) => setTimeout(resolve, 10));
    }
}

describe('LinkGateway over real DNS (UDP on 127.0.0.1)', () => {
    let server: TestDnsServer;
    before(async () => (server = await TestDnsServer.start()));
    after(() => server.close());

    it('tells whether a change reaches the mirrors: a failure within the stale window only changes the status', async () => {
        server.setRecords(NAME, { A: [{ address: '192.0.2.1', ttl: 0 }] });
        const told: boolean[] = [];
        const gateway = newGateway((mirrorsChanged) => told.push(mirrorsChanged), server);
        try {
            await gateway.update(testLink({ gatewayAddress: NAME }));
            await waitFor('the first answer', () => told.length === 1);
            assert.deepEqual(told, [true]);

            server.setBehaviour(NAME, 'servfail');
            await waitFor('the failure', () => told.length === 2);
            server.setBehaviour(NAME, 'normal');
            await waitFor('the recovery', () => told.length === 3);
            assert.deepEqual(told.slice(1), [false, false], 'the same address stayed ready throughout');
            assert.deepEqual(gateway.addresses(['IPv4'], Date.now()), [{ address: '192.0.2.1', family: 'IPv4', ready: true }]);

            server.setRecords(NAME, { A: [{ address: '192.0.2.2', ttl: 0 }] });
            await waitFor('the new address', () => told.length === 4);
            assert.equal(told[3], true);
        } finally {
            await gateway.stop();
        }
    });

    it("hands what it knows of each name at stop to the Link's next gateway, which publishes it while DNS fails", async () => {
        const name = 'memory.link-gateway.test';
        server.setRecords(name, { A: [{ address: '192.0.2.3', ttl: 0 }] });
        const link = testLink({ gatewayAddress: name });
        const first = newGateway(() => undefined, server);
        await first.update(link);
        await waitFor('the first answer', () => first.addresses(['IPv4'], Date.now()).length === 1);
        const memory = await first.stop();
        server.setBehaviour(name, 'servfail');
        const next = newGateway(() => undefined, server, memory);
        try {
            await next.update(link);
            assert.equal(next.settled, true, 'settled by what the first gateway knew, before any answer');
            assert.deepEqual(next.addresses(['IPv4'], Date.now()), [{ address: '192.0.2.3', family: 'IPv4', ready: true }]);
        } finally {
            await next.stop();
        }
    });
});
