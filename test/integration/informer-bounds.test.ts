// An informer of a cluster that is not trusted (a Link's remote) against a real kube-apiserver:
// objects above its maxObjectBytes are never cached, whether listed or watched, and a cached
// object that grows above it leaves the cache; the rest is cached as always.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Informer } from '../../src/kube/informer.js';
import { collectionPath, ConfigMaps, objectPath } from '../../src/kube/resources.js';
import type { KubeObject } from '../../src/kube/store.js';
import { eventually, startTestCluster, type TestCluster } from '../../src/testing/harness.js';

const cluster: TestCluster = await startTestCluster('inf-bounds');
const MAX = 64 * 1024;
const cm = (name: string, chars: number) => ({ metadata: { name }, data: { value: 'x'.repeat(chars) } });

describe('an informer bounded in object size', () => {
    it('never caches an object above maxObjectBytes, from a list or a watch, and tells each one', async () => {
        const ns = await cluster.namespace('bounds');
        const path = collectionPath(ConfigMaps, ns);
        await cluster.admin.create(path, cm('small', 10));
        await cluster.admin.create(path, cm('big-listed', MAX + 1000));
        const dropped: string[] = [];
        const deleted: string[] = [];
        const informer = new Informer<KubeObject>(cluster.admin, {
            resource: ConfigMaps,
            namespace: ns,
            maxObjectBytes: MAX,
            oversized: (object, chars) => dropped.push(`${object.namespace}/${object.name} ${chars > MAX}`),
            backoffInitialMs: 50,
            backoffMaxMs: 500,
        });
        informer.on({ delete: (obj) => deleted.push(obj.metadata!.name!) });
        informer.start();
        try {
            await informer.synced;
            assert.deepEqual(informer.store.list(ns).map((o) => o.metadata!.name), ['small']);
            assert.deepEqual(dropped, [`${ns}/big-listed true`]);

            // Through the watch: a new large object is not cached, a cached one that grows leaves the cache.
            await cluster.admin.create(path, cm('big-watched', MAX * 3));
            await cluster.admin.create(path, cm('small-2', 10));
            await eventually('small-2 cached', async () => informer.store.get(ns, 'small-2') !== undefined);
            assert.equal(informer.store.get(ns, 'big-watched'), undefined);
            assert.ok(dropped.includes(`${ns}/big-watched true`), dropped.join());
            await cluster.admin.replace(objectPath(ConfigMaps, ns, 'small'), cm('small', MAX + 1));
            await eventually('small dropped', async () => informer.store.get(ns, 'small') === undefined);
            assert.deepEqual(deleted, ['small']);
            // Shrunk again, it is cached again.
            await cluster.admin.replace(objectPath(ConfigMaps, ns, 'small'), cm('small', 10));
            await eventually('small cached again', async () => informer.store.get(ns, 'small') !== undefined);
            assert.equal(informer.stats.errors, 0);
        } finally {
            await informer.stop();
        }
    });
});
