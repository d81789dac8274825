// The gateway probe against an HTTP server on 127.0.0.1 (never any other address).
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { parseProbeAllowCidrs } from '../../ip/probe-target.js';
import { parseProbeAddressOverride, type ProbeResult } from '../../net/probe.js';
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
            targets: () => ['192.0.2.1'],
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
            targets: () => [],
            onLiveness: (alive) => changes.push(alive),
        });
        worker.start();
        await new Promise((r) => setTimeout(r, 60));
        await worker.stop();
        assert.deepEqual(changes, []);
        assert.equal(worker.alive, true);
    });

    it('never sends a probe to loopback, link-local or cloud metadata gateway addresses: the gateway is not probed, and alive', async () => {
        const sent: string[] = [];
        const refusals: Array<string | undefined> = [];
        const send = async (host: string): Promise<ProbeResult> => (sent.push(host), { ok: false, latencyMs: 0, detail: 'down' });
        const worker = new ProbeWorker({
            probe: { path: '/ready', port, periodMs: 10, timeoutMs: 100, failureThreshold: 1 },
            targets: () => ['169.254.169.254', 'fd00:ec2::254', '127.0.0.1', 'fe80::1', '0.0.0.0'],
            send,
            onLiveness: () => assert.fail('no liveness without a probe'),
            onTarget: (target) => refusals.push('refused' in target ? target.refused : undefined),
        });
        worker.start();
        await waitFor(() => refusals.length >= 3);
        await worker.stop();
        assert.deepEqual(sent, []);
        assert.equal(worker.alive, true);
        assert.equal(new Set(refusals).size, 1, 'the same reason every round');
        assert.match(refusals[0]!, /^169\.254\.169\.254 is a link-local address, fd00:ec2::254 is a cloud metadata address, 127\.0\.0\.1 is a loopback address, fe80::1 is a link-local address, 0\.0\.0\.0 is an unspecified address: probes never go to /);
    });

    it('probes the first address it may, and a loopback gateway only when --probe-allow-cidrs lists it', async () => {
        const sent: string[] = [];
        answer = 200;
        const recording = (host: string, p: number, path: string, timeoutMs: number) => (sent.push(host), probeOnce(host, p, path, timeoutMs));
        const probe = { path: '/ready', port, periodMs: 10, timeoutMs: 500, failureThreshold: 1 };
        const first = new ProbeWorker({ probe, targets: () => ['169.254.169.254', '192.0.2.1'], send: async (host) => (sent.push(host), { ok: true, latencyMs: 0, detail: 'ok' }), onLiveness: () => {} });
        first.start();
        await waitFor(() => sent.length > 0);
        await first.stop();
        assert.deepEqual([...new Set(sent)], ['192.0.2.1']);

        sent.length = 0;
        const results: ProbeResult[] = [];
        const allow = parseProbeAllowCidrs('127.0.0.0/8');
        assert.ok(allow.ok);
        const allowed = new ProbeWorker({ probe, targets: () => ['127.0.0.1'], allowCidrs: allow.cidrs, send: recording, onResult: (r) => results.push(r), onLiveness: () => {}, onTarget: (target) => assert.deepEqual(target, { address: '127.0.0.1' }) });
        allowed.start();
        await waitFor(() => results.length > 0);
        await allowed.stop();
        assert.deepEqual([...new Set(sent)], ['127.0.0.1']);
        assert.equal(results[0]?.detail, `200 OK from 127.0.0.1:${port}`);
    });

    it('a gateway that was down and whose addresses become refused is alive again (not probed)', async () => {
        let targets = ['192.0.2.1'];
        const changes: boolean[] = [];
        let refused = 0;
        const worker = new ProbeWorker({
            probe: { path: '/ready', port, periodMs: 10, timeoutMs: 100, failureThreshold: 1 },
            targets: () => targets,
            send: async () => ({ ok: false, latencyMs: 0, detail: 'down' }),
            onLiveness: (alive) => changes.push(alive),
            onTarget: (target) => void ('refused' in target && refused++),
        });
        worker.start();
        await waitFor(() => changes.length === 1);
        assert.equal(worker.alive, false);
        targets = ['169.254.169.254'];
        await waitFor(() => refused > 0);
        assert.equal(worker.alive, true);
        await worker.stop();
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
