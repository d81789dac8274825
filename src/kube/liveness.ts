// Telling a dead watch from a quiet one. A watch whose connection died without FIN or RST (a
// proxy that froze, a flow table that forgot it, a stopped apiserver) looks exactly like a watch
// of a resource nothing changes in; client-go notices through HTTP/2 pings on the connection all
// its requests share, and our watches ride HTTP/1.1 connections of their own. So each watch has
// watchdogs instead: a deadline for its answer to begin, inactivity limits set by the apiserver's
// bookmarks, an answer to our client showing the server ahead of the cache (serverCopy), and
// requests to the same apiserver going unanswered (requestsUnansweredSince). Each ends the watch
// for a fresh one from its resourceVersion, which loses nothing. And a resource that is not
// served at all (its CRD missing) is said so once and polled for. Apart from the reflector so
// that its list/watch loop reads as one, and every timer of a watch's life is in one place.
import { systemClock } from '../time/clock.js';
import type { ResourceType } from './resources.js';
import type { ServerCopy } from './server-copies.js';

export type LogFn = (level: 'info' | 'warn' | 'debug' | 'error', msg: string, fields?: Record<string, unknown>) => void;

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

export interface LivenessOptions {
    /** Abort a watch whose answer has not begun within this long (DEFAULT_OPEN_TIMEOUT_MS; never above inactivityMs). */
    openTimeoutMs?: number;
    /** Restart an answered watch that received nothing for this long before its first bookmark (DEFAULT_INACTIVITY_MS). */
    inactivityMs?: number;
    /** How long a watch may stay silent after an answer showed the server ahead of the cache before it is restarted (default 3 s). */
    staleWatchMs?: number;
}

/** Why a live-looking watch was ended for a fresh one: serverCopy, requestsUnansweredSince, or silence before any bookmark. */
export type WatchRestart = 'stale' | 'unanswered' | 'quiet';

/** The timers of one watch, from its request to its end. */
export class WatchDog {
    answered = false;
    private bookmarked = false;
    /** Why we ended the watch ourselves, if we did: a restart, or 'inactivity' (a failure). */
    endedBy: WatchRestart | 'inactivity' | undefined;
    /** The silence allowed now: to the answer, then to the first bookmark, then between bookmarks. */
    limitMs: number;
    private cancelTimer: (() => void) | undefined;

    constructor(
        private readonly abort: AbortController,
        private readonly inactivityMs: number,
        openTimeoutMs: number,
    ) {
        this.limitMs = Math.min(inactivityMs, openTimeoutMs);
        this.touch();
    }

    end(why: WatchRestart | 'inactivity'): void {
        this.endedBy = why;
        this.abort.abort();
    }

    /** The answer began, or a chunk of it came. */
    heard(): void {
        if (!this.answered) {
            this.answered = true;
            this.limitMs = this.inactivityMs;
        }
        this.touch();
    }

    bookmark(): void {
        if (this.bookmarked) return;
        this.bookmarked = true;
        this.limitMs = Math.min(this.inactivityMs, DEFAULT_BOOKMARKED_INACTIVITY_MS);
        this.touch(); // armed with the bookmarked limit by this very chunk
    }

    /** Why the watch failed when it ended for inactivity. */
    inactivity(): string {
        return this.answered ? `watch received nothing for ${this.limitMs} ms` : `watch got no answer within ${this.limitMs} ms`;
    }

    close(): void {
        this.cancelTimer?.();
    }

    private touch(): void {
        this.cancelTimer?.();
        this.cancelTimer = systemClock.schedule(() => this.end(this.answered && !this.bookmarked ? 'quiet' : 'inactivity'), this.limitMs);
    }
}

/** The watchdogs of one informer's watches, and what tells them from outside the watch. */
export class WatchLiveness {
    private current: WatchDog | undefined;
    /** performance.now() when the watch in flight last received bytes; undefined until it does. */
    private heardAt: number | undefined;
    private cancelStaleCheck: (() => void) | undefined;

    constructor(
        private readonly opts: LivenessOptions,
        /** The resourceVersion the cache holds of an object. */
        private readonly cachedVersion: (namespace: string | undefined, name: string) => string | undefined,
        private readonly log: LogFn,
    ) {}

    /** A watch starts: its watchdog, until release. */
    watch(abort: AbortController): WatchDog {
        this.current = new WatchDog(abort, this.opts.inactivityMs ?? DEFAULT_INACTIVITY_MS, this.opts.openTimeoutMs ?? DEFAULT_OPEN_TIMEOUT_MS);
        this.heardAt = undefined;
        return this.current;
    }

    heard(dog: WatchDog): void {
        this.heardAt = performance.now();
        dog.heard();
    }

    release(dog: WatchDog): void {
        dog.close();
        if (this.current === dog) this.current = undefined;
    }

    /**
     * An answer to a request of our client showed the server's copy of a cached object at a
     * version the cache lacks, or refused (409) a write planned from the cached version. A live
     * watch brings the change within moments; if the cache still holds that version after
     * staleWatchMs, the watch is presumed dead — a connection dropped without FIN or RST carries
     * nothing until the inactivity timer, minutes later, while every write planned from the
     * cache conflicts — and is restarted from its resourceVersion, which loses nothing.
     */
    serverCopy({ namespace, name, resourceVersion, conflict }: ServerCopy): void {
        if (this.cancelStaleCheck) return;
        const cached = this.cachedVersion(namespace, name);
        const behind = conflict ? resourceVersion === undefined || resourceVersion === cached : resourceVersion !== undefined && resourceVersion !== cached;
        if (cached === undefined || !behind) return;
        this.cancelStaleCheck = systemClock.schedule(() => {
            this.cancelStaleCheck = undefined;
            if (this.cachedVersion(namespace, name) !== cached || !this.current) return;
            this.log('info', 'watch silent while an answer showed the server ahead: restarting it', { namespace, name });
            this.current.end('stale');
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
        if (!this.current || (this.heardAt !== undefined && this.heardAt >= since)) return;
        this.log('info', 'watch silent while requests to the apiserver went unanswered: restarting it');
        this.current.end('unanswered');
    }

    stop(): void {
        this.cancelStaleCheck?.();
        this.cancelStaleCheck = undefined;
    }
}

/**
 * The apiserver does not serve a custom resource: its CRD is missing. Said once, clearly, then
 * polled for every few seconds, so serving starts soon after someone installs it.
 */
export class CrdPresence {
    /** Why the resource cannot be read now, for /readyz and the logs. */
    missing: string | undefined;

    constructor(
        private readonly resource: ResourceType,
        private readonly log: LogFn,
    ) {}

    /** A list or watch was answered 404: the wait before asking again, given the backoff's. */
    notServed(backoffMs: number): number {
        const { crd } = this.resource;
        if (!this.missing && crd) {
            this.missing = `CustomResourceDefinition ${crd.name} is not installed`;
            this.log('error', `${this.missing}: install it with \`kubectl apply -f ${crd.file}\` (from the mesh-endpoints repository or chart); waiting for it`, {
                crd: crd.name,
            });
        }
        return Math.min(backoffMs, 5_000);
    }

    /** A list succeeded. */
    served(): void {
        if (!this.missing) return;
        this.log('info', `${this.resource.crd?.name ?? this.resource.plural} is served now`);
        this.missing = undefined;
    }
}
