import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { groupChecks, groupsReport } from './groups-report.js';
import { groupsText } from './format.js';

const T0 = Date.parse('2026-01-01T00:00:00Z');
const group = {
    metadata: { name: 'web', namespace: 'vms' },
    spec: { addressRanges: ['10.20.0.0/16'], heartbeatPeriod: '10s', leaseDuration: '40s', gracePeriod: '5m', template: { spec: { meshTLS: { identity: 'i', serverName: 's' } } } },
    status: { registered: 2, ready: 1, expired: 1, current: 2, refusedAddresses: 1 },
};
const lease = (vm: string, renewedAgoMs: number, addresses: string) => ({
    metadata: { name: `web.${vm}`, namespace: 'vms', labels: { 'mesh-endpoints.io/workload-group': 'web' }, annotations: { 'mesh-endpoints.io/addresses': addresses } },
    spec: { renewTime: new Date(T0 - renewedAgoMs).toISOString() },
});
const workload = (vm: string, ready: string, reason: string) => ({
    metadata: { name: `web.${vm}`, namespace: 'vms', labels: { 'mesh-endpoints.io/workload-group': 'web' } },
    spec: {},
    status: { conditions: [{ type: 'Ready', status: ready, reason }] },
});

describe('workload-group list: each registration with its heartbeat age', () => {
    const reports = groupsReport({
        groups: [group],
        leases: [lease('vm-1', 3000, '10.20.0.1,192.0.2.1'), lease('vm-2', 60_000, '10.20.0.2')],
        workloads: [workload('vm-1', 'True', 'HeartbeatRenewed'), workload('vm-2', 'False', 'HeartbeatExpired'), workload('vm-3', 'False', 'Withdrawn')],
        now: T0,
    });

    it('reads heartbeats with the controller’s rules', () => {
        assert.deepEqual(
            reports[0]!.registrations.map((r) => [r.vm, r.addresses, r.refused, r.heartbeat, r.heartbeatAgeMs, r.deletesInMs, r.ready]),
            [
                ['vm-1', ['10.20.0.1'], ['192.0.2.1'], 'live', 3000, undefined, 'True'],
                ['vm-2', ['10.20.0.2'], [], 'expired', 60_000, 280_000, 'False (HeartbeatExpired)'],
                ['vm-3', [], [], 'no-lease', undefined, undefined, 'False (Withdrawn)'],
            ],
        );
    });

    it('prints a table', () => {
        const text = groupsText(reports);
        assert.match(text, /Group vms\/web: 2 registered, 1 ready, 1 lapsed, 2 current, 1 addresses refused/);
        assert.match(text, /vm-2 +10\.20\.0\.2 +- +expired +60s +in 280s +False \(HeartbeatExpired\)/);
    });

    it('check: warns of refused addresses, fails without the agents’ policies', () => {
        const results = groupChecks(reports, 0);
        assert.deepEqual(results.map((r) => r.status), ['fail', 'warn']);
        assert.match(results[1]!.detail!, /1 claimed addresses refused/);
        assert.deepEqual(groupChecks([], 0), [], 'no group, nothing to check');
    });
});
