// The one list/watch helper of bench/: objects as the apiserver has them, timed by when their
// events arrived, not by when a poll happened to look. Read-only (the admin client's GETs).
// `ObjectWatch` lists, then watches from the list's resourceVersion (so no change in between is
// missed) and resumes a watch the apiserver ends or drops; one too old to resume fails.
// `Waiters` resolves a benchmark's condition with the arrival time of the event that first made
// it true. `SliceWatch` is the two put together for the slices of one selector.
import type { V1EndpointSlice } from '@kubernetes/client-node';
import type { KubeRest } from '../src/kube/rest.js';
import { ApiError, isGone } from '../src/kube/errors.js';
import { collectionPath, EndpointSlices } from '../src/kube/resources.js';
import type { KubeObject } from '../src/kube/store.js';
import { sleep } from './async.js';

export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED';


export class ObjectWatch<T extends KubeObject> {
    private readonly abort = new AbortController();
    private resourceVersion = '';
    private running: Promise<void> = Promise.resolve();
    /** Why the watch stopped on its own (the waiters of a benchmark should fail with it). */
    failure: Error | undefined;

    private constructor(
        private readonly rest: KubeRest,
        private readonly path: string,
        private readonly labelSelector: string,
        private readonly onEvent: (type: WatchEventType, obj: T, at: number) => void,
        private readonly onFailure: (err: Error) => void,
    ) {}

    static async start<T extends KubeObject>(
        rest: KubeRest,
        path: string,
        labelSelector: string,
        onEvent: (type: WatchEventType, obj: T, at: number) => void,
        onFailure: (err: Error) => void = () => undefined,
    ): Promise<ObjectWatch<T>> {
        const watch = new ObjectWatch(rest, path, labelSelector, onEvent, onFailure);
        const list = await rest.get<{ metadata: { resourceVersion: string }; items: T[] }>(path, { labelSelector });
        for (const obj of list.items) onEvent('ADDED', obj, performance.now());
        watch.resourceVersion = list.metadata.resourceVersion;
        watch.running = watch.run();
        // The watch request has no reply until an event comes: give it time to be registered,
        // so the first timed change is not seen late.
        await sleep(300);
        return watch;
    }

    private async run(): Promise<void> {
        while (!this.abort.signal.aborted) {
            try {
                await this.rest.watch(
                    this.path,
                    { labelSelector: this.labelSelector, resourceVersion: this.resourceVersion, allowWatchBookmarks: true },
                    this.abort.signal,
                    (event) => this.apply(event.type, event.object as T),
                    () => undefined,
                );
            } catch (err) {
                if (this.abort.signal.aborted) return;
                if (isGone(err) || !(err instanceof ApiError)) {
                    this.failure = err as Error;
                    this.onFailure(this.failure);
                    return;
                }
                await sleep(100);
            }
        }
    }

    private apply(type: string, obj: T): void {
        const at = performance.now();
        if (type === 'ERROR') {
            const status = obj as unknown as { code?: number; reason?: string; message?: string };
            throw new ApiError(status.code ?? 0, status.reason ?? '', `watch of ${this.path}: ${status.message}`);
        }
        this.resourceVersion = obj.metadata?.resourceVersion ?? this.resourceVersion;
        if (type === 'BOOKMARK') return;
        this.onEvent(type as WatchEventType, obj, at);
    }

    async stop(): Promise<void> {
        this.abort.abort();
        await this.running;
    }
}

interface Waiter {
    check: () => boolean;
    resolve: (at: number) => void;
    reject: (err: Error) => void;
}

/** Conditions over what watches have seen; `wake(at)` after each event, `fail(err)` when a watch dies. */
export class Waiters {
    private readonly pending = new Set<Waiter>();
    private failure: Error | undefined;

    /** Resolves with the performance.now() at which `check` held; rejects after timeoutMs (`progress` says how far it got). */
    until(what: string, check: () => boolean, timeoutMs: number, progress: () => string = () => ''): Promise<number> {
        if (this.failure) return Promise.reject(this.failure);
        if (check()) return Promise.resolve(performance.now());
        return new Promise((resolve, reject) => {
            const timer = setTimeout(() => {
                this.pending.delete(waiter);
                const got = progress();
                reject(new Error(`timed out after ${timeoutMs} ms waiting for ${what}${got ? ` (${got})` : ''}`));
            }, timeoutMs);
            const waiter: Waiter = {
                check,
                resolve: (at) => (clearTimeout(timer), resolve(at)),
                reject: (err) => (clearTimeout(timer), reject(err)),
            };
            this.pending.add(waiter);
        });
    }

    wake(at: number): void {
        for (const waiter of this.pending) {
            if (!waiter.check()) continue;
            this.pending.delete(waiter);
            waiter.resolve(at);
        }
    }

    /** A benchmark waiting on a dead watch would only time out later, with a worse message. */
    fail(err: Error): void {
        this.failure = err;
        for (const waiter of this.pending) waiter.reject(err);
        this.pending.clear();
    }
}

/** The slices of one label selector (in one namespace, or all with ''), and waiters on them. */
export class SliceWatch {
    private readonly slices = new Map<string, V1EndpointSlice>();
    private readonly waiters = new Waiters();
    private watch: ObjectWatch<V1EndpointSlice & KubeObject> | undefined;

    static async start(rest: KubeRest, namespace: string, labelSelector: string): Promise<SliceWatch> {
        const sw = new SliceWatch();
        sw.watch = await ObjectWatch.start<V1EndpointSlice & KubeObject>(
            rest,
            collectionPath(EndpointSlices, namespace || undefined),
            labelSelector,
            (type, slice, at) => {
                const key = `${slice.metadata!.namespace}/${slice.metadata!.name}`;
                if (type === 'DELETED') sw.slices.delete(key);
                else sw.slices.set(key, slice);
                sw.waiters.wake(at);
            },
            (err) => sw.waiters.fail(err),
        );
        return sw;
    }

    current(): V1EndpointSlice[] {
        return [...this.slices.values()];
    }

    until(what: string, condition: (slices: V1EndpointSlice[]) => boolean, timeoutMs: number): Promise<number> {
        return this.waiters.until(what, () => condition(this.current()), timeoutMs);
    }

    async stop(): Promise<void> {
        await this.watch?.stop();
    }
}
