// The event loop is shared: Lease renewals, /healthz, /metrics, watch streams and every worker
// run on it. The runtime's own loops over thousands of objects (a list page, a resync, a run of
// keys whose reconcile needs no I/O) give timers and I/O a turn every few milliseconds, between
// objects or reconciles. Planners never pause: a plan is one synchronous call.

/** Work of one stretch before timers and I/O get a turn: several loops may take turns back to back, well within the 50 ms of delay allowed. */
export const SLICE_MS = 5;

export class Pacer {
    private started: number;

    constructor(
        private readonly budgetMs = SLICE_MS,
        private readonly now: () => number = () => performance.now(),
    ) {
        this.started = now();
    }

    /** This stretch has used its budget: the caller should `await pause()` at its next safe point. */
    due(): boolean {
        return this.now() - this.started >= this.budgetMs;
    }

    /** Lets timers and I/O run (setImmediate comes after both), then starts a new stretch. */
    async pause(): Promise<void> {
        await new Promise<void>((resolve) => setImmediate(resolve));
        this.started = this.now();
    }
}
