import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { gatewayLine, probeTarget } from './gateways-report.js';
import { linkReport } from './links-report.js';
import { mirrorService, probeEvent, rawLink } from './testkit.js';

const report = (link = rawLink({ resolution: [{ name: 'gw.example.com', addresses: ['192.0.2.1', '192.0.2.2'] }], mirrored: [{ ns: 'a', name: 'web', ok: true }, { ns: 'a', name: 'bad', ok: false }] }), events = [probeEvent('east', 'GatewayDown', '2026-01-01T00:00:01Z')]) =>
    linkReport({ link, services: [mirrorService('a', 'web-east', 'east')], slices: [], events });

describe('gateways: one line per Link', () => {
    it("shows the service mirror's last probe report, the addresses and the Services mirrored now", () => {
        assert.deepEqual(gatewayLine(report()), {
            link: 'east',
            cluster: 'east',
            alive: 'down',
            detail: 'GatewayDown message',
            addresses: ['192.0.2.1', '192.0.2.2'],
            mirroredServices: 1,
        });
    });

    it('a probe of our own decides alive and gives the latency', () => {
        const line = gatewayLine(report(), { ok: true, latencyMs: 12.4, detail: '200 OK from 127.0.0.1:4191' });
        assert.equal(line.alive, 'alive');
        assert.equal(line.latencyMs, 12);
        assert.equal(line.detail, '200 OK from 127.0.0.1:4191');
    });

    it("probes the Link's probe path and port on its first address, or on the override", () => {
        assert.deepEqual(probeTarget(report()), { host: '192.0.2.1', port: 4191, path: '/ready', timeoutMs: 30_000 });
        assert.deepEqual(probeTarget(report(), { host: '127.0.0.1', port: 8080 }), { host: '127.0.0.1', port: 8080, path: '/ready', timeoutMs: 30_000 });
        assert.deepEqual(probeTarget(report(), { host: '::1' }), { host: '::1', port: 4191, path: '/ready', timeoutMs: 30_000 });
    });

    it('does not probe a Link without probe path, nor one with no address yet', () => {
        assert.equal(probeTarget(report(rawLink({ probePath: '' }))), undefined);
        assert.equal(probeTarget(report(rawLink({ resolution: [] }))), undefined);
        assert.equal(gatewayLine(report(rawLink({ probePath: '' }), [])).alive, 'not-probed');
    });
});
