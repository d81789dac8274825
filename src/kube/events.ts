// Kubernetes Events about the objects we act on. Recording is best effort (a failed
// Event never fails a sync) and deduplicated: the same message about the same object
// is written once per `dedupeMs`, so a sync that runs again does not flood the API.
import type { KubeRest } from './rest.js';
import { collectionPath, Events } from './resources.js';
import type { KubeObject } from './store.js';
import type { LogFn } from './log.js';

export type EventType = 'Normal' | 'Warning';

export interface EventSink {
    record(obj: KubeObject, type: EventType, reason: string, message: string): void;
}

export class EventRecorder implements EventSink {
    private readonly recent = new Map<string, number>();

    constructor(
        private readonly rest: KubeRest,
        private readonly component: string,
        private readonly log: LogFn,
        private readonly dedupeMs = 10 * 60_000,
        private readonly now: () => number = Date.now,
    ) {}

    record(obj: KubeObject, type: EventType, reason: string, message: string): void {
        const meta = obj.metadata ?? {};
        const key = `${meta.uid ?? `${meta.namespace}/${meta.name}`}|${type}|${reason}|${message}`;
        const now = this.now();
        const last = this.recent.get(key);
        if (last !== undefined && now - last < this.dedupeMs) return;
        this.recent.set(key, now);
        this.prune(now);
        this.log(type === 'Warning' ? 'warn' : 'info', message, {
            event: reason,
            object: `${obj.kind}/${meta.namespace ? `${meta.namespace}/` : ''}${meta.name}`,
        });
        const namespace = meta.namespace || 'default';
        const time = new Date(now).toISOString().replace(/\.\d{3}Z$/, 'Z');
        void this.rest
            .create(collectionPath(Events, namespace), {
                metadata: { generateName: `${meta.name}.`, namespace },
                involvedObject: {
                    apiVersion: obj.apiVersion,
                    kind: obj.kind,
                    namespace: meta.namespace,
                    name: meta.name,
                    uid: meta.uid,
                    resourceVersion: meta.resourceVersion,
                },
                type,
                reason,
                message: message.slice(0, 1024),
                source: { component: this.component },
                reportingComponent: this.component,
                firstTimestamp: time,
                lastTimestamp: time,
                count: 1,
            })
            .catch((err: Error) => this.log('warn', 'recording an Event failed', { reason, error: err.message }));
    }

    private prune(now: number): void {
        if (this.recent.size < 10_000) return;
        for (const [key, at] of this.recent) if (now - at >= this.dedupeMs) this.recent.delete(key);
    }
}
