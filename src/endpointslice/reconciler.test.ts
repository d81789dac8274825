import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { endpointKey } from './endpointset.js';
import { planSlices } from './reconciler.js';
import {
    deepFreeze,
    group,
    httpPorts,
    ipv6,
    makeEndpoint,
    makeInput,
    makeOwner,
    MANAGED_BY,
    range,
    sizes,
    storedSlice,
} from './testkit.js';

describe('planSlices: what gets written for a Service', () => {
    it('plans nothing for a Service that selects nothing and has no slices (no placeholder)', () => {
        const plan = planSlices(makeInput({ desired: [group([])] }));
        assert.deepEqual(plan, {
            creates: [],
            updates: [],
            deletes: [],
            endpointsAdded: 0,
            endpointsRemoved: 0,
            actualSlices: 0,
            desiredSlices: 0,
        });
    });

    it('deletes every existing slice once nothing is selected, creating no placeholder', () => {
        const existing = [storedSlice('web-a', range(0, 3).map((i) => makeEndpoint(i))), storedSlice('web-b', [makeEndpoint(9)])];
        const plan = planSlices(makeInput({ existing }));
        assert.deepEqual(plan.creates, []);
        assert.deepEqual(plan.updates, []);
        assert.deepEqual(plan.deletes.map((s) => s.metadata?.name), ['web-a', 'web-b']);
        assert.equal(plan.endpointsRemoved, 4);
        assert.equal(plan.actualSlices, 0);
        assert.equal(plan.desiredSlices, 0);
    });

    it('creates one IPv4 slice for one endpoint, owned by the Service and labelled for it', () => {
        const plan = planSlices(makeInput({ desired: [group([makeEndpoint(1)])] }));
        assert.equal(plan.creates.length, 1);
        const slice = plan.creates[0]!;
        assert.deepEqual(slice.metadata, {
            generateName: 'web-',
            namespace: 'shop',
            labels: { app: 'web', 'kubernetes.io/service-name': 'web', 'endpointslice.kubernetes.io/managed-by': MANAGED_BY },
            ownerReferences: [{ apiVersion: 'v1', kind: 'Service', name: 'web', uid: 'svc-uid-1', controller: true, blockOwnerDeletion: true }],
        });
        assert.equal(slice.addressType, 'IPv4');
        assert.deepEqual(slice.ports, httpPorts);
        assert.deepEqual(slice.endpoints, [makeEndpoint(1)]);
        assert.deepEqual([plan.endpointsAdded, plan.actualSlices, plan.desiredSlices], [1, 1, 1]);
    });

    it('creates one IPv6 slice for one IPv6 endpoint', () => {
        const endpoint = makeEndpoint(1, { addresses: [ipv6(1)] });
        const plan = planSlices(makeInput({ addressTypes: ['IPv6'], desired: [group([endpoint], httpPorts, 'IPv6')] }));
        assert.deepEqual(
            plan.creates.map((s) => [s.addressType, s.endpoints[0]?.addresses]),
            [['IPv6', [ipv6(1)]]],
        );
    });

    it('creates one slice per address family for a dual-stack Service', () => {
        const plan = planSlices(
            makeInput({
                addressTypes: ['IPv4', 'IPv6'],
                desired: [group([makeEndpoint(1)]), group([makeEndpoint(1, { addresses: [ipv6(1)] })], httpPorts, 'IPv6')],
            }),
        );
        assert.deepEqual(plan.creates.map((s) => s.addressType).sort(), ['IPv4', 'IPv6']);
        assert.equal(plan.desiredSlices, 2);
    });

    it('ignores desired endpoints of an address family the Service does not serve', () => {
        const plan = planSlices(makeInput({ desired: [group([makeEndpoint(1, { addresses: [ipv6(1)] })], httpPorts, 'IPv6')] }));
        assert.deepEqual(plan.creates, []);
        assert.equal(plan.desiredSlices, 0);
    });

    it('writes addresses exactly as given: canonical IP strings are the source adapter’s job', () => {
        const endpoint = makeEndpoint(1, { addresses: ['2001:0db8:0000::0001'] });
        const plan = planSlices(makeInput({ addressTypes: ['IPv6'], desired: [group([endpoint], httpPorts, 'IPv6')] }));
        assert.deepEqual(plan.creates[0]?.endpoints[0]?.addresses, ['2001:0db8:0000::0001']);
    });

    it('keeps two endpoints that share an IP but point at different targets', () => {
        const a = makeEndpoint(1);
        const b = makeEndpoint(1, { targetRef: { kind: 'ExternalWorkload', namespace: 'shop', name: 'other', uid: 'other-uid' } });
        const plan = planSlices(makeInput({ desired: [group([a, b])] }));
        assert.equal(plan.creates[0]?.endpoints.length, 2);
        assert.equal(plan.endpointsAdded, 2);
    });

    it('writes an endpoint listed twice once, and drops endpoints without addresses', () => {
        const plan = planSlices(makeInput({ desired: [group([makeEndpoint(1), makeEndpoint(1), makeEndpoint(2, { addresses: [] })])] }));
        assert.deepEqual(sizes(plan.creates), [1]);
    });

    it('puts one endpoint in each slice when maxEndpointsPerSlice is 1', () => {
        const plan = planSlices(makeInput({ maxEndpointsPerSlice: 1, desired: [group(range(0, 3).map((i) => makeEndpoint(i)))] }));
        assert.deepEqual(sizes(plan.creates), [1, 1, 1]);
        assert.deepEqual([plan.actualSlices, plan.desiredSlices], [3, 3]);
    });

    it('fits 1000 endpoints in one slice when maxEndpointsPerSlice is 1000, and spills the 1001st', () => {
        const endpoints = range(0, 1001).map((i) => makeEndpoint(i));
        const plan = planSlices(makeInput({ maxEndpointsPerSlice: 1000, desired: [group(endpoints)] }));
        assert.deepEqual(sizes(plan.creates), [1000, 1]);
    });

    it('refuses a maxEndpointsPerSlice outside 1..1000', () => {
        for (const max of [0, 1001, 2.5, Number.NaN]) {
            assert.throws(() => planSlices(makeInput({ maxEndpointsPerSlice: max })), RangeError);
        }
    });

    it('puts the input annotations on the slices it creates', () => {
        const plan = planSlices(makeInput({ annotations: { 'example.org/source': 'mirror' }, desired: [group([makeEndpoint(1)])] }));
        assert.deepEqual(plan.creates[0]?.metadata?.annotations, { 'example.org/source': 'mirror' });
    });

    it('sorts the endpoints of a new slice by identity, whatever the input order', () => {
        const endpoints = range(0, 40).map((i) => makeEndpoint(i));
        const forward = planSlices(makeInput({ desired: [group(endpoints)] }));
        const backward = planSlices(makeInput({ desired: [group([...endpoints].reverse())] }));
        assert.deepEqual(backward, forward);
        const keys = forward.creates[0]!.endpoints.map(endpointKey);
        assert.deepEqual(keys, [...keys].sort());
    });

    it('returns the same plan for the same input, and never mutates its input', () => {
        const input = deepFreeze(
            makeInput({
                owner: makeOwner({ labels: { app: 'web', tier: 'front' } }),
                desired: [group(range(0, 150).map((i) => makeEndpoint(i)))],
                existing: [storedSlice('web-a', range(100, 30).map((i) => makeEndpoint(i, { addresses: [`198.18.9.${i}`, '198.18.200.1'] })))],
            }),
        );
        assert.deepEqual(planSlices(input), planSlices(input));
    });

    it('does not count slices of another controller or another Service, and leaves them alone', () => {
        const foreign = storedSlice('web-upstream', [makeEndpoint(1)], {
            labels: { 'kubernetes.io/service-name': 'web', 'endpointslice.kubernetes.io/managed-by': 'endpointslice-controller.k8s.io' },
        });
        const otherService = storedSlice('api-a', [makeEndpoint(2)], {
            labels: { 'kubernetes.io/service-name': 'api', 'endpointslice.kubernetes.io/managed-by': MANAGED_BY },
        });
        const plan = planSlices(makeInput({ existing: [foreign, otherService] }));
        assert.deepEqual([plan.deletes, plan.updates, plan.creates], [[], [], []]);
        assert.equal(plan.actualSlices, 0);
    });
});
