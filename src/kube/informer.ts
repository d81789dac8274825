// The cache of one resource type and its fan-out: what the reflector reads (reflector.ts: list
// and watch, reconnects, a missing CRD; liveness.ts: the watch's watchdogs) is cached here as the
// resource's transform makes it and told to every handler. What controllers hold and subscribe
// to; it never writes to the apiserver, nor re-delivers what it holds (a controller's resync
// replays its sources: kube/controller.ts). Apart from the reflector so that what a change means to the cache (added,
// updated, unchanged, dropped) is decided in one place, whoever read it from the server.
import { Pacer } from './pacer.js';
import { Reflector, type ReflectorOptions, type ReflectorStats, type ReflectorStore } from './reflector.js';
import { apiVersionOf } from './resources.js';
import type { KubeRest } from './rest.js';
import { type KubeObject, ObjectStore } from './store.js';

export interface InformerHandlers<T> {
    add?(obj: T): void;
    update?(oldObj: T, newObj: T): void;
    delete?(obj: T): void;
}

export interface InformerOptions<T extends KubeObject = KubeObject> extends ReflectorOptions {
    /**
     * What the cache keeps of each object version (managedFields are already gone): called
     * once per resourceVersion, so the place to parse an object or drop fields nothing reads.
     */
    transform?: (obj: KubeObject) => T;
    /**
     * True when a new version differs from the cached one in nothing the handlers read (as
     * cached by `transform`): it replaces the cached one (its resourceVersion is the one to
     * write against) but notifies no one; counted in stats.unchanged. (A method: an informer of
     * Services still counts as an informer of KubeObjects.)
     */
    unchanged?(cached: T, next: T): boolean;
}

/** Counts a test or a metric can read to tell what the informer went through. */
export interface InformerStats extends ReflectorStats {
    /** Updates cached without notifying the handlers (InformerOptions.unchanged). */
    unchanged: number;
}

export class Informer<T extends KubeObject> {
    readonly store = new ObjectStore<T>();
    readonly stats: InformerStats = { lists: 0, watches: 0, expired: 0, errors: 0, inactivityAborts: 0, staleWatchRestarts: 0, unansweredRestarts: 0, quietRestarts: 0, unchanged: 0 };
    private readonly handlers: InformerHandlers<T>[] = [];
    private readonly reflector: Reflector;
    private running = false;
    private markSynced!: () => void;
    private syncedFlag = false;
    /** Resolves once the first list has been delivered to the handlers. */
    readonly synced: Promise<void> = new Promise((resolve) => (this.markSynced = resolve));

    constructor(
        rest: KubeRest,
        private readonly opts: InformerOptions<T>,
    ) {
        this.reflector = new Reflector(rest, opts, this.reflectorStore(), this.stats);
    }

    /** Tells `handlers` every change from now on; the function returned stops that (a subscriber that lives shorter than the cache). */
    on(handlers: InformerHandlers<T>): () => void {
        this.handlers.push(handlers);
        return () => {
            const at = this.handlers.indexOf(handlers);
            if (at >= 0) this.handlers.splice(at, 1);
        };
    }

    hasSynced(): boolean {
        return this.syncedFlag;
    }

    /** Lists anew (Reflector.relist): resolves once what the server holds now is cached and told. */
    relist(): Promise<void> {
        return this.reflector.relist();
    }

    /** What keeps the informer from syncing, when it knows (a CRD not installed). */
    problem(): string | undefined {
        return this.reflector.problem();
    }

    start(): void {
        if (this.running) return;
        this.running = true;
        this.reflector.start();
    }

    async stop(): Promise<void> {
        this.running = false;
        await this.reflector.stop();
    }

    /** Requests to the apiserver sent since `since` (performance.now()) went unanswered: see WatchLiveness. */
    requestsUnansweredSince(since: number): void {
        this.reflector.liveness.requestsUnansweredSince(since);
    }

    /** The reflector's view of the cache: each change it reads, told to the handlers. */
    private reflectorStore(): ReflectorStore {
        const named = (obj: { metadata?: { namespace?: string; name?: string } }) => this.store.get(obj.metadata?.namespace, obj.metadata?.name ?? '');
        return {
            listed: (raw) => {
                // A relist hands back mostly what we hold: an unchanged version keeps its cached form.
                const held = named(raw);
                const cached = held && held.metadata?.resourceVersion === raw.metadata?.resourceVersion ? held : this.toCached(raw);
                this.upsert(cached);
                return ObjectStore.keyOf(cached);
            },
            dropUnlisted: (listed) => this.dropUnlisted(listed),
            applied: (raw) => {
                const cached = this.toCached(raw);
                this.upsert(cached);
                return cached;
            },
            deleted: (raw) => {
                const obj = this.toCached(raw);
                const old = named(obj);
                this.store.delete(obj);
                if (old) this.notify((h) => h.delete?.(obj));
                return obj;
            },
            evict: ({ namespace, name }) => {
                const old = this.store.get(namespace, name);
                if (!old) return;
                this.store.delete(old);
                this.notify((h) => h.delete?.(old));
            },
            versionOf: (namespace, name) => this.store.get(namespace, name)?.metadata?.resourceVersion,
            synced: () => {
                if (this.syncedFlag) return;
                this.syncedFlag = true;
                this.markSynced();
            },
        };
    }

    private log(level: 'info' | 'warn' | 'debug' | 'error', msg: string, fields?: Record<string, unknown>) {
        this.opts.log?.(level, msg, { resource: this.opts.resource.plural, ...fields });
    }

    /** A handler that throws must not stop the informer or starve the other handlers. */
    private notify(call: (h: InformerHandlers<T>) => void): void {
        for (const h of this.handlers) {
            try {
                call(h);
            } catch (err) {
                this.log('warn', 'event handler failed', { error: (err as Error).message });
            }
        }
    }

    /**
     * What the cache holds of an object: with apiVersion/kind (list items come without;
     * events and writers want them), without managedFields (often half of an object, and
     * read by nothing here; a PUT without them keeps the server's), then the resource's
     * own transform.
     */
    private toCached(raw: KubeObject): T {
        const obj: KubeObject = { apiVersion: apiVersionOf(this.opts.resource), kind: this.opts.resource.kind, ...raw };
        if (obj.metadata && 'managedFields' in obj.metadata) {
            const { managedFields: _, ...metadata } = obj.metadata;
            obj.metadata = metadata;
        }
        return this.opts.transform ? this.opts.transform(obj) : (obj as T);
    }

    /** After a full list: drops what the cache holds that the list did not deliver, telling the handlers, in slices. */
    private async dropUnlisted(listed: Set<string>): Promise<void> {
        // Every listed object is in the cache: as many as listed means nothing else is (a first list).
        if (this.store.size() === listed.size) return;
        const slicer = new Pacer();
        for (const old of this.store.list()) {
            if (listed.has(ObjectStore.keyOf(old))) continue;
            this.store.delete(old);
            this.notify((h) => h.delete?.(old));
            if (slicer.due()) await slicer.pause();
        }
    }

    private upsert(obj: T): void {
        const old = this.store.get(obj.metadata?.namespace, obj.metadata?.name ?? '');
        if (old === obj) return;
        this.store.set(obj);
        if (!old) {
            this.notify((h) => h.add?.(obj));
        } else if (old.metadata?.resourceVersion !== obj.metadata?.resourceVersion) {
            if (this.opts.unchanged?.(old, obj)) this.stats.unchanged++;
            else this.notify((h) => h.update?.(old, obj));
        }
    }
}
