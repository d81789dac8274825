import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { linkChecks } from './checks.js';
import { linksText } from './format.js';
import { gatewayLine } from './gateways-report.js';
import { linkReport } from './links-report.js';
import { LINK_NS, mirrorService, mirrorSlice, probeEvent, rawLink } from './testkit.js';

const none = { services: [], slices: [], events: [] };

describe('status: what each Link serves', () => {
    it('shows every gateway name in spec order with what the service mirror resolved, TTL and last error', () => {
        const report = linkReport({
            ...none,
            link: rawLink({
                gatewayAddress: 'GW.example.com., 192.0.2.7, other.example.com',
                resolution: [
                    { name: '192.0.2.7', addresses: ['192.0.2.7'] },
                    { name: 'gw.example.com', addresses: ['192.0.2.1', '2001:db8::1'], ttlSeconds: 30, resolvedAt: '2026-01-01T00:00:00Z' },
                ],
            }),
        });
        assert.deepEqual(report.gatewayNames, [
            { name: 'gw.example.com', addresses: ['192.0.2.1', '2001:db8::1'], ttlSeconds: 30, resolvedAt: '2026-01-01T00:00:00Z' },
            { name: '192.0.2.7', addresses: ['192.0.2.7'] },
            { name: 'other.example.com', addresses: [] },
        ]);
        assert.equal(report.gatewayPort, 4143);
    });

    it('reads the probe state from the latest GatewayDown/GatewayAlive/GatewayProbeRefused/GatewayProbeTarget Event of this Link', () => {
        const cases: Array<[string, ReturnType<typeof probeEvent>[], string, string | undefined]> = [
            ['no Event: alive, as Linkerd starts every gateway', [], 'alive', undefined],
            ['down, then alive', [probeEvent('east', 'GatewayDown', '2026-01-01T00:00:01Z'), probeEvent('east', 'GatewayAlive', '2026-01-01T00:00:05Z')], 'alive', '2026-01-01T00:00:05Z'],
            ['alive, then down', [probeEvent('east', 'GatewayAlive', '2026-01-01T00:00:01Z'), probeEvent('east', 'GatewayDown', '2026-01-01T00:00:05Z')], 'down', '2026-01-01T00:00:05Z'],
            ['both in one second: the later write wins', [probeEvent('east', 'GatewayDown', '2026-01-01T00:00:01Z', '20'), probeEvent('east', 'GatewayAlive', '2026-01-01T00:00:01Z', '9')], 'down', '2026-01-01T00:00:01Z'],
            ['every address refused: not probed', [probeEvent('east', 'GatewayDown', '2026-01-01T00:00:01Z'), probeEvent('east', 'GatewayProbeRefused', '2026-01-01T00:00:05Z')], 'not-probed', '2026-01-01T00:00:05Z'],
            ['refused, then probed again: alive', [probeEvent('east', 'GatewayProbeRefused', '2026-01-01T00:00:01Z'), probeEvent('east', 'GatewayProbeTarget', '2026-01-01T00:00:05Z')], 'alive', undefined],
            ['down, refused, probed again: down until a probe passes', [probeEvent('east', 'GatewayDown', '2026-01-01T00:00:01Z'), probeEvent('east', 'GatewayProbeRefused', '2026-01-01T00:00:03Z'), probeEvent('east', 'GatewayProbeTarget', '2026-01-01T00:00:05Z')], 'down', '2026-01-01T00:00:01Z'],
            ['down, then a new target: still down', [probeEvent('east', 'GatewayDown', '2026-01-01T00:00:01Z'), probeEvent('east', 'GatewayProbeTarget', '2026-01-01T00:00:05Z')], 'down', '2026-01-01T00:00:01Z'],
            ['Events of another Link, or of a deleted Link of the same name, do not count', [probeEvent('west', 'GatewayDown', '2026-01-01T00:00:01Z'), probeEvent('east', 'GatewayDown', '2026-01-01T00:00:01Z', '1', 'uid-old')], 'alive', undefined],
        ];
        for (const [what, events, state, since] of cases) {
            const report = linkReport({ ...none, link: rawLink(), events });
            assert.equal(report.probe.state, state, what);
            assert.equal(report.probe.since, since, what);
        }
    });

    it("shows whether the service mirror can read the remote cluster, from its RemoteReadable condition", () => {
        const unreadable = linkReport({ ...none, link: rawLink({ remote: { readable: false, reason: 'Unauthorized', message: 'token refused' } }) });
        assert.deepEqual(unreadable.remote, { readable: false, reason: 'Unauthorized', message: 'token refused', since: '2026-01-01T00:00:00Z' });
        assert.equal(linkReport({ ...none, link: rawLink({ remote: { readable: true, reason: 'Synced', message: '' } }) }).remote?.readable, true);
        assert.equal(linkReport({ ...none, link: rawLink() }).remote, undefined);
    });

    it('says a Link without probe path is not probed', () => {
        assert.equal(linkReport({ ...none, link: rawLink({ probePath: '' }) }).probe.state, 'not-probed');
    });

    it('lists each remote Service of the status with its mirror and ready endpoints, and mirrors the status lacks', () => {
        const report = linkReport({
            link: rawLink({ mirrored: [{ ns: 'shop', name: 'web', ok: true }, { ns: 'shop', name: 'bad', ok: false, message: 'the Service exposes no ports' }] }),
            services: [
                mirrorService('shop', 'web-east', 'east'),
                mirrorService('shop', 'old-east', 'east', null),
                mirrorService('shop', 'web-west', 'west'),
                mirrorService('shop', 'api-east', 'east', 'elsewhere/east'),
            ],
            slices: [mirrorSlice('shop', 'web-east-1', 'web-east', [true, false]), mirrorSlice('shop', 'web-west-1', 'web-west', [true])],
            events: [],
        });
        assert.deepEqual(report.mirrors, [
            { remote: 'shop/bad', mirrored: { status: 'False', reason: 'InvalidService', message: 'the Service exposes no ports' }, endpoints: 0, ready: 0 },
            { remote: 'shop/old', local: 'shop/old-east', endpoints: 0, ready: 0 },
            { remote: 'shop/web', local: 'shop/web-east', mirrored: { status: 'True', reason: 'Mirrored', message: '' }, endpoints: 2, ready: 1 },
        ]);
    });

    it('counts the mirrors from status.mirrorSummary, and takes a mirror the status does not list as mirrored once it lists every not-mirrored one', () => {
        const bad = { ns: 'shop', name: 'bad', ok: false, message: 'the Service exposes no ports' };
        const summary = (notListed: number) => ({ services: 3 + notListed, mirrored: 2, notMirrored: 1 + notListed, notMirroredByReason: [{ reason: 'InvalidService', services: 1 + notListed }], notListed });
        const services = [mirrorService('shop', 'web-east', 'east'), mirrorService('shop', 'api-east', 'east')];
        const report = linkReport({ ...none, services, link: rawLink({ mirrored: [bad], summary: summary(0) }) });
        assert.deepEqual(report.summary, summary(0));
        assert.deepEqual(
            report.mirrors.map((m) => [m.remote, m.local, m.mirrored?.status, m.mirrored?.message]),
            [
                ['shop/api', 'shop/api-east', 'True', 'mirrored as shop/api-east'],
                ['shop/bad', undefined, 'False', 'the Service exposes no ports'],
                ['shop/web', 'shop/web-east', 'True', 'mirrored as shop/web-east'],
            ],
        );
        assert.equal(gatewayLine(report).mirroredServices, 2);
        const partial = linkReport({ ...none, services, link: rawLink({ mirrored: [bad], summary: summary(4) }) });
        assert.deepEqual(partial.mirrors.map((m) => m.mirrored?.status), [undefined, 'False', undefined], 'one not listed may be any of them');
        assert.match(linksText([partial], LINK_NS), /2 of 7 exported remote Services mirrored; not mirrored: 5 InvalidService \(4 not listed below: see the Link's Events\)/);
        assert.deepEqual(linkChecks(partial, undefined).at(-1), {
            category: `Link ${LINK_NS}/east`,
            description: 'every exported remote Service is mirrored',
            status: 'warn',
            detail: '5 of 7 not mirrored (5 InvalidService)',
            hint: "`mesh-endpoints status` lists them (status.mirrorServices), and the Link's Warning Events say why",
        });
    });

    it('reports an invalid Link with the reason the service mirror refuses it', () => {
        const link = rawLink();
        (link.spec as Record<string, unknown>).gatewayPort = 'http';
        const report = linkReport({ ...none, link });
        assert.equal(report.name, 'east');
        assert.equal(report.namespace, LINK_NS);
        assert.match(report.invalid!, /gatewayPort "http" is not a port number/);
    });
});
