import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { inRanges, parseCidr, type Cidr } from './cidr.js';

const cidrs = (...texts: string[]): Cidr[] =>
    texts.map((t) => {
        const parsed = parseCidr(t);
        assert.ok(parsed.ok, t);
        return parsed.cidr;
    });

describe('parseCidr: a range as the apiserver’s cidr() reads it', () => {
    for (const text of ['10.20.0.0/16', '0.0.0.0/0', '192.0.2.7/32', 'fd00:20::/64', '2001:db8::/32', '::/0']) {
        it(`accepts ${text}`, () => assert.equal(parseCidr(text).ok, true));
    }
    const refused: Array<[string, RegExp]> = [
        ['10.20.0.0', /not a CIDR/],
        ['010.0.0.0/8', /not a CIDR/],
        ['10.0.0.0/33', /10.0.0.0\/33/],
        ['10.0.0.0/+8', /not a CIDR/],
        ['10.0.0.1/8', /host bits set \(the range is 10.0.0.0\/8\)/],
        ['fd00::1/64', /host bits set/],
        ['', /not a CIDR/],
    ];
    for (const [text, why] of refused) {
        it(`refuses ${JSON.stringify(text)}`, () => {
            const parsed = parseCidr(text);
            assert.equal(parsed.ok, false);
            assert.match((parsed as { why: string }).why, why);
        });
    }
});

describe('inRanges: whether a claimed address lies in a group’s ranges', () => {
    const ranges = cidrs('10.20.0.0/16', 'fd00:20::/64');
    const table: Array<[string, boolean]> = [
        ['10.20.3.4', true],
        ['10.21.0.1', false],
        ['::ffff:10.20.0.9', true], // IPv4-mapped is the IPv4 address
        ['fd00:20::7', true],
        ['FD00:20:0:0::8', true], // any spelling of the address
        ['fd00:21::7', false],
        ['not-an-ip', false],
        ['10.20.0.1%eth0', false],
    ];
    for (const [address, inside] of table) {
        it(`${address} is ${inside ? 'inside' : 'outside'}`, () => assert.equal(inRanges(address, ranges), inside));
    }
    it('no range: nothing is inside', () => assert.equal(inRanges('10.20.3.4', []), false));
});
