import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { OwnWrites } from './own-writes.js';

const svc = (name: string, resourceVersion: string) => ({ metadata: { namespace: 'app', name, resourceVersion } });

describe('OwnWrites', () => {
    it('recognises the event of our own write once, and not a later or earlier version, or another object', () => {
        const own = new OwnWrites();
        own.wrote(svc('web', '10'));
        assert.equal(own.isOwn(svc('api', '10')), false, 'another object');
        assert.equal(own.isOwn(svc('web', '9')), false, 'an event from before our write');
        assert.equal(own.isOwn(svc('web', '10')), true);
        assert.equal(own.isOwn(svc('web', '10')), false, 'seen once: a relist showing it again is news');
        assert.equal(own.size, 0);
        own.wrote(svc('web', '11'));
        assert.equal(own.isOwn(svc('web', '12')), false, "someone else's write after ours");
    });

    it('keeps one entry per object and forgets a deleted one', () => {
        const own = new OwnWrites();
        own.wrote(svc('web', '10'));
        own.wrote(svc('web', '11'));
        assert.equal(own.size, 1);
        assert.equal(own.isOwn(svc('web', '10')), false);
        own.forget(svc('web', '11'));
        assert.equal(own.isOwn(svc('web', '11')), false);
        own.wrote({ metadata: { namespace: 'app', name: 'no-version' } });
        assert.equal(own.size, 0);
    });
});
