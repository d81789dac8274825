import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { DiscoveryV1EndpointPort, V1Endpoint } from '@kubernetes/client-node';
import { planSlices } from './reconciler.js';
import { FakeApiserver, group, ipv6, makeEndpoint, makeInput, range, sizes, storedSlice } from './testkit.js';

const endpoints = (from: number, count: number, overrides: Partial<V1Endpoint> = {}) =>
    range(from, count).map((i) => makeEndpoint(i, overrides));

describe('planSlices: packing endpoints with few writes', () => {
    it('creates exactly three slices [100, 100, 50] for 250 new endpoints', () => {
        const plan = planSlices(makeInput({ desired: [group(endpoints(0, 250))] }));
        assert.deepEqual(sizes(plan.creates), [100, 100, 50]);
        assert.deepEqual([plan.updates.length, plan.deletes.length], [0, 0]);
        assert.deepEqual([plan.endpointsAdded, plan.actualSlices, plan.desiredSlices], [250, 3, 3]);
    });

    it('creates five slices of 60 when a named port resolves to five numbers across 300 endpoints', () => {
        const byPort = new Map<number, V1Endpoint[]>();
        for (const i of range(0, 300)) byPort.set(8000 + (i % 5), [...(byPort.get(8000 + (i % 5)) ?? []), makeEndpoint(i)]);
        const desired = [...byPort].map(([port, eps]) => group(eps, [{ name: 'http', port, protocol: 'TCP' }]));
        const plan = planSlices(makeInput({ desired }));
        assert.deepEqual(sizes(plan.creates), [60, 60, 60, 60, 60]);
        assert.deepEqual(plan.creates.map((s) => s.ports?.[0]?.port).sort(), [8000, 8001, 8002, 8003, 8004]);
        assert.equal(plan.desiredSlices, 5);
    });

    it('with 62 and 61 existing and 127 new, creates one full slice and tops up the fuller one (62 → 89)', () => {
        const existing = [storedSlice('web-a', endpoints(0, 62)), storedSlice('web-b', endpoints(62, 61))];
        const plan = planSlices(makeInput({ existing, desired: [group(endpoints(0, 250))] }));
        assert.deepEqual(sizes(plan.creates), [100]);
        assert.deepEqual(plan.updates.map((s) => [s.metadata?.name, s.endpoints.length]), [['web-a', 89]]);
        assert.deepEqual(plan.deletes, []);
        assert.deepEqual([plan.endpointsAdded, plan.actualSlices, plan.desiredSlices], [127, 3, 3]);
    });

    it('with 74 and 74 existing and 152 new, creates [100, 52] and updates nothing (a worse packing for fewer writes)', () => {
        const existing = [storedSlice('web-a', endpoints(0, 74)), storedSlice('web-b', endpoints(74, 74))];
        const plan = planSlices(makeInput({ existing, desired: [group(endpoints(0, 300))] }));
        assert.deepEqual(sizes(plan.creates), [100, 52]);
        assert.deepEqual(plan.updates, []);
        assert.deepEqual([plan.actualSlices, plan.desiredSlices], [4, 3]);
    });

    it('pours new endpoints into the fuller of two slices already being updated ([80, 20] + 15 → [95, 20])', () => {
        const existing = [storedSlice('web-a', endpoints(0, 80)), storedSlice('web-b', endpoints(80, 20))];
        const plan = planSlices(makeInput({ existing, desired: [group(endpoints(0, 115, { conditions: { ready: false, serving: true, terminating: false } }))] }));
        assert.deepEqual(plan.creates, []);
        assert.deepEqual(plan.updates.map((s) => [s.metadata?.name, s.endpoints.length]), [['web-a', 95], ['web-b', 20]]);
        assert.ok(plan.updates.every((s) => s.endpoints.every((e) => e.conditions?.ready === false)));
    });

    it('deletes a slice whose endpoints all went away and leaves the others untouched', () => {
        const existing = [storedSlice('web-a', endpoints(0, 10)), storedSlice('web-b', endpoints(10, 10))];
        const plan = planSlices(makeInput({ existing, desired: [group(endpoints(10, 10))] }));
        assert.deepEqual(plan.deletes.map((s) => s.metadata?.name), ['web-a']);
        assert.deepEqual([plan.creates, plan.updates], [[], []]);
        assert.deepEqual([plan.endpointsRemoved, plan.actualSlices], [10, 1]);
    });

    it('shrinks a slice in place when half of its endpoints go (20 → 10)', () => {
        const plan = planSlices(makeInput({ existing: [storedSlice('web-a', endpoints(0, 20))], desired: [group(endpoints(0, 10))] }));
        assert.deepEqual(plan.updates.map((s) => [s.metadata?.name, s.endpoints.length]), [['web-a', 10]]);
        assert.deepEqual([plan.endpointsAdded, plan.endpointsRemoved], [0, 10]);
    });

    it('moves endpoints beyond the maximum out of a slice written under a larger maximum', () => {
        const plan = planSlices(makeInput({ existing: [storedSlice('web-a', endpoints(0, 150))], desired: [group(endpoints(0, 150))] }));
        assert.deepEqual(plan.updates.map((s) => [s.metadata?.name, s.endpoints.length]), [['web-a', 100]]);
        assert.deepEqual(sizes(plan.creates), [50]);
        assert.deepEqual([plan.endpointsAdded, plan.endpointsRemoved], [0, 0]);
    });

    for (const [max, expected] of [
        [50, [50, 50, 50, 50, 50]],
        [80, [80, 80, 80, 10]],
        [150, [150, 100]],
        [250, [250]],
        [500, [250]],
    ] as const) {
        it(`packs 250 endpoints as [${expected.join(', ')}] with maxEndpointsPerSlice ${max}`, () => {
            const plan = planSlices(makeInput({ maxEndpointsPerSlice: max, desired: [group(endpoints(0, 250))] }));
            assert.deepEqual(sizes(plan.creates), expected);
            assert.equal(plan.desiredSlices, expected.length);
        });
    }
});

describe('planSlices: recycling deleted slices into updates', () => {
    const ports = (port: number): DiscoveryV1EndpointPort[] => [{ name: 'http', port, protocol: 'TCP' }];
    const tenOfThirty = () => range(0, 10).map((k) => storedSlice(`web-${k}`, endpoints(k * 30, 30), { ports: ports(8080) }));

    it('leaves ten slices of 30 alone while nothing changes', () => {
        const plan = planSlices(makeInput({ existing: tenOfThirty(), desired: [group(endpoints(0, 300), ports(8080))] }));
        assert.deepEqual([plan.creates, plan.updates, plan.deletes], [[], [], []]);
        assert.deepEqual([plan.actualSlices, plan.desiredSlices], [10, 3]);
    });

    it('repacks ten slices of 30 into three updates of 100 and seven deletes when the port changes', () => {
        const existing = tenOfThirty();
        const plan = planSlices(makeInput({ existing, desired: [group(endpoints(0, 300), ports(9090))] }));
        assert.deepEqual(plan.creates, []);
        assert.deepEqual(sizes(plan.updates), [100, 100, 100]);
        assert.ok(plan.updates.every((s) => s.ports?.[0]?.port === 9090));
        assert.equal(plan.deletes.length, 7);
        const names = [...plan.updates, ...plan.deletes].map((s) => s.metadata?.name).sort();
        assert.deepEqual(names, existing.map((s) => s.metadata?.name).sort());
        const rv = new Map(existing.map((s) => [s.metadata?.name, s.metadata?.resourceVersion]));
        assert.ok(plan.updates.every((s) => s.metadata?.resourceVersion === rv.get(s.metadata?.name)));
        assert.deepEqual([plan.endpointsAdded, plan.endpointsRemoved, plan.actualSlices], [300, 300, 3]);
        assert.deepEqual(sizes(new FakeApiserver(existing).apply(plan)), [100, 100, 100]);
    });

    it('turns a target-port change of three slices into three updates, without creates or deletes', () => {
        const existing = [0, 1, 2].map((k) => storedSlice(`web-${k}`, endpoints(k * 100, k === 2 ? 50 : 100), { ports: ports(8080) }));
        const plan = planSlices(makeInput({ existing, desired: [group(endpoints(0, 250), ports(8443))] }));
        assert.deepEqual([plan.creates.length, plan.updates.length, plan.deletes.length], [0, 3, 0]);
    });

    it('does not recycle a slice of another address type (addressType is immutable)', () => {
        const existing = [storedSlice('web-v4', endpoints(0, 5))];
        const desired = [group([makeEndpoint(1, { addresses: [ipv6(1)] })], ports(8080), 'IPv6')];
        const plan = planSlices(makeInput({ addressTypes: ['IPv4', 'IPv6'], existing, desired }));
        assert.deepEqual(plan.creates.map((s) => s.addressType), ['IPv6']);
        assert.deepEqual(plan.deletes.map((s) => s.metadata?.name), ['web-v4']);
        assert.deepEqual(plan.updates, []);
    });
});
