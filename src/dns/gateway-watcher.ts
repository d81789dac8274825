// Keeps the gateway hostnames of one Link resolved: resolves each name when it is added,
// again when its TTL (clamped) runs out or its retry is due, and tells the owner only when
// what the name publishes changed. Owns timers; the decisions are name-state's.
import { backgroundClock, type Clock } from '../time/clock.js';
import { normalizeName } from './gateway-address.js';
import { noGatewayDnsMetrics, type GatewayDnsObserver, type ResolutionResult } from './metrics.js';
import {
    addressesOf,
    DEFAULT_DNS_POLICY,
    initialNameState,
    nameView,
    nextWakeAt,
    onResolution,
    viewReach,
    type DnsPolicy,
    type NameResolution,
    type NameState,
    type NameView,
    type Transition,
} from './name-state.js';
import type { NameResolver } from './resolver.js';


export interface GatewayWatcherOptions {
    resolver: NameResolver;
    /** Called when what a name publishes changed (its view): from what, to what, and whom it reaches. */
    onChange: (name: string, state: NameState, change: NameChange) => void;
    /** Called after every resolution, changed or not (the owner may want to record its time). */
    onResolved?: (name: string, state: NameState) => void;
    policy?: DnsPolicy;
    clock?: Clock;
    metrics?: GatewayDnsObserver;
    /** Where an error thrown by onChange (or a bug) ends up; by default a process warning. */
    onError?: (name: string, error: unknown) => void;
}

export interface NameChange {
    reach: 'mirrors' | 'status';
    before: NameView;
    after: NameView;
}

interface WatchedName {
    state: NameState;
    /** What onChange last reported; a new name's is its initial state's, so any first resolution is news. */
    reported: NameView;
    cancelTimer?: () => void;
    inFlight?: Promise<void>;
}

export class GatewayWatcher {
    private readonly watched = new Map<string, WatchedName>();
    private readonly policy: DnsPolicy;
    private readonly clock: Clock;
    private readonly metrics: GatewayDnsObserver;
    private stopped = false;

    constructor(private readonly options: GatewayWatcherOptions) {
        this.policy = options.policy ?? DEFAULT_DNS_POLICY;
        // A DNS refresh alone must not keep the process alive.
        this.clock = options.clock ?? backgroundClock;
        this.metrics = options.metrics ?? noGatewayDnsMetrics;
    }

    /**
     * Watches exactly these names: missing ones are dropped; a new one starts from its seed
     * (what this process or another knew of it before; reported as already told) and is
     * resolved when the seed says, or now without one.
     */
    setNames(names: Iterable<string>, seeds: ReadonlyMap<string, NameState> = new Map()): void {
        if (this.stopped) return;
        const wanted = new Set([...names].map(normalizeName));
        for (const [name, entry] of this.watched) {
            if (wanted.has(name)) continue;
            entry.cancelTimer?.();
            this.watched.delete(name);
            this.metrics.forget(name);
        }
        for (const name of wanted) {
            if (this.watched.has(name)) continue;
            const now = this.clock.now();
            const seed = seeds.get(name);
            if (seed === undefined) {
                const state = initialNameState(name, now);
                this.watched.set(name, { state, reported: nameView(state, now, this.policy) });
                this.background(name);
                continue;
            }
            const state = { ...seed, name };
            const entry: WatchedName = { state, reported: nameView(state, now, this.policy) };
            this.watched.set(name, entry);
            this.settle(name, entry, now);
        }
    }

    /**
     * Whether every name has something to publish from: an answer or failure of its own, or a
     * seed. Until then a mirror must not be planned, or it would drop addresses it still has.
     */
    get settled(): boolean {
        return [...this.watched.values()].every((e) => e.state.resolvedAt !== undefined || e.state.failures > 0);
    }

    /** Resolves the name now; a resolution already under way is shared, not repeated. */
    refreshNow(name: string): Promise<void> {
        const key = normalizeName(name);
        const entry = this.watched.get(key);
        if (entry === undefined || this.stopped) return Promise.resolve();
        if (entry.inFlight === undefined) {
            entry.cancelTimer?.();
            entry.inFlight = this.resolve(key, entry).finally(() => {
                entry.inFlight = undefined;
            });
        }
        return entry.inFlight;
    }

    stateOf(name: string): NameState | undefined {
        return this.watched.get(normalizeName(name))?.state;
    }

    get states(): ReadonlyMap<string, NameState> {
        return new Map([...this.watched].map(([name, entry]) => [name, entry.state]));
    }

    /** Cancels every timer and withdraws the names' gauges; answers still in flight are ignored. */
    stop(): void {
        this.stopped = true;
        for (const [name, entry] of this.watched) {
            entry.cancelTimer?.();
            this.metrics.forget(name);
        }
    }

    private background(name: string): void {
        this.refreshNow(name).catch((error: unknown) => this.reportError(name, error));
    }

    private async resolve(name: string, entry: WatchedName): Promise<void> {
        let resolution: NameResolution;
        try {
            resolution = await this.options.resolver.resolve(name);
        } catch (error) {
            resolution = { v4: [], v6: [], familyErrors: {}, error: { code: 'OTHER', message: `${name}: ${String(error)}` } };
        }
        // The name may have been dropped, or re-added as a new entry, while the queries ran.
        if (this.stopped || this.watched.get(name) !== entry) return;
        const now = this.clock.now();
        const transition = onResolution(entry.state, resolution, now, this.policy);
        entry.state = transition.state;
        this.metrics.resolved(name, resultOf(transition));
        for (const answer of entry.state.dropped) this.metrics.dropped(name, answer);
        this.settle(name, entry, now);
        try {
            this.options.onResolved?.(name, entry.state);
        } catch (error) {
            this.reportError(name, error);
        }
    }

    /** Reports the name if its view changed, then sleeps until it needs looking at again. */
    private settle(name: string, entry: WatchedName, now: number): void {
        this.metrics.published(name, addressesOf(entry.state, now, this.policy), entry.state.nextRefreshAt);
        const view = nameView(entry.state, now, this.policy);
        entry.cancelTimer?.();
        const wake = nextWakeAt(entry.state, now, this.policy);
        entry.cancelTimer = this.clock.schedule(() => this.wake(name, entry), Math.max(0, wake - now));
        const before = entry.reported;
        const reach = viewReach(before, view);
        if (reach === undefined) return;
        entry.reported = view;
        try {
            this.options.onChange(name, entry.state, { reach, before, after: view });
        } catch (error) {
            this.reportError(name, error);
        }
    }

    private wake(name: string, entry: WatchedName): void {
        if (this.stopped || this.watched.get(name) !== entry) return;
        const now = this.clock.now();
        if (now >= entry.state.nextRefreshAt) this.background(name);
        else this.settle(name, entry, now);
    }

    private reportError(name: string, error: unknown): void {
        if (this.options.onError) this.options.onError(name, error);
        else process.emitWarning(`gateway DNS watcher, ${name}: ${String(error)}`);
    }
}

function resultOf(transition: Transition): ResolutionResult {
    if (transition.outcome === 'answered') return 'success';
    if (transition.outcome === 'partly-answered') return 'partial_failure';
    const code = transition.state.lastError?.code ?? 'OTHER';
    return code.toLowerCase() as Lowercase<typeof code>;
}
