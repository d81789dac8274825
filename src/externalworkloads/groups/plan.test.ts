// The behaviour of one registration, as a table: what goes in (group, Lease, stored workload,
// time) and what must come out (writes, Ready, deletes, Events, when to look again).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { materialise } from './materialise.js';
import { planRegistration } from './plan.js';
import { group, lease, stored, T0 } from './testkit.js';

const G = group();
const desired = materialise(G, lease(), true).workload;

describe('planRegistration: a VM registers, renews, lapses, comes back and is cleaned up', () => {
    it('a new Lease creates the workload from the template, ready, with a Registered Event', () => {
        const plan = planRegistration(G, lease(), undefined, T0 + 1000);
        assert.equal(plan.write?.kind, 'create');
        assert.deepEqual(plan.write?.workload.metadata.labels, { app: 'web', 'mesh-endpoints.io/workload-group': 'web' });
        assert.deepEqual(plan.write?.workload.metadata.ownerReferences, [
            { apiVersion: 'mesh-endpoints.io/v1alpha1', kind: 'ExternalWorkloadGroup', name: 'web', uid: 'group-uid', controller: true, blockOwnerDeletion: false },
        ]);
        assert.deepEqual(plan.write?.workload.spec, {
            meshTLS: { identity: 'web.vm-1.vms.serviceaccount.identity.linkerd.cluster.local', serverName: 'vm-1.web.vms' },
            ports: [{ name: 'http', port: 8080, protocol: 'TCP' }],
            workloadIPs: [{ ip: '10.20.0.5' }],
        });
        assert.equal(plan.ready?.status, 'True');
        assert.equal(plan.ready?.reason, 'HeartbeatRenewed');
        assert.deepEqual(plan.events.map((e) => e.reason), ['Registered']);
        assert.equal(plan.requeueAfterMs, 39_000, 'looked at again when the heartbeat would lapse');
    });

    it('a renewal of a ready, current workload writes nothing', () => {
        const plan = planRegistration(G, lease({ renewTime: T0 + 10_000 }), stored(desired, { status: 'True', reason: 'HeartbeatRenewed' }), T0 + 11_000);
        assert.deepEqual([plan.write, plan.ready, plan.delete, plan.events], [undefined, undefined, undefined, []]);
        assert.equal(plan.requeueAfterMs, 39_000);
    });

    it('no renewal for the lease duration: Ready=False (HeartbeatExpired) at once, probe annotations off, a Warning', () => {
        const probed = group({ template: { metadata: { annotations: { 'mesh-endpoints.io/probe': 'http:4191/ready' } }, spec: { meshTLS: { identity: 'i', serverName: 's' } } } });
        const before = materialise(probed, lease(), true).workload;
        const plan = planRegistration(probed, lease(), stored(before, { status: 'True', reason: 'ProbeSucceeded' }), T0 + 40_000);
        assert.equal(plan.ready?.status, 'False');
        assert.equal(plan.ready?.reason, 'HeartbeatExpired');
        assert.equal(plan.write?.kind, 'update');
        assert.equal(plan.write?.workload.metadata.annotations['mesh-endpoints.io/probe'], undefined, 'no probe may mark it ready while lapsed');
        assert.deepEqual(plan.events.map((e) => [e.type, e.reason]), [['Warning', 'HeartbeatExpired']]);
        assert.equal(plan.requeueAfterMs, 300_000, 'looked at again when the grace period ends');
    });

    it('a withdrawn Lease (the agent got SIGTERM): not ready at once, before any lapse', () => {
        const plan = planRegistration(G, lease({ withdrawn: true }), stored(desired, { status: 'True', reason: 'HeartbeatRenewed' }), T0 + 1000);
        assert.deepEqual([plan.ready?.status, plan.ready?.reason], ['False', 'Withdrawn']);
    });

    it('an expired workload already marked says nothing again', () => {
        const plan = planRegistration(G, lease(), stored(desired, { status: 'False', reason: 'HeartbeatExpired' }), T0 + 100_000);
        assert.deepEqual([plan.ready, plan.events], [undefined, []]);
        assert.equal(plan.requeueAfterMs, T0 + 340_000 - (T0 + 100_000));
    });

    it('a heartbeat back within the grace period: ready again, with an Event', () => {
        const plan = planRegistration(G, lease({ renewTime: T0 + 200_000 }), stored(desired, { status: 'False', reason: 'HeartbeatExpired' }), T0 + 200_500);
        assert.deepEqual([plan.ready?.status, plan.ready?.reason], ['True', 'HeartbeatRenewed']);
        assert.deepEqual(plan.events.map((e) => e.reason), ['HeartbeatRenewed']);
    });

    it('with a probe, a heartbeat back leaves Ready to the probe, and the probe annotations return', () => {
        const probed = group({ template: { metadata: { annotations: { 'mesh-endpoints.io/probe': 'tcp:8080' } }, spec: { meshTLS: { identity: 'i', serverName: 's' } } } });
        const lapsed = materialise(probed, lease(), false).workload;
        const plan = planRegistration(probed, lease({ renewTime: T0 + 200_000 }), stored(lapsed, { status: 'False', reason: 'HeartbeatExpired' }), T0 + 200_500);
        assert.equal(plan.ready, undefined);
        assert.equal(plan.write?.workload.metadata.annotations['mesh-endpoints.io/probe'], 'tcp:8080');
    });

    it('still lapsed when the grace period ends: the workload and its Lease are deleted', () => {
        const plan = planRegistration(G, lease(), stored(desired, { status: 'False', reason: 'HeartbeatExpired' }), T0 + 340_000);
        assert.deepEqual(plan.delete, { workload: true, lease: true });
        assert.deepEqual(plan.events.map((e) => [e.on, e.reason]), [['group', 'Deregistered']]);
    });

    it('the Lease gone (deleted by hand): the workload goes', () => {
        assert.deepEqual(planRegistration(G, undefined, stored(desired), T0).delete, { workload: true, lease: false });
    });

    it('no group: nothing (its garbage collector deletes what it owned)', () => {
        assert.deepEqual(planRegistration(undefined, lease(), stored(desired), T0), { refused: [], events: [] });
    });

    it('a template change rolls to the workload (the new generation, labels and ports)', () => {
        const next = group({ template: { metadata: { labels: { app: 'web', tier: 'v2' } }, spec: { ports: [{ name: 'http', port: 9090 }], meshTLS: { identity: 'i', serverName: 's' } } } }, 2);
        const plan = planRegistration(next, lease(), stored(desired, { status: 'True', reason: 'HeartbeatRenewed' }), T0 + 1000);
        assert.equal(plan.write?.kind, 'update');
        assert.equal(plan.write?.workload.metadata.annotations['mesh-endpoints.io/group-generation'], '2');
        assert.deepEqual(plan.write?.workload.spec.ports, [{ name: 'http', port: 9090, protocol: 'TCP' }]);
    });

    it('an edit of the workload by hand is undone', () => {
        const edited = stored(desired, { status: 'True', reason: 'HeartbeatRenewed' });
        edited.spec.workloadIPs = [{ ip: '203.0.113.9' }];
        assert.equal(planRegistration(G, lease(), edited, T0 + 1000).write?.kind, 'update');
    });

    it('a group recreated under the same name: the workload is adopted by the new one', () => {
        const plan = planRegistration({ ...G, uid: 'new-uid' }, lease(), stored(desired, { status: 'True', reason: 'HeartbeatRenewed' }), T0 + 1000);
        assert.equal(plan.write?.workload.metadata.ownerReferences[0]!.uid, 'new-uid');
    });

    it('a workload being deleted is left alone', () => {
        assert.deepEqual(planRegistration(G, lease(), { ...stored(desired), deleting: true }, T0), { refused: [], events: [] });
    });
});

describe('planRegistration: untrusted claims', () => {
    const refusedOf = (addresses: string[]) => planRegistration(G, lease({ addresses }), undefined, T0 + 1000);

    it('an address outside the group’s ranges is refused, the others kept', () => {
        const plan = refusedOf(['203.0.113.7', '10.20.0.5']);
        assert.deepEqual(plan.write?.workload.spec.workloadIPs, [{ ip: '10.20.0.5' }]);
        assert.deepEqual(plan.refused.map((r) => r.why), ['203.0.113.7 is outside the address ranges of group web (10.20.0.0/16, fd00:20::/64)']);
    });

    it('loopback, link-local and non-addresses are refused by the endpoint rules, inside a range or not', () => {
        const wide = group({ addressRanges: ['0.0.0.0/0'] });
        const plan = planRegistration(wide, lease({ addresses: ['127.0.0.1', '169.254.169.254', 'vm.example.com', '10.1.1.1'] }), undefined, T0);
        assert.deepEqual(plan.write?.workload.spec.workloadIPs, [{ ip: '10.1.1.1' }]);
        assert.equal(plan.refused.length, 3);
    });

    it('one address per family, canonical: the first claim of a family wins', () => {
        const plan = refusedOf(['FD00:20:0:0::1', '10.20.0.5', '10.20.0.6']);
        assert.deepEqual(plan.write?.workload.spec.workloadIPs, [{ ip: 'fd00:20::1' }, { ip: '10.20.0.5' }]);
        assert.match(plan.refused[0]!.why, /second IPv4 address/);
    });

    it('a renewTime far ahead of the controller’s clock is no heartbeat: not ready, and the grace period counts from the Lease’s creation', () => {
        const ahead = planRegistration(G, lease({ renewTime: T0 + 3_600_000 }), stored(desired, { status: 'True', reason: 'HeartbeatRenewed' }), T0);
        assert.deepEqual([ahead.ready?.status, ahead.ready?.reason], ['False', 'InvalidHeartbeat']);
        assert.match(ahead.events[0]!.message, /3600s ahead/);
        const later = planRegistration(G, lease({ renewTime: T0 + 3_600_000 }), stored(desired, { status: 'False', reason: 'InvalidHeartbeat' }), T0 + 241_000);
        assert.deepEqual(later.delete, { workload: true, lease: true });
    });

    it('a Lease without renewTime is no heartbeat either', () => {
        assert.equal(planRegistration(G, lease({ renewTime: undefined }), undefined, T0).ready?.reason, 'InvalidHeartbeat');
    });

    it('the Lease’s own leaseDurationSeconds is not read: the group’s duration decides', () => {
        assert.equal(planRegistration(G, lease(), stored(desired, { status: 'True', reason: 'HeartbeatRenewed' }), T0 + 40_000).ready?.reason, 'HeartbeatExpired');
    });
});
