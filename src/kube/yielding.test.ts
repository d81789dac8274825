import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { planSlices, planSlicesSteps } from '../endpointslice/reconciler.js';
import { completed, type Steps } from '../endpointslice/steps.js';
import { deepFreeze, FakeApiserver, group, makeEndpoint, makeInput, range } from '../endpointslice/testkit.js';
import { compactWorkload } from '../externalworkloads/compact.js';
import { desiredGroupsForService, desiredGroupsSteps } from '../externalworkloads/desired.js';
import { ipv4, makeService, makeWorkload } from '../externalworkloads/testkit.js';
import { runSliced, TimeSlicer } from './yielding.js';

/** A clock the test moves: each step of `costly` costs `stepMs`. */
function manualClock() {
    let now = 0;
    return { now: () => now, advance: (ms: number) => void (now += ms) };
}

function* costly(steps: number, stepMs: number, clock: { advance(ms: number): void }, trace: string[]): Steps<number> {
    for (let i = 0; i < steps; i++) {
        yield;
        clock.advance(stepMs);
        trace.push(`step ${i}`);
    }
    return steps;
}

describe('TimeSlicer and runSliced: long work gives the event loop a turn', () => {
    it('is due once its budget is used, and a pause starts a new slice', async () => {
        const clock = manualClock();
        const slicer = new TimeSlicer(5, clock.now);
        clock.advance(4);
        assert.equal(slicer.due(), false);
        clock.advance(1);
        assert.equal(slicer.due(), true);
        await slicer.pause();
        assert.equal(slicer.due(), false);
    });

    it('starts a new slice once the event loop has turned (the work waited for I/O meanwhile)', async () => {
        const clock = manualClock();
        const slicer = new TimeSlicer(5, clock.now);
        clock.advance(4);
        // Waiting for I/O: the loop runs its immediates meanwhile.
        await new Promise((resolve) => setImmediate(resolve));
        clock.advance(4);
        assert.equal(slicer.due(), false, 'the 8 ms before this check are not counted: a new slice starts with it');
        clock.advance(4);
        assert.equal(slicer.due(), false);
        clock.advance(1);
        assert.equal(slicer.due(), true);
    });

    it('slicers started in one turn each start a new slice once the loop has turned, and not before', async () => {
        const clock = manualClock();
        const slicers = [new TimeSlicer(5, clock.now), new TimeSlicer(5, clock.now), new TimeSlicer(5, clock.now)];
        clock.advance(4);
        await new Promise((resolve) => setImmediate(resolve));
        clock.advance(4);
        for (const slicer of slicers) assert.equal(slicer.due(), false, 'a new slice after the turn');
        // Started after that turn: the next one has not come yet.
        const later = new TimeSlicer(5, clock.now);
        clock.advance(5);
        assert.equal(later.due(), true);
        for (const slicer of slicers) assert.equal(slicer.due(), true);
    });

    it('reads the clock only every so many small steps, and at every step once they are not small', () => {
        const clock = manualClock();
        let reads = 0;
        const slicer = new TimeSlicer(5, () => (reads++, clock.now()));
        reads = 0;
        // 1 000 steps that take no time by this clock: strides 2, 4, ... 64.
        for (let i = 0; i < 1000; i++) assert.equal(slicer.dueAfterStep(), false);
        assert.ok(reads >= 15 && reads <= 25, `reads: ${reads}`);
        // Steps of 1 ms from now on: the first read after the stride sees the budget used, and resets it.
        let steps = 0;
        do {
            clock.advance(1);
            steps++;
        } while (!slicer.dueAfterStep());
        assert.ok(steps >= 5 && steps <= 64, `due after ${steps} steps of 1 ms`);
        reads = 0;
        for (let i = 0; i < 10; i++) {
            clock.advance(1);
            slicer.dueAfterStep();
        }
        assert.equal(reads, 10, 'steps of 1 ms are checked one by one');
    });

    it('checks every step against a budget of 0, and one step of a slice is due at its budget', () => {
        const clock = manualClock();
        const none = new TimeSlicer(0, clock.now);
        assert.equal(none.dueAfterStep(), true);
        assert.equal(none.dueAfterStep(), true);
        const slicer = new TimeSlicer(5, clock.now);
        clock.advance(4);
        assert.equal(slicer.dueAfterStep(), false);
        clock.advance(1);
        assert.equal(slicer.dueAfterStep(), true);
    });

    it('lets timers and I/O run between slices of steps, and returns the result of the steps', async () => {
        const clock = manualClock();
        const trace: string[] = [];
        // Due before the work starts: without pauses it would run only after all 20 steps.
        setTimeout(() => trace.push('timer'), 0);
        const due = performance.now() + 2;
        while (performance.now() < due);
        const result = await runSliced(costly(20, 1, clock, trace), new TimeSlicer(5, clock.now));
        assert.equal(result, 20);
        const timerAt = trace.indexOf('timer');
        assert.ok(timerAt > 0 && timerAt < 20, `the timer ran between two slices: ${trace.join(', ')}`);
        // A pause made outside the check phase may resume in it at once (after I/O, before
        // timers): a due timer runs after at most two slices of 5 steps.
        assert.ok(timerAt <= 12, `after at most two slices, at ${timerAt}`);
    });

    it('does not pause work that fits in one slice', async () => {
        const clock = manualClock();
        const trace: string[] = [];
        setTimeout(() => trace.push('timer'), 0);
        await runSliced(costly(4, 1, clock, trace), new TimeSlicer(5, clock.now));
        assert.deepEqual(trace, ['step 0', 'step 1', 'step 2', 'step 3']);
    });

    it('pauses the planners as often as the budget says: one pause per slice used up', async () => {
        const clock = manualClock();
        let pauses = 0;
        const slicer = new TimeSlicer(5, clock.now);
        const pause = slicer.pause.bind(slicer);
        slicer.pause = () => (pauses++, pause());
        // A step costs 1 ms by this clock: 2 000 endpoints, ~2 000 steps, ~400 pauses.
        const steps = planSlicesSteps(makeInput({ desired: [group(range(0, 2000).map((i) => makeEndpoint(i)))], maxEndpointsPerSlice: 100 }));
        const ticking = (function* () {
            for (;;) {
                const step = steps.next();
                if (step.done) return step.value;
                clock.advance(1);
                yield;
            }
        })();
        const plan = await runSliced(ticking, slicer);
        assert.equal(plan.creates.length, 20);
        assert.ok(pauses >= 350 && pauses <= 450, `pauses: ${pauses}`);
    });
});

describe('planning in steps plans exactly what planning at once does', () => {
    it('planSlices: an initial plan, and a re-plan against the applied slices with changes', async () => {
        const initial = deepFreeze(makeInput({ desired: [group(range(0, 3000).map((i) => makeEndpoint(i)))], maxEndpointsPerSlice: 100 }));
        const atOnce = planSlices(initial);
        assert.deepEqual(await runSliced(planSlicesSteps(initial), new TimeSlicer(0)), atOnce);
        const applied = new FakeApiserver().apply(atOnce);
        const changed = range(0, 3100)
            .filter((i) => i % 7 !== 0)
            .map((i) => (i % 11 === 0 ? makeEndpoint(i, { conditions: { ready: false, serving: true, terminating: false } }) : makeEndpoint(i)));
        const replan = deepFreeze(makeInput({ desired: [group(changed)], existing: applied, maxEndpointsPerSlice: 100 }));
        assert.deepEqual(await runSliced(planSlicesSteps(replan), new TimeSlicer(0)), planSlices(replan));
    });

    it('desiredGroupsForService: the same groups and problems', async () => {
        const service = deepFreeze(makeService());
        const workloads = deepFreeze(
            range(0, 2000).map((i) => makeWorkload(`wl-${String(i).padStart(5, '0')}`, { ips: [i % 100 === 0 ? 'not-an-ip' : ipv4(i)], ready: i % 3 !== 0 })),
        );
        const atOnce = desiredGroupsForService(service, workloads);
        assert.ok(atOnce.problems.length > 0 && atOnce.groups[0]!.endpoints.length > 1000);
        const cached = workloads.map((w) => compactWorkload(w));
        assert.deepEqual(await runSliced(desiredGroupsSteps(service, cached), new TimeSlicer(0)), atOnce);
        assert.deepEqual(completed(desiredGroupsSteps(service, cached)), atOnce);
    });
});
