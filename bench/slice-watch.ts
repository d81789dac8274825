// Times when the apiserver has a slice state, not when a poll happened to look: a watch on
// the slices of one Service, and waiters that resolve with the arrival time of the event
// that first made their condition true. The watch is read-only (the admin client's GETs).
import type { V1EndpointSlice } from '@kubernetes/client-node';
import type { KubeRest } from '../src/kube/rest.js';
import { collectionPath, EndpointSlices } from '../src/kube/resources.js';

type Condition = (slices: V1EndpointSlice[]) => boolean;

interface Waiter {
    condition: Condition;
    resolve: (at: number) => void;
    reject: (err: Error) => void;
}

export class SliceWatch {
    private readonly slices = new Map<string, V1EndpointSlice>();
    private readonly waiters = new Set<Waiter>();
    private readonly abort = new AbortController();
    private resourceVersion = '';
    private running: Promise<void> = Promise.resolve();
    private failure: Error | undefined;

    private constructor(
        private readonly rest: KubeRest,
        private readonly namespace: string,
        private readonly labelSelector: string,
    ) {}

    /** Lists, then watches from the list's resourceVersion, so no change in between is missed. */
    static async start(rest: KubeRest, namespace: string, labelSelector: string): Promise<SliceWatch> {
        const watch = new SliceWatch(rest, namespace, labelSelector);
        const list = await rest.get<{ metadata: { resourceVersion: string }; items: V1EndpointSlice[] }>(
            collectionPath(EndpointSlices, namespace),
            { labelSelector },
        );
        for (const slice of list.items) watch.slices.set(slice.metadata!.name!, slice);
        watch.resourceVersion = list.metadata.resourceVersion;
        watch.running = watch.run();
        // The watch request has no reply to wait for until an event comes; give it time to
        // be registered so the first timed change is not seen late.
        await new Promise((r) => setTimeout(r, 300));
        return watch;
    }

    current(): V1EndpointSlice[] {
        return [...this.slices.values()];
    }

    /** Resolves with the performance.now() at which `condition` held; rejects after timeoutMs. */
    until(what: string, condition: Condition, timeoutMs: number): Promise<number> {
        if (this.failure) return Promise.reject(this.failure);
        if (condition(this.current())) return Promise.resolve(performance.now());
        return new Promise((resolve, reject) => {
            const timer = setTimeout(() => {
                this.waiters.delete(waiter);
                reject(new Error(`timed out after ${timeoutMs} ms waiting for ${what}`));
            }, timeoutMs);
            const waiter: Waiter = {
                condition,
                resolve: (at) => {
                    clearTimeout(timer);
                    resolve(at);
                },
                reject: (err) => {
                    clearTimeout(timer);
                    reject(err);
                },
            };
            this.waiters.add(waiter);
        });
    }

    async stop(): Promise<void> {
        this.abort.abort();
        await this.running;
    }

    private async run(): Promise<void> {
        // A watch the apiserver ends (its timeout) is resumed where it stopped.
        while (!this.abort.signal.aborted) {
            try {
                await this.rest.watch(
                    collectionPath(EndpointSlices, this.namespace),
                    { labelSelector: this.labelSelector, resourceVersion: this.resourceVersion, allowWatchBookmarks: true },
                    this.abort.signal,
                    (event) => this.onEvent(event.type, event.object as V1EndpointSlice),
                    () => undefined,
                );
            } catch (err) {
                if (!this.abort.signal.aborted) this.fail(err as Error);
                return;
            }
        }
    }

    /** A benchmark waiting on a dead watch would only time out later, with a worse message. */
    private fail(err: Error): void {
        this.failure = err;
        for (const waiter of this.waiters) waiter.reject(err);
        this.waiters.clear();
    }

    private onEvent(type: string, slice: V1EndpointSlice): void {
        const at = performance.now();
        if (type === 'ERROR') {
            this.fail(new Error(`slice watch failed: ${JSON.stringify(slice)}`));
            this.abort.abort();
            return;
        }
        this.resourceVersion = slice.metadata?.resourceVersion ?? this.resourceVersion;
        if (type === 'BOOKMARK') return;
        const name = slice.metadata!.name!;
        if (type === 'DELETED') this.slices.delete(name);
        else this.slices.set(name, slice);
        const slices = this.current();
        for (const waiter of this.waiters) {
            if (!waiter.condition(slices)) continue;
            this.waiters.delete(waiter);
            waiter.resolve(at);
        }
    }
}
