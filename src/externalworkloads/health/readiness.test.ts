import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { WorkloadCondition } from '../types.js';
import { afterProbe, initialProbeState, readyCondition, readyToWrite, storedReadyStatus, withReadyCondition, type ProbeState } from './readiness.js';

/** Runs probe results (+ pass, - fail) from a stored status; returns the writes they cause, as the prober does. */
function run(stored: string | undefined, results: string, thresholds = { successThreshold: 1, failureThreshold: 3 }): string[] {
    let state: ProbeState = initialProbeState(stored);
    const writes: string[] = [];
    for (const r of results) {
        state = afterProbe(state, r === '+', thresholds);
        const ready = readyToWrite(state, stored);
        if (ready !== undefined) {
            stored = ready ? 'True' : 'False';
            writes.push(stored);
        }
    }
    return writes;
}

describe('readiness from probe results', () => {
    it('writes only when the thresholds establish a status the stored condition lacks', () => {
        const cases: [string, string | undefined, string, string[], { successThreshold: number; failureThreshold: number }?][] = [
            ['first pass makes a new workload ready', undefined, '+', ['True']],
            ['steady passes write once', undefined, '+++++', ['True']],
            ['failures below the threshold change nothing', 'True', '--+--+', []],
            ['three failures in a row make it not ready', 'True', '---', ['False']],
            ['and one pass makes it ready again', 'True', '---+', ['False', 'True']],
            ['a new workload failing is written not ready at the threshold', undefined, '---', ['False']],
            ['not before', undefined, '--', []],
            ['successThreshold 2: passes must come in a row', 'False', '+-+-++', ['True'], { successThreshold: 2, failureThreshold: 1 }],
            ['failureThreshold 1: one failure is enough', 'True', '-', ['False'], { successThreshold: 1, failureThreshold: 1 }],
            ['Unknown stored: the first threshold reached is written', 'Unknown', '+', ['True']],
        ];
        for (const [name, stored, results, writes, thresholds] of cases) assert.deepEqual(run(stored, results, thresholds), writes, name);
    });

    it('a new leader starts from the stored condition: a ready workload still passing is not written (no flap on failover)', () => {
        assert.deepEqual(initialProbeState('True'), { ready: true, successes: 0, failures: 0 });
        assert.deepEqual(run('True', '++++'), []);
        assert.deepEqual(run('False', '--'), []);
    });

    it('undoes someone else’s write that contradicts the probes', () => {
        let state = afterProbe(initialProbeState('True'), true, { successThreshold: 1, failureThreshold: 3 });
        assert.equal(readyToWrite(state, 'True'), undefined);
        state = afterProbe(state, true, { successThreshold: 1, failureThreshold: 3 });
        assert.equal(readyToWrite(state, 'False'), true);
    });

    it('reads the stored Ready status', () => {
        assert.equal(storedReadyStatus(undefined), undefined);
        assert.equal(storedReadyStatus([{ type: 'Other', status: 'True' }]), undefined);
        assert.equal(storedReadyStatus([{ type: 'Other', status: 'True' }, { type: 'Ready', status: 'False' }]), 'False');
    });
});

describe('the Ready condition written', () => {
    const now = new Date('2026-12-01T05:00:00.123Z');

    it('carries reason, message, and the transition time of a change', () => {
        assert.deepEqual(readyCondition(true, 'http://192.0.2.1:4191/ready passed: 200 OK', now), {
            type: 'Ready',
            status: 'True',
            reason: 'ProbeSucceeded',
            message: 'http://192.0.2.1:4191/ready passed: 200 OK',
            lastProbeTime: '2026-12-01T05:00:00Z',
            lastTransitionTime: '2026-12-01T05:00:00Z',
        });
        const failed = readyCondition(false, 'failed', now, { type: 'Ready', status: 'True', lastTransitionTime: '2026-11-30T00:00:00Z' });
        assert.equal(failed.reason, 'ProbeFailed');
        assert.equal(failed.lastTransitionTime, '2026-12-01T05:00:00Z');
    });

    it('keeps the transition time when the status stays (a rewrite of the message only)', () => {
        const kept = readyCondition(false, 'failed', now, { type: 'Ready', status: 'False', lastTransitionTime: new Date('2026-11-30T00:00:00Z') });
        assert.equal(kept.lastTransitionTime, '2026-11-30T00:00:00Z');
    });

    it('replaces Ready and leaves every other condition as it is, where it is', () => {
        const ready: WorkloadCondition = { type: 'Ready', status: 'True', reason: 'ProbeSucceeded' };
        const others: WorkloadCondition[] = [
            { type: 'Accepted', status: 'True', reason: 'ByPolicy' },
            { type: 'Ready', status: 'False', reason: 'Manual' },
            { type: 'example.com/Drained', status: 'False' },
        ];
        assert.deepEqual(withReadyCondition(others, ready), [others[0], ready, others[2]]);
        assert.deepEqual(withReadyCondition([others[0]!], ready), [others[0], ready]);
        assert.deepEqual(withReadyCondition(undefined, ready), [ready]);
        // A duplicate Ready (hand-written) goes: one Ready, ours.
        assert.deepEqual(withReadyCondition([ready, { type: 'Ready', status: 'False' }], ready), [ready]);
    });
});
