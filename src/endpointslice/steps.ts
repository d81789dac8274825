// Pure planning in steps. A planner that walks thousands of endpoints is a generator that
// `yield`s between items, so that its caller decides when to pause (kube/yielding.ts gives the
// event loop a turn every few milliseconds) while the planning itself stays free of clocks and
// I/O. A step carries nothing: it only marks a place where pausing is safe.

/** A computation that yields between its steps and returns T. */
export type Steps<T> = Generator<void, T, undefined>;

/** Runs every step at once: for small inputs, tests and one-shot tools. */
export function completed<T>(steps: Steps<T>): T {
    for (;;) {
        const step = steps.next();
        if (step.done) return step.value;
    }
}
