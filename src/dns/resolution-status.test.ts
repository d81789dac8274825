import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseGatewayAddress } from './gateway-address.js';
import { addressesOf, DEFAULT_DNS_POLICY as policy, initialNameState, onAnswer, onFailure, type NameState } from './name-state.js';
import { gatewayResolutionStatus, nameStatus, newerSeed, seedNameState } from './resolution-status.js';

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

describe('seeding a name from the Link status after a restart', () => {
    const at = (ms: number) => new Date(ms).toISOString().replace('.000Z', 'Z');

    it('starts from the recorded addresses, ready, due for resolution now', () => {
        const status = nameStatus(answered('a.example.test', ['192.0.2.2', '192.0.2.1']), T0, policy);
        const now = T0 + 20_000;
        const seed = seedNameState(status, now)!;
        assert.deepEqual(addressesOf(seed, now, policy).map((a) => `${a.address} ${a.ready}`), ['192.0.2.1 true', '192.0.2.2 true']);
        assert.equal(seed.resolvedAt, T0);
        assert.equal(seed.nextRefreshAt, now);
        assert.deepEqual(nameStatus(seed, now, policy).addresses, status.addresses);
    });

    it('counts the stale window of a restart during an outage from when the last good answer expired', () => {
        const status = nameStatus(answered('a.example.test', ['192.0.2.1'], 30), T0, policy);
        const restartedAt = T0 + 200_000;
        const failed = onFailure(seedNameState(status, restartedAt)!, SERVFAIL, restartedAt, policy).state;
        assert.equal(failed.staleSince.IPv4, T0 + 30_000);
        assert.equal(addressesOf(failed, T0 + 30_000 + policy.staleWindowMs, policy)[0]?.ready, true);
        assert.equal(addressesOf(failed, T0 + 30_001 + policy.staleWindowMs, policy)[0]?.ready, false);
    });

    it('keeps a recorded failure streak: its staleSince and its error', () => {
        const failing = onFailure(answered('a.example.test', ['192.0.2.1']), SERVFAIL, T0 + 60_000, policy).state;
        const status = nameStatus(failing, T0 + 60_000, policy);
        const seed = seedNameState(status, T0 + 90_000)!;
        assert.deepEqual(seed.staleSince, { IPv4: T0 + 30_000 });
        assert.deepEqual(seed.lastError, SERVFAIL);
        assert.deepEqual(nameStatus(seed, T0 + 90_000, policy).staleSince, status.staleSince);
    });

    it('seeds nothing from a name that never resolved, and leaves out addresses that cannot be endpoints', () => {
        assert.equal(seedNameState({ name: 'a.example.test', addresses: [] }, T0), undefined);
        assert.equal(seedNameState({ name: 'a.example.test', addresses: ['192.0.2.1'] }, T0), undefined, 'no time, no seed');
        const seed = seedNameState({ name: 'a.example.test', addresses: ['127.0.0.1', 'gw.example.test', '', '192.0.2.1'], resolvedAt: at(T0) }, T0)!;
        assert.deepEqual(seed.addresses, [{ address: '192.0.2.1', family: 'IPv4' }]);
    });
});

describe('seeding a name when this process leads again', () => {
    // Found by the chaos soak: a leader got answers, could not record them (the apiserver was
    // restarting, which also cost it the lease), and on leading again started from the older
    // record, so its mirrors went not ready while its own last good answer was seconds old.
    it('prefers what this process learned in its last term to an older record', () => {
        const record = seedNameState(nameStatus(answered('a.example.test', ['192.0.2.1'], 1, T0), T0, policy), T0 + 40_000)!;
        const mine = onFailure(answered('a.example.test', ['192.0.2.2'], 1, T0 + 25_000), SERVFAIL, T0 + 28_000, policy).state;
        const seed = newerSeed(mine, record, T0 + 40_000)!;
        assert.equal(seed.resolvedAt, T0 + 25_000);
        assert.deepEqual(seed.addresses.map((a) => a.address), ['192.0.2.2']);
        assert.equal(seed.nextRefreshAt, T0 + 40_000, 'due for resolution now');
        assert.equal(addressesOf(seed, T0 + 40_000, policy)[0]?.ready, true, 'still within the window of its own answer');
    });

    it('prefers a newer record (another replica led since), and takes either when there is only one', () => {
        const mine = answered('a.example.test', ['192.0.2.2'], 1, T0);
        const record = seedNameState(nameStatus(answered('a.example.test', ['192.0.2.1'], 1, T0 + 30_000), T0 + 30_000, policy), T0 + 40_000)!;
        assert.deepEqual(newerSeed(mine, record, T0 + 40_000)?.addresses.map((a) => a.address), ['192.0.2.1']);
        assert.equal(newerSeed(undefined, record, T0 + 40_000), record);
        assert.equal(newerSeed(mine, undefined, T0 + 40_000)?.resolvedAt, T0);
        assert.equal(newerSeed(initialNameState('a.example.test', T0), undefined, T0), undefined, 'a name never answered is no seed');
    });
});
