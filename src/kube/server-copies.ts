// What the answers to our own requests show of the server's copy of an object, told to whoever
// caches that resource: a watch that stays silent while an answer shows the server ahead of its
// cache is presumed dead (liveness.ts). Apart from the transport, which only hands each answer
// over, so that no writer needs to know of the informers and the transport nothing of caches.
import type { ResourceType } from './resources.js';

/**
 * What an answer about one object shows of the server's copy (ServerCopies.on): its
 * resourceVersion, or with `conflict` (a write refused with 409) that it is not at the version
 * the write was planned from (when the write named one).
 */
export interface ServerCopy {
    namespace: string | undefined;
    name: string;
    resourceVersion: string | undefined;
    conflict: boolean;
}

/** group, namespace, plural and name of an object's path (a subresource's too). */
const OBJECT_PATH = /^\/(?:api|apis\/([^/]+))\/[^/]+(?:\/namespaces\/([^/]+))?\/([^/]+)\/([^/]+)(?:\/[^/]+)?$/;

/** The listeners of one cluster's answers, by group/plural (a client and its forks share them). */
export class ServerCopies {
    private readonly listeners = new Map<string, Set<(copy: ServerCopy) => void>>();

    /**
     * Tells `listener` of each object of the resource an answer to this client (or a fork)
     * shows: a GET, PUT, PATCH or DELETE of it, or such a write refused with 409. So an informer
     * learns that the server is ahead of its cache from any writer's requests, and no writer
     * needs to know of the informer.
     */
    on(resource: Pick<ResourceType, 'group' | 'plural'>, listener: (copy: ServerCopy) => void): () => void {
        const key = `${resource.group}/${resource.plural}`;
        const listeners = this.listeners.get(key) ?? new Set();
        this.listeners.set(key, listeners.add(listener));
        return () => listeners.delete(listener);
    }

    /** `object`: the answer, or for a 409 the refused write's body (its resourceVersion is what it was planned from). */
    show(method: string, path: string, conflict: boolean, object: unknown): void {
        // A create's object is in no cache yet.
        if (this.listeners.size === 0 || method === 'POST') return;
        const m = OBJECT_PATH.exec(path);
        const listeners = m ? this.listeners.get(`${m[1] ?? ''}/${m[3]}`) : undefined;
        if (!m || !listeners?.size) return;
        const { metadata, preconditions } = (object ?? {}) as { metadata?: { name?: string; resourceVersion?: string }; preconditions?: { resourceVersion?: string } };
        // An answer naming no object is a list or a Status (a namespaced collection's path reads as a Namespace's subresource).
        if (!conflict && !metadata?.name) return;
        const copy = { namespace: m[2] && decodeURIComponent(m[2]), name: decodeURIComponent(m[4]!), resourceVersion: metadata?.resourceVersion ?? preconditions?.resourceVersion, conflict };
        for (const listener of listeners) listener(copy);
    }
}
