import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { groupStatus, statusToWrite } from './status.js';
import { group, lease, stored, T0 } from './testkit.js';
import { materialise } from './materialise.js';
import { parseGroup, parseRegistrationLease, parseRegistrationName } from './types.js';

describe('registration names: <group>.<vm>', () => {
    const table: Array<[string, { group: string; vm: string } | undefined]> = [
        ['web.vm-1', { group: 'web', vm: 'vm-1' }],
        ['web.prod.vm-1', { group: 'web.prod', vm: 'vm-1' }],
        ['vm-1', undefined],
        ['.vm-1', undefined],
        ['web.', undefined],
        ['web.VM', undefined],
        ['web..vm', undefined],
    ];
    for (const [name, parsed] of table) it(`${JSON.stringify(name)}`, () => assert.deepEqual(parseRegistrationName(name), parsed));
});

describe('parseRegistrationLease: what an agent wrote, untrusted', () => {
    const raw = (metadata: Record<string, unknown>, spec: Record<string, unknown> = {}) => ({
        metadata: { name: 'web.vm-1', namespace: 'vms', labels: { 'mesh-endpoints.io/workload-group': 'web' }, ...metadata },
        spec: { holderIdentity: 'me', renewTime: '2026-01-01T00:00:00.000000Z', ...spec },
    });
    it('reads the claimed addresses, the renewal and the withdrawal', () => {
        const parsed = parseRegistrationLease(raw({ annotations: { 'mesh-endpoints.io/addresses': ' 10.20.0.5, fd00:20::5 ,', 'mesh-endpoints.io/withdrawn': '' } }));
        assert.deepEqual([parsed?.addresses, parsed?.renewTime, parsed?.withdrawn], [['10.20.0.5', 'fd00:20::5'], T0, true]);
    });
    it('is no registration when its name and group label disagree', () => {
        assert.equal(parseRegistrationLease(raw({ labels: { 'mesh-endpoints.io/workload-group': 'db' } })), undefined);
        assert.equal(parseRegistrationLease(raw({ name: 'leader-lock' })), undefined);
    });
    it('an unreadable renewTime reads as none; at most 8 addresses are read', () => {
        const many = Array.from({ length: 20 }, (_, i) => `10.20.0.${i + 1}`).join(',');
        const parsed = parseRegistrationLease(raw({ annotations: { 'mesh-endpoints.io/addresses': many } }, { renewTime: 'yesterday' }));
        assert.deepEqual([parsed?.renewTime, parsed?.addresses.length], [undefined, 8]);
    });
});

describe('parseGroup', () => {
    it('defaults: heartbeat 10s, lease 40s, grace 5m', () => {
        const g = group({ heartbeatPeriod: undefined, leaseDuration: undefined, gracePeriod: undefined });
        assert.deepEqual([g.heartbeatMs, g.leaseDurationMs, g.graceMs], [10_000, 40_000, 300_000]);
    });
    const bad: Array<[string, Record<string, unknown>, RegExp]> = [
        ['a range with host bits', { addressRanges: ['10.20.0.1/16'] }, /host bits/],
        ['no range', { addressRanges: [] }, /addressRanges/],
        ['a lease shorter than the heartbeat', { heartbeatPeriod: '1m', leaseDuration: '30s' }, /longer than spec.heartbeatPeriod/],
        ['a duration that is none', { gracePeriod: 'soon' }, /gracePeriod/],
    ];
    for (const [what, spec, why] of bad) {
        it(`refuses ${what}`, () => {
            const parsed = parseGroup({ metadata: { name: 'web', namespace: 'vms' }, spec: { addressRanges: ['10.0.0.0/8'], template: { spec: { meshTLS: { identity: 'i', serverName: 's' } } }, ...spec } });
            assert.equal(parsed.ok, false);
            assert.match((parsed as { why: string }).why, why);
        });
    }
});

describe('groupStatus', () => {
    const G = group();
    const current = materialise(G, lease(), true).workload;
    it('counts registered, ready, expired, current and refused addresses', () => {
        const leases = [lease(), lease({ name: 'web.vm-2', vm: 'vm-2', renewTime: T0 - 50_000, addresses: ['10.20.0.6', '192.0.2.1'] })];
        const old = { ...current, metadata: { ...current.metadata, name: 'web.vm-2', annotations: { 'mesh-endpoints.io/group-generation': '0' } } };
        const status = groupStatus(G, leases, [stored(current, { status: 'True', reason: 'HeartbeatRenewed' }), stored(old, { status: 'False', reason: 'HeartbeatExpired' })], T0);
        assert.deepEqual(
            [status.registered, status.ready, status.expired, status.current, status.refusedAddresses],
            [2, 1, 1, 1, 1],
        );
        assert.deepEqual(status.conditions.map((c) => [c.type, c.status]), [['TemplateRolledOut', 'False'], ['AddressesAccepted', 'False']]);
    });
    it('writes only a change, keeping each condition’s transition time while its status holds', () => {
        const status = groupStatus(G, [lease()], [stored(current, { status: 'True', reason: 'HeartbeatRenewed' })], T0);
        const first = statusToWrite(status, undefined, 'first')!;
        assert.equal(first.conditions[0]!.lastTransitionTime, 'first');
        assert.equal(statusToWrite(status, first, 'second'), undefined);
        const changed = statusToWrite({ ...status, ready: 0 }, first, 'second')!;
        assert.equal(changed.conditions[0]!.lastTransitionTime, 'first');
    });
});
