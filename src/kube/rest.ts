// A small JSON REST client for the Kubernetes API. client-node 1.4.0 supplies the
// credentials (KubeConfig.applyToHTTPSOptions: tokens, client certs, exec plugins);
// this file owns the transport: one keep-alive agent per client (1.4.0 builds a new
// agent per request), plain JSON objects in and out (no model classes, so what we
// compare is exactly what the apiserver stores), timeouts, streamed watches, a client-side
// rate limit (client-go's QPS/burst token bucket), a User-Agent naming the component, and
// close() aborting every request in flight so a shutdown never waits on a hung apiserver.
// Transport only: what a failure means is errors.ts's, the leader guard leader-guard.ts's, a
// watch's lines watch-framing.ts's, who is told what an answer shows server-copies.ts's.
import type { V1ObjectMeta } from '@kubernetes/client-node';
import type { KubeConfig } from './kubeconfig.js';
import { Agent, request, type RequestOptions } from 'node:https';
import { createSecureContext } from 'node:tls';
import { Agent as HttpAgent, request as httpRequest, type IncomingMessage } from 'node:http';
import { Cancellation } from './cancellation.js';
import { ApiError, isNotFound, NotLeaderError, statusError } from './errors.js';
import { checkLeader, type WriteOpts } from './leader-guard.js';
import { TokenBucket } from './ratelimit.js';
import type { ResourceType } from './resources.js';
import { ServerCopies, type ServerCopy } from './server-copies.js';
import { userAgent } from './version.js';
import { readLines, type WatchBounds } from './watch-framing.js';
import { systemClock } from '../time/clock.js';

export interface KubeRestOptions {
    /** Names the component in the User-Agent (see userAgent). */
    component?: string;
    /** Client-side rate limit of requests per second, shared by every request of this client; 0 = none. */
    qps?: number;
    /** Requests allowed at once above qps before the limit applies. */
    burst?: number;
    /** Deadline of a request that has no deadline of its own (watches have none). */
    timeoutMs?: number;
}

/** Default request deadline: below the default renew deadline (10 s), so a hung call never outlives a lease term. */
export const DEFAULT_REQUEST_TIMEOUT_MS = 8_000;

export type Query = Record<string, string | number | boolean | undefined>;

/**
 * The Accept of a write whose caller reads only the stored object's metadata: the apiserver
 * answers with a PartialObjectMetadata (or, where it cannot, the whole object), which is less
 * for it to encode and for us to read and parse. client-go's metadata client asks the same way.
 */
export const METADATA_ONLY = 'application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json';

/** What a METADATA_ONLY answer holds. */
export interface StoredMetadata {
    metadata?: V1ObjectMeta;
}

export interface RequestOpts extends WriteOpts {
    query?: Query;
    body?: unknown;
    contentType?: string;
    /** The Accept header; `application/json` unless set. */
    accept?: string;
    signal?: AbortSignal;
    timeoutMs?: number;
    /** A longer answer is refused as it comes in (ApiError reason TooLarge). */
    maxBodyBytes?: number;
    /** Told the size of the answer's body, once read. */
    bodyBytes?: (bytes: number) => void;
}

/** What each request carries of the user's credentials (the TLS material is the agent's). */
interface Credentials {
    headers: Record<string, string>;
    auth: string | undefined;
}

function withQuery(path: string, query: Query | undefined): string {
    const params = new URLSearchParams();
    for (const [k, v] of Object.entries(query ?? {})) if (v !== undefined) params.set(k, String(v));
    const qs = params.toString();
    return qs ? `${path}?${qs}` : path;
}

/**
 * A 3xx answer. node's http client never follows one, and neither do we: the request's
 * credentials were meant for this server alone, and a remote apiserver (whoever runs it) could
 * otherwise point them at any address.
 */
function redirectError(method: string, path: string, res: IncomingMessage): ApiError {
    const location = res.headers.location ?? 'no Location';
    return new ApiError(res.statusCode ?? 0, 'Redirect', `${method} ${path}: the server answered ${res.statusCode} (to ${location}); redirects are not followed`);
}

const isRedirect = (res: IncomingMessage) => (res.statusCode ?? 0) >= 300 && (res.statusCode ?? 0) <= 399;

/** The transport error, with the reason when we aborted it (deadline, caller, close). */
function describeFailure(err: Error, cancellation: Cancellation): string {
    const { reason } = cancellation;
    return reason instanceof Error && reason !== err ? `${err.message} (${reason.message})` : err.message;
}

/** A response's whole body as text (events, not an async iterator: this runs for every request). */
function readBody(res: IncomingMessage, maxBytes = Infinity): Promise<string> {
    return new Promise((resolve, reject) => {
        const chunks: Buffer[] = [];
        let bytes = 0;
        res.on('data', (chunk: Buffer) => {
            bytes += chunk.length;
            // Refused while it comes in, not once it is all in memory.
            if (bytes > maxBytes) {
                res.destroy();
                reject(new ApiError(0, 'TooLarge', `the answer is more than ${maxBytes} bytes`));
                return;
            }
            chunks.push(chunk);
        });
        res.once('end', () => resolve(chunks.length === 1 ? chunks[0]!.toString('utf8') : Buffer.concat(chunks).toString('utf8')));
        res.once('error', reject);
        // A response torn down before its end (an abort, a reset) emits neither end nor always error.
        res.once('close', () => !res.complete && reject(new Error('response closed before its end')));
    });
}

/** What a client shares with its guarded views: the connections, the credentials, the rate limit, the requests in flight. */
class Transport {
    agent: Agent | HttpAgent | undefined;
    /** The credentials, when the kubeconfig fixes them (see credentials()). */
    fixedCredentials: Credentials | undefined;
    readonly limiter: TokenBucket | undefined;
    /** Every request and watch in flight, for close() to abort. */
    readonly inFlight = new Set<Cancellation>();
    /** Shared with forks too, whose answers are of the same cluster. */
    copies = new ServerCopies();

    constructor(settings: KubeRestOptions) {
        this.limiter = settings.qps ? new TokenBucket(settings.qps, settings.burst ?? Math.max(1, Math.ceil(settings.qps))) : undefined;
    }
}

export class KubeRest {
    readonly server: URL;
    readonly userAgent: string;
    private readonly hostname: string;
    private readonly port: string | number;
    private readonly pathPrefix: string;
    private readonly timeoutMs: number;
    private readonly shared: Transport;
    /** Asked before each write of this client's (guarded); a write that sets its own is asked that instead. */
    private writeGuard: (() => boolean) | undefined;

    constructor(
        readonly kubeConfig: KubeConfig,
        readonly settings: KubeRestOptions = {},
    ) {
        const cluster = kubeConfig.getCurrentCluster();
        if (!cluster) throw new Error('kubeconfig has no current cluster');
        this.server = new URL(cluster.server);
        this.hostname = this.server.hostname.replace(/^\[|\]$/g, '');
        this.port = this.server.port || (this.server.protocol === 'https:' ? 443 : 80);
        this.pathPrefix = this.server.pathname.replace(/\/$/, '');
        this.userAgent = userAgent(settings.component);
        this.timeoutMs = settings.timeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
        this.shared = new Transport(settings);
    }

    /** Another client for the same cluster and user, with its own connections and rate limit, and this one's write guard. */
    fork(options: KubeRestOptions): KubeRest {
        const forked = new KubeRest(this.kubeConfig, { ...this.settings, ...options });
        forked.shared.copies = this.shared.copies;
        forked.writeGuard = this.writeGuard;
        return forked;
    }

    /**
     * This client with every write sent only while `whileLeader` says so: what the Manager hands
     * each controller, so no writer builds a leader guard of its own and one that forgets
     * cannot write outside its term. A view, not a copy: all it reads is this client's (the
     * Transport, a subclass's overrides), only the guard is its own.
     */
    guarded(whileLeader: () => boolean): KubeRest {
        const view = Object.create(this) as KubeRest;
        view.writeGuard = whileLeader;
        return view;
    }

    /**
     * Tells `listener` of each object of the resource an answer to this client (or a fork)
     * shows (ServerCopies.on).
     */
    onServerCopy(resource: Pick<ResourceType, 'group' | 'plural'>, listener: (copy: ServerCopy) => void): () => void {
        return this.shared.copies.on(resource, listener);
    }

    /** Waits `delay` ms for a token of the client-side rate limit; an abort ends the wait. */
    private throttle(delay: number, cancellation: Cancellation): Promise<void> {
        return new Promise<void>((resolve, reject) => {
            const cancel = systemClock.schedule(() => {
                cancellation.onCancelled(undefined);
                resolve();
            }, delay);
            cancellation.onCancelled((reason) => {
                cancel();
                reject(new ApiError(0, 'Transport', `request aborted while rate limited: ${String(reason)}`));
            });
        });
    }

    /**
     * The headers and basic auth of the credentials, asked for each request where they can
     * change (an exec plugin's or auth provider's token, the in-cluster token file) and kept in
     * fixedCredentials where the kubeconfig fixes them (client certificates, a token), which send
     * then reads without asking. The TLS material goes to the agent once, as one secure context,
     * not into each request nor as the agent's ca/cert/key: node's agent keys its socket pools by
     * those options, turning certificates into strings on every request.
     */
    private async credentials(): Promise<Credentials> {
        const opts: RequestOptions = {};
        // client-node builds a new agent each time (1.4.0), which we drop: ours keeps the connections.
        await this.kubeConfig.applyToHTTPSOptions(opts);
        this.shared.agent ??=
            this.server.protocol === 'https:'
                ? new Agent({
                      keepAlive: true,
                      secureContext: createSecureContext({ ca: opts.ca, cert: opts.cert, key: opts.key }),
                      rejectUnauthorized: opts.rejectUnauthorized,
                      servername: opts.servername,
                  })
                : new HttpAgent({ keepAlive: true });
        const credentials: Credentials = { headers: (opts.headers ?? {}) as Record<string, string>, auth: opts.auth ?? undefined };
        const user = this.kubeConfig.getCurrentUser();
        if (user && !user.exec && !user.authProvider) this.shared.fixedCredentials = credentials;
        return credentials;
    }

    /** Request options with the credentials and our shared agent. */
    private options(method: string, path: string, headers: Record<string, string>, { headers: credentialHeaders, auth }: Credentials): RequestOptions {
        return {
            method,
            hostname: this.hostname,
            port: this.port,
            path: this.pathPrefix + path,
            headers: { Accept: 'application/json', 'User-Agent': this.userAgent, ...credentialHeaders, ...headers },
            auth,
            agent: this.shared.agent,
        };
    }

    /**
     * One Cancellation for a request: by the caller's signal, by the deadline, or by close().
     * `release` must be called once the response is consumed.
     */
    private track(o: RequestOpts): { cancellation: Cancellation; release: () => void } {
        const cancellation = new Cancellation();
        const { signal, timeoutMs } = o;
        const onCallerAbort = signal && (() => cancellation.cancel(signal.reason));
        const cancelDeadline = timeoutMs ? systemClock.schedule(() => cancellation.cancel(new Error(`no response within ${timeoutMs} ms`)), timeoutMs) : undefined;
        if (signal?.aborted) onCallerAbort!();
        else if (onCallerAbort) signal!.addEventListener('abort', onCallerAbort, { once: true });
        this.shared.inFlight.add(cancellation);
        return {
            cancellation,
            release: () => {
                cancelDeadline?.();
                if (onCallerAbort) signal!.removeEventListener('abort', onCallerAbort);
                this.shared.inFlight.delete(cancellation);
            },
        };
    }

    private async send(method: string, path: string, o: RequestOpts, cancellation: Cancellation): Promise<IncomingMessage> {
        const payload = o.body === undefined ? undefined : JSON.stringify(o.body);
        const headers: Record<string, string> = o.accept ? { Accept: o.accept } : {};
        if (payload !== undefined) {
            headers['Content-Type'] = o.contentType ?? 'application/json';
            // Node frames a DELETE body with neither Content-Length nor chunking; the
            // apiserver would then read it as the start of the next request on the connection.
            headers['Content-Length'] = String(Buffer.byteLength(payload));
        }
        // No await where nothing is waited for (no rate limit, fixed credentials): each await
        // is a turn behind the other workers' microtasks before the request goes out.
        const delay = this.shared.limiter?.when('', systemClock.now()) ?? 0;
        if (delay > 0) await this.throttle(delay, cancellation);
        const credentials = this.shared.fixedCredentials ?? (await this.credentials());
        const opts = this.options(method, withQuery(path, o.query), headers, credentials);
        checkLeader(method === 'GET' || o.whileLeader ? o : { whileLeader: this.writeGuard });
        const send = this.server.protocol === 'https:' ? request : httpRequest;
        return new Promise((resolve, reject) => {
            const req = send(opts, resolve);
            req.on('error', (err) => reject(new ApiError(0, 'Transport', `${method} ${path}: ${describeFailure(err, cancellation)}`)));
            // Before the answer this fails the request; after it, it tears down the body being read.
            cancellation.onCancelled(() => req.destroy(cancellation.error));
            req.end(payload);
        });
    }

    /** One request with a deadline (the client's timeoutMs unless `o` sets one), body included. */
    async request<T>(method: string, path: string, o: RequestOpts = {}): Promise<T> {
        const { cancellation, release } = this.track({ timeoutMs: this.timeoutMs, ...o });
        let text: string;
        let res: IncomingMessage;
        try {
            res = await this.send(method, path, o, cancellation);
            text = await readBody(res, o.maxBodyBytes);
            o.bodyBytes?.(text.length);
        } catch (err) {
            if (err instanceof ApiError || err instanceof NotLeaderError) throw err;
            throw new ApiError(0, 'Transport', `${method} ${path}: ${describeFailure(err as Error, cancellation)}`);
        } finally {
            release();
        }
        const code = res.statusCode ?? 0;
        if (isRedirect(res)) throw redirectError(method, path, res);
        if (code < 200 || code > 299) {
            if (code === 409) this.shared.copies.show(method, path, true, o.body);
            const retryAfter = res.headers['retry-after'];
            throw statusError(code, text, Array.isArray(retryAfter) ? retryAfter[0] : retryAfter);
        }
        const answer = (text ? JSON.parse(text) : {}) as T;
        this.shared.copies.show(method, path, false, answer);
        return answer;
    }

    get<T>(path: string, query?: Query) {
        return this.request<T>('GET', path, { query });
    }
    create<T>(path: string, body: T, query?: Query, write?: WriteOpts) {
        return this.request<T>('POST', path, { body, query, ...write });
    }
    replace<T>(path: string, body: T, query?: Query, write?: WriteOpts) {
        return this.request<T>('PUT', path, { body, query, ...write });
    }
    /** A create whose caller reads only the metadata the apiserver stored (METADATA_ONLY). */
    createForMetadata(path: string, body: unknown, query?: Query, write?: WriteOpts) {
        return this.request<StoredMetadata>('POST', path, { body, query, accept: METADATA_ONLY, ...write });
    }
    /** A replace whose caller reads only the metadata the apiserver stored (METADATA_ONLY). */
    replaceForMetadata(path: string, body: unknown, query?: Query, write?: WriteOpts) {
        return this.request<StoredMetadata>('PUT', path, { body, query, accept: METADATA_ONLY, ...write });
    }
    mergePatch<T>(path: string, body: unknown, query?: Query, write?: WriteOpts) {
        return this.request<T>('PATCH', path, { body, query, contentType: 'application/merge-patch+json', ...write });
    }
    /** A merge patch whose caller reads only the metadata the apiserver stored (METADATA_ONLY). */
    mergePatchForMetadata(path: string, body: unknown, query?: Query, write?: WriteOpts) {
        return this.request<StoredMetadata>('PATCH', path, { body, query, contentType: 'application/merge-patch+json', accept: METADATA_ONLY, ...write });
    }
    delete(path: string, query?: Query, body?: unknown, write?: WriteOpts) {
        return this.request<unknown>('DELETE', path, { query, body, ...write });
    }

    /**
     * Deletes the object at `path` only if it is still the one with `uid` (a same-named successor
     * is kept): true when deleted, false when it was already gone, which is what was wanted.
     */
    async deleteExactly(path: string, uid: string | undefined, write?: WriteOpts): Promise<boolean> {
        try {
            await this.delete(path, undefined, { kind: 'DeleteOptions', apiVersion: 'v1', preconditions: uid ? { uid } : undefined }, write);
            return true;
        } catch (err) {
            if (isNotFound(err)) return false;
            throw err;
        }
    }

    /**
     * Opens a watch and hands every JSON line to onEvent. Resolves when the server ends
     * the stream; rejects on a non-2xx answer or a transport error. `onData` fires when the
     * answer begins (its headers: the server has the watch) and on every chunk, so the caller
     * can run an inactivity timer and tell a watch never answered from a quiet one.
     */
    async watch(
        path: string,
        query: Query,
        signal: AbortSignal,
        onEvent: (event: { type: string; object: unknown }) => void,
        onData: () => void,
        bounds?: WatchBounds,
    ): Promise<void> {
        const { cancellation, release } = this.track({ signal });
        try {
            const res = await this.send('GET', path, { query: { ...query, watch: true } }, cancellation);
            if (isRedirect(res)) {
                res.resume();
                throw redirectError('GET', path, res);
            }
            if ((res.statusCode ?? 0) !== 200) throw statusError(res.statusCode ?? 0, await readBody(res));
            onData();
            await readLines(res, (line) => onEvent(JSON.parse(line) as { type: string; object: unknown }), onData, bounds).catch((err: Error) => {
                throw err instanceof ApiError ? err : new ApiError(0, 'Transport', `watch ${path}: ${err.message}`);
            });
        } finally {
            release();
        }
    }

    /** Aborts every request and watch in flight and drops the connections; the client stays usable. */
    close(): void {
        for (const cancellation of this.shared.inFlight) cancellation.cancel(new Error('client closed'));
        this.shared.inFlight.clear();
        this.shared.agent?.destroy();
        this.shared.agent = undefined;
        this.shared.fixedCredentials = undefined;
    }
}
