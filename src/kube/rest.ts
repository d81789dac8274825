// A small JSON REST client for the Kubernetes API. client-node 1.4.0 supplies the
// credentials (KubeConfig.applyToHTTPSOptions: tokens, client certs, exec plugins);
// this file owns the transport: one keep-alive agent per client (1.4.0 builds a new
// agent per request), plain JSON objects in and out (no model classes, so what we
// compare is exactly what the apiserver stores), timeouts, and streamed watches.
import type { KubeConfig } from '@kubernetes/client-node';
import { Agent, request, type RequestOptions } from 'node:https';
import { Agent as HttpAgent, request as httpRequest, type IncomingMessage } from 'node:http';

/** A Status the apiserver returned, or a transport failure (code 0). */
export class ApiError extends Error {
    constructor(
        readonly code: number,
        readonly reason: string,
        message: string,
        readonly retryAfterSeconds?: number,
    ) {
        super(message);
        this.name = 'ApiError';
    }
}

export const isNotFound = (err: unknown) => err instanceof ApiError && err.code === 404;
export const isConflict = (err: unknown) => err instanceof ApiError && err.code === 409;
export const isAlreadyExists = (err: unknown) => err instanceof ApiError && err.reason === 'AlreadyExists';
export const isGone = (err: unknown) => err instanceof ApiError && (err.code === 410 || err.reason === 'Expired');

export type Query = Record<string, string | number | boolean | undefined>;

export interface RequestOpts {
    query?: Query;
    body?: unknown;
    contentType?: string;
    signal?: AbortSignal;
    timeoutMs?: number;
}

function withQuery(path: string, query: Query | undefined): string {
    const params = new URLSearchParams();
    for (const [k, v] of Object.entries(query ?? {})) if (v !== undefined) params.set(k, String(v));
    const qs = params.toString();
    return qs ? `${path}?${qs}` : path;
}

function statusError(code: number, text: string, retryAfter?: string): ApiError {
    try {
        const status = JSON.parse(text) as { reason?: string; message?: string };
        const retry = retryAfter ? Number(retryAfter) : undefined;
        return new ApiError(code, status.reason ?? '', status.message ?? text, retry);
    } catch {
        return new ApiError(code, '', text.slice(0, 500) || `HTTP ${code}`);
    }
}

export class KubeRest {
    readonly server: URL;
    private agent: Agent | HttpAgent | undefined;

    constructor(readonly kubeConfig: KubeConfig) {
        const cluster = kubeConfig.getCurrentCluster();
        if (!cluster) throw new Error('kubeconfig has no current cluster');
        this.server = new URL(cluster.server);
    }

    /** Request options with fresh credentials and our shared agent. */
    private async options(method: string, path: string, headers: Record<string, string>): Promise<RequestOptions> {
        const opts: RequestOptions = {
            method,
            hostname: this.server.hostname.replace(/^\[|\]$/g, ''),
            port: this.server.port || (this.server.protocol === 'https:' ? 443 : 80),
            path: (this.server.pathname.replace(/\/$/, '') || '') + path,
            headers: { Accept: 'application/json', ...headers },
        };
        await this.kubeConfig.applyToHTTPSOptions(opts);
        if (!this.agent) {
            this.agent =
                this.server.protocol === 'https:'
                    ? new Agent({
                          keepAlive: true,
                          ca: opts.ca,
                          cert: opts.cert,
                          key: opts.key,
                          rejectUnauthorized: opts.rejectUnauthorized,
                          servername: opts.servername,
                      })
                    : new HttpAgent({ keepAlive: true });
        }
        opts.agent = this.agent;
        return opts;
    }

    private async send(method: string, path: string, o: RequestOpts): Promise<IncomingMessage> {
        const payload = o.body === undefined ? undefined : JSON.stringify(o.body);
        const headers: Record<string, string> = {};
        if (payload !== undefined) {
            headers['Content-Type'] = o.contentType ?? 'application/json';
            // Node frames a DELETE body with neither Content-Length nor chunking; the
            // apiserver would then read it as the start of the next request on the connection.
            headers['Content-Length'] = String(Buffer.byteLength(payload));
        }
        const opts = await this.options(method, withQuery(path, o.query), headers);
        const send = this.server.protocol === 'https:' ? request : httpRequest;
        return new Promise((resolve, reject) => {
            const req = send({ ...opts, signal: o.signal }, resolve);
            req.on('error', (err) => reject(new ApiError(0, 'Transport', `${method} ${path}: ${err.message}`)));
            if (o.timeoutMs) {
                req.setTimeout(o.timeoutMs, () => req.destroy(new Error(`no response within ${o.timeoutMs} ms`)));
            }
            req.end(payload);
        });
    }

    async request<T>(method: string, path: string, o: RequestOpts = {}): Promise<T> {
        const res = await this.send(method, path, { timeoutMs: 30_000, ...o });
        const chunks: Buffer[] = [];
        for await (const chunk of res) chunks.push(chunk as Buffer);
        const text = Buffer.concat(chunks).toString('utf8');
        const code = res.statusCode ?? 0;
        if (code < 200 || code > 299) {
            const retryAfter = res.headers['retry-after'];
            throw statusError(code, text, Array.isArray(retryAfter) ? retryAfter[0] : retryAfter);
        }
        return (text ? JSON.parse(text) : {}) as T;
    }

    get<T>(path: string, query?: Query) {
        return this.request<T>('GET', path, { query });
    }
    create<T>(path: string, body: T, query?: Query) {
        return this.request<T>('POST', path, { body, query });
    }
    replace<T>(path: string, body: T, query?: Query) {
        return this.request<T>('PUT', path, { body, query });
    }
    mergePatch<T>(path: string, body: unknown, query?: Query) {
        return this.request<T>('PATCH', path, { body, query, contentType: 'application/merge-patch+json' });
    }
    delete(path: string, query?: Query, body?: unknown) {
        return this.request<unknown>('DELETE', path, { query, body });
    }

    /**
     * Opens a watch and hands every JSON line to onEvent. Resolves when the server ends
     * the stream; rejects on a non-2xx answer or a transport error. `onData` fires on
     * every chunk so the caller can run an inactivity timer.
     */
    async watch(
        path: string,
        query: Query,
        signal: AbortSignal,
        onEvent: (event: { type: string; object: unknown }) => void,
        onData: () => void,
    ): Promise<void> {
        const res = await this.send('GET', path, { query: { ...query, watch: true }, signal });
        if ((res.statusCode ?? 0) !== 200) {
            const chunks: Buffer[] = [];
            for await (const chunk of res) chunks.push(chunk as Buffer);
            throw statusError(res.statusCode ?? 0, Buffer.concat(chunks).toString('utf8'));
        }
        let pending = '';
        try {
            for await (const chunk of res) {
                onData();
                pending += (chunk as Buffer).toString('utf8');
                let newline: number;
                while ((newline = pending.indexOf('\n')) >= 0) {
                    const line = pending.slice(0, newline).trim();
                    pending = pending.slice(newline + 1);
                    if (line) onEvent(JSON.parse(line) as { type: string; object: unknown });
                }
            }
        } catch (err) {
            if (err instanceof ApiError) throw err;
            throw new ApiError(0, 'Transport', `watch ${path}: ${(err as Error).message}`);
        }
    }

    close(): void {
        this.agent?.destroy();
        this.agent = undefined;
    }
}
