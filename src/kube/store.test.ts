import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ObjectStore } from './store.js';

describe('ObjectStore indexes', () => {
    const obj = (name: string, labels: Record<string, string>, namespace = 'ns') => ({ metadata: { name, namespace, labels } });

    it('files an object under every value, re-files it on update and forgets it on delete', () => {
        const store = new ObjectStore<ReturnType<typeof obj>>();
        store.addIndex('labels', (o) => Object.entries(o.metadata.labels).map(([k, v]) => `${k}=${v}`));
        store.set(obj('a', { app: 'web', tier: 'front' }));
        store.set(obj('b', { app: 'web' }));
        assert.deepEqual(store.byIndex('labels', 'app=web').map((o) => o.metadata.name).sort(), ['a', 'b']);
        store.set(obj('a', { app: 'db' }));
        assert.deepEqual(store.byIndex('labels', 'app=web').map((o) => o.metadata.name), ['b']);
        assert.deepEqual(store.byIndex('labels', 'tier=front'), []);
        store.delete(obj('b', {}));
        assert.deepEqual(store.byIndex('labels', 'app=web'), []);
        assert.deepEqual(store.byIndex('labels', 'app=db').map((o) => o.metadata.name), ['a']);
    });

    it('indexes objects already held, and keeps byLabel’s namespace filter', () => {
        const store = new ObjectStore<ReturnType<typeof obj>>();
        store.set(obj('a', { svc: 'web' }, 'one'));
        store.set(obj('b', { svc: 'web' }, 'two'));
        store.indexLabel('svc');
        assert.deepEqual(store.byLabel('svc', 'web').length, 2);
        assert.deepEqual(store.byLabel('svc', 'web', 'two').map((o) => o.metadata.name), ['b']);
        assert.throws(() => store.byLabel('other', 'x'), /not indexed/);
    });
});
