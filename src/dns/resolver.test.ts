import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { TestDnsServer } from '../testing/dns-server.js';
import { GatewayResolver, resolutionErrorOf } from './resolver.js';

describe('resolving a gateway name over real DNS (UDP on 127.0.0.1)', () => {
    let server: TestDnsServer;
    let resolver: GatewayResolver;
    before(async () => {
        server = await TestDnsServer.start();
        resolver = new GatewayResolver({ servers: [server.address], timeoutMs: 200, tries: 1 });
    });
    after(async () => {
        resolver.cancel();
        await server.close();
    });

    it('returns every A record of a name with its TTL', async () => {
        server.setRecords('nlb.example.test', {
            A: [
                { address: '192.0.2.1', ttl: 30 },
                { address: '192.0.2.2', ttl: 45 },
                { address: '192.0.2.3', ttl: 60 },
            ],
        });
        const result = await resolver.resolve('nlb.example.test');
        assert.deepEqual(result, {
            v4: [
                { address: '192.0.2.1', ttl: 30 },
                { address: '192.0.2.2', ttl: 45 },
                { address: '192.0.2.3', ttl: 60 },
            ],
            v6: [],
            familyErrors: {},
        });
    });

    it('returns A and AAAA records together for a dual-stack name', async () => {
        server.setRecords('dual.example.test', { A: [{ address: '192.0.2.4', ttl: 20 }], AAAA: [{ address: '2001:db8::4', ttl: 10 }] });
        const result = await resolver.resolve('dual.example.test');
        assert.deepEqual(result.v4, [{ address: '192.0.2.4', ttl: 20 }]);
        assert.deepEqual(result.v6, [{ address: '2001:db8::4', ttl: 10 }]);
        assert.equal(result.error, undefined);
    });

    it('sends one A and one AAAA query per resolution', async () => {
        server.setRecords('count.example.test', { A: [{ address: '192.0.2.5', ttl: 5 }] });
        const before = resolver.queriesSent;
        await resolver.resolve('count.example.test');
        assert.equal(resolver.queriesSent - before, 2);
        assert.equal(server.queryCount('count.example.test', 'A'), 1);
        assert.equal(server.queryCount('count.example.test', 'AAAA'), 1);
    });

    it('maps an unknown name to NXDOMAIN', async () => {
        const result = await resolver.resolve('missing.example.test');
        assert.equal(result.error?.code, 'NXDOMAIN');
        assert.deepEqual([result.v4, result.v6], [[], []]);
    });

    it('maps a name with neither A nor AAAA records to NODATA (an empty answer)', async () => {
        server.setRecords('empty.example.test', {});
        const result = await resolver.resolve('empty.example.test');
        assert.equal(result.error?.code, 'NODATA');
    });

    it('maps SERVFAIL to SERVFAIL', async () => {
        server.setRecords('sick.example.test', { A: [{ address: '192.0.2.6', ttl: 5 }] });
        server.setBehaviour('sick.example.test', 'servfail');
        const result = await resolver.resolve('sick.example.test');
        assert.equal(result.error?.code, 'SERVFAIL');
        assert.match(result.error?.message ?? '', /sick\.example\.test/);
    });

    it('maps a server that never answers to TIMEOUT within the configured timeout', async () => {
        server.setRecords('void.example.test', { A: [{ address: '192.0.2.7', ttl: 5 }] });
        server.setBehaviour('void.example.test', 'blackhole');
        const started = Date.now();
        const result = await resolver.resolve('void.example.test');
        assert.equal(result.error?.code, 'TIMEOUT');
        assert.ok(Date.now() - started < 2000, 'a 200 ms × 1 try timeout does not hang');
    });

    it('reports a hard AAAA failure beside good A records as a family error, not a failed name', async () => {
        server.setRecords('halfsick.example.test', { A: [{ address: '192.0.2.8', ttl: 5 }], AAAA: [{ address: '2001:db8::8', ttl: 5 }] });
        server.setBehaviour('halfsick.example.test', 'servfail', 'AAAA');
        const result = await resolver.resolve('halfsick.example.test');
        assert.equal(result.error, undefined);
        assert.deepEqual(result.v4, [{ address: '192.0.2.8', ttl: 5 }]);
        assert.equal(result.familyErrors.IPv6?.code, 'SERVFAIL');
    });

    it('prefers the hard error to NODATA when no family has records', async () => {
        server.setRecords('v6sick.example.test', { AAAA: [{ address: '2001:db8::9', ttl: 5 }] });
        server.setBehaviour('v6sick.example.test', 'servfail', 'AAAA');
        const result = await resolver.resolve('v6sick.example.test');
        assert.equal(result.error?.code, 'SERVFAIL');
    });
});

describe('naming DNS errors', () => {
    it('maps the c-ares codes to NXDOMAIN, NODATA, SERVFAIL, TIMEOUT, REFUSED, UNREACHABLE and OTHER', () => {
        const codes = ['ENOTFOUND', 'ENODATA', 'ESERVFAIL', 'ETIMEOUT', 'EREFUSED', 'ECONNREFUSED', 'EBADRESP'];
        assert.deepEqual(
            codes.map((code) => resolutionErrorOf(Object.assign(new Error('x'), { code }), 'A gw').code),
            ['NXDOMAIN', 'NODATA', 'SERVFAIL', 'TIMEOUT', 'REFUSED', 'UNREACHABLE', 'OTHER'],
        );
    });

    it('keeps the query and the raw code in the message', () => {
        assert.equal(resolutionErrorOf({ code: 'ESERVFAIL' }, 'AAAA gw.example.test').message, 'AAAA gw.example.test: SERVFAIL (ESERVFAIL)');
        assert.equal(resolutionErrorOf({ code: 'EBADRESP' }, 'A gw').message, 'A gw: EBADRESP');
        assert.equal(resolutionErrorOf('boom', 'A gw').code, 'OTHER');
    });
});
