// Lease leader election (coordination.k8s.io/v1) with client-go's semantics. It owns
// one Lease and answers "am I the leader?"; it never runs controllers itself — the
// manager starts and stops them on the callbacks.
//
// Safety rests on two rules. Expiry of someone else's lease is judged from when *this*
// process last saw the lease record change, on our own monotonic clock, never from the
// holder's renewTime (clocks differ between machines). And our own leadership ends,
// for writers, renewDeadline after the start of our last successful renew: since
// renewDeadline < leaseDuration, no other candidate can have taken the lease by then.
import { performance } from 'node:perf_hooks';
import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import { isConflict, isNotFound, type KubeRest } from './rest.js';
import { collectionPath, Leases, objectPath } from './resources.js';

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
    onNewLeader?: (identity: string) => void;
    log?: (level: 'info' | 'warn', msg: string, fields?: Record<string, unknown>) => void;
}

/** MicroTime: the apiserver parses exactly six fractional digits. */
export function microTime(date: Date): string {
    return date.toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
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
    private lastLeader = '';
    private stopped = false;
    private wake: (() => void) | undefined;
    private loop: Promise<void> | undefined;

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
        this.wake?.();
        await this.loop;
        if (this.leading) {
            this.setLeading(false);
            await this.release().catch((err: Error) => this.log('warn', 'releasing the lease failed', { error: err.message }));
        }
    }

    private log(level: 'info' | 'warn', msg: string, fields?: Record<string, unknown>) {
        this.opts.log?.(level, msg, { lease: `${this.opts.namespace}/${this.opts.name}`, identity: this.identity, ...fields });
    }

    private sleep(ms: number): Promise<void> {
        return new Promise((resolve) => {
            const timer = setTimeout(resolve, ms);
            this.wake = () => {
                clearTimeout(timer);
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
            const ok = await this.tryAcquireOrRenew().catch((err: Error) => {
                this.log('warn', 'lease request failed', { error: err.message });
                return false;
            });
            if (ok) {
                this.lastRenewStartedAt = startedAt;
                if (!this.leading) this.setLeading(true);
            } else if (this.leading && !this.isLeader()) {
                // renewDeadline passed without a successful renew: step down before
                // anyone else may acquire the lease.
                this.log('warn', 'failed to renew the lease within renewDeadline');
                this.setLeading(false);
            }
            if (this.stopped) break;
            await this.sleep(this.leading ? this.retryPeriodMs : this.jittered());
        }
    }

    private setLeading(leading: boolean): void {
        this.leading = leading;
        this.log('info', leading ? 'became leader' : 'stopped leading');
        if (leading) this.opts.onStartedLeading?.();
        else this.opts.onStoppedLeading?.();
    }

    private observe(spec: LeaseSpec | undefined): void {
        const record = JSON.stringify(spec ?? {});
        if (record !== this.observedRecord) {
            this.observedRecord = record;
            this.observedAt = performance.now();
        }
        const holder = spec?.holderIdentity ?? '';
        if (holder && holder !== this.lastLeader) {
            this.lastLeader = holder;
            this.opts.onNewLeader?.(holder);
        }
    }

    private path(): string {
        return objectPath(Leases, this.opts.namespace, this.opts.name);
    }

    /** One round of client-go's tryAcquireOrRenew; true when we hold the lease after it. */
    private async tryAcquireOrRenew(): Promise<boolean> {
        const now = microTime(new Date());
        const ours: LeaseSpec = {
            holderIdentity: this.identity,
            leaseDurationSeconds: Math.ceil(this.leaseDurationMs / 1000),
            acquireTime: now,
            renewTime: now,
            leaseTransitions: 0,
        };
        let lease: Lease;
        try {
            lease = await this.rest.get<Lease>(this.path());
        } catch (err) {
            if (!isNotFound(err)) throw err;
            const created = await this.rest
                .create<Lease>(collectionPath(Leases, this.opts.namespace), {
                    apiVersion: 'coordination.k8s.io/v1',
                    kind: 'Lease',
                    metadata: { name: this.opts.name, namespace: this.opts.namespace },
                    spec: ours,
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
            const updated = await this.rest.replace<Lease>(this.path(), { ...lease, spec: next });
            this.observe(updated.spec);
            return true;
        } catch (err) {
            if (isConflict(err)) return false; // lost the race; optimistic concurrency did its job
            throw err;
        }
    }

    /** client-go's release: an empty holder with a 1 s duration, transitions kept. */
    private async release(): Promise<void> {
        const lease = await this.rest.get<Lease>(this.path());
        if ((lease.spec?.holderIdentity ?? '') !== this.identity) return;
        const now = microTime(new Date());
        await this.rest.replace<Lease>(this.path(), {
            ...lease,
            spec: {
                ...lease.spec,
                holderIdentity: null,
                leaseDurationSeconds: 1,
                acquireTime: now,
                renewTime: now,
            },
        });
        this.log('info', 'released the lease');
    }
}
