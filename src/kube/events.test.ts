import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { EventFilter, EventRecorder } from './events.js';
import type { KubeRest } from './rest.js';

const workload = (name: string) => ({ kind: 'ExternalWorkload', metadata: { namespace: 'ns', name, uid: `uid-${name}` } });
const MIN = 60_000;

describe('EventFilter (client-go spam filter and aggregation)', () => {
    it('lets a burst of 25 events of one object and reason through, then one per 5 minutes', () => {
        const filter = new EventFilter(0);
        const actions = Array.from({ length: 30 }, (_, i) => filter.decide(workload('a'), 'Warning', 'InvalidIP', `message ${i}`, 0).action);
        assert.deepEqual(actions.slice(0, 25), Array(25).fill('create'));
        assert.deepEqual(actions.slice(25), Array(5).fill('spam'));
        assert.equal(filter.decide(workload('a'), 'Warning', 'InvalidIP', 'later', 4 * MIN).action, 'spam');
        assert.equal(filter.decide(workload('a'), 'Warning', 'InvalidIP', 'later', 5 * MIN).action, 'create');
        assert.equal(filter.decide(workload('a'), 'Warning', 'InvalidIP', 'again', 5 * MIN).action, 'spam');
    });

    it('keeps a separate bucket per object and per reason', () => {
        const filter = new EventFilter(0);
        for (let i = 0; i < 25; i++) filter.decide(workload('a'), 'Warning', 'InvalidIP', `m${i}`, 0);
        assert.equal(filter.decide(workload('a'), 'Warning', 'InvalidIP', 'x', 0).action, 'spam');
        assert.equal(filter.decide(workload('a'), 'Warning', 'InvalidPort', 'x', 0).action, 'create');
        assert.equal(filter.decide(workload('b'), 'Warning', 'InvalidIP', 'x', 0).action, 'create');
    });

    it('counts an identical event on the Event already created, within the aggregation window', () => {
        const filter = new EventFilter(10 * MIN);
        const first = filter.decide(workload('a'), 'Warning', 'InvalidIP', 'bad ip', 0);
        assert.equal(first.action, 'create');
        if (first.action !== 'create') return;
        assert.deepEqual(filter.decide(workload('a'), 'Warning', 'InvalidIP', 'bad ip', 0), { action: 'aggregate', id: first.id, count: 2 });
        assert.equal(filter.pendingCount(first.id), undefined, 'nothing to patch before the create answered');
        filter.created(first.id, 'a.17f0');
        assert.deepEqual(filter.decide(workload('a'), 'Warning', 'InvalidIP', 'bad ip', 2 * MIN), { action: 'aggregate', id: first.id, count: 3 });
        assert.deepEqual(filter.pendingCount(first.id), { name: 'a.17f0', count: 3 });
        filter.written(first.id, 3);
        assert.equal(filter.pendingCount(first.id), undefined, 'a queued patch with nothing new is skipped');
        assert.equal(filter.decide(workload('a'), 'Warning', 'InvalidIP', 'another message', 2 * MIN).action, 'create');
        assert.equal(filter.decide(workload('a'), 'Warning', 'InvalidIP', 'bad ip', 13 * MIN).action, 'create', 'past the window');
    });

    it('starts a new Event once the old one is gone', () => {
        const filter = new EventFilter(10 * MIN);
        const first = filter.decide(workload('a'), 'Normal', 'Synced', 'ok', 0);
        if (first.action !== 'create') assert.fail('expected a create');
        filter.created(first.id, 'a.1');
        filter.forget(first.id);
        assert.equal(filter.decide(workload('a'), 'Normal', 'Synced', 'ok', 1).action, 'create');
    });
});

describe('EventRecorder and leadership', () => {
    it('drops Events queued in term that would be sent after it ended', async () => {
        let leading = true;
        const sent: string[] = [];
        let answerFirst!: () => void;
        const rest = {
            create: async (_path: string, body: { reason: string }) => {
                sent.push(body.reason);
                if (sent.length === 1) await new Promise<void>((resolve) => (answerFirst = resolve));
                return { metadata: { name: `e${sent.length}` } };
            },
        } as unknown as KubeRest;
        const recorder = new EventRecorder(rest, 'test', () => undefined, 0, { isLeader: () => leading });
        recorder.record(workload('a'), 'Normal', 'First', 'sent while leading');
        recorder.record(workload('b'), 'Normal', 'Second', 'queued behind a slow send');
        assert.equal(recorder.pending(), 1);
        leading = false;
        answerFirst();
        await new Promise((resolve) => setImmediate(resolve));
        assert.deepEqual(sent, ['First']);
        assert.equal(recorder.pending(), 0);
    });
});
