import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1EndpointSlice } from '@kubernetes/client-node';
import { SliceTracker } from './tracker.js';

const web = { namespace: 'shop', name: 'web', uid: 'svc-uid-1' };

function slice(uid: string, generation: number, options: { service?: string; namespace?: string; ownerUid?: string } = {}): V1EndpointSlice {
    return {
        addressType: 'IPv4',
        endpoints: [],
        metadata: {
            name: `web-${uid}`,
            namespace: options.namespace ?? 'shop',
            uid,
            generation,
            labels: { 'kubernetes.io/service-name': options.service ?? 'web' },
            ownerReferences: [{ apiVersion: 'v1', kind: 'Service', name: 'web', uid: options.ownerUid ?? web.uid, controller: true }],
        },
    };
}

describe('SliceTracker: which slice events need a sync', () => {
    it('syncs for a slice it never saw written', () => {
        assert.equal(new SliceTracker().shouldSync(slice('a', 1)), true);
    });

    it('skips the echo of its own write and anything older, syncs for a newer generation', () => {
        const tracker = new SliceTracker();
        tracker.update(slice('a', 2));
        assert.equal(tracker.shouldSync(slice('a', 2)), false);
        assert.equal(tracker.shouldSync(slice('a', 1)), false);
        assert.equal(tracker.shouldSync(slice('a', 3)), true);
        assert.equal(tracker.shouldSync(slice('b', 2)), true);
        assert.equal(tracker.shouldSync(slice('a', 2, { service: 'api' })), true);
        assert.equal(tracker.shouldSync(slice('a', 2, { namespace: 'other' })), true);
    });

    it('tracks the generation of its latest write', () => {
        const tracker = new SliceTracker();
        tracker.update(slice('a', 1));
        tracker.update(slice('a', 4));
        assert.equal(tracker.shouldSync(slice('a', 3)), false);
        assert.equal(tracker.shouldSync(slice('a', 5)), true);
    });

    it('does not track a slice without a uid or a service-name label', () => {
        const tracker = new SliceTracker();
        const unlabelled = slice('a', 1);
        unlabelled.metadata!.labels = {};
        tracker.update(unlabelled);
        assert.equal(tracker.has(unlabelled), false);
        assert.equal(tracker.shouldSync(unlabelled), true);
    });
});

describe('SliceTracker: is the informer cache stale', () => {
    const cases: { name: string; tracked: (t: SliceTracker) => void; informer: V1EndpointSlice[]; stale: boolean }[] = [
        { name: 'nothing tracked', tracked: () => {}, informer: [slice('a', 1)], stale: false },
        { name: 'generations match', tracked: (t) => t.update(slice('a', 2)), informer: [slice('a', 2)], stale: false },
        { name: 'the tracker has a newer generation', tracked: (t) => t.update(slice('a', 3)), informer: [slice('a', 2)], stale: true },
        { name: 'the informer has a newer generation', tracked: (t) => t.update(slice('a', 2)), informer: [slice('a', 5)], stale: false },
        { name: 'a slice we deleted is still listed', tracked: (t) => t.expectDeletion(slice('a', 2)), informer: [slice('a', 2)], stale: true },
        { name: 'a slice we deleted is gone', tracked: (t) => t.expectDeletion(slice('a', 2)), informer: [], stale: false },
        { name: 'a slice we wrote is missing', tracked: (t) => t.update(slice('a', 1)), informer: [], stale: true },
        { name: 'an untracked slice is listed beside a matching one', tracked: (t) => t.update(slice('a', 1)), informer: [slice('a', 1), slice('b', 1)], stale: false },
    ];
    for (const c of cases) {
        it(`${c.stale ? 'is stale' : 'is fresh'} when ${c.name}`, () => {
            const tracker = new SliceTracker();
            c.tracked(tracker);
            assert.equal(tracker.staleSlices(web, c.informer), c.stale);
        });
    }

    it('forgets what it wrote for an earlier Service of the same name (delete and recreate)', () => {
        const tracker = new SliceTracker();
        tracker.update(slice('a', 3));
        const recreated = { ...web, uid: 'svc-uid-2' };
        assert.equal(tracker.staleSlices(recreated, []), false);
        assert.equal(tracker.has(slice('a', 3)), false);
    });

    it('forgets the old Service’s slices when it writes one for a recreated Service', () => {
        const tracker = new SliceTracker();
        tracker.update(slice('a', 3));
        tracker.update(slice('b', 1, { ownerUid: 'svc-uid-2' }));
        assert.equal(tracker.has(slice('a', 3)), false);
        assert.equal(tracker.staleSlices({ ...web, uid: 'svc-uid-2' }, [slice('b', 1, { ownerUid: 'svc-uid-2' })]), false);
    });
});

describe('SliceTracker: deletions', () => {
    it('accepts a deletion it expected and forgets the slice', () => {
        const tracker = new SliceTracker();
        tracker.update(slice('a', 1));
        tracker.expectDeletion(slice('a', 1));
        assert.equal(tracker.handleDeletion(slice('a', 1)), true);
        assert.equal(tracker.has(slice('a', 1)), false);
    });

    it('reports an unexpected deletion of a slice it wrote, so the Service is synced again', () => {
        const tracker = new SliceTracker();
        tracker.update(slice('a', 1));
        assert.equal(tracker.handleDeletion(slice('a', 1)), false);
        assert.equal(tracker.has(slice('a', 1)), false);
        assert.equal(tracker.staleSlices(web, []), false);
    });

    it('has nothing to say about the deletion of a slice it never tracked', () => {
        assert.equal(new SliceTracker().handleDeletion(slice('a', 1)), true);
    });
});

describe('SliceTracker: forgetting', () => {
    it('forgets one Service and keeps the others', () => {
        const tracker = new SliceTracker();
        tracker.update(slice('a', 1));
        tracker.update(slice('b', 1, { service: 'api' }));
        tracker.update(slice('c', 1, { namespace: 'other' }));
        tracker.deleteService('shop', 'web');
        assert.deepEqual(
            [slice('a', 1), slice('b', 1, { service: 'api' }), slice('c', 1, { namespace: 'other' })].map((s) => tracker.has(s)),
            [false, true, true],
        );
    });

    it('forgets everything on reset', () => {
        const tracker = new SliceTracker();
        tracker.update(slice('a', 1));
        tracker.update(slice('b', 1, { service: 'api' }));
        tracker.reset();
        assert.equal(tracker.has(slice('a', 1)), false);
        assert.equal(tracker.has(slice('b', 1, { service: 'api' })), false);
        assert.equal(tracker.staleSlices(web, []), false);
    });
});
