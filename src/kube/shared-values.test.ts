import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { SharedValues } from './shared-values.js';

describe('SharedValues', () => {
    it('hands out one frozen instance per distinct object, and one copy per text', () => {
        const shared = new SharedValues();
        const first = shared.object({ ready: true, serving: true });
        assert.equal(shared.object({ ready: true, serving: true }), first);
        assert.notEqual(shared.object({ ready: false, serving: true }), first);
        assert.ok(Object.isFrozen(first));
        const text = ['shop', 'x'].join('').slice(0, 4);
        assert.equal(shared.text(text), text);
        assert.equal(shared.text('shop'), text);
    });

    it('copies a string map with its values held once, not the map', () => {
        const shared = new SharedValues();
        const a = shared.texts({ cluster: ['eas', 't'].join(''), app: 'web' });
        const b = shared.texts({ cluster: ['ea', 'st'].join(''), app: 'api' });
        assert.deepEqual([a, b], [{ cluster: 'east', app: 'web' }, { cluster: 'east', app: 'api' }]);
        assert.notEqual(shared.texts({ cluster: 'east', app: 'web' }), a, 'the map is not shared');
        assert.ok(Object.isFrozen(a));
    });

    it('starts over past its bound, still handing out equal values', () => {
        const shared = new SharedValues(2);
        const first = shared.object({ k: '1' });
        shared.object({ k: '2' });
        shared.object({ k: '3' });
        assert.deepEqual(shared.object({ k: '1' }), first);
        assert.deepEqual(first, { k: '1' });
    });
});
