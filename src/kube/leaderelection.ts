// Lease leader election (coordination.k8s.io/v1) with client-go's semantics. It owns
// one Lease and answers "am I the leader?"; it never runs controllers itself — the
// manager starts and stops them on the callbacks.
//
// Safety rests on two rules. Expiry of someone else's lease is judged from when *this*
// process last saw the lease record change, on our own monotonic clock, never from the
// holder's renewTime (clocks differ between machines). And our own leadership ends,
// for writers, renewDeadline after the start of our last successful renew: since
// renewDeadline < leaseDuration, no other candidate can have taken the lease by then.
// That end is enforced, not just observed: every lease request is aborted when the time
// left before the deadline runs out (client-go bounds its renew by the deadline too), and
// a timer steps down at the deadline even while a request hangs.
import { performance } from 'node:perf_hooks';
import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import type { KubeRest } from './rest.js';
import { isConflict, isNotFound, isUnanswered } from './errors.js';
import { collectionPath, Leases, objectPath } from './resources.js';
import { microTime } from '../time/format.js';
import { systemClock } from '../time/clock.js';

export interface LeaseSpec {
    holderIdentity?: string | null;
    leaseDurationSeconds?: number;
    acquireTime?: string | null;
    renewTime?: string | null;
    leaseTransitions?: number;
}

interface Lease {
    apiVersion?: string;
    kind?: string;
    metadata: { name: string; namespace: string; resourceVersion?: string };
    spec?: LeaseSpec;
}

export interface LeaderElectionOptions {
    namespace: string;
    name: string;
    identity?: string;
    leaseDurationMs?: number;
    renewDeadlineMs?: number;
    retryPeriodMs?: number;
    onStartedLeading?: () => void;
    onStoppedLeading?: () => void;
    /**
     * Lease requests went unanswered (a timeout, a reset: no status from the apiserver) since
     * `since` (performance.now() of the first of them): told once when they start failing so,
     * and once more when an answer comes back, since what was sent meanwhile may be lost.
     */
    onUnanswered?: (since: number) => void;
    log?: (level: 'info' | 'warn', msg: string, fields?: Record<string, unknown>) => void;
}

/**
 * When to tell of unanswered requests, from one outcome after another: at the first unanswered
 * one of a run (its start), and at the first answer after it (the same start). Once each, not at
 * every round of an outage: what listens restarts its watches, and twice is enough for watches
 * opened during the outage too.
 */
export class UnansweredRun {
    private since: number | undefined;

    /** The start of the run to tell of, if this outcome is one to tell. */
    outcome(startedAt: number, answered: boolean): number | undefined {
        if (answered) {
            const since = this.since;
            this.since = undefined;
            return since;
        }
        if (this.since !== undefined) return undefined;
        this.since = startedAt;
        return startedAt;
    }
}

export function defaultIdentity(): string {
    return `${hostname()}_${randomBytes(4).toString('hex')}`;
}

export class LeaderElector {
    readonly identity: string;
    private readonly leaseDurationMs: number;
    private readonly renewDeadlineMs: number;
    private readonly retryPeriodMs: number;
    private observedRecord = '';
    private observedAt = 0;
    private lastRenewStartedAt = -Infinity;
    private leading = false;
    private stopped = false;
    private wake: (() => void) | undefined;
    private loop: Promise<void> | undefined;
    /** Aborts the lease requests of the round in flight (at the deadline, or at stop). */
    private round: AbortController | undefined;
    private cancelStepDown: (() => void) | undefined;
    private readonly unansweredRun = new UnansweredRun();

    constructor(
        private readonly rest: KubeRest,
        private readonly opts: LeaderElectionOptions,
    ) {
        this.identity = opts.identity ?? defaultIdentity();
        this.leaseDurationMs = opts.leaseDurationMs ?? 15_000;
        this.renewDeadlineMs = opts.renewDeadlineMs ?? 10_000;
        this.retryPeriodMs = opts.retryPeriodMs ?? 2_000;
        if (!(this.renewDeadlineMs < this.leaseDurationMs)) {
            throw new Error('renewDeadline must be shorter than leaseDuration');
        }
        if (!(this.retryPeriodMs * 1.2 < this.renewDeadlineMs)) {
            throw new Error('retryPeriod (with jitter) must be shorter than renewDeadline');
        }
    }

    /**
     * The guard every writer asks right before writing: true only while a renew has
     * succeeded recently enough that the lease cannot have been taken elsewhere.
     */
    isLeader(): boolean {
        return this.leading && performance.now() - this.lastRenewStartedAt < this.renewDeadlineMs;
    }

    start(): void {
        this.loop ??= this.run();
    }

    /** Stops campaigning; the lease is released if we hold it, so a standby takes over at once. */
    async stop(): Promise<void> {
        this.stopped = true;
        this.round?.abort(new Error('stopping'));
        this.wake?.();
        await this.loop;
        this.cancelStepDown?.();
        if (this.leading) {
            this.setLeading(false);
            // A hung apiserver must not hold up a shutdown.
            await this.release(AbortSignal.timeout(2_000)).catch((err: Error) => this.log('warn', 'releasing the lease failed', { error: err.message }));
        }
    }

    private log(level: 'info' | 'warn', msg: string, fields?: Record<string, unknown>) {
        this.opts.log?.(level, msg, { lease: `${this.opts.namespace}/${this.opts.name}`, identity: this.identity, ...fields });
    }

    private sleep(ms: number): Promise<void> {
        return new Promise((resolve) => {
            const cancel = systemClock.schedule(resolve, ms);
            this.wake = () => {
                cancel();
                resolve();
            };
        });
    }

    private jittered(): number {
        return this.retryPeriodMs * (1 + Math.random() * 0.2);
    }

    private async run(): Promise<void> {
        while (!this.stopped) {
            const startedAt = performance.now();
            // A renew may take only the time left of our term; an acquire, one renewDeadline.
            const budget = this.leading ? this.lastRenewStartedAt + this.renewDeadlineMs - startedAt : this.renewDeadlineMs;
            const round = new AbortController();
            this.round = round;
            const cancelDeadline = systemClock.schedule(() => round.abort(new Error('renew deadline reached')), Math.max(0, budget));
            let answered = true;
            const ok = await this.tryAcquireOrRenew(round.signal)
                .catch((err: Error) => {
                    if (!this.stopped) this.log('warn', 'lease request failed', { error: err.message });
                    answered = !isUnanswered(err);
                    return false;
                })
                .finally(cancelDeadline);
            this.round = undefined;
            if (this.stopped) break;
            const since = this.unansweredRun.outcome(startedAt, answered);
            if (since !== undefined) this.opts.onUnanswered?.(since);
            // A success that arrives after the deadline proves nothing about now.
            if (ok && performance.now() - startedAt < this.renewDeadlineMs) {
                this.lastRenewStartedAt = startedAt;
                if (!this.leading) this.setLeading(true);
                this.armStepDown();
            } else if (this.leading && !this.isLeader()) {
                this.stepDown();
            }
            await this.sleep(this.leading ? this.retryPeriodMs : this.jittered());
        }
    }

    /** Steps down at the deadline of the last renew, whether or not a request is still pending. */
    private armStepDown(): void {
        this.cancelStepDown?.();
        const left = this.lastRenewStartedAt + this.renewDeadlineMs - performance.now();
        this.cancelStepDown = systemClock.schedule(() => {
            if (!this.leading) return;
            if (this.isLeader()) return this.armStepDown(); // a timer may fire a fraction early
            this.round?.abort(new Error('renew deadline reached'));
            this.stepDown();
        }, Math.max(0, Math.ceil(left)));
    }

    /** renewDeadline passed without a successful renew: step down before anyone else may acquire the lease. */
    private stepDown(): void {
        this.cancelStepDown?.();
        this.log('warn', 'failed to renew the lease within renewDeadline');
        this.setLeading(false);
    }

    private setLeading(leading: boolean): void {
        this.leading = leading;
        this.log('info', leading ? 'became leader' : 'stopped leading');
        if (leading) this.opts.onStartedLeading?.();
        else this.opts.onStoppedLeading?.();
    }

    private observe(spec: LeaseSpec | undefined): void {
        const record = JSON.stringify(spec ?? {});
        if (record === this.observedRecord) return;
        this.observedRecord = record;
        this.observedAt = performance.now();
    }

    private path(): string {
        return objectPath(Leases, this.opts.namespace, this.opts.name);
    }

    /** One round of client-go's tryAcquireOrRenew; true when we hold the lease after it. */
    private async tryAcquireOrRenew(signal: AbortSignal): Promise<boolean> {
        const now = microTime(new Date(systemClock.now()));
        const ours: LeaseSpec = {
            holderIdentity: this.identity,
            leaseDurationSeconds: Math.ceil(this.leaseDurationMs / 1000),
            acquireTime: now,
            renewTime: now,
            leaseTransitions: 0,
        };
        let lease: Lease;
        try {
            lease = await this.rest.request<Lease>('GET', this.path(), { signal });
        } catch (err) {
            if (!isNotFound(err)) throw err;
            const created = await this.rest
                .request<Lease>('POST', collectionPath(Leases, this.opts.namespace), {
                    signal,
                    body: {
                        apiVersion: 'coordination.k8s.io/v1',
                        kind: 'Lease',
                        metadata: { name: this.opts.name, namespace: this.opts.namespace },
                        spec: ours,
                    },
                })
                .catch((e: unknown) => {
                    if (isConflict(e)) return undefined; // someone else created it first
                    throw e;
                });
            if (created) this.observe(created.spec);
            return created !== undefined;
        }
        const current = lease.spec ?? {};
        this.observe(current);
        const holder = current.holderIdentity ?? '';
        const heldByUs = holder === this.identity;
        const durationMs = (current.leaseDurationSeconds ?? 0) * 1000;
        if (holder && !heldByUs && performance.now() < this.observedAt + durationMs) {
            return false;
        }
        const next: LeaseSpec = heldByUs
            ? { ...ours, acquireTime: current.acquireTime ?? now, leaseTransitions: current.leaseTransitions ?? 0 }
            : { ...ours, leaseTransitions: (current.leaseTransitions ?? 0) + 1 };
        try {
            const updated = await this.rest.request<Lease>('PUT', this.path(), { signal, body: { ...lease, spec: next } });
            this.observe(updated.spec);
            return true;
        } catch (err) {
            if (isConflict(err)) return false; // lost the race; optimistic concurrency did its job
            throw err;
        }
    }

    /** client-go's release: an empty holder with a 1 s duration, transitions kept. */
    private async release(signal: AbortSignal): Promise<void> {
        const lease = await this.rest.request<Lease>('GET', this.path(), { signal });
        if ((lease.spec?.holderIdentity ?? '') !== this.identity) return;
        const now = microTime(new Date(systemClock.now()));
        await this.rest.request<Lease>('PUT', this.path(), {
            signal,
            body: {
                ...lease,
                spec: {
                    ...lease.spec,
                    holderIdentity: null,
                    leaseDurationSeconds: 1,
                    acquireTime: now,
                    renewTime: now,
                },
            },
        });
        this.log('info', 'released the lease');
    }
}
