// The health checks of ExternalWorkloads, run by the leader only: every workload whose probe
// annotation (or the controller's --default-probe) asks for one is probed on its own period,
// and its Ready condition is written when the probes establish a status the stored condition
// does not have. A workload that is not probed is never touched: its Ready condition is
// whoever else's to write.
//
// Load: each workload starts at a random point of its period (kubelet does the same) so ten
// thousand workloads spread over the period instead of probing in lock step; at most
// `concurrency` probes run at once, the rest wait their turn; a probe opens a fresh connection
// and closes it (no keep-alive sockets to thousands of peers). Probes go only to the workload's
// own address (the first of spec.workloadIPs that src/ip/probe-target.ts allows: never
// loopback, link-local or a cloud metadata address unless --probe-allow-cidrs lists it), or
// to the operator's address override (tests). A refused target is a Warning Event and no
// probe: the Ready condition is left as it is.
// Which workloads are probed follows the cache through the runtime: a controller keyed by
// workload whose reconcile reads the cached workload and follows or forgets it (no I/O), so the
// runtime owns the subscription and the start of each term (every cached workload replayed).
// The probes' own timers are the probing itself, not a resync.
// Writes do not hold up probing: a workload whose condition must change is queued (by key, so
// once however often its probes ask) for a few writers, which write what its probes say then
// and retry with backoff; a first term that must write ten thousand conditions sends them at
// the client's rate, not ten thousand at once.
import type { EventSink } from '../../kube/events.js';
import type { Informer } from '../../kube/informer.js';
import { Controller } from '../../kube/controller.js';
import type { Logger } from '../../kube/log.js';
import { controllerRateLimiter } from '../../kube/ratelimit.js';
import type { WorkQueueMetrics } from '../../kube/workqueue-metrics.js';
import { probeTarget, refusedTargets, type ProbeCidr } from '../../ip/probe-target.js';
import { probeHttp, probeTcp, type ProbeAddressOverride, type ProbeResult } from '../../net/probe.js';
import type { CachedWorkload, CompactWorkload, WorkloadMeta } from '../compact.js';
import { WORKLOAD_API_VERSION, WORKLOAD_KIND } from '../types.js';
import type { HealthCheckMetrics } from './metrics.js';
import { describeTarget, workloadProbe, type ProbeSpec, type ProbeTarget } from './probe-spec.js';
import { afterProbe, initialProbeState, readyToWrite, storedReadyStatus, type ProbeState } from './readiness.js';
import type { ReadyWriter } from './ready-writer.js';
import { backgroundClock, systemClock } from '../../time/clock.js';

/**
 * Probes at once by default. 10 000 workloads every 10 s are 1 000 probes/s, a few ms each:
 * 20 kept up with them at 12 ms on a loaded 2-core machine (bench/health-checks.ts), where 100
 * in flight made each wait for a CPU past its 1 s timeout (false failures). An unreachable
 * workload holds a slot for its whole timeout: raise it by unreachable workloads ÷ period × timeout.
 */
export const DEFAULT_PROBE_CONCURRENCY = 20;
/** Ready writes at once: enough to keep up with the client's rate limit, few enough not to flood the apiserver. */
const WRITERS = 5;

export interface HealthCheckOptions {
    /** Probe every workload without its own probe annotation this way (--default-probe). */
    defaultProbe?: ProbeTarget;
    /** Probes in flight at once. */
    concurrency?: number;
    /** Send every probe here instead (tests: a loopback server). */
    addressOverride?: ProbeAddressOverride;
    /** Refused targets the operator allows all the same (--probe-allow-cidrs). */
    allowCidrs?: readonly ProbeCidr[];
}

export interface HealthProberDeps {
    workloads: Informer<CachedWorkload>;
    writer: ReadyWriter;
    events: EventSink;
    metrics: HealthCheckMetrics;
    queueMetrics: WorkQueueMetrics;
    logger: Logger;
    options: HealthCheckOptions;
    random?: () => number;
}

/** One probed workload of this term. */
interface Probed {
    key: string;
    namespace: string;
    name: string;
    spec: ProbeSpec;
    host: string;
    port: number;
    /** What the probe depends on; a change restarts it. */
    identity: string;
    state: ProbeState;
    /** The Ready status as last seen in the cache or written by us. */
    storedStatus: string | undefined;
    /** What the latest probe found, for the condition's message. */
    last?: ProbeResult;
    cancelTimer?: () => void;
}

export class HealthProber {
    private readonly probed = new Map<string, Probed>();
    /** Workload key → the message of its malformed probe, reported once. */
    private readonly invalid = new Map<string, string>();
    /** Workload key → why its probe target is refused, reported once. */
    private readonly refused = new Map<string, string>();
    private readonly slots: Slots;
    private readonly inFlight = new Set<Promise<void>>();
    /** Keys of workloads whose probes are to be started, changed or stopped: the cache's changes, reconciled by the runtime. */
    private readonly following: Controller<string>;
    /** Keys of workloads whose Ready condition the probes want changed, reconciled by the runtime. */
    private readonly writes: Controller<string>;
    private leading = false;
    private abort = new AbortController();

    constructor(private readonly deps: HealthProberDeps) {
        this.slots = new Slots(deps.options.concurrency ?? DEFAULT_PROBE_CONCURRENCY);
        const common = { metrics: deps.queueMetrics, events: deps.events, rateLimiter: controllerRateLimiter({ baseMs: 1000 }), log: deps.logger };
        // One worker: a reconcile reads the cache and sets a timer, nothing to wait for.
        this.following = new Controller<string>({ name: 'external-workloads-probes', reconciler: { reconcile: async (key) => this.follow(key) }, workers: 1, ...common });
        this.following.watch(deps.workloads, (w) => [keyOf(w)]);
        this.writes = new Controller<string>({ name: 'external-workloads-ready', reconciler: { reconcile: (key) => this.writeReady(key) }, workers: WRITERS, ...common });
    }

    /** This replica leads: probe every cached workload that asks for it (the runtime replays them all), from its stored condition. */
    start(): void {
        this.leading = true;
        this.abort = new AbortController();
        this.writes.start();
        this.following.start();
    }

    /** The term ended: no new probe starts, the ones in flight are aborted and awaited. */
    async stop(): Promise<void> {
        this.leading = false;
        this.abort.abort();
        for (const p of this.probed.values()) p.cancelTimer?.();
        this.probed.clear();
        this.invalid.clear();
        this.refused.clear();
        this.slots.releaseWaiters();
        this.updateGauges();
        await Promise.all([...this.inFlight, this.following.stop(), this.writes.stop()]);
    }

    /** Probes the workload as its cached form asks, from its stored condition; gone, not probed. */
    private follow(key: string): void {
        if (!this.leading) return;
        const [namespace, name] = key.split('/') as [string, string];
        const workload = this.deps.workloads.store.get(namespace, name);
        if (!workload?.ok) return this.forget(key); // a malformed one: the controller reports it (InvalidWorkload)
        const wanted = this.probeOf(workload);
        if (wanted.kind !== 'probe') {
            this.forget(key);
            if (wanted.kind === 'invalid') this.report(this.invalid, 'InvalidProbe', key, workload.metadata, wanted.message);
            if (wanted.kind === 'refused') this.report(this.refused, 'ProbeRefused', key, workload.metadata, wanted.message);
            return;
        }
        this.invalid.delete(key);
        this.refused.delete(key);
        const storedStatus = storedReadyStatus(workload.conditions);
        const current = this.probed.get(key);
        if (current?.identity === wanted.identity) {
            current.storedStatus = storedStatus;
            return;
        }
        current?.cancelTimer?.();
        const { spec, host, port, identity } = wanted;
        const probed: Probed = { key, namespace, name, spec, host, port, identity, state: initialProbeState(storedStatus), storedStatus };
        this.probed.set(key, probed);
        this.updateGauges();
        this.schedule(probed, (this.deps.random ?? Math.random)() * probed.spec.periodMs);
    }

    private probeOf(workload: CompactWorkload):
        | { kind: 'none' }
        | { kind: 'invalid' | 'refused'; message: string }
        | { kind: 'probe'; spec: ProbeSpec; host: string; port: number; identity: string } {
        const probe = workloadProbe(workload.probeAnnotations, this.deps.options.defaultProbe);
        if (probe.kind !== 'probe') return probe;
        const own = [workload.addresses.IPv4, workload.addresses.IPv6, ...(workload.unpublishedIPs ?? [])].filter((a) => a !== undefined);
        if (own.length === 0) return { kind: 'invalid', message: 'the workload has no address in spec.workloadIPs to probe' };
        const override = this.deps.options.addressOverride;
        let host = override?.host;
        if (host === undefined) {
            const verdicts = own.map((address) => probeTarget(address, this.deps.options.allowCidrs));
            const allowed = verdicts.find((v) => v.allowed);
            if (!allowed) return { kind: 'refused', message: `not probed, its Ready condition is left as it is: ${refusedTargets(verdicts)}` };
            host = allowed.address;
        }
        const port = override?.port ?? probe.spec.target.port;
        return { kind: 'probe', spec: probe.spec, host, port, identity: JSON.stringify([probe.spec, host, port]) };
    }

    private forget(key: string): void {
        this.invalid.delete(key);
        this.refused.delete(key);
        const probed = this.probed.get(key);
        if (!probed) return;
        probed.cancelTimer?.();
        this.probed.delete(key);
        this.updateGauges();
    }

    private schedule(probed: Probed, delayMs: number): void {
        probed.cancelTimer = backgroundClock.schedule(() => {
            const work = this.round(probed).catch((err: unknown) => this.deps.logger.error({ workload: probed.key, err }, 'probe round failed'));
            this.inFlight.add(work);
            void work.then(() => this.inFlight.delete(work));
        }, delayMs);
    }

    /** One probe and its result counted, the workload queued for a write if its condition must change; the next probe is due a period after this one was. */
    private async round(probed: Probed): Promise<void> {
        const due = systemClock.now();
        await this.slots.acquire();
        let result: ProbeResult;
        try {
            if (!this.isCurrent(probed)) return;
            result = await this.probeOnce(probed);
        } finally {
            this.slots.release();
        }
        if (!this.isCurrent(probed)) return;
        this.deps.metrics.probes.inc({ result: result.ok ? 'success' : 'failure' });
        this.deps.metrics.probeDuration.observe(result.latencyMs / 1000);
        probed.state = afterProbe(probed.state, result.ok, probed.spec);
        probed.last = result;
        if (readyToWrite(probed.state, probed.storedStatus) !== undefined) this.writes.add(probed.key);
        this.schedule(probed, Math.max(0, due + probed.spec.periodMs - systemClock.now()));
    }

    private isCurrent(probed: Probed): boolean {
        return this.leading && this.probed.get(probed.key) === probed;
    }

    private probeOnce(probed: Probed): Promise<ProbeResult> {
        const { target, timeoutMs } = probed.spec;
        const signal = this.abort.signal;
        if (target.scheme === 'tcp') return probeTcp({ host: probed.host, port: probed.port, timeoutMs, signal });
        // Kubernetes' rule for HTTP probes: 200-399 pass.
        const passes = (code: number) => code >= 200 && code < 400;
        return probeHttp({ scheme: target.scheme, host: probed.host, port: probed.port, path: target.path, timeoutMs, passes, signal });
    }

    /** Writes what the workload's probes say now, if the stored condition differs; throws to be retried. */
    private async writeReady(key: string): Promise<void> {
        const probed = this.probed.get(key);
        const ready = probed && readyToWrite(probed.state, probed.storedStatus);
        if (!probed?.last || ready === undefined) return;
        const { state, spec, last } = probed;
        const what = `${describeTarget(spec.target, probed.host, probed.port)} ${ready ? 'passed' : `failed ${state.failures} times in a row`}: ${last.detail}`;
        const written = await this.deps.writer.write(probed.namespace, probed.name, ready, what);
        if (written.outcome === 'gone') return;
        probed.storedStatus = ready ? 'True' : 'False';
        if (written.outcome === 'unchanged') return;
        this.deps.metrics.transitions.inc({ status: probed.storedStatus });
        this.deps.events.record(eventObject(written.workload), ready ? 'Normal' : 'Warning', ready ? 'ProbeSucceeded' : 'ProbeFailed', `${ready ? 'Ready' : 'not Ready'}: ${what}`);
    }

    /** One Warning Event per workload and message: a resync or an unrelated change repeats nothing. */
    private report(reported: Map<string, string>, reason: string, key: string, workload: WorkloadMeta, message: string): void {
        if (reported.get(key) !== message) this.deps.events.record(eventObject(workload), 'Warning', reason, message);
        reported.set(key, message);
        this.updateGauges();
    }

    private updateGauges(): void {
        this.deps.metrics.probedWorkloads.set(this.probed.size);
        this.deps.metrics.invalidProbes.set(this.invalid.size);
        this.deps.metrics.refusedProbes.set(this.refused.size);
    }
}

function keyOf(w: { metadata?: { namespace?: string; name?: string } }): string {
    return `${w.metadata?.namespace}/${w.metadata?.name}`;
}

function eventObject(w: WorkloadMeta) {
    const { namespace, name, uid, resourceVersion } = w;
    return { apiVersion: WORKLOAD_API_VERSION, kind: WORKLOAD_KIND, metadata: { namespace, name, uid, resourceVersion } };
}

/** A counting semaphore with a FIFO of waiters. */
class Slots {
    private free: number;
    private waiters: (() => void)[] = [];
    private head = 0;

    constructor(size: number) {
        this.free = Math.max(1, size);
    }

    acquire(): Promise<void> {
        if (this.free > 0) {
            this.free--;
            return Promise.resolve();
        }
        return new Promise((resolve) => this.waiters.push(resolve));
    }

    release(): void {
        if (this.head < this.waiters.length) {
            const next = this.waiters[this.head++]!;
            if (this.head > 1024 && this.head * 2 > this.waiters.length) [this.waiters, this.head] = [this.waiters.slice(this.head), 0];
            next(); // the slot passes to the waiter
            return;
        }
        this.free++;
    }

    /** Lets every waiter through (they find the term over and give their slot back). */
    releaseWaiters(): void {
        const waiting = this.waiters.slice(this.head);
        [this.waiters, this.head] = [[], 0];
        for (const resolve of waiting) {
            this.free--;
            resolve();
        }
    }
}
