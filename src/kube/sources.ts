// Sources made of other sources (Controller.watch takes any Source): what a cache's objects
// stand for (mapSource), and many caches as one whose members come and go (SourceSet): a remote
// cluster's caches live as long as its Link is served, the controllers that watch them longer.
// The one place outside informer.ts that subscribes to a cache: what it tells is told on, in
// order, to every watch of the derived source, and a watch that ends unsubscribes from it all.
import { asSource, type Source } from './controller.js';
import type { Informer, InformerHandlers } from './informer.js';
import type { KubeObject } from './store.js';

export interface MapOptions<T> {
    /** Whether an update is told at all (a named spec-changed predicate); default: every update. */
    changed?: (old: T, obj: T) => boolean;
}

/**
 * What `to` makes of each object of `from` (none: the change is not told). An update is told as
 * an update of what the new object makes, with the old object's as its old side. Replays what
 * `from` holds now, through `to`.
 */
export function mapSource<T, U>(of: Informer<T & KubeObject> | Source<T>, to: (obj: T) => Iterable<U>, options: MapOptions<T> = {}): Source<U> {
    const from = asSource(of);
    return {
        on: (handlers: InformerHandlers<U>) =>
            from.on({
                add: (obj) => {
                    for (const made of to(obj)) handlers.add?.(made);
                },
                update: (old, obj) => {
                    if (options.changed && !options.changed(old, obj)) return;
                    const before = [...to(old)];
                    for (const [i, made] of [...to(obj)].entries()) handlers.update?.(before[i] ?? made, made);
                },
                delete: (obj) => {
                    for (const made of to(obj)) handlers.delete?.(made);
                },
            }) ?? undefined,
        *list() {
            for (const obj of from.list()) yield* to(obj);
        },
    };
}

/** Many sources as one, by id; a member set or removed is subscribed to, or left, by every watch of the set at once. */
export class SourceSet<T> implements Source<T> {
    private readonly members = new Map<string, Source<T>>();
    /** Each watch of the set, and its subscription to each member. */
    private readonly watches = new Set<{ handlers: InformerHandlers<T>; subscriptions: Map<string, () => void> }>();

    /** `id` is now `source` (a member of that id before is left first). */
    set(id: string, source: Source<T>): void {
        this.remove(id);
        this.members.set(id, source);
        for (const watch of this.watches) this.subscribe(watch, id, source);
    }

    remove(id: string): void {
        if (!this.members.delete(id)) return;
        for (const watch of this.watches) {
            watch.subscriptions.get(id)?.();
            watch.subscriptions.delete(id);
        }
    }

    on(handlers: InformerHandlers<T>): () => void {
        const watch = { handlers, subscriptions: new Map<string, () => void>() };
        this.watches.add(watch);
        for (const [id, source] of this.members) this.subscribe(watch, id, source);
        return () => {
            this.watches.delete(watch);
            for (const unsubscribe of watch.subscriptions.values()) unsubscribe();
        };
    }

    *list(): Iterable<T> {
        for (const source of this.members.values()) yield* source.list();
    }

    private subscribe(watch: { handlers: InformerHandlers<T>; subscriptions: Map<string, () => void> }, id: string, source: Source<T>): void {
        const unsubscribe = source.on(watch.handlers);
        if (unsubscribe) watch.subscriptions.set(id, unsubscribe);
    }
}

/**
 * Values by id as a source: each value set, replaced or cleared is told (add, update, delete) to
 * every watch, and the values held now are its replay. For what a controller holds and others
 * react to (what can be read of a Link's remote cluster), told as a change, not as a call.
 */
export class Published<T> implements Source<T> {
    private readonly values = new Map<string, T>();
    private readonly watches = new Set<InformerHandlers<T>>();

    /** `id` holds `value` now (undefined: nothing). */
    set(id: string, value: T | undefined): void {
        const before = this.values.get(id);
        if (value === undefined) {
            if (!this.values.delete(id)) return;
            for (const watch of this.watches) watch.delete?.(before!);
            return;
        }
        this.values.set(id, value);
        for (const watch of this.watches) {
            if (before === undefined) watch.add?.(value);
            else watch.update?.(before, value);
        }
    }

    get(id: string): T | undefined {
        return this.values.get(id);
    }

    on(handlers: InformerHandlers<T>): () => void {
        this.watches.add(handlers);
        return () => this.watches.delete(handlers);
    }

    list(): Iterable<T> {
        return this.values.values();
    }
}
