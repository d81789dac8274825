import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseGatewayAddress } from './gateway-address.js';
import { mirrorGatewayAddresses } from './gateway-endpoints.js';
import { DEFAULT_DNS_POLICY as policy, initialNameState, onAnswer, onFailure, type NameState } from './name-state.js';

const T0 = Date.UTC(2026, 0, 1);
const SERVFAIL = { code: 'SERVFAIL', message: 'server failure' } as const;

function answered(name: string, v4: string[], v6: string[] = [], now = T0): NameState {
    const records = (list: string[]) => list.map((address) => ({ address, ttl: 30 }));
    return onAnswer(initialNameState(name, now), records(v4), records(v6), now, policy).state;
}

describe('gateway addresses of a mirror Service', () => {
    const { entries } = parseGatewayAddress('a.example.test, 192.0.2.50, b.example.test, 2001:db8::50, never.example.test');
    const states = new Map([
        ['a.example.test', answered('a.example.test', ['192.0.2.10', '192.0.2.2'], ['2001:db8::a'])],
        ['b.example.test', answered('b.example.test', ['192.0.2.3'])],
    ]);

    it('joins IP literals and every resolved name, sorted with IPv4 first and numerically', () => {
        const addresses = mirrorGatewayAddresses(entries, states, ['IPv4', 'IPv6'], T0, policy);
        assert.deepEqual(
            addresses.map((a) => a.address),
            ['192.0.2.2', '192.0.2.3', '192.0.2.10', '192.0.2.50', '2001:db8::a', '2001:db8::50'],
        );
        assert.ok(addresses.every((a) => a.ready));
    });

    it('keeps only the families of the mirror Service', () => {
        const v4 = mirrorGatewayAddresses(entries, states, ['IPv4'], T0, policy);
        assert.deepEqual(v4.map((a) => a.address), ['192.0.2.2', '192.0.2.3', '192.0.2.10', '192.0.2.50']);
        const v6 = mirrorGatewayAddresses(entries, states, ['IPv6'], T0, policy);
        assert.deepEqual(v6.map((a) => a.address), ['2001:db8::a', '2001:db8::50']);
    });

    it('gives a name that never resolved no address at all, not its own text', () => {
        const addresses = mirrorGatewayAddresses(parseGatewayAddress('never.example.test').entries, states, ['IPv4', 'IPv6'], T0, policy);
        assert.deepEqual(addresses, []);
    });

    it('leaves other names of the Link unaffected when one name goes stale', () => {
        const failing = onFailure(states.get('b.example.test')!, SERVFAIL, T0 + 1000, policy).state;
        const later = T0 + 1000 + policy.staleWindowMs + 1;
        const addresses = mirrorGatewayAddresses(entries, new Map([...states, ['b.example.test', failing]]), ['IPv4'], later, policy);
        assert.deepEqual(
            addresses.map((a) => `${a.address} ${a.ready}`),
            ['192.0.2.2 true', '192.0.2.3 false', '192.0.2.10 true', '192.0.2.50 true'],
        );
    });

    it('lists an address reached through two entries once, ready if either source is fresh', () => {
        const both = parseGatewayAddress('a.example.test, c.example.test').entries;
        const stale = onFailure(answered('c.example.test', ['192.0.2.2']), SERVFAIL, T0, policy).state;
        const later = T0 + policy.staleWindowMs + 1;
        const fresh = answered('a.example.test', ['192.0.2.2'], [], later);
        const addresses = mirrorGatewayAddresses(both, new Map([['a.example.test', fresh], ['c.example.test', stale]]), ['IPv4'], later, policy);
        assert.deepEqual(addresses, [{ address: '192.0.2.2', family: 'IPv4', ready: true }]);
    });
});
