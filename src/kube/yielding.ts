// The event loop is shared: Lease renewals, /healthz, /metrics, watch streams and every worker
// run on it, and a process that holds it for 100 ms answers nothing for 100 ms. Work over
// thousands of objects (a page of a list, a Service of 10 000 workloads, a resync) therefore runs
// in slices of a few milliseconds, with a turn for timers and I/O between them. A slice is
// measured, not counted: one item may cost a microsecond, another a millisecond.
import type { Steps } from '../endpointslice/steps.js';

/**
 * Work of one stretch before timers and I/O get a turn. Several slicers may take their turns
 * back to back (five workers and an informer), so each stays well below the 50 ms of
 * event-loop delay the controller allows itself.
 */
export const SLICE_MS = 5;

/** The most calls dueAfterStep lets pass without reading the clock. */
const MAX_STRIDE = 64;

/**
 * The event loop's turns, counted by one immediate armed by the first slice started in a turn and
 * shared by every slicer: an immediate of its own for each slice (three a sync: the worker's, the
 * sync's, the writer's) was ~4 % of the controller's own CPU per write in a fresh process. A slice
 * started within the check phase, before that immediate ran, counts it too; it can only see that
 * once its work has waited, and a slice so restarted early runs at most one budget more.
 */
let turns = 0;
let counting = false;
const countTurn = () => {
    turns++;
    counting = false;
};
function thisTurn(): number {
    if (!counting) {
        counting = true;
        setImmediate(countTurn);
    }
    return turns;
}

export class TimeSlicer {
    private sliceStarted = 0;
    /**
     * The turn the slice started in. Once the event loop has run its immediates since (`turns`
     * moved on), timers and I/O have had their turn (the work waited for I/O meanwhile), and the
     * next check starts a new slice.
     */
    private startedInTurn = 0;
    /** dueAfterStep: the calls left before it reads the clock again, how many it let pass last time, and when it read it. */
    private stepsLeft = 1;
    private stride = 1;
    private readAt = 0;

    constructor(
        private readonly budgetMs = SLICE_MS,
        private readonly now: () => number = () => performance.now(),
    ) {
        this.startSlice();
    }

    /** Whether this slice has used up its budget: the caller should `await pause()` at its next safe point. */
    due(): boolean {
        if (turns !== this.startedInTurn) this.startSlice();
        return this.now() - this.sliceStarted >= this.budgetMs;
    }

    /**
     * due() for items that are small and alike (one endpoint, one workload, one candidate), whose
     * every check would cost more than a cheap item: the clock is read only every `stride` calls, a
     * stride that doubles (up to 64) while the calls since the last read took under a 32nd of the
     * budget, and is 1 again as soon as they did not. So items of a millisecond are checked one by
     * one as by due(), and a run of cheap ones overruns the budget by a few of them at most.
     */
    dueAfterStep(): boolean {
        if (--this.stepsLeft > 0) return false;
        if (turns !== this.startedInTurn) this.startSlice();
        const now = this.now();
        this.stride = now - this.readAt < this.budgetMs / 32 ? Math.min(this.stride * 2, MAX_STRIDE) : 1;
        this.stepsLeft = this.stride;
        this.readAt = now;
        return now - this.sliceStarted >= this.budgetMs;
    }

    /** Lets timers and I/O run (setImmediate comes after both), then starts a new slice. */
    async pause(): Promise<void> {
        await new Promise<void>((resolve) => setImmediate(resolve));
        this.startSlice();
    }

    private startSlice(): void {
        this.sliceStarted = this.now();
        this.readAt = this.sliceStarted;
        this.startedInTurn = thisTurn();
    }
}

/**
 * Runs pure steps (endpointslice/steps.ts) to their result, pausing whenever a slice is used up. A
 * step is one endpoint or workload: the slicer is asked as for small items (dueAfterStep).
 */
export async function runSliced<T>(steps: Steps<T>, slicer = new TimeSlicer()): Promise<T> {
    for (;;) {
        const step = steps.next();
        if (step.done) return step.value;
        if (slicer.dueAfterStep()) await slicer.pause();
    }
}
