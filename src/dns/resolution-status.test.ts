import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseGatewayAddress } from './gateway-address.js';
import { DEFAULT_DNS_POLICY as policy, initialNameState, onAnswer, onFailure, type NameState } from './name-state.js';
import { gatewayResolutionStatus, nameStatus } from './resolution-status.js';

const T0 = Date.UTC(2026, 0, 1);
const SERVFAIL = { code: 'SERVFAIL', message: 'A a.example.test: SERVFAIL (ESERVFAIL)' } as const;

function answered(name: string, v4: string[], ttl = 30, now = T0): NameState {
    return onAnswer(initialNameState(name, now), v4.map((address) => ({ address, ttl })), [], now, policy).state;
}

describe('gateway resolution in the Link status', () => {
    it('shows each name with its addresses, TTL, resolved-at and next refresh', () => {
        assert.deepEqual(nameStatus(answered('a.example.test', ['192.0.2.2', '192.0.2.1']), T0, policy), {
            name: 'a.example.test',
            addresses: ['192.0.2.1', '192.0.2.2'],
            ttlSeconds: 30,
            resolvedAt: '2026-01-01T00:00:00Z',
            nextRefreshAt: '2026-01-01T00:00:30Z',
        });
    });

    it('shows the last error and when it happened, keeping the last good answer', () => {
        const state = onFailure(answered('a.example.test', ['192.0.2.1']), SERVFAIL, T0 + 60_000, policy).state;
        const status = nameStatus(state, T0 + 60_000, policy);
        assert.equal(status.lastError, 'SERVFAIL: A a.example.test: SERVFAIL (ESERVFAIL)');
        assert.equal(status.lastErrorAt, '2026-01-01T00:01:00Z');
        assert.equal(status.resolvedAt, '2026-01-01T00:00:00Z');
        assert.equal(status.nextRefreshAt, '2026-01-01T00:01:01Z');
        assert.deepEqual(status.addresses, ['192.0.2.1']);
    });

    it('drops the error once the name resolves again', () => {
        const failed = onFailure(answered('a.example.test', ['192.0.2.1']), SERVFAIL, T0 + 60_000, policy).state;
        const back = onAnswer(failed, [{ address: '192.0.2.1', ttl: 30 }], [], T0 + 61_000, policy).state;
        const status = nameStatus(back, T0 + 61_000, policy);
        assert.equal(status.lastError, undefined);
        assert.equal(status.lastErrorAt, undefined);
    });

    it('lists every entry in spec order: a literal as itself, a name not yet resolved with no address', () => {
        const { entries } = parseGatewayAddress('a.example.test, 192.0.2.50, pending.example.test');
        const states = new Map([['a.example.test', answered('a.example.test', ['192.0.2.1'])]]);
        const status = gatewayResolutionStatus(entries, states, T0, policy);
        assert.deepEqual(
            status.map((s) => [s.name, s.addresses]),
            [
                ['a.example.test', ['192.0.2.1']],
                ['192.0.2.50', ['192.0.2.50']],
                ['pending.example.test', []],
            ],
        );
        assert.equal(status[1]?.ttlSeconds, undefined);
    });
});
