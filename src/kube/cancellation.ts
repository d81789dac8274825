// What can end one request of KubeRest before its answer: its deadline, its caller's signal,
// close(). One small object per request: an AbortController per request, handed to node's
// request(), cost about 6 % of the transport's CPU per write (the signal, and the listeners node
// puts on it and on the request's end), for a deadline that almost never fires.

export class Cancellation {
    /** Why the request was ended early, once it was (a caller's signal may give any value). */
    reason: unknown;
    cancelled = false;
    private onCancel: ((reason: unknown) => void) | undefined;

    cancel(reason: unknown): void {
        if (this.cancelled) return;
        this.cancelled = true;
        this.reason = reason;
        this.onCancel?.(reason);
    }

    /** What cancel() does from now on, in place of the last one (at once if cancelled already); undefined: nothing. */
    onCancelled(onCancel: ((reason: unknown) => void) | undefined): void {
        this.onCancel = onCancel;
        if (this.cancelled) onCancel?.(this.reason);
    }

    /** An error to destroy the request with. */
    get error(): Error {
        return this.reason instanceof Error ? this.reason : new Error(`request cancelled: ${String(this.reason)}`);
    }
}
