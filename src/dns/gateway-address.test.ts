import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { compareAddresses, parseGatewayAddress } from './gateway-address.js';

describe('parsing a Link gateway address', () => {
    it('uses an IPv4 literal as is, with no DNS name to resolve', () => {
        assert.deepEqual(parseGatewayAddress('192.0.2.1'), {
            entries: [{ kind: 'ip', address: '192.0.2.1', family: 'IPv4' }],
            errors: [],
            unpublishedIPs: [],
        });
    });

    it('writes an IPv6 literal in its canonical compressed lowercase form', () => {
        const { entries } = parseGatewayAddress('2001:DB8:0:0::0:1');
        assert.deepEqual(entries, [{ kind: 'ip', address: '2001:db8::1', family: 'IPv6' }]);
    });

    it('unmaps an IPv4-mapped IPv6 literal to IPv4', () => {
        const { entries } = parseGatewayAddress('::ffff:192.0.2.7');
        assert.deepEqual(entries, [{ kind: 'ip', address: '192.0.2.7', family: 'IPv4' }]);
    });

    it('lowercases a hostname and drops the trailing dot of an FQDN', () => {
        const { entries, errors } = parseGatewayAddress('GW-1.Elb.Example.TEST.');
        assert.deepEqual(entries, [{ kind: 'hostname', name: 'gw-1.elb.example.test' }]);
        assert.deepEqual(errors, []);
    });

    it('trims each comma-separated entry and keeps mixed IPs and hostnames in order', () => {
        const { entries, errors } = parseGatewayAddress(' gw.example.test , 192.0.2.1,2001:db8::5 ');
        assert.deepEqual(entries, [
            { kind: 'hostname', name: 'gw.example.test' },
            { kind: 'ip', address: '192.0.2.1', family: 'IPv4' },
            { kind: 'ip', address: '2001:db8::5', family: 'IPv6' },
        ]);
        assert.deepEqual(errors, []);
    });

    it('keeps only the first of entries that repeat the same address or name', () => {
        const { entries } = parseGatewayAddress('gw.example.test,GW.example.test.,192.0.2.1,::ffff:192.0.2.1');
        assert.deepEqual(entries, [
            { kind: 'hostname', name: 'gw.example.test' },
            { kind: 'ip', address: '192.0.2.1', family: 'IPv4' },
        ]);
    });

    it('reports empty entries as errors and never returns an empty entry', () => {
        for (const text of ['', ' ', 'gw.example.test,', ',,192.0.2.1', 'a.example.test, ,b.example.test']) {
            const { entries, errors } = parseGatewayAddress(text);
            assert.ok(errors.some((e) => e.includes('is empty')), `no empty error for ${JSON.stringify(text)}`);
            assert.ok(entries.every((e) => (e.kind === 'ip' ? e.address : e.name) !== ''));
        }
    });

    it('reports garbage, malformed IPs and over-long names as errors, keeping the valid entries', () => {
        const garbage = [
            'gw_1.example.test',
            'http://gw.example.test',
            '-gw.example.test',
            'gw-.example.test',
            'gw..example.test',
            '1.2.3',
            '010.1.2.3',
            '256.1.1.1',
            'fe80::1%eth0',
            'gw.example.test:4143',
            `${'a'.repeat(64)}.example.test`,
            `${'abcdefghi.'.repeat(25)}test`,
        ];
        const { entries, errors } = parseGatewayAddress([...garbage, '192.0.2.1'].join(','));
        assert.deepEqual(entries, [{ kind: 'ip', address: '192.0.2.1', family: 'IPv4' }]);
        assert.equal(errors.length, garbage.length);
        garbage.forEach((item, i) => assert.ok(errors[i]?.includes(JSON.stringify(item)), `${errors[i]} names ${item}`));
    });

    it('rejects literals Kubernetes would refuse as endpoint addresses, naming the reason', () => {
        const { entries, errors } = parseGatewayAddress('127.0.0.1,::1,169.254.1.1,fe80::1,224.0.0.1,ff02::1,0.0.0.0,::');
        assert.deepEqual(entries, []);
        assert.equal(errors.length, 8);
        assert.match(errors[0] ?? '', /loopback/);
        assert.match(errors[2] ?? '', /link-local/);
        assert.match(errors[4] ?? '', /multicast/);
        assert.match(errors[6] ?? '', /unspecified/);
    });

    it('keeps the rejected literals apart, canonical, for the probe (which may go there only if allowed)', () => {
        const { unpublishedIPs } = parseGatewayAddress('127.0.0.1, ::FFFF:169.254.169.254,192.0.2.1,fe80:0::1,127.0.0.1,gw.example.test,1.2.3');
        assert.deepEqual(unpublishedIPs, ['127.0.0.1', '169.254.169.254', 'fe80::1']);
    });

    it('never returns an entry that is empty, an FQDN with a dot at the end, or not lowercase', () => {
        const piece = fc.oneof(
            fc.constantFrom('', ' ', 'gw.example.test.', 'GW.EXAMPLE.test', '192.0.2.1', '::ffff:10.0.0.1', '2001:DB8::1', '..', '1.2.3'),
            fc.string({ maxLength: 12 }),
        );
        fc.assert(
            fc.property(fc.array(piece, { maxLength: 6 }), (pieces) => {
                for (const entry of parseGatewayAddress(pieces.join(',')).entries) {
                    const text = entry.kind === 'ip' ? entry.address : entry.name;
                    assert.notEqual(text, '');
                    assert.ok(!text.endsWith('.'));
                    assert.equal(text, text.toLowerCase());
                }
            }),
            { numRuns: 200 },
        );
    });
});

describe('address order', () => {
    it('puts IPv4 before IPv6 and orders numerically, not as strings', () => {
        const sorted = ['2001:db8::10', '10.0.0.10', '2001:db8::9', '10.0.0.9', '9.0.0.1']
            .map((address) => ({ address, family: address.includes(':') ? ('IPv6' as const) : ('IPv4' as const) }))
            .sort(compareAddresses)
            .map((a) => a.address);
        assert.deepEqual(sorted, ['9.0.0.1', '10.0.0.9', '10.0.0.10', '2001:db8::9', '2001:db8::10']);
    });
});
