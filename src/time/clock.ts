// The one clock of mesh-endpoints: what code that waits or stamps times is handed, so a test
// can move time itself. Pure code takes `now` as an argument instead.
export interface Clock {
    now(): number;
    /** Runs `fn` after `ms`; the returned function cancels it. */
    schedule(fn: () => void, ms: number): () => void;
}

/** The real clock, looked up at each call so node:test's mock.timers can replace it. */
export const systemClock: Clock = {
    now: () => Date.now(),
    schedule(fn, ms) {
        const timer = setTimeout(fn, ms);
        return () => clearTimeout(timer);
    },
};

/** The real clock for timers that alone must not keep the process alive (a DNS refresh). */
export const backgroundClock: Clock = {
    now: () => Date.now(),
    schedule(fn, ms) {
        const timer = setTimeout(fn, ms).unref();
        return () => clearTimeout(timer);
    },
};

/** Runs `fn` every `ms` on the real clock until the returned function is called (a resync). */
export function every(fn: () => void, ms: number): () => void {
    const timer = setInterval(fn, ms);
    return () => clearInterval(timer);
}

/**
 * Resolves after `ms` on `clock` (backgroundClock: a wait that alone must not keep the process
 * alive), or at once when `signal` aborts: a wait is never what keeps a stop waiting.
 */
export function sleep(ms: number, clock: Clock = systemClock, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
        if (signal?.aborted) return resolve();
        const done = () => {
            cancel();
            signal?.removeEventListener('abort', done);
            resolve();
        };
        const cancel = clock.schedule(done, ms);
        signal?.addEventListener('abort', done, { once: true });
    });
}
