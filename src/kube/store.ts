// The informer's cache: objects by namespace/name, with a per-namespace index and
// optional label indexes, so controllers read "the EndpointSlices of Service X" or
// "the workloads of namespace Y" without scanning everything.
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

export class ObjectStore<T extends KubeObject> {
    private readonly byKey = new Map<string, T>();
    private readonly byNamespace = new Map<string, Map<string, T>>();
    /** label key → label value → object keys. */
    private readonly labelIndexes = new Map<string, Map<string, Set<string>>>();

    static keyOf(obj: KubeObject): string {
        const ns = obj.metadata?.namespace;
        return ns ? `${ns}/${obj.metadata?.name}` : (obj.metadata?.name ?? '');
    }

    /** Index objects by the value of this label (call before the informer starts). */
    indexLabel(key: string): void {
        const index = new Map<string, Set<string>>();
        this.labelIndexes.set(key, index);
        for (const obj of this.byKey.values()) this.addToLabelIndex(obj, key, index);
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
        const index = this.labelIndexes.get(key);
        if (!index) throw new Error(`label ${key} is not indexed`);
        const out: T[] = [];
        for (const k of index.get(value) ?? []) {
            const obj = this.byKey.get(k);
            if (obj && (namespace === undefined || obj.metadata?.namespace === namespace)) out.push(obj);
        }
        return out;
    }

    namespaces(): string[] {
        return [...this.byNamespace.keys()];
    }

    size(): number {
        return this.byKey.size;
    }

    set(obj: T): void {
        const old = this.byKey.get(ObjectStore.keyOf(obj));
        if (old) this.delete(old);
        const key = ObjectStore.keyOf(obj);
        this.byKey.set(key, obj);
        const ns = obj.metadata?.namespace ?? '';
        let bucket = this.byNamespace.get(ns);
        if (!bucket) this.byNamespace.set(ns, (bucket = new Map()));
        bucket.set(key, obj);
        for (const [label, index] of this.labelIndexes) this.addToLabelIndex(obj, label, index);
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
        for (const [label, index] of this.labelIndexes) {
            const value = stored.metadata?.labels?.[label];
            if (value === undefined) continue;
            const keys = index.get(value);
            keys?.delete(key);
            if (keys?.size === 0) index.delete(value);
        }
    }

    private addToLabelIndex(obj: T, label: string, index: Map<string, Set<string>>): void {
        const value = obj.metadata?.labels?.[label];
        if (value === undefined) return;
        let keys = index.get(value);
        if (!keys) index.set(value, (keys = new Set()));
        keys.add(ObjectStore.keyOf(obj));
    }
}
