// An informer that survives faults: list, then watch from the list's resourceVersion
// with bookmarks; relist on 410 Gone; reconnect with jittered exponential backoff on
// every other error; ways to notice a silently dead watch (an open timeout, inactivity limits
// set by the apiserver's bookmarks, an answer to our client showing the server ahead (serverCopy),
// requestsUnansweredSince), each restarting it from its resourceVersion; an optional periodic
// resync (in memory: every cached object re-delivered as an update, so work that was lost comes
// back; a sync with nothing to change writes nothing). A custom resource whose CRD is not installed is reported as such (which CRD, how
// to install it) and polled for until it appears. It owns the cache of one resource type and
// the event callbacks; it never writes to the apiserver.
import type { KubeRest, ServerCopy } from './rest.js';
import { ApiError, isGone, isNotFound, retryAfterMs } from './errors.js';
import { apiVersionOf, collectionPath, type ResourceType } from './resources.js';
import { ObjectStore, type KubeObject } from './store.js';
import { Pacer } from './pacer.js';

/**
 * How often the apiserver's watch cache sends a bookmark to a watcher that asked for them:
 * k8s.io/apiserver pkg/storage/cacher, defaultBookmarkFrequency (1 min; nextBookmarkTime), from
 * 1 s time buckets on a 1 s (±25 %) ticker. But only a bookmark newer than the resourceVersion the watch started from is sent
 * (cacheWatcher.process): the watch of a resource nothing changed in since gets none until that
 * resource's watch cache moves on (a change, a progress notification from etcd: when a consistent
 * read waits for one, or every 10 min by default). Once one has come, the cache is past the
 * watch's start for good and one comes every minute. Read in v1.35.4, the apiserver the test
 * harness builds; measured with a one-off tool (git show 7c5968f:hack/watch-liveness.ts). Not configurable on the server.
 */
export const BOOKMARK_PERIOD_MS = 60_000;

/**
 * How long a watch may wait for its answer to begin (its headers). The apiserver answers at once
 * when it has the watch, so a longer wait means the path or the server is dead: such a watch is
 * ended and told to `health` as a failure far sooner than a quiet one may be (a remote cluster's
 * watches have no lease calls to tell them: requestsUnansweredSince). Client-go's default request
 * timeout is none; its HTTP/2 pings notice within 45 s.
 */
export const DEFAULT_OPEN_TIMEOUT_MS = 30_000;

/**
 * Silence after which an answered watch that has had no bookmark yet is restarted. Live, it may
 * be quiet until the apiserver ends it at its timeoutSeconds (measured: a quiet Services watch
 * got its first bookmark 120 s and 135 s after it started; a resource nothing changes in may get
 * none for 10 min), so the restart is silent, like the server ending the watch: nothing is told to
 * `health`. A dead path shows in the next watch, whose answer never begins (openTimeoutMs); the
 * lease calls (requestsUnansweredSince) notice a dead local path far sooner.
 */
export const DEFAULT_INACTIVITY_MS = 150_000;

/**
 * Silence that aborts a watch that has had a bookmark: live, it gets one every bookmark period,
 * so a longer silence means the connection is dead (a proxy that froze, a flow table that forgot
 * it without RST, a stopped apiserver: TCP keepalives answered, nothing else). 15 s of slack for a
 * busy apiserver or event loop, the apiserver's own (DefaultEventFreshDuration = bookmark
 * frequency + 15 s). Costs nothing while the watch lives.
 */
export const DEFAULT_BOOKMARKED_INACTIVITY_MS = BOOKMARK_PERIOD_MS + 15_000;

export interface InformerHandlers<T> {
    add?(obj: T): void;
    update?(oldObj: T, newObj: T): void;
    delete?(obj: T): void;
}

export interface InformerOptions<T extends KubeObject = KubeObject> {
    resource: ResourceType;
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
    /** Watch one namespace; all namespaces when undefined. */
    namespace?: string;
    labelSelector?: string;
    fieldSelector?: string;
    /** Re-deliver every cached object as an update this often (0 = never). */
    resyncMs?: number;
    /** Server-side watch timeout; jittered by up to +25% so replicas don't reconnect in step. */
    watchTimeoutSeconds?: number;
    /** Abort a watch whose answer has not begun within this long (DEFAULT_OPEN_TIMEOUT_MS; never above inactivityMs). */
    openTimeoutMs?: number;
    /** Restart an answered watch that received nothing for this long before its first bookmark (DEFAULT_INACTIVITY_MS). */
    inactivityMs?: number;
    /** How long a watch may stay silent after an answer showed the server ahead of the cache before it is restarted (default 3 s). */
    staleWatchMs?: number;
    backoffInitialMs?: number;
    backoffMaxMs?: number;
    listPageSize?: number;
    log?: (level: 'info' | 'warn' | 'debug' | 'error', msg: string, fields?: Record<string, unknown>) => void;
    /**
     * Objects larger than this (in characters of their JSON, as served) are never cached: a
     * watch event that large is dropped unread (the object it names leaves the cache, the
     * handlers are told of a delete), a listed one is skipped. For a cluster that is not
     * trusted (a Link's remote), whose apiserver could send objects of any size.
     */
    maxObjectBytes?: number;
    /** Told of each object dropped for its size: its namespace/name when known, and its size. */
    oversized?: (object: { namespace?: string; name?: string }, chars: number) => void;
    /**
     * Told when reading the resource starts failing (with why) and when it works again
     * (undefined): a list succeeded, or a watch delivered something.
     */
    health?: (error: string | undefined) => void;
}

/** Counts a test or a metric can read to tell what the informer went through. */
export interface InformerStats {
    lists: number;
    watches: number;
    expired: number;
    errors: number;
    inactivityAborts: number;
    /** Watches restarted because they stayed silent after an answer showed the server ahead (serverCopy). */
    staleWatchRestarts: number;
    /** Watches restarted because they were silent while requests to the apiserver went unanswered (requestsUnansweredSince). */
    unansweredRestarts: number;
    /** Answered watches with no bookmark yet restarted after inactivityMs of silence (DEFAULT_INACTIVITY_MS). */
    quietRestarts: number;
    /** Updates cached without notifying the handlers (InformerOptions.unchanged). */
    unchanged: number;
}

/** Why a live-looking watch was ended for a fresh one: serverCopy, requestsUnansweredSince, or silence before any bookmark. */
type WatchRestart = 'stale' | 'unanswered' | 'quiet';

interface ListResponse<T> {
    metadata: { resourceVersion: string; continue?: string };
    items: T[];
}

/**
 * How long to wait before the next list or watch after `failures` failures in a row: doubling
 * from `initialMs` up to `maxMs`, with full jitter on the upper half (`random` in [0, 1)) so
 * replicas that lost the same apiserver don't return together, and never sooner than the
 * server's Retry-After. A remote cluster that fails every request is so asked at most about
 * once per maxMs.
 */
export function reconnectDelay(failures: number, initialMs: number, maxMs: number, retryAfterMs: number, random: number): number {
    const exp = Math.min(maxMs, initialMs * 2 ** (Math.max(1, failures) - 1));
    return Math.max(retryAfterMs, exp / 2 + (random * exp) / 2);
}

/** A list page larger than this is refused (with maxObjectBytes set): 500 objects of 128 KiB on average, where real ones are a few KiB. */
export const LIST_PAGE_MAX_BYTES = 64 * 1024 * 1024;

const OBJECT_METADATA = /"metadata":\{"name":"((?:[^"\\]|\\.)*)"(?:,"generateName":"(?:[^"\\]|\\.)*")?(?:,"namespace":"((?:[^"\\]|\\.)*)")?/;

/** The namespace/name of the object of a watch event, read from its start (apiservers write metadata's name and namespace first). */
export function objectOfEventPrefix(prefix: string): { namespace?: string; name: string } | undefined {
    const m = OBJECT_METADATA.exec(prefix);
    if (!m) return undefined;
    const unquote = (text: string) => JSON.parse(`"${text}"`) as string;
    try {
        return m[2] === undefined ? { name: unquote(m[1]!) } : { namespace: unquote(m[2]), name: unquote(m[1]!) };
    } catch {
        return undefined;
    }
}

export class Informer<T extends KubeObject> {
    readonly store = new ObjectStore<T>();
    readonly stats: InformerStats = { lists: 0, watches: 0, expired: 0, errors: 0, inactivityAborts: 0, staleWatchRestarts: 0, unansweredRestarts: 0, quietRestarts: 0, unchanged: 0 };
    private readonly handlers: InformerHandlers<T>[] = [];
    private resourceVersion = '';
    private running = false;
    /** Aborts the list or watch in flight at stop. */
    private abort: AbortController | undefined;
    /** Why the informer cannot sync now (a missing CRD), for /readyz and the logs. */
    private missing: string | undefined;
    private loop: Promise<void> | undefined;
    private resyncTimer: NodeJS.Timeout | undefined;
    /** Ends the watch in flight for a fresh one from the same resourceVersion, saying why. */
    private restartWatch: ((why: WatchRestart) => void) | undefined;
    /** performance.now() when the watch in flight last received bytes; undefined until it does. */
    private heardAt: number | undefined;
    private staleCheck: NodeJS.Timeout | undefined;
    private stopCopies: (() => void) | undefined;
    private resyncing = false;
    private wakeUp: (() => void) | undefined;
    private failing = false;
    private markSynced!: () => void;
    private syncedFlag = false;
    /** Resolves once the first list has been delivered to the handlers. */
    readonly synced: Promise<void> = new Promise((resolve) => (this.markSynced = resolve));

    constructor(
        private readonly rest: KubeRest,
        private readonly opts: InformerOptions<T>,
    ) {}

    on(handlers: InformerHandlers<T>): void {
        this.handlers.push(handlers);
    }

    hasSynced(): boolean {
        return this.syncedFlag;
    }

    /** What keeps the informer from syncing, when it knows (a CRD not installed). */
    problem(): string | undefined {
        return this.missing;
    }

    start(): void {
        if (this.running) return;
        this.running = true;
        this.stopCopies = this.rest.onServerCopy(this.opts.resource, (copy) => this.serverCopy(copy));
        this.loop = this.run();
        if (this.opts.resyncMs) {
            this.resyncTimer = setInterval(() => void this.resync(), this.opts.resyncMs);
        }
    }

    async stop(): Promise<void> {
        this.running = false;
        this.stopCopies?.();
        clearInterval(this.resyncTimer);
        clearTimeout(this.staleCheck);
        this.staleCheck = undefined;
        this.abort?.abort();
        this.wakeUp?.();
        await this.loop;
    }

    /**
     * An answer to a request of our client showed the server's copy of a cached object at a
     * version the cache lacks, or refused (409) a write planned from the cached version. A live
     * watch brings the change within moments; if the cache still holds that version after
     * staleWatchMs, the watch is presumed dead — a connection dropped without FIN or RST carries
     * nothing until the inactivity timer, minutes later, while every write planned from the
     * cache conflicts — and is restarted from its resourceVersion, which loses nothing.
     */
    private serverCopy({ namespace, name, resourceVersion, conflict }: ServerCopy): void {
        if (this.staleCheck || !this.running) return;
        const cached = this.store.get(namespace, name)?.metadata?.resourceVersion;
        const behind = conflict ? resourceVersion === undefined || resourceVersion === cached : resourceVersion !== undefined && resourceVersion !== cached;
        if (cached === undefined || !behind) return;
        this.staleCheck = setTimeout(() => {
            this.staleCheck = undefined;
            if (this.store.get(namespace, name)?.metadata?.resourceVersion !== cached || !this.restartWatch) return;
            this.log('info', 'watch silent while an answer showed the server ahead: restarting it', { namespace, name });
            this.restartWatch('stale');
        }, this.opts.staleWatchMs ?? 3_000);
    }

    /**
     * Requests of this replica to the same apiserver sent since `since` (performance.now()) got no
     * answer (the lease's, every couple of seconds on every replica: see Manager). Watches ride
     * their own connections (HTTP/1.1), so this is no proof, but a path that lost those requests
     * may have lost the watch's bytes too, and nothing else would tell before the inactivity
     * timer: a watch that received nothing since then is restarted from its resourceVersion
     * (one request; nothing lost), one that did is left alone. client-go gets this from HTTP/2
     * pings on the one connection all its requests share.
     */
    requestsUnansweredSince(since: number): void {
        if (!this.restartWatch || (this.heardAt !== undefined && this.heardAt >= since)) return;
        this.log('info', 'watch silent while requests to the apiserver went unanswered: restarting it');
        this.restartWatch('unanswered');
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

    /** In slices: re-delivering 20 000 objects at once would hold the event loop for a good 100 ms. */
    private async resync(): Promise<void> {
        if (!this.syncedFlag || this.resyncing) return;
        this.resyncing = true;
        try {
            const slicer = new Pacer();
            for (const obj of this.store.list()) {
                // Changed or gone during a pause: its own event has told the handlers already.
                if (this.store.get(obj.metadata?.namespace, obj.metadata?.name ?? '') !== obj) continue;
                this.notify((h) => h.update?.(obj, obj));
                if (slicer.due()) await slicer.pause();
            }
        } finally {
            this.resyncing = false;
        }
    }

    private async run(): Promise<void> {
        let failures = 0;
        while (this.running) {
            try {
                if (!this.resourceVersion) {
                    await this.list();
                    this.foundResource();
                    this.healthy();
                }
                // Stopped while listing: a watch opened now would hold stop() for its whole timeout.
                if (!this.running) break;
                await this.watch();
                // Only a watch the server ended cleanly proves the path healthy: a list that
                // works before a watch that fails at once must still back off further.
                failures = 0;
            } catch (err) {
                if (!this.running) break;
                if (isGone(err)) {
                    // Our resourceVersion fell out of the server's history: start over
                    // from a fresh list, at once (the diff delivers what we missed).
                    this.stats.expired++;
                    this.resourceVersion = '';
                    this.log('info', 'watch expired, relisting');
                    continue;
                }
                this.stats.errors++;
                failures++;
                if (isNotFound(err) && this.opts.resource.crd) {
                    await this.sleep(this.waitForCrd(failures));
                    continue;
                }
                const delay = this.backoff(failures, err);
                this.log('warn', 'list/watch failed, retrying', { error: (err as Error).message, delayMs: delay });
                this.failing = true;
                this.opts.health?.((err as Error).message);
                await this.sleep(delay);
            }
        }
    }

    /**
     * The apiserver does not serve the resource: its CRD is missing. Said once, clearly,
     * then polled for every few seconds, so serving starts soon after someone installs it.
     */
    private waitForCrd(failures: number): number {
        const { crd } = this.opts.resource;
        if (!this.missing && crd) {
            this.missing = `CustomResourceDefinition ${crd.name} is not installed`;
            this.log('error', `${this.missing}: install it with \`kubectl apply -f ${crd.file}\` (from the mesh-endpoints repository or chart); waiting for it`, {
                crd: crd.name,
            });
        }
        return Math.min(this.backoff(failures, undefined), 5_000);
    }

    private foundResource(): void {
        if (!this.missing) return;
        this.log('info', `${this.opts.resource.crd?.name ?? this.opts.resource.plural} is served now`);
        this.missing = undefined;
    }

    private backoff(failures: number, err: unknown): number {
        return reconnectDelay(failures, this.opts.backoffInitialMs ?? 500, this.opts.backoffMaxMs ?? 30_000, retryAfterMs(err), Math.random());
    }

    private sleep(ms: number): Promise<void> {
        return new Promise((resolve) => {
            const timer = setTimeout(resolve, ms);
            this.wakeUp = () => {
                clearTimeout(timer);
                resolve();
            };
        });
    }

    private baseQuery() {
        return { labelSelector: this.opts.labelSelector, fieldSelector: this.opts.fieldSelector };
    }

    private healthy(): void {
        if (!this.failing) return;
        this.failing = false;
        this.opts.health?.(undefined);
    }

    private async list(): Promise<void> {
        this.stats.lists++;
        const abort = new AbortController();
        this.abort = abort;
        const path = collectionPath(this.opts.resource, this.opts.namespace);
        const maxObject = this.opts.maxObjectBytes;
        /** Characters of each page's body, by page: only a page above maxObject can hold an object above it. */
        const pageChars = new Map<string | undefined, number>();
        const fetchPage = (cont: string | undefined) => {
            const page = this.rest.request<ListResponse<KubeObject>>('GET', path, {
                query: { ...this.baseQuery(), limit: this.opts.listPageSize ?? 500, continue: cont },
                signal: abort.signal,
                ...(maxObject !== undefined && { maxBodyBytes: LIST_PAGE_MAX_BYTES, bodyBytes: (chars: number) => pageChars.set(cont, chars) }),
            });
            // Awaited only once the page before it is cached: its failure must not count as unhandled meanwhile.
            page.catch(() => undefined);
            return page;
        };
        /** The keys this list delivered: what the cache holds beyond them is gone from the server. */
        const listed = new Set<string>();
        let resourceVersion = '';
        // A large list must not hold up timers and I/O: parsing and caching it pause now and then.
        const slicer = new Pacer();
        const started = performance.now();
        let pages = 0;
        let cont: string | undefined;
        let next: Promise<ListResponse<KubeObject>> | undefined = fetchPage(undefined);
        try {
            while (next) {
                const page: ListResponse<KubeObject> = await next;
                pages++;
                const checkSizes = maxObject !== undefined && (pageChars.get(cont) ?? Infinity) > maxObject;
                pageChars.delete(cont);
                cont = page.metadata.continue;
                // The apiserver serves the next page while this one is cached: its time and ours overlap.
                next = page.metadata.continue ? fetchPage(page.metadata.continue) : undefined;
                // Two pages are in memory at once now: each raw object is let go of once it is cached.
                const raw = page.items as (KubeObject | undefined)[];
                for (let i = 0; i < raw.length; i++) {
                    const item = raw[i]!;
                    raw[i] = undefined;
                    if (checkSizes) {
                        const chars = JSON.stringify(item).length;
                        // Not cached, so not listed: a version cached before is dropped at the end of the list.
                        if (chars > maxObject!) {
                            this.droppedForSize(item.metadata ?? {}, chars);
                            continue;
                        }
                    }
                    // A relist hands back mostly what we hold: an unchanged version keeps its cached form.
                    const held = this.store.get(item.metadata?.namespace, item.metadata?.name ?? '');
                    const cached = held && held.metadata?.resourceVersion === item.metadata?.resourceVersion ? held : this.toCached(item);
                    listed.add(ObjectStore.keyOf(cached));
                    // Cached and told at once, not after the last page: the handlers' work overlaps
                    // the apiserver's too. Every page of a list is one snapshot, so the cache only
                    // moves forward, as with watch events; what the list lacks is dropped at its end.
                    this.upsert(cached);
                    if (slicer.due()) await slicer.pause();
                }
                resourceVersion = page.metadata.resourceVersion;
            }
        } finally {
            // A page still in flight after a failure is not wanted.
            if (next) abort.abort();
        }
        await this.dropUnlisted(listed);
        this.log('debug', 'listed', { items: listed.size, pages, ms: Math.round(performance.now() - started) });
        this.resourceVersion = resourceVersion;
        if (!this.syncedFlag) {
            this.syncedFlag = true;
            this.markSynced();
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

    private async watch(): Promise<void> {
        this.stats.watches++;
        const abort = new AbortController();
        this.abort = abort;
        const inactivityMs = this.opts.inactivityMs ?? DEFAULT_INACTIVITY_MS;
        const bookmarkedInactivityMs = Math.min(inactivityMs, DEFAULT_BOOKMARKED_INACTIVITY_MS);
        let limitMs = Math.min(inactivityMs, this.opts.openTimeoutMs ?? DEFAULT_OPEN_TIMEOUT_MS);
        let answered = false;
        let bookmarked = false;
        /** Why we ended the watch ourselves, if we did. */
        let endedBy: WatchRestart | 'inactivity' | undefined;
        const end = (why: WatchRestart | 'inactivity') => {
            endedBy = why;
            abort.abort();
        };
        this.restartWatch = end;
        this.heardAt = undefined;
        let timer: NodeJS.Timeout | undefined;
        const touch = () => {
            clearTimeout(timer);
            timer = setTimeout(() => end(answered && !bookmarked ? 'quiet' : 'inactivity'), limitMs);
        };
        const timeout = this.opts.watchTimeoutSeconds ?? 300;
        touch();
        try {
            await this.rest.watch(
                collectionPath(this.opts.resource, this.opts.namespace),
                {
                    ...this.baseQuery(),
                    resourceVersion: this.resourceVersion,
                    allowWatchBookmarks: true,
                    timeoutSeconds: Math.round(timeout * (1 + Math.random() / 4)),
                },
                abort.signal,
                (event) => {
                    if (event.type === 'BOOKMARK' && !bookmarked) {
                        bookmarked = true;
                        limitMs = bookmarkedInactivityMs;
                        touch(); // armed with the bookmarked limit by this very chunk
                    }
                    this.handleEvent(event);
                },
                () => {
                    this.heardAt = performance.now();
                    if (!answered) {
                        answered = true;
                        limitMs = inactivityMs;
                    }
                    touch();
                    this.healthy();
                },
                this.opts.maxObjectBytes === undefined ? undefined : { maxLineChars: this.opts.maxObjectBytes, oversized: (prefix, chars) => this.oversizedEvent(prefix, chars) },
            );
        } catch (err) {
            if (endedBy !== undefined && endedBy !== 'inactivity' && this.running) {
                // Ends like a watch the server closed: the next one resumes from resourceVersion.
                if (endedBy === 'stale') this.stats.staleWatchRestarts++;
                else if (endedBy === 'unanswered') this.stats.unansweredRestarts++;
                else this.stats.quietRestarts++;
                return;
            }
            if (endedBy === 'inactivity') {
                this.stats.inactivityAborts++;
                throw new ApiError(0, 'Inactive', answered ? `watch received nothing for ${limitMs} ms` : `watch got no answer within ${limitMs} ms`);
            }
            throw err;
        } finally {
            clearTimeout(timer);
            this.restartWatch = undefined;
        }
    }

    /**
     * A watch event too large to read: the object it names leaves the cache (as if deleted),
     * so nothing stays cached at a version that is gone. One whose object cannot be told ends
     * the watch; the list that follows skips it.
     */
    private oversizedEvent(prefix: string, chars: number): void {
        const named = objectOfEventPrefix(prefix);
        if (!named) throw new ApiError(0, 'TooLarge', `a watch event of ${chars} characters, more than ${this.opts.maxObjectBytes}, names no object it can be told by`);
        this.droppedForSize(named, chars);
        const old = this.store.get(named.namespace, named.name);
        if (!old) return;
        this.store.delete(old);
        this.notify((h) => h.delete?.(old));
    }

    private droppedForSize(object: { namespace?: string; name?: string }, chars: number): void {
        this.log('warn', 'object too large, not cached', { namespace: object.namespace, name: object.name, chars, max: this.opts.maxObjectBytes });
        this.opts.oversized?.({ namespace: object.namespace, name: object.name }, chars);
    }

    private handleEvent(event: { type: string; object: unknown }): void {
        if (event.type === 'ERROR') {
            const status = event.object as { code?: number; reason?: string; message?: string };
            throw new ApiError(status.code ?? 0, status.reason ?? '', status.message ?? 'watch error');
        }
        if (event.type === 'BOOKMARK') {
            const rv = (event.object as KubeObject).metadata?.resourceVersion;
            if (rv) this.resourceVersion = rv;
            return;
        }
        const obj = this.toCached(event.object as KubeObject);
        const rv = obj.metadata?.resourceVersion;
        switch (event.type) {
            case 'ADDED':
            case 'MODIFIED':
                this.upsert(obj);
                break;
            case 'DELETED': {
                const old = this.store.get(obj.metadata?.namespace, obj.metadata?.name ?? '');
                this.store.delete(obj);
                if (old) this.notify((h) => h.delete?.(obj));
                break;
            }
            default:
                this.log('debug', 'unknown watch event', { type: event.type });
        }
        if (rv) this.resourceVersion = rv;
    }
}
