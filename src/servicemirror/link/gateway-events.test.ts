import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { initialNameState, nameView, onAnswer, onFailure, type DnsPolicy, type NameState } from '../../dns/name-state.js';
import { gatewayNameEvents, probeEvent } from './gateway-events.js';

const policy: DnsPolicy = { minTtlMs: 1000, maxTtlMs: 60_000, staleWindowMs: 300_000, retryInitialMs: 1000, retryMaxMs: 30_000 };
const T0 = Date.UTC(2026, 0, 1);
const NAME = 'gw.example.test';
const SERVFAIL = { code: 'SERVFAIL', message: 'A gw.example.test: SERVFAIL (ESERVFAIL)' } as const;

function answered(state: NameState, addresses: string[], now = T0): NameState {
    return onAnswer(state, addresses.map((address) => ({ address, ttl: 30 })), [], now, policy).state;
}

/** The events of the change from `before` (a new name when undefined) to `after`, both seen at `now`. */
function events(before: NameState | undefined, after: NameState, now = T0) {
    const told = nameView(before ?? initialNameState(NAME, now), now, policy);
    return gatewayNameEvents(told, nameView(after, now, policy), after, policy.staleWindowMs).map((e) => `${e.type} ${e.reason}: ${e.message}`);
}

describe('Events on the Link for gateway name changes', () => {
    it('tells the first resolution with its addresses and TTL', () => {
        const first = answered(initialNameState(NAME, T0), ['192.0.2.2', '192.0.2.1']);
        assert.deepEqual(events(undefined, first), ['Normal GatewayResolved: gateway name gw.example.test resolves to 192.0.2.1, 192.0.2.2 (TTL 30s)']);
    });

    it('tells a changed answer, and nothing for the same answer again', () => {
        const first = answered(initialNameState(NAME, T0), ['192.0.2.1']);
        const same = answered(first, ['192.0.2.1'], T0 + 30_000);
        const moved = answered(same, ['192.0.2.9'], T0 + 60_000);
        assert.deepEqual(events(first, same, T0 + 30_000), []);
        assert.deepEqual(events(same, moved, T0 + 60_000), ['Normal GatewayAddressesChanged: gateway name gw.example.test resolves to 192.0.2.9 (TTL 30s)']);
    });

    it('warns of a failure once per kind of error, saying the last good addresses are kept and for how long', () => {
        const good = answered(initialNameState(NAME, T0), ['192.0.2.1']);
        const failed = onFailure(good, SERVFAIL, T0 + 1000, policy).state;
        const again = onFailure(failed, SERVFAIL, T0 + 2000, policy).state;
        assert.deepEqual(events(good, failed, T0 + 1000), [
            'Warning GatewayResolutionFailed: resolving gateway name gw.example.test failed: A gw.example.test: SERVFAIL (ESERVFAIL); its last good addresses (192.0.2.1) stay published, ready for at most 5m',
        ]);
        assert.deepEqual(events(failed, again, T0 + 2000), []);
    });

    it('says a name that never resolved has no addresses yet', () => {
        const failed = onFailure(initialNameState(NAME, T0), { code: 'NXDOMAIN', message: 'A gw.example.test: NXDOMAIN (ENOTFOUND)' }, T0, policy).state;
        assert.match(events(undefined, failed)[0]!, /has no addresses yet; mirrors get endpoints as soon as it resolves/);
    });

    it('warns when the stale window passes and the kept addresses become not ready', () => {
        const good = answered(initialNameState(NAME, T0), ['192.0.2.1']);
        const failed = onFailure(good, SERVFAIL, T0 + 1000, policy).state;
        const later = T0 + 1000 + policy.staleWindowMs + 1;
        const before = nameView(failed, T0 + 1000, policy);
        const after = nameView(failed, later, policy);
        const stale = gatewayNameEvents(before, after, failed, policy.staleWindowMs).map((e) => `${e.type} ${e.reason}: ${e.message}`);
        assert.deepEqual(stale, [
            'Warning GatewayAddressesNotReady: gateway name gw.example.test has failed to resolve for longer than 5m: its addresses 192.0.2.1 are not ready until it resolves again',
        ]);
    });

    it('tells the recovery with the addresses now published', () => {
        const good = answered(initialNameState(NAME, T0), ['192.0.2.1']);
        const failed = onFailure(good, SERVFAIL, T0 + 1000, policy).state;
        const back = answered(failed, ['192.0.2.1'], T0 + 2000);
        assert.deepEqual(events(failed, back, T0 + 2000), ['Normal GatewayResolutionRecovered: gateway name gw.example.test resolves again: 192.0.2.1 (TTL 30s)']);
    });

    it('warns of answers dropped as unusable, once while they keep coming', () => {
        const first = answered(initialNameState(NAME, T0), ['127.0.0.1', '192.0.2.1']);
        const again = answered(first, ['127.0.0.1', '192.0.2.1'], T0 + 30_000);
        assert.deepEqual(events(undefined, first), [
            'Warning GatewayAnswerDropped: gateway name gw.example.test answered 127.0.0.1 (loopback): left out, Kubernetes rejects such endpoint addresses',
            'Normal GatewayResolved: gateway name gw.example.test resolves to 192.0.2.1 (TTL 30s)',
        ]);
        assert.deepEqual(events(first, again, T0 + 30_000), []);
    });
});

describe('Events on the Link for the gateway probe', () => {
    it('warns when the gateway goes down and tells when it is back', () => {
        assert.deepEqual(probeEvent(false, '503 Service Unavailable from 127.0.0.1:4191', 3), {
            type: 'Warning',
            reason: 'GatewayDown',
            message: 'gateway probe failed 3 times in a row (last: 503 Service Unavailable from 127.0.0.1:4191): every mirror endpoint of this Link is not ready',
        });
        assert.equal(probeEvent(true, '200 OK from 127.0.0.1:4191', 3).reason, 'GatewayAlive');
    });
});
