import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { InFlight, OwnWrites } from './own-writes.js';

const svc = (name: string, resourceVersion: string) => ({ metadata: { namespace: 'app', name, resourceVersion } });

/** A write whose response the test releases (or fails) when it likes. */
function pendingWrite<T>() {
    let respond!: (value: T) => void;
    let fail!: (err: Error) => void;
    const response = new Promise<T>((resolve, reject) => ((respond = resolve), (fail = reject)));
    return { send: () => response, respond, fail };
}

/** Objects `seen` reported as changed, by "name@resourceVersion". */
function seenBy(own: OwnWrites) {
    const changed: string[] = [];
    const see = (obj: ReturnType<typeof svc>) => own.seen(obj, () => changed.push(`${obj.metadata.name}@${obj.metadata.resourceVersion}`));
    return { changed, see };
}

describe('OwnWrites', () => {
    it('recognises the event of our own write once, and not a later or earlier version, or another object', async () => {
        const own = new OwnWrites();
        const { changed, see } = seenBy(own);
        await own.write('app', 'web', async () => svc('web', '10'));
        see(svc('api', '10'));
        see(svc('web', '9'));
        see(svc('web', '10'));
        see(svc('web', '10'));
        assert.deepEqual(changed, ['api@10', 'web@9', 'web@10'], 'another object, an older version, and ours seen again (a relist) are news');
        assert.equal(own.size, 0);
        await own.write('app', 'web', async () => svc('web', '11'));
        see(svc('web', '12'));
        assert.deepEqual(changed.slice(3), ['web@12'], "someone else's write after ours");
    });

    it('holds the events that arrive before the response and judges them by it', async () => {
        const own = new OwnWrites();
        const { changed, see } = seenBy(own);
        const write = pendingWrite<ReturnType<typeof svc>>();
        const done = own.write('app', 'web', write.send);
        see(svc('web', '10'));
        see(svc('web', '11'));
        see(svc('api', '5'));
        assert.deepEqual(changed, ['api@5'], 'only the object not being written is judged at once');
        write.respond(svc('web', '10'));
        await done;
        assert.deepEqual(changed, ['api@5', 'web@11'], 'our version is ours; a later one is news');
        assert.equal(own.size, 0);
    });

    it('reports every held event when the write fails', async () => {
        const own = new OwnWrites();
        const { changed, see } = seenBy(own);
        const write = pendingWrite<ReturnType<typeof svc>>();
        const done = own.write('app', 'web', write.send);
        see(svc('web', '10'));
        write.fail(new Error('connection reset'));
        await assert.rejects(done, /connection reset/);
        assert.deepEqual(changed, ['web@10'], 'no response: the event may be anyone\'s');
    });

    it('recognises the echoes of two writes in a row (a create, then its status) as ours, in order', async () => {
        const own = new OwnWrites();
        const { changed, see } = seenBy(own);
        await own.write('app', 'web', async () => svc('web', '10'));
        await own.write('app', 'web', async () => svc('web', '11'));
        see(svc('web', '10'));
        see(svc('web', '11'));
        assert.deepEqual(changed, [], 'both are ours');
        assert.equal(own.size, 0);
        await own.write('app', 'web', async () => svc('web', '12'));
        await own.write('app', 'web', async () => svc('web', '13'));
        see(svc('web', '13'));
        see(svc('web', '12'));
        assert.deepEqual(changed, ['web@12'], 'once a later write is seen, an earlier one never comes: a relist');
    });

    it('keeps one entry per object and forgets a deleted one', async () => {
        const own = new OwnWrites();
        const { changed, see } = seenBy(own);
        await own.write('app', 'web', async () => svc('web', '10'));
        await own.write('app', 'web', async () => svc('web', '11'));
        assert.equal(own.size, 1);
        own.forget(svc('web', '11'));
        see(svc('web', '11'));
        assert.deepEqual(changed, ['web@11']);
        await own.write('app', 'web', async () => ({ metadata: { namespace: 'app', name: 'web' } }));
        assert.equal(own.size, 0);
    });
});

describe('InFlight', () => {
    it('holds until the last overlapping write of a key ends, in arrival order', async () => {
        const inFlight = new InFlight();
        const order: string[] = [];
        const first = pendingWrite<void>();
        const second = pendingWrite<void>();
        const a = inFlight.around(['k'], first.send);
        const b = inFlight.around(['k', 'j'], second.send);
        assert.equal(inFlight.hold('k', () => order.push('k1')), true);
        assert.equal(inFlight.hold('j', () => order.push('j1')), true);
        assert.equal(inFlight.hold('k', () => order.push('k2')), true);
        assert.equal(inFlight.hold('other', () => order.push('other')), false, 'nothing in flight: not held');
        first.respond();
        await a;
        assert.deepEqual(order, [], 'the second write of k is still in flight');
        second.respond();
        await b;
        assert.deepEqual(order, ['k1', 'k2', 'j1']);
        assert.equal(inFlight.size, 0);
    });
});
