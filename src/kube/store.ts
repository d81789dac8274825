// The informer's cache: objects by namespace/name, with a per-namespace index and
// optional label indexes, so controllers read "the EndpointSlices of Service X" or
// "the workloads of namespace Y" without scanning everything.
import { isDeepStrictEqual } from 'node:util';

export interface KubeObject {
    apiVersion?: string;
    kind?: string;
    metadata?: {
        name?: string;
        namespace?: string;
        uid?: string;
        resourceVersion?: string;
        generation?: number;
        labels?: Record<string, string>;
        annotations?: Record<string, string>;
        deletionTimestamp?: unknown;
        [key: string]: unknown;
    };
}

/**
 * Whether two cached versions of an object differ in nothing but their resourceVersion: with a
 * transform that keeps only what a controller reads, a new version that changes none of it
 * (InformerOptions.unchanged).
 */
export function sameButResourceVersion(a: KubeObject, b: KubeObject): boolean {
    return isDeepStrictEqual({ ...a, metadata: { ...a.metadata, resourceVersion: undefined } }, { ...b, metadata: { ...b.metadata, resourceVersion: undefined } });
}

/** The values an object is filed under in one index; the same object must always give the same values. */
export type IndexFn<T> = (obj: T) => readonly string[];

/** A method, not a function-typed field: a store of Services still counts as a store of KubeObjects. */
interface Index<T> {
    values(obj: T): readonly string[];
    keys: Map<string, Set<string>>;
}

export class ObjectStore<T extends KubeObject> {
    private readonly byKey = new Map<string, T>();
    private readonly byNamespace = new Map<string, Map<string, T>>();
    /** index name → how to file an object, and value → object keys. */
    private readonly indexes = new Map<string, Index<T>>();

    static keyOf(obj: KubeObject): string {
        const ns = obj.metadata?.namespace;
        return ns ? `${ns}/${obj.metadata?.name}` : (obj.metadata?.name ?? '');
    }

    /** Files every object under the values `values` gives it (client-go's Indexers); call before the informer starts. */
    addIndex(name: string, values: IndexFn<T>): void {
        const index: Index<T> = { values, keys: new Map() };
        this.indexes.set(name, index);
        for (const [key, obj] of this.byKey) this.file(index, key, obj);
    }

    /** Objects filed under `value` in the index `name`. */
    byIndex(name: string, value: string): T[] {
        const index = this.indexes.get(name);
        if (!index) throw new Error(`no index ${name}`);
        const keys = index.keys.get(value);
        const out: T[] = [];
        if (keys !== undefined) for (const k of keys) out.push(this.byKey.get(k)!);
        return out;
    }

    /** Index objects by the value of this label (call before the informer starts). */
    indexLabel(key: string): void {
        this.addIndex(`label:${key}`, (obj) => {
            const value = obj.metadata?.labels?.[key];
            return value === undefined ? [] : [value];
        });
    }

    get(namespace: string | undefined, name: string): T | undefined {
        return this.byKey.get(namespace ? `${namespace}/${name}` : name);
    }

    list(namespace?: string): T[] {
        if (namespace === undefined) return [...this.byKey.values()];
        return [...(this.byNamespace.get(namespace)?.values() ?? [])];
    }

    /** Objects whose label `key` equals `value`, optionally within one namespace. */
    byLabel(key: string, value: string, namespace?: string): T[] {
        if (!this.indexes.has(`label:${key}`)) throw new Error(`label ${key} is not indexed`);
        const all = this.byIndex(`label:${key}`, value);
        return namespace === undefined || all.length === 0 ? all : all.filter((obj) => obj.metadata?.namespace === namespace);
    }

    size(): number {
        return this.byKey.size;
    }

    set(obj: T): void {
        const key = ObjectStore.keyOf(obj);
        const old = this.byKey.get(key);
        if (old) this.delete(old);
        this.byKey.set(key, obj);
        const ns = obj.metadata?.namespace ?? '';
        let bucket = this.byNamespace.get(ns);
        if (!bucket) this.byNamespace.set(ns, (bucket = new Map()));
        bucket.set(key, obj);
        for (const index of this.indexes.values()) this.file(index, key, obj);
    }

    delete(obj: KubeObject): void {
        const key = ObjectStore.keyOf(obj);
        const stored = this.byKey.get(key);
        if (!stored) return;
        this.byKey.delete(key);
        const ns = stored.metadata?.namespace ?? '';
        const bucket = this.byNamespace.get(ns);
        bucket?.delete(key);
        if (bucket?.size === 0) this.byNamespace.delete(ns);
        for (const index of this.indexes.values()) {
            for (const value of index.values(stored)) {
                const keys = index.keys.get(value);
                keys?.delete(key);
                if (keys?.size === 0) index.keys.delete(value);
            }
        }
    }

    private file(index: Index<T>, key: string, obj: T): void {
        for (const value of index.values(obj)) {
            let keys = index.keys.get(value);
            if (!keys) index.keys.set(value, (keys = new Set()));
            keys.add(key);
        }
    }
}
