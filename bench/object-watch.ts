// One kind of object across all namespaces, as the apiserver has it: a list, then a watch from
// the list's resourceVersion (resumed where it stopped when the apiserver ends it). Each
// event is handed over with its arrival time, so a benchmark times what the apiserver had,
// not when a poll happened to look. Read-only.
import { ApiError, type KubeRest } from '../src/kube/rest.js';
import type { KubeObject } from '../src/kube/store.js';

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
    ) {}

    static async start<T extends KubeObject>(
        rest: KubeRest,
        path: string,
        labelSelector: string,
        onEvent: (type: WatchEventType, obj: T, at: number) => void,
    ): Promise<ObjectWatch<T>> {
        const watch = new ObjectWatch(rest, path, labelSelector, onEvent);
        const list = await rest.get<{ metadata: { resourceVersion: string }; items: T[] }>(path, { labelSelector });
        for (const obj of list.items) onEvent('ADDED', obj, performance.now());
        watch.resourceVersion = list.metadata.resourceVersion;
        watch.running = watch.run();
        // The watch request has no reply until an event comes: give it time to be registered.
        await new Promise((r) => setTimeout(r, 300));
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
                if (!this.abort.signal.aborted) this.failure = err as Error;
                return;
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
