// The resourceVersion each object had after our last create or update of it, so that the watch
// event that write causes is recognised as ours and does not queue another sync: the object in
// that event is exactly what the sync that wrote it decided, and syncing again writes nothing
// (it doubled the service mirror's syncs on creation). An event with any other resourceVersion
// (someone else's write, or ours seen before its response came back) is not ours. One entry per
// object at most, dropped once its event is seen or the object deleted.
/** What is read of an object: any Kubernetes object type fits. */
interface Written {
    metadata?: { namespace?: string; name?: string; resourceVersion?: string };
}

const keyOf = (obj: Written) => `${obj.metadata?.namespace ?? ''}/${obj.metadata?.name ?? ''}`;

export class OwnWrites {
    private readonly versions = new Map<string, string>();

    /** After a create or update succeeded, with the object the apiserver returned. */
    wrote(obj: Written): void {
        const version = obj.metadata?.resourceVersion;
        if (version) this.versions.set(keyOf(obj), version);
    }

    /** Whether this add or update event shows the object as our last write left it; forgets the write once seen. */
    isOwn(obj: Written): boolean {
        const key = keyOf(obj);
        const version = this.versions.get(key);
        if (version === undefined || version !== obj.metadata?.resourceVersion) return false;
        this.versions.delete(key);
        return true;
    }

    /** The object was deleted: any event of it from now on is news. */
    forget(obj: Written): void {
        this.versions.delete(keyOf(obj));
    }

    get size(): number {
        return this.versions.size;
    }
}
