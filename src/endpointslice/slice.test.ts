import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { annotationsChanged, labelsChanged, newSlice, ownedBy, replacementSlice, sliceLabels, sliceNamePrefix, type SliceMeta } from './slice.js';
import { httpPorts, makeEndpoint, makeOwner, MANAGED_BY, storedSlice } from './testkit.js';

const meta = (overrides: Partial<SliceMeta> = {}): SliceMeta => ({ owner: makeOwner(), managedBy: MANAGED_BY, ...overrides });

describe('slice naming', () => {
    it('prefixes generated names with "<service>-"', () => {
        assert.equal(sliceNamePrefix('web'), 'web-');
    });

    it('keeps the dash even at 253 characters, as the apiserver masks the last two and cuts the prefix to 58', () => {
        const longest = 'a'.repeat(253);
        assert.equal(sliceNamePrefix(longest), `${longest}-`);
    });

    it('drops the dash when "<service>-" would yield invalid names', () => {
        // Not a valid Service name, but the rule must still never produce a rejected create.
        assert.equal(sliceNamePrefix('web.'), 'web.');
    });
});

describe('slice labels', () => {
    it('copies the Service labels, adds extra labels and sets ours last', () => {
        const labels = sliceLabels(
            meta({
                owner: makeOwner({ labels: { app: 'web', 'kubernetes.io/service-name': 'evil', 'service.kubernetes.io/headless': 'x' } }),
                extraLabels: { 'mirror.example.org/cluster': 'east', 'endpointslice.kubernetes.io/managed-by': 'evil' },
            }),
        );
        assert.deepEqual(labels, {
            app: 'web',
            'mirror.example.org/cluster': 'east',
            'kubernetes.io/service-name': 'web',
            'endpointslice.kubernetes.io/managed-by': MANAGED_BY,
        });
    });

    it('adds service.kubernetes.io/headless="" for a headless Service', () => {
        assert.equal(sliceLabels(meta({ owner: makeOwner({ headless: true }) }))['service.kubernetes.io/headless'], '');
    });

    it('sees a change when the slice has a label the Service lost, and when it lacks one the Service gained', () => {
        const slice = storedSlice('web-a', [makeEndpoint(1)]);
        const current = sliceLabels(meta());
        assert.equal(labelsChanged(slice, current), false);
        assert.equal(labelsChanged(slice, { ...current, tier: 'front' }), true);
        const { app: _dropped, ...fewer } = current;
        assert.equal(labelsChanged(slice, fewer), true);
    });

    it('sees an annotation change in either direction, and none between absent and empty', () => {
        const slice = storedSlice('web-a', [makeEndpoint(1)]);
        assert.equal(annotationsChanged(slice, undefined), false);
        assert.equal(annotationsChanged(slice, {}), false);
        assert.equal(annotationsChanged(slice, { a: '1' }), true);
        const annotated = { ...slice, metadata: { ...slice.metadata, annotations: { a: '1' } } };
        assert.equal(annotationsChanged(annotated, {}), true);
    });
});

describe('slice ownership and shape', () => {
    it('is owned by the Service whose uid, kind and apiVersion its owner reference carries', () => {
        const slice = storedSlice('web-a', [makeEndpoint(1)]);
        assert.equal(ownedBy(slice, { uid: 'svc-uid-1' }), true);
        assert.equal(ownedBy(slice, { uid: 'svc-uid-2' }), false);
        const ref = slice.metadata!.ownerReferences![0]!;
        for (const wrong of [{ ...ref, kind: 'Endpoints' }, { ...ref, apiVersion: 'v2' }]) {
            assert.equal(ownedBy({ ...slice, metadata: { ...slice.metadata, ownerReferences: [wrong] } }, { uid: 'svc-uid-1' }), false);
        }
    });

    it('builds a new slice with a controller owner reference, namespace, annotations and its own copy of the ports', () => {
        const slice = newSlice(meta({ annotations: { a: '1' } }), 'IPv6', httpPorts, []);
        assert.deepEqual(slice.metadata?.ownerReferences, [
            { apiVersion: 'v1', kind: 'Service', name: 'web', uid: 'svc-uid-1', controller: true, blockOwnerDeletion: true },
        ]);
        assert.deepEqual([slice.metadata?.namespace, slice.metadata?.generateName, slice.metadata?.name], ['shop', 'web-', undefined]);
        assert.deepEqual(slice.metadata?.annotations, { a: '1' });
        assert.equal(slice.addressType, 'IPv6');
        assert.notEqual(slice.ports?.[0], httpPorts[0]);
    });

    it('builds a replacement that keeps the existing slice’s name, uid and resourceVersion for the PUT', () => {
        const existing = storedSlice('web-a', [makeEndpoint(1)]);
        const replacement = replacementSlice(existing, meta({ owner: makeOwner({ labels: {} }) }), httpPorts, [makeEndpoint(2)]);
        assert.deepEqual(
            [replacement.metadata?.name, replacement.metadata?.uid, replacement.metadata?.resourceVersion],
            ['web-a', 'uid-web-a', '7'],
        );
        assert.equal(replacement.metadata?.labels?.app, undefined);
        assert.deepEqual(replacement.endpoints, [makeEndpoint(2)]);
        assert.deepEqual(existing.endpoints, [makeEndpoint(1)]);
    });
});
