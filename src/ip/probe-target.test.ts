import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseProbeAllowCidrs, probeTarget, refusedTargets, type ProbeCidr, type ProbeRefusal } from './probe-target.js';

function cidrs(text: string): ProbeCidr[] {
    const parsed = parseProbeAllowCidrs(text);
    assert.ok(parsed.ok, `${text} parses`);
    return parsed.cidrs;
}

describe('probeTarget: where a probe may connect', () => {
    const refused: Array<[string, ProbeRefusal]> = [
        ['127.0.0.1', 'loopback'],
        ['127.0.0.53', 'loopback'],
        ['::1', 'loopback'],
        ['::ffff:127.0.0.1', 'loopback'], // IPv4-mapped is the IPv4 address
        ['169.254.169.254', 'link-local'], // AWS, GCP, Azure, OpenStack metadata
        ['169.254.170.2', 'link-local'], // ECS task metadata
        ['fe80::1', 'link-local'],
        ['febf::1', 'link-local'],
        ['fd00:ec2::254', 'metadata'], // AWS IMDS over IPv6
        ['100.100.100.200', 'metadata'], // Alibaba Cloud
        ['0.0.0.0', 'unspecified'],
        ['0.1.2.3', 'unspecified'],
        ['::', 'unspecified'],
        ['224.0.0.1', 'multicast'],
        ['ff02::1', 'multicast'],
        ['255.255.255.255', 'broadcast'],
        ['64:ff9b::a9fe:a9fe', 'link-local'], // 169.254.169.254 through NAT64
        ['64:ff9b::7f00:1', 'loopback'],
        ['localhost', 'invalid'], // never resolved here
        ['010.0.0.1', 'invalid'],
        ['fe80::1%eth0', 'invalid'],
    ];
    for (const [address, reason] of refused) {
        it(`refuses ${address} (${reason})`, () => {
            const verdict = probeTarget(address);
            assert.equal(verdict.allowed, false);
            assert.equal(!verdict.allowed && verdict.reason, reason);
        });
    }

    for (const address of ['192.0.2.10', '10.1.2.3', '100.64.0.1', '2001:db8::1', 'fd00::1', 'fd00:ec2::253', '64:ff9b::c000:20a', '169.253.255.255', '169.255.0.0']) {
        it(`allows ${address}`, () => assert.deepEqual(probeTarget(address), { allowed: true, address }));
    }

    it('gives the canonical address it allows', () => assert.deepEqual(probeTarget('2001:DB8:0::1'), { allowed: true, address: '2001:db8::1' }));

    it('says why, and how to allow it', () => {
        const verdict = probeTarget('169.254.169.254');
        assert.equal(!verdict.allowed && verdict.why, '169.254.169.254 is a link-local address');
        assert.equal(
            refusedTargets([verdict, probeTarget('127.0.0.1')]),
            '169.254.169.254 is a link-local address, 127.0.0.1 is a loopback address: probes never go to loopback, link-local, unspecified, multicast or cloud metadata addresses unless --probe-allow-cidrs lists them',
        );
    });

    it('allows what --probe-allow-cidrs lists, and only that', () => {
        const allow = cidrs('127.0.0.0/8, fd00:ec2::254/128');
        assert.deepEqual(probeTarget('127.0.0.5', allow), { allowed: true, address: '127.0.0.5' });
        assert.deepEqual(probeTarget('::ffff:127.0.0.5', allow), { allowed: true, address: '127.0.0.5' });
        assert.deepEqual(probeTarget('fd00:ec2::254', allow), { allowed: true, address: 'fd00:ec2::254' });
        assert.equal(probeTarget('::1', allow).allowed, false, 'an IPv4 range allows no IPv6 address');
        assert.equal(probeTarget('169.254.169.254', allow).allowed, false);
        assert.equal(probeTarget('169.254.169.254', cidrs('169.254.169.254/32')).allowed, true);
    });
});

describe('parseProbeAllowCidrs', () => {
    it('reads a comma-separated list, spaces and empty entries ignored', () => {
        assert.deepEqual(cidrs(' 127.0.0.0/8,,::1/128 ').map((c) => c.text), ['127.0.0.0/8', '::1/128']);
        assert.deepEqual(cidrs(''), []);
    });
    for (const bad of ['127.0.0.1', '127.0.0.0/33', '010.0.0.0/8', 'localhost/8', '::1/129', '10.0.0.0/x', '/8']) {
        it(`refuses ${JSON.stringify(bad)}`, () => {
            const parsed = parseProbeAllowCidrs(bad);
            assert.equal(parsed.ok, false);
            assert.match(!parsed.ok ? parsed.error : '', new RegExp(JSON.stringify(bad).replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')));
        });
    }
});
