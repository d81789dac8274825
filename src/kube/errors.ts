// The failure taxonomy: every failure whose kind someone acts on, and the one reading of those
// kinds. Writers and requests throw these; what each means for a retry, a log line or an Event is
// decided here and acted on by the runtime (controller.ts, leader-queue.ts), so no controller
// tells failures apart itself. Apart from the transport and the runtime so that any writer may
// throw them, and any caller test them, importing neither.

/** A Status the apiserver returned, or a transport failure (code 0). */
export class ApiError extends Error {
    constructor(
        readonly code: number,
        readonly reason: string,
        message: string,
        readonly retryAfterSeconds?: number,
    ) {
        super(message);
        this.name = 'ApiError';
    }
}

export const isNotFound = (err: unknown) => err instanceof ApiError && err.code === 404;
export const isConflict = (err: unknown) => err instanceof ApiError && err.code === 409;
export const isAlreadyExists = (err: unknown) => err instanceof ApiError && err.reason === 'AlreadyExists';
export const isGone = (err: unknown) => err instanceof ApiError && (err.code === 410 || err.reason === 'Expired');
/** No status came back: the request or its answer was lost on the way, or the apiserver hangs (a timeout, a reset). */
export const isUnanswered = (err: unknown) => err instanceof ApiError && err.code === 0;
/** The apiserver answered and said no (a status below 500): asked again the same way, it says the same. */
export const isRefused = (err: unknown) => err instanceof ApiError && err.code !== 0 && err.code < 500;

/** How long the apiserver asked us to wait before asking again (Retry-After); 0 when it did not. */
export function retryAfterMs(err: unknown): number {
    return err instanceof ApiError && err.retryAfterSeconds ? err.retryAfterSeconds * 1000 : 0;
}

/** The ApiError of a non-2xx answer: its Status's reason and message, or the start of the body when it is no Status. */
export function statusError(code: number, text: string, retryAfter?: string): ApiError {
    try {
        const status = JSON.parse(text) as { reason?: string; message?: string };
        const retry = retryAfter ? Number(retryAfter) : undefined;
        return new ApiError(code, status.reason ?? '', status.message ?? text, retry);
    } catch {
        return new ApiError(code, '', text.slice(0, 500) || `HTTP ${code}`);
    }
}

/** A write not sent because this replica no longer leads. */
export class NotLeaderError extends Error {
    constructor() {
        super('not the leader: write skipped');
        this.name = 'NotLeaderError';
    }
}

/** The informer holds an object older than one we wrote: planning now would undo our write. */
export class StaleCacheError extends Error {
    override readonly name = 'StaleCacheError';
}

/** The key's own input is wrong: retrying cannot help. `reason` is the Warning Event's reason. */
export class InvalidError extends Error {
    override readonly name: string = 'InvalidError';
    constructor(
        message: string,
        readonly reason = 'Invalid',
    ) {
        super(message);
    }
}

/** A planned EndpointSlice the apiserver would refuse: a bug or input no check caught, so it is not retried (slice-writer.ts). */
export class InvalidSliceError extends InvalidError {
    override readonly name = 'InvalidSliceError';
    constructor(message: string) {
        super(message, 'InvalidEndpointSlice');
    }
}

/**
 * What retrying can do about a failure (controller.ts acts on it):
 * - conflict (409: the object changed under the write): run again at once, the first time;
 * - invalid (InvalidError, or the apiserver's 422): the key's own input is wrong, no retry;
 * - transient (everything else: a stale cache, a write refused by the leader guard, a timeout,
 *   a 5xx): retried with backoff.
 */
export type FailureClass = 'conflict' | 'invalid' | 'transient';

export function classifyFailure(err: unknown): FailureClass {
    if (err instanceof InvalidError || (err instanceof ApiError && err.code === 422)) return 'invalid';
    if (isConflict(err)) return 'conflict';
    return 'transient';
}

/** The reason of the Warning Event about an invalid key. */
export function invalidReason(err: unknown): string {
    return err instanceof InvalidError ? err.reason : 'Invalid';
}

/**
 * How loud a failure that will be retried is logged: a stale cache is expected right after our
 * own writes, and a refused write while the lease is being renewed late; both retry quietly.
 */
export function retryLogLevel(err: unknown): 'debug' | 'info' | 'warn' {
    if (err instanceof StaleCacheError) return 'debug';
    if (err instanceof NotLeaderError) return 'info';
    return 'warn';
}
