import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Pacer } from './pacer.js';

describe('Pacer: the runtime\'s long loops give the event loop a turn', () => {
    it('is due once its budget is used, and a pause starts a new stretch', async () => {
        let now = 0;
        const pacer = new Pacer(5, () => now);
        now = 4;
        assert.equal(pacer.due(), false);
        now = 5;
        assert.equal(pacer.due(), true);
        await pacer.pause();
        assert.equal(pacer.due(), false);
    });

    it('lets a due timer run during a pause', async () => {
        const trace: string[] = [];
        setTimeout(() => trace.push('timer'), 0);
        const due = performance.now() + 2;
        while (performance.now() < due);
        trace.push('before');
        await new Pacer(0).pause();
        trace.push('after');
        assert.deepEqual(trace, ['before', 'timer', 'after']);
    });
});
