import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { DiscoveryV1EndpointPort, V1Endpoint, V1EndpointSlice } from '@kubernetes/client-node';
import fc from 'fast-check';
import { endpointKey, endpointsEqualBeyondIdentity, normaliseEndpoint } from './endpointset.js';
import { portMapKey } from './ports.js';
import { planSlices } from './reconciler.js';
import { sliceLabels } from './slice.js';
import { deepFreeze, FakeApiserver, ipv4, ipv6, makeOwner, MANAGED_BY, range, serverForm } from './testkit.js';
import type { AddressType, DesiredGroup, ReconcileInput } from './types.js';

// Two spellings of the same first port list (as a source writes it, and as the apiserver
// stores it), so defaulting differences are exercised too.
const portVariants: DiscoveryV1EndpointPort[][] = [
    [{ port: 8080 }],
    [{ name: '', port: 8080, protocol: 'TCP' }],
    [{ name: 'http', port: 80, protocol: 'TCP' }, { name: 'dns', port: 53, protocol: 'UDP' }],
    [],
];

const arbState = fc.record({
    ready: fc.constantFrom(true, false, undefined),
    zone: fc.constantFrom('zone-a', 'zone-b', undefined),
    uid: fc.constantFrom('u0', 'u1'),
    hinted: fc.boolean(),
});
type State = typeof arbState extends fc.Arbitrary<infer T> ? T : never;

function endpoint(i: number, type: string, state: State, withHints: boolean): V1Endpoint {
    const e: V1Endpoint = {
        addresses: [type === 'IPv6' ? ipv6(i) : ipv4(i)],
        conditions: state.ready === undefined ? {} : { ready: state.ready, serving: state.ready },
        targetRef: { kind: 'ExternalWorkload', namespace: 'shop', name: `wl-${i}`, uid: `${state.uid}-${i}` },
    };
    if (state.zone) e.zone = state.zone;
    if (withHints && state.hinted) e.hints = { forZones: [{ name: 'zone-a' }] };
    return e;
}

const arbMembers = fc.array(fc.record({ i: fc.nat(30), state: arbState }), { maxLength: 40 });

const arbDesired = fc.array(
    fc.record({ type: fc.constantFrom<AddressType>('IPv4', 'IPv6'), ports: fc.nat(portVariants.length - 1), members: arbMembers }),
    { maxLength: 4 },
);

// An existing slice is mostly a part of one desired group as we once wrote it (same type and
// ports, states copied), so unchanged slices, stale labels and top-ups all come up often.
const arbExisting = fc.array(
    fc.record({
        basis: fc.option(fc.nat(3), { nil: undefined }),
        start: fc.nat(39),
        size: fc.integer({ min: 1, max: 12 }),
        exact: fc.nat(2).map((n) => n > 0),
        type: fc.constantFrom('IPv4', 'IPv6', 'IP'),
        ports: fc.nat(portVariants.length - 1),
        members: arbMembers,
        owned: fc.nat(9).map((n) => n > 0),
        dying: fc.nat(9).map((n) => n === 0),
        staleLabels: fc.nat(3).map((n) => n === 0),
        staleAnnotations: fc.nat(3).map((n) => n === 0),
    }),
    { maxLength: 6 },
);

const arbInput = fc.record({
    addressTypes: fc.subarray<AddressType>(['IPv4', 'IPv6'], { minLength: 1 }),
    max: fc.integer({ min: 1, max: 12 }),
    headless: fc.boolean(),
    annotated: fc.boolean(),
    desired: arbDesired,
    existing: arbExisting,
});

type Generated = typeof arbInput extends fc.Arbitrary<infer T> ? T : never;

function buildInput(g: Generated): ReconcileInput {
    const owner = makeOwner({ headless: g.headless });
    const desired: DesiredGroup[] = g.desired.map((d) => ({
        addressType: d.type,
        ports: portVariants[d.ports]!,
        endpoints: d.members.map((m) => endpoint(m.i, d.type, m.state, false)),
    }));
    const existing: V1EndpointSlice[] = g.existing.map((e, k) => {
        const basis = e.basis === undefined ? undefined : g.desired[e.basis];
        const type = basis?.type ?? e.type;
        // The other spelling of the same ports, as the apiserver would have stored them.
        const ports = basis ? (basis.ports === 0 ? 1 : basis.ports) : e.ports;
        // A run of the group's members in the state that wins in the group (the last one), or
        // random members in random states.
        const winners = [...new Map((basis?.members ?? []).map((m) => [m.i, m.state])).entries()];
        const run = range(0, Math.min(e.size, winners.length)).map((j) => winners[(e.start + j) % winners.length]!);
        const endpoints = basis
            ? run.map(([i, state], j) => endpoint(i, type, e.exact || j > 0 ? state : e.members[0]?.state ?? state, false))
            : e.members.map((m) => endpoint(m.i, type, m.state, true));
        const slice = serverForm({
            addressType: type,
            metadata: {
                name: `web-old${k}`,
                namespace: 'shop',
                uid: `old-uid-${k}`,
                resourceVersion: '1',
                generation: 1,
                labels: {
                    ...(e.staleLabels ? { stale: 'yes' } : owner.labels),
                    'kubernetes.io/service-name': 'web',
                    'endpointslice.kubernetes.io/managed-by': MANAGED_BY,
                    ...(g.headless ? { 'service.kubernetes.io/headless': '' } : {}),
                },
                ownerReferences: [{ apiVersion: 'v1', kind: 'Service', name: 'web', uid: e.owned ? owner.uid : 'svc-uid-0', controller: true }],
                annotations: e.staleAnnotations ? { 'example.org/old': 'yes' } : g.annotated ? { 'example.org/source': 'test' } : {},
            },
            ports: portVariants[ports]!,
            endpoints,
        });
        if (e.dying) slice.metadata!.deletionTimestamp = new Date(0);
        return deepFreeze(slice);
    });
    return {
        owner,
        addressTypes: g.addressTypes,
        desired: deepFreeze(desired),
        existing,
        maxEndpointsPerSlice: g.max,
        managedBy: MANAGED_BY,
        annotations: g.annotated ? { 'example.org/source': 'test' } : undefined,
    };
}

/** What should be served, per (address type, port set): endpoints by identity, last one winning. */
function expectedGroups(input: ReconcileInput): Map<string, Map<string, V1Endpoint>> {
    const out = new Map<string, Map<string, V1Endpoint>>();
    for (const g of input.desired) {
        if (!input.addressTypes.includes(g.addressType)) continue;
        const key = `${g.addressType} ${portMapKey(g.ports)}`;
        const endpoints = out.get(key) ?? new Map<string, V1Endpoint>();
        for (const e of g.endpoints) endpoints.set(endpointKey(e), normaliseEndpoint(e));
        out.set(key, endpoints);
    }
    return out;
}

describe('planSlices: properties over random desired and existing slices', () => {
    it('converges in one plan: exactly the desired endpoints, slices within bounds, and a second plan writes nothing', () => {
        fc.assert(
            fc.property(arbInput, (g) => {
                const input = buildInput(g);
                const plan = planSlices(input);
                const stored = new FakeApiserver(input.existing).apply(plan);
                const result = stored.filter((s) => !s.metadata?.deletionTimestamp);

                const groups = expectedGroups(input);
                const expected = new Map<string, V1Endpoint>([...groups].flatMap(([gk, eps]) => [...eps].map(([ek, e]) => [`${gk} ${ek}`, e] as const)));
                const served = new Map<string, V1Endpoint>();
                const labels = sliceLabels({ owner: input.owner, managedBy: MANAGED_BY });
                for (const slice of result) {
                    assert.ok(slice.endpoints.length >= 1 && slice.endpoints.length <= g.max, `slice size ${slice.endpoints.length}`);
                    assert.ok(input.addressTypes.includes(slice.addressType as AddressType));
                    assert.equal(slice.metadata?.ownerReferences?.[0]?.uid, input.owner.uid);
                    assert.deepEqual(slice.metadata?.labels, labels);
                    assert.deepEqual(slice.metadata?.annotations ?? {}, input.annotations ?? {});
                    for (const e of slice.endpoints) {
                        const key = `${slice.addressType} ${portMapKey(slice.ports)} ${endpointKey(e)}`;
                        assert.ok(!served.has(key), `endpoint served twice: ${key}`);
                        served.set(key, e);
                    }
                }
                assert.deepEqual([...served.keys()].sort(), [...expected.keys()].sort());
                for (const [key, e] of served) assert.ok(endpointsEqualBeyondIdentity(e, expected.get(key)!), key);

                assert.equal(plan.actualSlices, result.length);
                const perfect = [...groups.values()].reduce((sum, eps) => sum + Math.ceil(eps.size / g.max), 0);
                assert.equal(plan.desiredSlices, perfect);
                const again = planSlices({ ...input, existing: stored });
                assert.deepEqual([again.creates.length, again.updates.length, again.deletes.length], [0, 0, 0]);
                assert.deepEqual([again.endpointsAdded, again.endpointsRemoved], [0, 0]);
            }),
            { numRuns: 300 },
        );
    });
});
