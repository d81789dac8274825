import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Source } from './controller.js';
import type { InformerHandlers } from './informer.js';
import { mapSource, Published, SourceSet } from './sources.js';
import type { KubeObject } from './store.js';

/** A source whose events the test sends, holding `held`. */
function source<T>(held: T[] = []) {
    const handlers = new Set<InformerHandlers<T>>();
    const tell = (call: (h: InformerHandlers<T>) => void) => handlers.forEach(call);
    const from: Source<T> = {
        on: (h) => {
            handlers.add(h);
            return () => void handlers.delete(h);
        },
        list: () => held,
    };
    return { from, handlers, tell };
}

/** What a watch of `of` was told, as "kind value" lines. */
function recorder<T>(of: Source<T>, show: (t: T) => string) {
    const told: string[] = [];
    const stop = of.on({ add: (t) => told.push(`add ${show(t)}`), update: (o, t) => told.push(`update ${show(o)}>${show(t)}`), delete: (t) => told.push(`delete ${show(t)}`) });
    return { told, stop: stop ?? (() => undefined) };
}

const obj = (name: string, generation = 1): KubeObject => ({ metadata: { name, generation } });

describe('sources made of sources', () => {
    it('maps each object to what it stands for, tells an update only when its predicate says so, and replays through the map', () => {
        const cache = source([obj('a'), obj('skip')]);
        const mapped = mapSource(cache.from, (o) => (o.metadata!.name === 'skip' ? [] : [`${o.metadata!.name}@${o.metadata!.generation}`]), { changed: (old, o) => old.metadata?.generation !== o.metadata?.generation });
        const { told, stop } = recorder(mapped, (s) => s);
        cache.tell((h) => h.add?.(obj('b')));
        cache.tell((h) => h.add?.(obj('skip')));
        cache.tell((h) => h.update?.(obj('b'), obj('b')));
        cache.tell((h) => h.update?.(obj('b'), obj('b', 2)));
        cache.tell((h) => h.delete?.(obj('b', 2)));
        assert.deepEqual(told, ['add b@1', 'update b@1>b@2', 'delete b@2']);
        assert.deepEqual([...mapped.list()], ['a@1']);
        stop();
        assert.equal(cache.handlers.size, 0, 'unsubscribing the mapped source leaves the cache');
    });

    it('is many sources as one: a member set is subscribed to by every watch, one removed or replaced is left by all', () => {
        const set = new SourceSet<string>();
        const [east, west, west2] = [source(['e']), source(['w']), source(['w2'])];
        set.set('east', east.from);
        const first = recorder(set, (s) => s);
        set.set('west', west.from);
        const second = recorder(set, (s) => s);
        east.tell((h) => h.add?.('e1'));
        west.tell((h) => h.add?.('w1'));
        assert.deepEqual([first.told, second.told], [['add e1', 'add w1'], ['add e1', 'add w1']]);
        assert.deepEqual([...set.list()].sort(), ['e', 'w']);

        set.set('west', west2.from);
        assert.equal(west.handlers.size, 0, 'a replaced member is left');
        assert.equal(west2.handlers.size, 2);
        set.remove('east');
        assert.equal(east.handlers.size, 0, 'a removed member is left');
        first.stop();
        assert.equal(west2.handlers.size, 1, 'a watch that stops leaves every member');
        west2.tell((h) => h.delete?.('w2'));
        assert.deepEqual(second.told.at(-1), 'delete w2');
        assert.deepEqual(first.told.at(-1), 'add w1');
    });

    it('publishes values by id: set is an add, set again an update, cleared a delete; what is held is its replay', () => {
        const published = new Published<string>();
        const { told, stop } = recorder(published, (s) => s);
        published.set('east', 'e1');
        published.set('east', 'e2');
        published.set('west', undefined);
        assert.deepEqual([...published.list()], ['e2']);
        published.set('east', undefined);
        assert.deepEqual(told, ['add e1', 'update e1>e2', 'delete e2']);
        stop();
        published.set('east', 'e3');
        assert.equal(told.length, 3, 'a watch that stopped hears nothing');
    });
});
