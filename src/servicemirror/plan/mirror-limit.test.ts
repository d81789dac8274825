import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1Service } from '@kubernetes/client-node';
import fc from 'fast-check';
import { exportRank, MirrorLimit } from './mirror-limit.js';
import { testLink } from '../api/testkit.js';

const link = testLink();
const svc = (name: string, created: string | undefined, labels = { 'mirror.linkerd.io/exported': 'true' }): V1Service =>
    ({ metadata: { name, namespace: 'ns', labels, ...(created && { creationTimestamp: created }) }, spec: { ports: [{ port: 80 }] } }) as unknown as V1Service;

describe('the mirror limit', () => {
    it('ranks exports by creation time, then namespace/name; non-exports and invalid ones take no place', () => {
        assert.equal(exportRank(svc('a', '2026-01-01T00:00:00Z'), link), '2026-01-01T00:00:00Z ns/a');
        assert.ok(exportRank(svc('b', '2025-12-31T23:59:59Z'), link)! < exportRank(svc('a', '2026-01-01T00:00:00Z'), link)!);
        assert.ok(exportRank(svc('z', undefined), link)! > exportRank(svc('a', '2099-01-01T00:00:00Z'), link)!);
        assert.equal(exportRank(svc('a', '2026-01-01T00:00:00Z', { other: 'x' } as never), link), undefined);
        assert.equal(exportRank({ ...svc('a', '2026-01-01T00:00:00Z'), spec: { ports: [] } }, link), undefined);
    });

    it('admits the oldest, hands a freed place to the next oldest, and lets an older newcomer push out the youngest', () => {
        const limit = new MirrorLimit(2);
        assert.deepEqual(limit.set('ns/c', '3'), []);
        assert.deepEqual(limit.set('ns/d', '4'), []);
        assert.deepEqual(limit.set('ns/e', '5'), []);
        assert.deepEqual([limit.admitted('ns/c'), limit.admitted('ns/d'), limit.admitted('ns/e'), limit.reached], [true, true, false, true]);
        assert.deepEqual(limit.set('ns/a', '1'), ['ns/d']);
        assert.deepEqual([limit.admitted('ns/a'), limit.admitted('ns/d')], [true, false]);
        assert.deepEqual(limit.set('ns/a', undefined), ['ns/d']);
        assert.deepEqual(limit.set('ns/c', undefined), ['ns/e']);
        assert.equal(limit.reached, false);
        assert.equal(new MirrorLimit(0).set('ns/a', '1').length, 0);
    });

    it('always admits exactly the oldest `max` exports, whatever the order of changes', () => {
        const change = fc.tuple(fc.integer({ min: 0, max: 30 }), fc.option(fc.integer({ min: 0, max: 50 }), { nil: undefined }));
        fc.assert(
            fc.property(fc.integer({ min: 0, max: 8 }), fc.array(change, { maxLength: 120 }), (max, changes) => {
                const limit = new MirrorLimit(max);
                const ranks = new Map<string, string>();
                const admittedBefore = (key: string) => limit.admitted(key);
                for (const [i, time] of changes) {
                    const key = `ns/s${i}`;
                    const rank = time === undefined ? undefined : `${String(time).padStart(3, '0')} ${key}`;
                    const before = new Map([...ranks.keys()].map((k) => [k, admittedBefore(k)]));
                    const flipped = limit.set(key, rank);
                    if (rank === undefined) ranks.delete(key);
                    else ranks.set(key, rank);
                    const oldest = new Set([...ranks].sort(([, a], [, b]) => (a < b ? -1 : 1)).slice(0, max).map(([k]) => k));
                    for (const k of ranks.keys()) assert.equal(limit.admitted(k), oldest.has(k), `${k} after ${key}`);
                    // Every other key whose admission changed is returned, to be synced again.
                    const changed = [...before].filter(([k, was]) => k !== key && ranks.has(k) && was !== oldest.has(k)).map(([k]) => k);
                    assert.deepEqual(flipped.filter((k) => ranks.has(k)).sort(), changed.sort());
                    assert.equal(limit.exported, ranks.size);
                }
            }),
            { numRuns: 300, seed: 22 },
        );
    });
});
