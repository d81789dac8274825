import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { UnansweredRun } from './leaderelection.js';

describe('UnansweredRun', () => {
    const told = (outcomes: [number, boolean][]) => {
        const run = new UnansweredRun();
        return outcomes.map(([startedAt, answered]) => run.outcome(startedAt, answered));
    };

    it('tells nothing while requests are answered', () => {
        assert.deepEqual(told([[0, true], [2, true], [4, true]]), [undefined, undefined, undefined]);
    });

    it('tells the start of a run of unanswered requests once when it begins and once when an answer ends it', () => {
        assert.deepEqual(told([[0, true], [2, false], [12, false], [22, false], [32, true], [34, true]]), [undefined, 2, undefined, undefined, 2, undefined]);
    });

    it('tells each run on its own', () => {
        assert.deepEqual(told([[0, false], [10, true], [12, false], [22, true]]), [0, 0, 12, 12]);
    });
});
