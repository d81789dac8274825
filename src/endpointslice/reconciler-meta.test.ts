import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1EndpointSlice } from '@kubernetes/client-node';
import { planSlices } from './reconciler.js';
import { deepFreeze, FakeApiserver, group, makeEndpoint, makeInput, makeOwner, MANAGED_BY, range, storedSlice } from './testkit.js';
import type { ReconcileInput, SlicePlan } from './types.js';

const writeCounts = (plan: SlicePlan) => [plan.creates.length, plan.updates.length, plan.deletes.length];

/** Plans once, lets the fake apiserver store the result, and plans again against what it holds. */
function settle(input: ReconcileInput): { stored: V1EndpointSlice[]; again: SlicePlan } {
    const stored = new FakeApiserver().apply(planSlices(input));
    return { stored, again: planSlices({ ...input, existing: stored }) };
}

const withEndpoints = (overrides: Partial<ReconcileInput> = {}) =>
    makeInput({ desired: [group(range(0, 5).map((i) => makeEndpoint(i)))], ...overrides });

describe('planSlices: a sync with nothing to change writes nothing', () => {
    it('plans nothing when the slices read back in the apiserver’s defaulted form (port name "", protocol TCP, conditions {})', () => {
        const input = makeInput({
            desired: [group([{ addresses: ['198.18.0.1'] }, makeEndpoint(2, { zone: '', nodeName: 'node-1' })], [{ port: 8080 }])],
        });
        const { stored, again } = settle(input);
        assert.deepEqual(stored[0]?.ports, [{ name: '', port: 8080, protocol: 'TCP' }]);
        assert.deepEqual(writeCounts(again), [0, 0, 0]);
        assert.deepEqual([again.endpointsAdded, again.endpointsRemoved, again.actualSlices], [0, 0, 1]);
    });

    it('plans nothing on a second sync with annotations, extra labels and a headless Service', () => {
        const input = withEndpoints({
            owner: makeOwner({ headless: true, labels: { app: 'web', 'kubernetes.io/service-name': 'evil' } }),
            extraLabels: { 'mirror.example.org/cluster': 'east' },
            annotations: { 'example.org/source': 'mirror' },
        });
        assert.deepEqual(writeCounts(settle(input).again), [0, 0, 0]);
    });

    it('treats ports listed in another order as the same port group', () => {
        const ports = [
            { name: 'http', port: 80, protocol: 'TCP' },
            { name: 'dns', port: 53, protocol: 'UDP' },
        ];
        const stored = new FakeApiserver().apply(planSlices(withEndpoints({ desired: [group([makeEndpoint(1)], ports)] })));
        const again = planSlices(withEndpoints({ existing: stored, desired: [group([makeEndpoint(1)], [...ports].reverse())] }));
        assert.deepEqual(writeCounts(again), [0, 0, 0]);
    });
});

describe('planSlices: labels, annotations and ownership', () => {
    it('updates every slice when the Service gains a label', () => {
        const { stored } = settle(withEndpoints());
        const plan = planSlices(withEndpoints({ owner: makeOwner({ labels: { app: 'web', tier: 'front' } }), existing: stored }));
        assert.deepEqual(plan.updates.map((s) => s.metadata?.labels?.tier), ['front']);
        assert.equal(plan.updates[0]?.endpoints.length, 5);
    });

    it('updates every slice when the Service loses a label (removals reach the slices)', () => {
        const { stored } = settle(withEndpoints({ owner: makeOwner({ labels: { app: 'web', tier: 'front' } }) }));
        const plan = planSlices(withEndpoints({ owner: makeOwner({ labels: { app: 'web' } }), existing: stored }));
        assert.equal(plan.updates.length, 1);
        assert.equal(Object.hasOwn(plan.updates[0]?.metadata?.labels ?? {}, 'tier'), false);
    });

    it('ignores reserved labels on the Service: ours win on creation and changing them writes nothing', () => {
        const evil = { app: 'web', 'kubernetes.io/service-name': 'x', 'endpointslice.kubernetes.io/managed-by': 'y', 'service.kubernetes.io/headless': 'z' };
        const { stored, again } = settle(withEndpoints({ owner: makeOwner({ labels: evil }) }));
        assert.deepEqual(stored[0]?.metadata?.labels, { app: 'web', 'kubernetes.io/service-name': 'web', 'endpointslice.kubernetes.io/managed-by': MANAGED_BY });
        assert.deepEqual(writeCounts(again), [0, 0, 0]);
        const plan = planSlices(withEndpoints({ owner: makeOwner({ labels: { app: 'web' } }), existing: stored }));
        assert.deepEqual(writeCounts(plan), [0, 0, 0]);
    });

    it('labels the slices of a headless Service service.kubernetes.io/headless="", and updates them when that flips', () => {
        const { stored } = settle(withEndpoints({ owner: makeOwner({ headless: true }) }));
        assert.equal(stored[0]?.metadata?.labels?.['service.kubernetes.io/headless'], '');
        const plan = planSlices(withEndpoints({ owner: makeOwner({ headless: false }), existing: stored }));
        assert.equal(plan.updates.length, 1);
        assert.equal(Object.hasOwn(plan.updates[0]?.metadata?.labels ?? {}, 'service.kubernetes.io/headless'), false);
    });

    it('updates the slices when the annotations change or go away', () => {
        const { stored } = settle(withEndpoints({ annotations: { 'example.org/a': '1' } }));
        const changed = planSlices(withEndpoints({ annotations: { 'example.org/a': '2' }, existing: stored }));
        assert.deepEqual(changed.updates.map((s) => s.metadata?.annotations), [{ 'example.org/a': '2' }]);
        const removed = planSlices(withEndpoints({ existing: stored }));
        assert.equal(removed.updates.length, 1);
        assert.equal(removed.updates[0]?.metadata?.annotations, undefined);
    });

    it('deletes a slice owned by an earlier Service of the same name and does not reuse it', () => {
        const previous = storedSlice('web-old', [makeEndpoint(0)], { owner: makeOwner({ uid: 'svc-uid-0' }) });
        const plan = planSlices(withEndpoints({ existing: [previous] }));
        assert.deepEqual(plan.deletes.map((s) => s.metadata?.name), ['web-old']);
        assert.equal(plan.creates.length, 1);
        assert.equal(plan.updates.length, 0);
        assert.equal(plan.endpointsAdded, 5);
    });

    it('deletes a slice whose owner reference is not a v1 Service, even with the right uid', () => {
        const slice = structuredClone(storedSlice('web-a', [makeEndpoint(0)]));
        slice.metadata!.ownerReferences![0]!.kind = 'ExternalWorkload';
        const plan = planSlices(makeInput({ existing: [deepFreeze(slice)], desired: [group([makeEndpoint(0)])] }));
        assert.deepEqual(plan.deletes.map((s) => s.metadata?.name), ['web-a']);
    });

    it('replaces slices of an address type the Service no longer serves (deprecated "IP" → IPv4 [100, 30])', () => {
        const existing = [storedSlice('web-ip-a', range(0, 100).map((i) => makeEndpoint(i)), { addressType: 'IP' }), storedSlice('web-ip-b', range(100, 30).map((i) => makeEndpoint(i)), { addressType: 'IP' })];
        const plan = planSlices(makeInput({ existing, desired: [group(range(0, 130).map((i) => makeEndpoint(i)))] }));
        assert.deepEqual(plan.creates.map((s) => [s.addressType, s.endpoints.length]), [['IPv4', 100], ['IPv4', 30]]);
        assert.deepEqual(plan.deletes.map((s) => s.metadata?.name), ['web-ip-a', 'web-ip-b']);
    });

    it('ignores a slice that is already being deleted: neither counted, reused nor deleted again', () => {
        const dying = structuredClone(storedSlice('web-dying', range(0, 5).map((i) => makeEndpoint(i))));
        dying.metadata!.deletionTimestamp = new Date('2024-01-01T00:00:00Z');
        const plan = planSlices(withEndpoints({ existing: [deepFreeze(dying)] }));
        assert.deepEqual([plan.creates.length, plan.updates.length, plan.deletes.length], [1, 0, 0]);
        assert.deepEqual([plan.endpointsAdded, plan.actualSlices], [5, 1]);
    });
});

describe('planSlices: endpoint changes are written in place', () => {
    const slices = () => [storedSlice('web-a', range(0, 3).map((i) => makeEndpoint(i))), storedSlice('web-b', range(3, 3).map((i) => makeEndpoint(i)))];

    it('updates only the slice of an endpoint whose condition changed, under its own name and resourceVersion', () => {
        const desired = range(0, 6).map((i) => (i === 4 ? makeEndpoint(i, { conditions: { ready: false, serving: false, terminating: true } }) : makeEndpoint(i)));
        const plan = planSlices(makeInput({ existing: slices(), desired: [group(desired)] }));
        assert.deepEqual(writeCounts(plan), [0, 1, 0]);
        const update = plan.updates[0]!;
        assert.deepEqual([update.metadata?.name, update.metadata?.uid, update.metadata?.resourceVersion], ['web-b', 'uid-web-b', '7']);
        assert.deepEqual(update.endpoints[1]?.conditions, { ready: false, serving: false, terminating: true });
        assert.deepEqual([plan.endpointsAdded, plan.endpointsRemoved], [0, 0]);
    });

    it('treats an unset condition as different from false', () => {
        const desired = range(0, 6).map((i) => (i === 0 ? makeEndpoint(i, { conditions: { ready: true, serving: true } }) : makeEndpoint(i)));
        const plan = planSlices(makeInput({ existing: slices(), desired: [group(desired)] }));
        assert.deepEqual(plan.updates.map((s) => s.metadata?.name), ['web-a']);
        assert.deepEqual(plan.updates[0]?.endpoints[0]?.conditions, { ready: true, serving: true });
    });

    it('strips stale topology hints from an existing endpoint', () => {
        const hinted = storedSlice('web-a', [makeEndpoint(0, { hints: { forZones: [{ name: 'zone-a' }] } })]);
        const plan = planSlices(makeInput({ existing: [hinted], desired: [group([makeEndpoint(0)])] }));
        assert.equal(plan.updates.length, 1);
        assert.equal(plan.updates[0]?.endpoints[0]?.hints, undefined);
    });

    it('does not rewrite for a new target resourceVersion, but does for a new target uid', () => {
        const rvOnly = range(0, 6).map((i) => makeEndpoint(i, { targetRef: { ...makeEndpoint(i).targetRef, resourceVersion: '42' } }));
        assert.deepEqual(writeCounts(planSlices(makeInput({ existing: slices(), desired: [group(rvOnly)] }))), [0, 0, 0]);
        const newUid = range(0, 6).map((i) => makeEndpoint(i, { targetRef: { ...makeEndpoint(i).targetRef, uid: `recreated-${i}` } }));
        assert.deepEqual(writeCounts(planSlices(makeInput({ existing: slices(), desired: [group(newUid)] }))), [0, 2, 0]);
    });
});
