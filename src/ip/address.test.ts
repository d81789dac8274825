import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isIP } from 'node:net';
import fc from 'fast-check';
import { canonicalIPv4Bytes, parseIP, sliceAddressProblems, usableEndpointIP, type UnusableReason } from './address.js';

describe('parseIP: one canonical text per address', () => {
    const canonical: Array<[string, string, 'IPv4' | 'IPv6']> = [
        ['192.0.2.1', '192.0.2.1', 'IPv4'],
        ['2001:DB8:0:0::0:1', '2001:db8::1', 'IPv6'],
        ['2001:db8:0:0:1:0:0:1', '2001:db8::1:0:0:1', 'IPv6'], // RFC 5952: the first of two equal runs
        ['2001:db8:0:1:1:1:1:1', '2001:db8:0:1:1:1:1:1', 'IPv6'], // a single zero group stays
        ['::ffff:192.0.2.7', '192.0.2.7', 'IPv4'], // IPv4-mapped means the IPv4 address
        ['::FFFF:c000:0207', '192.0.2.7', 'IPv4'],
        // IPv4-compatible is an IPv6 address (Go, RFC 4291), not a mapped one (ipaddr.js alone says mapped).
        ['::192.0.2.7', '::c000:207', 'IPv6'],
        ['1:2:3:4:5:6:1.2.3.4', '1:2:3:4:5:6:102:304', 'IPv6'],
        ['::ffff:0:1.2.3.4', '::ffff:0:102:304', 'IPv6'],
    ];
    for (const [text, address, family] of canonical) {
        it(`writes ${text} as ${family} ${address}`, () => assert.deepEqual(parseIP(text), { ok: true, address, family }));
    }

    const refused: Array<[string, string]> = [
        ['010.1.2.3', 'is not an IP address'], // leading zeros: octal to libc, decimal to Go
        ['1.2.3', 'is not an IP address'],
        ['1.2.3.256', 'is not an IP address'],
        ['::ffff:01.2.3.4', 'is not an IP address'],
        [' 192.0.2.1', 'is not an IP address'],
        ['١٩٢.0.2.1', 'is not an IP address'], // Arabic-Indic digits
        ['gw.example.test', 'is not an IP address'],
        ['', 'is not an IP address'],
        ['fe80::1%eth0', 'zone id'],
        ['2001:db8::1%1', 'zone id'],
    ];
    for (const [text, why] of refused) {
        it(`refuses ${JSON.stringify(text)}`, () => {
            const parsed = parseIP(text);
            assert.equal(parsed.ok, false);
            assert.ok(!parsed.ok && parsed.why.includes(why), JSON.stringify(parsed));
        });
    }
});

describe('usableEndpointIP: what an adapter may publish', () => {
    const unusable: Array<[string, UnusableReason]> = [
        // ValidateEndpointIP's four classes, in Go's net.IP sense
        ['0.0.0.0', 'unspecified'],
        ['::', 'unspecified'],
        ['127.0.0.1', 'loopback'],
        ['127.255.0.9', 'loopback'],
        ['::1', 'loopback'],
        ['::ffff:127.0.0.1', 'loopback'],
        ['169.254.169.254', 'link-local'],
        ['fe80::abcd', 'link-local'],
        ['febf::1', 'link-local'],
        ['224.0.0.251', 'multicast'],
        ['ff02::1', 'multicast'],
        ['ff12::1', 'multicast'],
        // ours: no multicast at all, no broadcast, no "this network"
        ['239.1.2.3', 'multicast'],
        ['ff05::2', 'multicast'],
        ['255.255.255.255', 'broadcast'],
        ['0.1.2.3', 'unspecified'],
        ['junk', 'invalid'],
        ['fe80::1%eth0', 'invalid'],
    ];
    for (const [text, reason] of unusable) {
        it(`refuses ${text} as ${reason}`, () => {
            const ip = usableEndpointIP(text);
            assert.equal(ip.usable ? 'usable' : ip.reason, reason);
        });
    }

    it('accepts public, private, CGNAT, documentation and ULA unicast addresses, canonically written', () => {
        for (const text of ['192.0.2.1', '10.1.2.3', '172.16.0.1', '8.8.8.8', '100.64.0.1', '2001:db8::1', 'fd00::1', 'fec0::1', '::192.0.2.7']) {
            const ip = usableEndpointIP(text);
            assert.equal(ip.usable, true, text);
        }
        assert.deepEqual(usableEndpointIP('2001:DB8::0:1'), { usable: true, address: '2001:db8::1', family: 'IPv6' });
    });
});

describe('sliceAddressProblems: the apiserver’s rule for one address of a slice', () => {
    const accepted: Array<[string, 'IPv4' | 'IPv6']> = [
        ['192.0.2.1', 'IPv4'],
        ['239.1.2.3', 'IPv4'], // ValidateEndpointIP lets global multicast through
        ['255.255.255.255', 'IPv4'],
        ['0.1.2.3', 'IPv4'], // net.IP.IsUnspecified is 0.0.0.0 only
        ['2001:db8::1', 'IPv6'],
        ['ff05::2', 'IPv6'],
        ['::c000:207', 'IPv6'],
    ];
    for (const [address, type] of accepted) {
        it(`accepts ${address} in an ${type} slice`, () => assert.deepEqual(sliceAddressProblems(address, type), []));
    }
    const rejected: Array<[string, 'IPv4' | 'IPv6', string]> = [
        ['010.1.2.3', 'IPv4', 'not an IP'], // strict: leading zeros
        ['::ffff:192.0.2.1', 'IPv4', 'IPv4-mapped'], // strict: IPv4-mapped, in either type
        ['::ffff:192.0.2.1', 'IPv6', 'IPv4-mapped'],
        ['2001:DB8::1', 'IPv6', 'canonical form'], // IsValidIP: the text must be net.IP.String()
        ['2001:db8:0::1', 'IPv6', 'canonical form'],
        ['::192.0.2.7', 'IPv6', 'canonical form'],
        ['2001:db8::1', 'IPv4', 'must be an IPv4'],
        ['192.0.2.1', 'IPv6', 'must be an IPv6'],
        ['fe80::1%eth0', 'IPv6', 'zone'],
        ['127.0.0.1', 'IPv4', 'loopback'],
        ['0.0.0.0', 'IPv4', 'unspecified'],
        ['169.254.1.1', 'IPv4', 'link-local'],
        ['224.0.0.5', 'IPv4', 'multicast'],
        ['::1', 'IPv6', 'loopback'],
        ['::', 'IPv6', 'unspecified'],
        ['fe80::1', 'IPv6', 'link-local'],
        ['ff32::1', 'IPv6', 'multicast'],
        ['', 'IPv4', 'not an IP'],
        ['gw.example.test', 'IPv4', 'not an IP'],
    ];
    for (const [address, type, why] of rejected) {
        it(`rejects ${JSON.stringify(address)} in an ${type} slice (${why})`, () => {
            const problems = sliceAddressProblems(address, type);
            assert.equal(problems.length, 1, problems.join('; '));
            assert.ok(problems[0]!.includes(why), problems[0]);
        });
    }
});

describe('canonicalIPv4Bytes: the one-pass reading of dotted decimal', () => {
    const octet = fc.oneof(fc.integer({ min: 0, max: 255 }).map(String), fc.stringMatching(/^[0-9]{1,4}$/), fc.constantFrom('', '-1', '+1', ' 1', '1 ', '0x1', '١'));
    const dotted = fc.array(octet, { minLength: 1, maxLength: 6 }).map((parts) => parts.join('.'));
    const anyText = fc.oneof(dotted, fc.string(), fc.stringMatching(/^[0-9.]{0,16}$/));

    it('accepts exactly what net.isIP calls IPv4, and reads the octets as Number does', () => {
        fc.assert(
            fc.property(anyText, (text) => {
                const bytes = canonicalIPv4Bytes(text);
                assert.equal(bytes !== undefined, isIP(text) === 4, text);
                if (bytes) assert.deepEqual(bytes, text.split('.').map(Number));
            }),
            { numRuns: 20_000, seed: 20261201 },
        );
    });

    it('gives an IPv4 slice the same verdict as the full parse, for any text', () => {
        // The full path: what sliceAddressProblems said before the one-pass reading (parse, then the refusals).
        const full = (text: string) => {
            const parsed = parseIP(text);
            return parsed.ok && parsed.family === 'IPv4' && parsed.address === text && isIP(text) === 4;
        };
        fc.assert(
            fc.property(anyText, (text) => {
                if (!full(text)) assert.notEqual(sliceAddressProblems(text, 'IPv4').length, 0, text);
            }),
            { numRuns: 5_000, seed: 20261201 },
        );
        for (const [text, problems] of [
            ['0.0.0.0', ['"0.0.0.0" may not be an unspecified address']],
            ['127.0.0.9', ['"127.0.0.9" may not be a loopback address']],
            ['169.254.1.1', ['"169.254.1.1" may not be a link-local address']],
            ['224.0.0.251', ['"224.0.0.251" may not be a multicast address']],
            ['239.1.1.1', []], // other multicast passes the apiserver's rule (our adapters refuse it)
            ['198.18.0.1', []],
        ] as const) {
            assert.deepEqual(sliceAddressProblems(text, 'IPv4'), problems, text);
        }
    });
});
