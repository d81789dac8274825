// The list/watch loop of one resource (client-go's Reflector): list, then watch from the list's
// resourceVersion with bookmarks; relist on 410 Gone; reconnect with jittered exponential backoff
// on every other error, polling for a custom resource whose CRD is not installed; objects too
// large to hold are never read into the cache (maxObjectBytes). It hands what it reads to its
// store (the informer's cache and handlers) and keeps nothing itself but where to resume from.
// Apart from the informer so that how a resource is read and how its cache fans out can each be
// read whole; the watchdogs and the CRD poll are liveness.ts's.
import { ApiError, isGone, isNotFound, retryAfterMs } from './errors.js';
import { CrdPresence, type LivenessOptions, type LogFn, WatchLiveness } from './liveness.js';
import { Pacer } from './pacer.js';
import { collectionPath, type ResourceType } from './resources.js';
import type { KubeRest } from './rest.js';
import type { KubeObject } from './store.js';
import { objectOfEventPrefix } from './watch-framing.js';
import { systemClock } from '../time/clock.js';

export interface ReflectorOptions extends LivenessOptions {
    resource: ResourceType;
    /** Watch one namespace; all namespaces when undefined. */
    namespace?: string;
    labelSelector?: string;
    fieldSelector?: string;
    /** Server-side watch timeout; jittered by up to +25% so replicas don't reconnect in step. */
    watchTimeoutSeconds?: number;
    backoffInitialMs?: number;
    backoffMaxMs?: number;
    listPageSize?: number;
    log?: LogFn;
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

/** Counts a test or a metric can read to tell what the reflector went through. */
export interface ReflectorStats {
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
}

/** Where a reflector puts what it reads: the informer's cache, which tells its handlers. */
export interface ReflectorStore {
    /** A listed object, as served: cached (an unchanged version keeps its cached form); its cache key. */
    listed(raw: KubeObject): string;
    /** After a full list: drops what the cache holds that the list did not deliver. */
    dropUnlisted(listed: Set<string>): Promise<void>;
    /** An added or modified object of a watch event, as served: its cached form. */
    applied(raw: KubeObject): KubeObject;
    /** A deleted object of a watch event, as served: its cached form. */
    deleted(raw: KubeObject): KubeObject;
    /** An object dropped unread for its size leaves the cache. */
    evict(object: { namespace?: string; name: string }): void;
    /** The resourceVersion the cache holds of an object. */
    versionOf(namespace: string | undefined, name: string): string | undefined;
    /** The first list is in the cache. */
    synced(): void;
}

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

export class Reflector {
    private resourceVersion = '';
    private running = false;
    /** Aborts the list or watch in flight at stop. */
    private abort: AbortController | undefined;
    private loop: Promise<void> | undefined;
    private stopCopies: (() => void) | undefined;
    private wakeUp: (() => void) | undefined;
    private failing = false;
    /** Callers of relist() waiting for the next whole list; `relistWanted` until it has begun. */
    private relistWaiters: (() => void)[] = [];
    private relistWanted = false;
    readonly liveness: WatchLiveness;
    private readonly crd: CrdPresence;

    constructor(
        private readonly rest: KubeRest,
        private readonly opts: ReflectorOptions,
        private readonly store: ReflectorStore,
        private readonly stats: ReflectorStats,
    ) {
        const log: LogFn = (level, msg, fields) => this.log(level, msg, fields);
        this.liveness = new WatchLiveness(opts, (namespace, name) => store.versionOf(namespace, name), log);
        this.crd = new CrdPresence(opts.resource, log);
    }

    /** What keeps the resource from being read, when known (a CRD not installed). */
    problem(): string | undefined {
        return this.crd.missing;
    }

    start(): void {
        if (this.running) return;
        this.running = true;
        this.stopCopies = this.rest.onServerCopy(this.opts.resource, (copy) => this.liveness.serverCopy(copy));
        this.loop = this.run();
    }

    async stop(): Promise<void> {
        this.running = false;
        this.stopCopies?.();
        this.liveness.stop();
        this.abort?.abort();
        this.wakeUp?.();
        await this.loop;
        for (const stopped of this.relistWaiters.splice(0)) stopped();
    }

    /**
     * A whole new list, resolved once it is cached (what the server holds now, not what a watch
     * cut off without our knowing left behind): the list or watch in flight is ended for it.
     */
    relist(): Promise<void> {
        return new Promise((resolve) => {
            this.relistWaiters.push(resolve);
            this.relistWanted = true;
            this.abort?.abort();
            this.wakeUp?.();
        });
    }

    private log(level: 'info' | 'warn' | 'debug' | 'error', msg: string, fields?: Record<string, unknown>) {
        this.opts.log?.(level, msg, { resource: this.opts.resource.plural, ...fields });
    }

    private async run(): Promise<void> {
        let failures = 0;
        while (this.running) {
            try {
                if (this.relistWanted) {
                    this.relistWanted = false;
                    this.resourceVersion = '';
                }
                if (!this.resourceVersion) {
                    const waiting = this.relistWaiters.splice(0);
                    try {
                        await this.list();
                    } catch (err) {
                        this.relistWaiters.push(...waiting);
                        throw err;
                    }
                    for (const listed of waiting) listed();
                    this.crd.served();
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
                // Ended for relist(): not a failure.
                if (this.relistWanted) continue;
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
                    await this.sleep(this.crd.notServed(this.backoff(failures, undefined)));
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

    private backoff(failures: number, err: unknown): number {
        return reconnectDelay(failures, this.opts.backoffInitialMs ?? 500, this.opts.backoffMaxMs ?? 30_000, retryAfterMs(err), Math.random());
    }

    private sleep(ms: number): Promise<void> {
        return new Promise((resolve) => {
            const cancel = systemClock.schedule(resolve, ms);
            this.wakeUp = () => {
                cancel();
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
                    // Cached and told at once, not after the last page: the handlers' work overlaps
                    // the apiserver's too. Every page of a list is one snapshot, so the cache only
                    // moves forward, as with watch events; what the list lacks is dropped at its end.
                    listed.add(this.store.listed(item));
                    if (slicer.due()) await slicer.pause();
                }
                resourceVersion = page.metadata.resourceVersion;
            }
        } finally {
            // A page still in flight after a failure is not wanted.
            if (next) abort.abort();
        }
        await this.store.dropUnlisted(listed);
        this.log('debug', 'listed', { items: listed.size, pages, ms: Math.round(performance.now() - started) });
        this.resourceVersion = resourceVersion;
        this.store.synced();
    }

    private async watch(): Promise<void> {
        this.stats.watches++;
        const abort = new AbortController();
        this.abort = abort;
        const dog = this.liveness.watch(abort);
        const timeout = this.opts.watchTimeoutSeconds ?? 300;
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
                    if (event.type === 'BOOKMARK') dog.bookmark();
                    this.handleEvent(event);
                },
                () => {
                    this.liveness.heard(dog);
                    this.healthy();
                },
                this.opts.maxObjectBytes === undefined ? undefined : { maxLineChars: this.opts.maxObjectBytes, oversized: (prefix, chars) => this.oversizedEvent(prefix, chars) },
            );
        } catch (err) {
            if (this.relistWanted) return;
            const { endedBy } = dog;
            if (endedBy !== undefined && endedBy !== 'inactivity' && this.running) {
                // Ends like a watch the server closed: the next one resumes from resourceVersion.
                if (endedBy === 'stale') this.stats.staleWatchRestarts++;
                else if (endedBy === 'unanswered') this.stats.unansweredRestarts++;
                else this.stats.quietRestarts++;
                return;
            }
            if (endedBy === 'inactivity') {
                this.stats.inactivityAborts++;
                throw new ApiError(0, 'Inactive', dog.inactivity());
            }
            throw err;
        } finally {
            this.liveness.release(dog);
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
        this.store.evict(named);
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
        const object = event.object as KubeObject;
        if (event.type === 'BOOKMARK') {
            const rv = object.metadata?.resourceVersion;
            if (rv) this.resourceVersion = rv;
            return;
        }
        let cached: KubeObject;
        switch (event.type) {
            case 'ADDED':
            case 'MODIFIED':
                cached = this.store.applied(object);
                break;
            case 'DELETED':
                cached = this.store.deleted(object);
                break;
            default:
                this.log('debug', 'unknown watch event', { type: event.type });
                cached = object;
        }
        const rv = cached.metadata?.resourceVersion;
        if (rv) this.resourceVersion = rv;
    }
}
