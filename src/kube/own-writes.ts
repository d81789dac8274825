// Recognising the watch events our own writes cause, so they do not queue another sync: the
// object in such an event is exactly what the sync that wrote it decided, and syncing again
// writes nothing (it nearly doubled the service mirror's syncs). An event is ours only when its
// resourceVersion (or, for slices, generation) is the one our write's response gave. The event
// often arrives before that response: while a write to an object is in flight its events are
// held (InFlight) and judged once the write ends, succeeded or not. An event judged not ours
// (someone else's write, a write of ours that failed) is handled as before, never dropped.

/** Writes in flight by key, and the events of those keys held until the writes end. */
export class InFlight {
    private readonly writes = new Map<string, { count: number; held: (() => void)[] }>();

    /** Runs `write` with `keys` in flight; the events held for them are judged when it ends. */
    async around<T>(keys: readonly string[], write: () => Promise<T>): Promise<T> {
        for (const key of keys) {
            const entry = this.writes.get(key);
            if (entry) entry.count++;
            else this.writes.set(key, { count: 1, held: [] });
        }
        try {
            return await write();
        } finally {
            for (const key of keys) this.end(key);
        }
    }

    /** Holds `judge` until the writes to `key` end; false, and nothing held, when none is in flight. */
    hold(key: string, judge: () => void): boolean {
        const entry = this.writes.get(key);
        if (!entry) return false;
        entry.held.push(judge);
        return true;
    }

    get size(): number {
        return this.writes.size;
    }

    private end(key: string): void {
        const entry = this.writes.get(key)!;
        if (--entry.count > 0) return;
        this.writes.delete(key);
        for (const judge of entry.held) judge();
    }
}

/** What is read of an object: any Kubernetes object type fits. */
export interface Written {
    metadata?: { namespace?: string; name?: string; resourceVersion?: string };
}

const keyOf = (namespace: string | undefined, name: string | undefined) => `${namespace ?? ''}/${name ?? ''}`;

/**
 * Writes of one object closer together than its events: its create and then its status, say.
 * The event of each is ours; a newer write must not make the echo of an older one look foreign.
 */
const VERSIONS_KEPT = 4;

/**
 * The resourceVersions each object had after our recent creates and updates of it (the last
 * VERSIONS_KEPT, each dropped once its event is seen, all when the object is deleted), and the
 * writes in flight.
 */
export class OwnWrites {
    private readonly versions = new Map<string, string[]>();
    private readonly inFlight = new InFlight();

    /** Creates or updates namespace/name with `send`, which resolves to the object the apiserver returned. */
    async write<T extends Written>(namespace: string, name: string, send: () => Promise<T>): Promise<T> {
        return this.inFlight.around([keyOf(namespace, name)], async () => {
            const written = await send();
            this.wrote(written);
            return written;
        });
    }

    /**
     * An add or update event of the object: `changed` is called, now or once the writes in
     * flight to it end, unless the event shows the object as one of our writes left it.
     */
    seen(obj: Written, changed: () => void): void {
        const judge = () => this.isOwn(obj) || changed();
        if (!this.inFlight.hold(keyOf(obj.metadata?.namespace, obj.metadata?.name), judge)) judge();
    }

    /** The object was deleted: any event of it from now on is news. */
    forget(obj: Written): void {
        this.versions.delete(keyOf(obj.metadata?.namespace, obj.metadata?.name));
    }

    get size(): number {
        return this.versions.size;
    }

    private wrote(obj: Written): void {
        const version = obj.metadata?.resourceVersion;
        if (!version) return;
        const key = keyOf(obj.metadata?.namespace, obj.metadata?.name);
        this.versions.set(key, [...(this.versions.get(key) ?? []), version].slice(-VERSIONS_KEPT));
    }

    /** Whether the event shows the object as one of our writes left it; forgets that write once seen. */
    private isOwn(obj: Written): boolean {
        const key = keyOf(obj.metadata?.namespace, obj.metadata?.name);
        const versions = this.versions.get(key);
        const at = versions?.indexOf(obj.metadata?.resourceVersion ?? '') ?? -1;
        if (at < 0) return false;
        // Events come in order: the writes before this one were seen, or never will be.
        const rest = versions!.slice(at + 1);
        if (rest.length > 0) this.versions.set(key, rest);
        else this.versions.delete(key);
        return true;
    }
}
