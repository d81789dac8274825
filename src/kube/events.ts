// Kubernetes Events about the objects we act on, with client-go's EventRecorder manners:
// only the leader records; a spam filter per object and reason (a token bucket: a burst of
// 25, then one per 5 minutes); identical events within the aggregation window become one
// Event whose count grows; and recording never delays a sync (record() only queues, one
// sender drains a bounded queue, a full queue drops). A failed Event never fails a sync.
import { Counter, type Registry } from 'prom-client';
import type { KubeRest } from './rest.js';
import { collectionPath, Events, objectPath } from './resources.js';
import type { KubeObject } from './store.js';
import type { LogFn } from './log.js';
import { rfc3339 } from '../time/format.js';
import { systemClock } from '../time/clock.js';

export type EventType = 'Normal' | 'Warning';

export interface EventSink {
    record(obj: KubeObject, type: EventType, reason: string, message: string): void;
}

export interface EventRecorderOptions {
    /** Only the leader records; the other replicas saw the same thing and stay quiet. */
    isLeader?: () => boolean;
    /** Events waiting to be sent; more are dropped. */
    queueSize?: number;
    registry?: Registry;
}

/** What to do with one event: drop it (spam), create an Event, or count it on an existing one. */
export type EventDecision = { action: 'spam' } | { action: 'create'; id: string } | { action: 'aggregate'; id: string; count: number };

interface Sent {
    /** The Event's name once created (undefined while its create is still queued). */
    name?: string;
    count: number;
    /** The count the apiserver has: queued patches that would send no more are skipped. */
    written: number;
    at: number;
}

const BURST = 25;
const REFILL_MS = 300_000;

/** The pure part: spam filter and aggregation, on a clock given by the caller. */
export class EventFilter {
    private readonly buckets = new Map<string, { tokens: number; at: number }>();
    private readonly sent = new Map<string, Sent>();

    constructor(private readonly aggregateMs: number) {}

    decide(obj: KubeObject, type: EventType, reason: string, message: string, now: number): EventDecision {
        const meta = obj.metadata ?? {};
        const object = `${obj.kind}|${meta.namespace ?? ''}|${meta.name}|${meta.uid ?? ''}`;
        if (!this.take(`${object}|${type}|${reason}`, now)) return { action: 'spam' };
        const id = `${object}|${type}|${reason}|${message}`;
        const last = this.sent.get(id);
        if (last && now - last.at < this.aggregateMs) {
            last.count++;
            last.at = now;
            return { action: 'aggregate', id, count: last.count };
        }
        this.prune(now);
        this.sent.set(id, { count: 1, written: 0, at: now });
        return { action: 'create', id };
    }

    /** The name the apiserver gave the Event, so later identical events aggregate into it. */
    created(id: string, name: string): void {
        const entry = this.sent.get(id);
        if (entry) [entry.name, entry.written] = [name, 1];
    }

    /** The patch to send for an aggregated event now: the Event and its latest count, unless already written. */
    pendingCount(id: string): { name: string; count: number } | undefined {
        const entry = this.sent.get(id);
        if (!entry?.name || entry.written >= entry.count) return undefined;
        return { name: entry.name, count: entry.count };
    }

    written(id: string, count: number): void {
        const entry = this.sent.get(id);
        if (entry) entry.written = Math.max(entry.written, count);
    }

    /** The Event is gone (deleted or expired): the next identical event creates a new one. */
    forget(id: string): void {
        this.sent.delete(id);
    }

    private take(key: string, now: number): boolean {
        const bucket = this.buckets.get(key) ?? { tokens: BURST, at: now };
        bucket.tokens = Math.min(BURST, bucket.tokens + Math.max(0, now - bucket.at) / REFILL_MS);
        bucket.at = now;
        this.buckets.set(key, bucket);
        if (bucket.tokens < 1) return false;
        bucket.tokens -= 1;
        return true;
    }

    /** Keeps memory bounded: a full bucket and an Event past its window need no entry. */
    private prune(now: number): void {
        if (this.sent.size >= 10_000) for (const [id, s] of this.sent) if (now - s.at >= this.aggregateMs) this.sent.delete(id);
        if (this.buckets.size >= 10_000) {
            for (const [key, b] of this.buckets) if (b.tokens + (now - b.at) / REFILL_MS >= BURST) this.buckets.delete(key);
        }
    }
}

interface Pending {
    obj: KubeObject;
    type: EventType;
    reason: string;
    message: string;
    at: number;
    decision: Exclude<EventDecision, { action: 'spam' }>;
}

export class EventRecorder implements EventSink {
    private readonly filter: EventFilter;
    private readonly queue: Pending[] = [];
    private sending = false;
    private readonly isLeader: () => boolean;
    private readonly queueSize: number;
    private readonly results: Counter<'result'> | undefined;

    /** `aggregateMs`: identical events within it are counted on one Event (0: every one is its own). */
    constructor(
        private readonly rest: KubeRest,
        private readonly component: string,
        private readonly log: LogFn,
        aggregateMs = 10 * 60_000,
        options: EventRecorderOptions = {},
    ) {
        this.filter = new EventFilter(aggregateMs);
        this.isLeader = options.isLeader ?? (() => true);
        this.queueSize = options.queueSize ?? 1000;
        this.results = options.registry
            ? new Counter({
                  name: 'mesh_endpoints_events_total',
                  help: 'Events by result: created, aggregated (count of an existing Event raised), spam (filtered), dropped (queue full), failed',
                  labelNames: ['result'],
                  registers: [options.registry],
              })
            : undefined;
    }

    record(obj: KubeObject, type: EventType, reason: string, message: string): void {
        if (!this.isLeader()) return;
        const at = systemClock.now();
        const decision = this.filter.decide(obj, type, reason, message, at);
        if (decision.action === 'spam') return this.count('spam');
        const meta = obj.metadata ?? {};
        this.log(type === 'Warning' ? 'warn' : 'info', message, {
            event: reason,
            object: `${obj.kind}/${meta.namespace ? `${meta.namespace}/` : ''}${meta.name}`,
        });
        if (this.queue.length >= this.queueSize) {
            if (decision.action === 'create') this.filter.forget(decision.id);
            return this.count('dropped');
        }
        this.queue.push({ obj, type, reason, message, at, decision });
        if (!this.sending) void this.drain();
    }

    /** Events queued and not yet sent. */
    pending(): number {
        return this.queue.length;
    }

    private count(result: string): void {
        this.results?.inc({ result });
    }

    private async drain(): Promise<void> {
        this.sending = true;
        for (let next = this.queue.shift(); next; next = this.queue.shift()) {
            // Recorded in term, but sends before it may have outlived the term (found by the
            // chaos soak: an Event reached the apiserver 3 s after its replica's term ended).
            if (!this.isLeader()) {
                if (next.decision.action === 'create') this.filter.forget(next.decision.id);
                this.count('dropped');
                continue;
            }
            try {
                if (next.decision.action === 'aggregate') await this.aggregate(next, next.decision.id);
                else await this.create(next, next.decision.id);
            } catch (err) {
                this.count('failed');
                this.log('warn', 'recording an Event failed', { reason: next.reason, error: (err as Error).message });
            }
        }
        this.sending = false;
    }

    private async create(e: Pending, id: string): Promise<void> {
        const meta = e.obj.metadata ?? {};
        const namespace = meta.namespace || 'default';
        const time = rfc3339(e.at);
        try {
            const created = await this.rest.create<{ metadata: { name: string } }>(collectionPath(Events, namespace), {
                metadata: { generateName: `${meta.name}.`, namespace },
                involvedObject: {
                    apiVersion: e.obj.apiVersion,
                    kind: e.obj.kind,
                    namespace: meta.namespace,
                    name: meta.name,
                    uid: meta.uid,
                    resourceVersion: meta.resourceVersion,
                },
                type: e.type,
                reason: e.reason,
                message: e.message.slice(0, 1024),
                source: { component: this.component },
                reportingComponent: this.component,
                firstTimestamp: time,
                lastTimestamp: time,
                count: 1,
            } as never);
            this.filter.created(id, created.metadata.name);
            this.count('created');
        } catch (err) {
            this.filter.forget(id);
            throw err;
        }
    }

    /** Raises the count of the Event created earlier (queued before this, so already sent) to the latest. */
    private async aggregate(e: Pending, id: string): Promise<void> {
        const patch = this.filter.pendingCount(id);
        if (!patch) return; // its create failed, or a later patch already carried this count
        const namespace = e.obj.metadata?.namespace || 'default';
        try {
            await this.rest.mergePatch(objectPath(Events, namespace, patch.name), { count: patch.count, lastTimestamp: rfc3339(e.at) });
            this.filter.written(id, patch.count);
            this.count('aggregated');
        } catch (err) {
            this.filter.forget(id); // gone (expired) or unwritable: the next one starts afresh
            throw err;
        }
    }
}
