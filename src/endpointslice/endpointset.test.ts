import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1Endpoint } from '@kubernetes/client-node';
import { EndpointSet, endpointKey, endpointsEqualBeyondIdentity, normaliseEndpoint } from './endpointset.js';
import { deepFreeze, makeEndpoint } from './testkit.js';

describe('endpoint identity', () => {
    it('does not depend on the order of addresses, and sorts a copy (cache objects stay untouched)', () => {
        const a = deepFreeze(makeEndpoint(1, { addresses: ['198.18.0.2', '198.18.0.1'] }));
        const b = makeEndpoint(1, { addresses: ['198.18.0.1', '198.18.0.2'] });
        assert.equal(endpointKey(a), endpointKey(b));
        assert.deepEqual(a.addresses, ['198.18.0.2', '198.18.0.1']);
    });

    it('includes hostname and the target’s namespace and name', () => {
        const base = makeEndpoint(1);
        assert.notEqual(endpointKey(base), endpointKey({ ...base, hostname: 'wl-1' }));
        assert.notEqual(endpointKey(base), endpointKey({ ...base, targetRef: { ...base.targetRef, name: 'wl-other' } }));
        assert.notEqual(endpointKey(base), endpointKey({ ...base, targetRef: { ...base.targetRef, namespace: 'other' } }));
    });

    it('excludes conditions, zone, node and target uid, which are state of the same endpoint', () => {
        const base = makeEndpoint(1);
        const moved = { ...base, zone: 'zone-b', nodeName: 'node-9', conditions: { ready: false }, targetRef: { ...base.targetRef, uid: 'new' } };
        assert.equal(endpointKey(base), endpointKey(moved));
    });

    it('cannot be confused by field values that contain separators', () => {
        const a: V1Endpoint = { addresses: ['198.18.0.1'], hostname: 'a', targetRef: { namespace: 'b/c', name: 'd' } };
        const b: V1Endpoint = { addresses: ['198.18.0.1'], hostname: 'a', targetRef: { namespace: 'b', name: 'c/d' } };
        assert.notEqual(endpointKey(a), endpointKey(b));
        const parts: V1Endpoint[] = [
            { addresses: ['198.18.0.1', '198.18.0.2'] },
            { addresses: ['198.18.0.1'], hostname: '198.18.0.2' },
            { addresses: ['198.18.0.1'], targetRef: { namespace: '198.18.0.2' } },
            { addresses: ['198.18.0.1|'] },
            { addresses: ['198.18.0.1'], hostname: '|' },
            { addresses: ['1:a'] },
            { addresses: ['1'], hostname: 'a' },
        ];
        assert.equal(new Set(parts.map(endpointKey)).size, parts.length);
    });
});

describe('endpointsEqualBeyondIdentity', () => {
    const base = makeEndpoint(1, { nodeName: 'node-1', zone: 'zone-a' });
    const cases: [string, Partial<V1Endpoint>][] = [
        ['nodeName differs', { nodeName: 'node-2' }],
        ['zone differs', { zone: 'zone-b' }],
        ['ready differs', { conditions: { ...base.conditions, ready: false } }],
        ['serving nil → true', { conditions: { ready: true, terminating: false } }],
        ['terminating differs', { conditions: { ...base.conditions, terminating: true } }],
        ['target name differs', { targetRef: { ...base.targetRef, name: 'other' } }],
        ['target uid differs', { targetRef: { ...base.targetRef, uid: 'other' } }],
        ['hints present', { hints: { forZones: [{ name: 'zone-a' }] } }],
    ];
    for (const [name, change] of cases) {
        it(`is false when ${name}`, () => {
            assert.equal(endpointsEqualBeyondIdentity(base, { ...base, ...change }), false);
            assert.equal(endpointsEqualBeyondIdentity({ ...base, ...change }, base), false);
        });
    }

    it('is true when only the target resourceVersion differs', () => {
        assert.ok(endpointsEqualBeyondIdentity(base, { ...base, targetRef: { ...base.targetRef, resourceVersion: '99' } }));
    });

    it('is true between an endpoint and its apiserver form (empty strings and empty hints dropped)', () => {
        const sparse: V1Endpoint = { addresses: ['198.18.0.1'], zone: '', targetRef: { kind: 'ExternalWorkload', name: 'a', uid: '' } };
        const stored: V1Endpoint = { addresses: ['198.18.0.1'], conditions: {}, hints: {}, targetRef: { kind: 'ExternalWorkload', name: 'a' } };
        assert.ok(endpointsEqualBeyondIdentity(sparse, stored));
    });
});

describe('normaliseEndpoint', () => {
    it('writes the form the apiserver returns, without hints or deprecatedTopology', () => {
        const raw: V1Endpoint = {
            addresses: ['198.18.0.1'],
            hostname: '',
            zone: 'zone-a',
            conditions: { ready: true },
            hints: { forZones: [{ name: 'zone-a' }] },
            deprecatedTopology: { a: 'b' },
            targetRef: { kind: 'ExternalWorkload', name: 'a', namespace: '' },
        };
        assert.deepEqual(normaliseEndpoint(raw), {
            addresses: ['198.18.0.1'],
            zone: 'zone-a',
            conditions: { ready: true },
            targetRef: { kind: 'ExternalWorkload', name: 'a' },
        });
    });

    it('returns a copy that shares nothing with its input', () => {
        const raw = makeEndpoint(1);
        const out = normaliseEndpoint(raw);
        out.addresses.push('198.18.9.9');
        out.conditions!.ready = false;
        assert.deepEqual(raw, makeEndpoint(1));
    });
});

describe('EndpointSet', () => {
    it('holds one endpoint per identity, the later one replacing the earlier', () => {
        const set = new EndpointSet([makeEndpoint(1), makeEndpoint(2), makeEndpoint(1, { zone: 'zone-b' })]);
        assert.equal(set.size, 2);
        assert.equal(set.take(makeEndpoint(1))?.zone, 'zone-b');
    });

    it('hands out an endpoint once when taken', () => {
        const set = new EndpointSet([makeEndpoint(1, { zone: 'zone-a' }), makeEndpoint(2)]);
        assert.equal(set.take(makeEndpoint(1))?.zone, 'zone-a');
        assert.equal(set.take(makeEndpoint(1)), undefined);
        assert.equal(set.size, 1);
        assert.equal(set.take(makeEndpoint(3)), undefined);
    });

    it('lists its endpoints in identity-key order', () => {
        const set = new EndpointSet([makeEndpoint(3), makeEndpoint(1), makeEndpoint(2)]);
        const keys = set.sorted().map(endpointKey);
        assert.deepEqual(keys, [...keys].sort());
        assert.equal(keys.length, 3);
    });
});
