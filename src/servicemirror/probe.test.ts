// The gateway probe against an HTTP server on 127.0.0.1 (never any other address).
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { parseProbeAddressOverride } from '../net/probe.js';
import { probeOnce, ProbeWorker } from './probe.js';

describe('gateway probe', () => {
    let server: Server;
    let answer = 200;
    let delayMs = 0;
    let port = 0;

    before(async () => {
        server = createServer((_req, res) => setTimeout(() => res.writeHead(answer).end(), delayMs));
        await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
        port = (server.address() as AddressInfo).port;
    });
    after(() => new Promise<void>((done) => server.close(() => done())));

    it('succeeds on a 200 and fails on any other status, a timeout or a refused connection', async () => {
        answer = 200;
        assert.equal((await probeOnce('127.0.0.1', port, '/ready', 1000)).ok, true);
        answer = 503;
        const failed = await probeOnce('127.0.0.1', port, '/ready', 1000);
        assert.equal(failed.ok, false);
        assert.match(failed.detail, /^503 /);
        answer = 200;
        delayMs = 300;
        const slow = await probeOnce('127.0.0.1', port, '/ready', 50);
        delayMs = 0;
        assert.equal(slow.ok, false);
        assert.match(slow.detail, /within 50 ms/);
        const closed = await new Promise<number>((done) => {
            const s = createServer().listen(0, '127.0.0.1', () => {
                const p = (s.address() as AddressInfo).port;
                s.close(() => done(p));
            });
        });
        const refused = await probeOnce('127.0.0.1', closed, '/ready', 1000);
        assert.equal(refused.ok, false);
        assert.match(refused.detail, /ECONNREFUSED/);
    });

    it('reports the gateway dead after failureThreshold failures in a row, and alive at the first success', async () => {
        const changes: boolean[] = [];
        answer = 200;
        const worker = new ProbeWorker({
            probe: { path: '/ready', port, periodMs: 20, timeoutMs: 500, failureThreshold: 3 },
            target: () => '192.0.2.1',
            override: { host: '127.0.0.1' },
            onLiveness: (alive) => changes.push(alive),
            random: () => 0,
        });
        worker.start();
        try {
            await new Promise((r) => setTimeout(r, 100));
            assert.deepEqual(changes, [], 'alive from the start: no transition to report');
            answer = 500;
            await waitFor(() => changes.length === 1);
            assert.deepEqual(changes, [false]);
            assert.equal(worker.alive, false);
            answer = 200;
            await waitFor(() => changes.length === 2);
            assert.deepEqual(changes, [false, true]);
        } finally {
            await worker.stop();
        }
    });

    it('skips a round while the gateway has no address to probe', async () => {
        const changes: boolean[] = [];
        const worker = new ProbeWorker({
            probe: { path: '/ready', port, periodMs: 10, timeoutMs: 100, failureThreshold: 1 },
            target: () => undefined,
            onLiveness: (alive) => changes.push(alive),
        });
        worker.start();
        await new Promise((r) => setTimeout(r, 60));
        await worker.stop();
        assert.deepEqual(changes, []);
        assert.equal(worker.alive, true);
    });

    it('parses the probe address override', () => {
        assert.deepEqual(parseProbeAddressOverride('127.0.0.1'), { host: '127.0.0.1' });
        assert.deepEqual(parseProbeAddressOverride('127.0.0.1:4191'), { host: '127.0.0.1', port: 4191 });
        assert.deepEqual(parseProbeAddressOverride('[::1]:4191'), { host: '::1', port: 4191 });
        assert.deepEqual(parseProbeAddressOverride('::1'), { host: '::1' });
        assert.deepEqual(parseProbeAddressOverride('gateway-proxy.local:80'), { host: 'gateway-proxy.local', port: 80 });
        assert.equal(parseProbeAddressOverride('127.0.0.1:70000'), null);
        assert.equal(parseProbeAddressOverride(''), null);
    });
});

async function waitFor(condition: () => boolean, timeoutMs = 3000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!condition()) {
        if (Date.now() > deadline) assert.fail('timed out');
        await new Promise((r) => setTimeout(r, 10));
    }
}
