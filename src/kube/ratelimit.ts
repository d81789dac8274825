// Retry pacing for the workqueue: how long a failed key waits before it is handed out
// again. Pure: every decision takes `now` (ms) from the caller, so the queue owns the
// clock and tests need no timers.

export interface RateLimiter {
    /** The delay (ms) before `key` may be retried; counts one more failure for it. */
    when(key: string, now: number): number;
    /** Clears the key's failure history: call on success, and when giving up on it. */
    forget(key: string): void;
    /** Failures counted for `key` since its last `forget`. */
    numRequeues(key: string): number;
}

/** Per-key backoff: base, 2×base, 4×base, … capped at max; each key on its own schedule. */
export class ItemExponentialBackoff implements RateLimiter {
    private readonly failures = new Map<string, number>();

    constructor(
        readonly baseMs = 5,
        readonly maxMs = 1_000_000,
    ) {
        if (!(baseMs > 0) || !(maxMs >= baseMs)) throw new RangeError(`invalid backoff ${baseMs}ms..${maxMs}ms`);
    }

    when(key: string): number {
        const failures = this.failures.get(key) ?? 0;
        this.failures.set(key, failures + 1);
        // 2 ** failures overflows to Infinity long after the cap is reached; min() absorbs it.
        return Math.min(this.baseMs * 2 ** failures, this.maxMs);
    }

    forget(key: string): void {
        this.failures.delete(key);
    }

    numRequeues(key: string): number {
        return this.failures.get(key) ?? 0;
    }
}

/**
 * One bucket shared by all keys, so a storm of failures cannot turn into a storm of
 * retries against the apiserver. Reservations work like golang.org/x/time/rate: a
 * request on an empty bucket takes its token in advance (the balance goes negative)
 * and is told how long until that token exists, so later requests queue up behind it.
 */
export class TokenBucket implements RateLimiter {
    private tokens: number;
    private last: number | undefined;

    constructor(
        readonly qps = 10,
        readonly burst = 100,
    ) {
        if (!(qps > 0) || !(burst >= 1)) throw new RangeError(`invalid token bucket qps=${qps} burst=${burst}`);
        this.tokens = burst;
    }

    when(_key: string, now: number): number {
        // A clock that steps backwards must not mint or burn tokens.
        const elapsed = this.last === undefined ? 0 : Math.max(0, now - this.last);
        this.last = this.last === undefined ? now : Math.max(now, this.last);
        this.tokens = Math.min(this.burst, this.tokens + (elapsed * this.qps) / 1000);
        this.tokens -= 1;
        return this.tokens >= 0 ? 0 : (-this.tokens * 1000) / this.qps;
    }

    forget(): void {}

    numRequeues(): number {
        return 0;
    }
}

/** Several limiters at once: the longest delay wins, every limiter counts the failure. */
export class MaxOf implements RateLimiter {
    private readonly limiters: RateLimiter[];

    constructor(...limiters: RateLimiter[]) {
        if (limiters.length === 0) throw new RangeError('MaxOf needs at least one rate limiter');
        this.limiters = limiters;
    }

    when(key: string, now: number): number {
        return Math.max(...this.limiters.map((limiter) => limiter.when(key, now)));
    }

    forget(key: string): void {
        for (const limiter of this.limiters) limiter.forget(key);
    }

    numRequeues(key: string): number {
        return Math.max(...this.limiters.map((limiter) => limiter.numRequeues(key)));
    }
}

export interface ControllerRateLimiterOptions {
    /** First per-key retry delay; the EndpointSlice controller uses 1 s, client-go's default is 5 ms. */
    baseMs?: number;
    maxMs?: number;
    qps?: number;
    burst?: number;
}

/** client-go's DefaultControllerRateLimiter: max(per-key 5 ms…1000 s, global 10 qps burst 100). */
export function controllerRateLimiter(options: ControllerRateLimiterOptions = {}): RateLimiter {
    return new MaxOf(
        new ItemExponentialBackoff(options.baseMs ?? 5, options.maxMs ?? 1_000_000),
        new TokenBucket(options.qps ?? 10, options.burst ?? 100),
    );
}
