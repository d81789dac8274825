// The HTTPS endpoint the apiserver calls for conversion (POST /convert). It runs on every
// replica, leader or not: the apiserver may call any of them. A renewed certificate is
// swapped in without a restart (setSecureContext); connections already open keep theirs.
//
// Anything in the cluster that can reach the Service can call it too, so it answers only what
// it must and bounds what it reads: POST /convert only (404 elsewhere, 405 for another
// method), TLS 1.2 at least, a body of at most MAX_BODY_BYTES (413) and all bodies being read
// at once within MAX_BUFFERED_BYTES (429), the headers within 10 s and the whole request
// within 30 s (the apiserver's own webhook timeout is at most 30 s). A body that is not a
// ConversionReview is a 400 with a message, as controller-runtime answers; one object that
// cannot be converted is a ConversionReview with result Failure. Nothing of a request is
// logged but its size and the reason it was refused.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer, type Server } from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import { Counter, Histogram, type Registry } from 'prom-client';
import { parseHostPort } from '../kube/admin.js';
import type { Logger } from '../kube/log.js';
import { METRICS_PREFIX } from '../kube/manager.js';
import type { KeyPair } from './certs.js';
import { answerConversionReview } from './review.js';

export const CONVERT_PATH = '/convert';
/**
 * The apiserver's own limit for a request body is 3 MiB, but it converts a list in one review:
 * 16 MiB holds about 15 000 workloads of 1 KiB read at once at the other version.
 */
export const MAX_BODY_BYTES = 16 << 20;
/** Bodies buffered at once, all requests together: a few callers cannot make it hold more. */
const MAX_BUFFERED_BYTES = 64 << 20;
const TLS_MIN_VERSION = 'TLSv1.2';
type Refusal = [code: number, result: string, message: string, headers?: Record<string, string>];
const TOO_LARGE: Refusal = [413, 'too_large', `the body may hold at most ${MAX_BODY_BYTES} bytes`];
const BUSY: Refusal = [429, 'busy', 'too many conversion requests at once; retry', { 'Retry-After': '1' }];

export interface WebhookServerOptions {
    /** HOST:PORT; port 0 picks a free one (see `address` once started). */
    addr: string;
    registry: Registry;
    logger: Logger;
    convert: Parameters<typeof answerConversionReview>[1];
    /** Bytes of bodies read at once, all requests together (MAX_BUFFERED_BYTES; tests: less). */
    maxBufferedBytes?: number;
}

export class WebhookServer {
    private server: Server | undefined;
    private certificate: KeyPair | undefined;
    /**
     * Every TCP connection, TLS handshake done or not: closeAllConnections() knows only those
     * past the handshake, and one still in it (the apiserver's, a probe's) held close() until
     * the server's headers timeout ended it, 60-90 s later.
     */
    private readonly sockets = new Set<Socket>();
    private readonly reviews: Counter<'result'>;
    private buffered = 0;
    private readonly seconds: Histogram;
    address = '';

    constructor(private readonly opts: WebhookServerOptions) {
        this.reviews = new Counter({
            name: `${METRICS_PREFIX}conversion_reviews_total`,
            help: 'ConversionReviews answered, by result (success, failure: an object could not be converted, bad_request, too_large, busy, and not_found, method_not_allowed for another path or method)',
            labelNames: ['result'],
            registers: [opts.registry],
        });
        this.seconds = new Histogram({
            name: `${METRICS_PREFIX}conversion_review_duration_seconds`,
            help: 'Time to answer one ConversionReview',
            buckets: [0.001, 0.005, 0.02, 0.1, 0.5, 2],
            registers: [opts.registry],
        });
    }

    /** Serve with this certificate from now on (new connections). */
    setCertificate(pair: KeyPair): void {
        this.certificate = pair;
        this.server?.setSecureContext({ cert: pair.cert, key: pair.key, minVersion: TLS_MIN_VERSION });
    }

    /** Listening, with a certificate. */
    serving(): boolean {
        return this.server?.listening === true && this.certificate !== undefined;
    }

    /** Listens at once (a port in use fails here); handshakes succeed once a certificate is set. */
    async start(): Promise<string> {
        const tls = this.certificate ? { cert: this.certificate.cert, key: this.certificate.key } : {};
        const server = createServer({ ...tls, minVersion: TLS_MIN_VERSION, headersTimeout: 10_000, requestTimeout: 30_000 }, (req, res) => this.handle(req, res));
        server.on('connection', (socket: Socket) => {
            this.sockets.add(socket);
            socket.once('close', () => this.sockets.delete(socket));
        });
        this.server = server;
        const { host, port } = parseHostPort(this.opts.addr);
        await new Promise<void>((resolve, reject) => {
            server.once('error', reject);
            server.listen(port, host, resolve);
        });
        const bound = server.address() as AddressInfo;
        this.address = bound.family === 'IPv6' ? `[${bound.address}]:${bound.port}` : `${bound.address}:${bound.port}`;
        this.opts.logger.info({ address: this.address }, 'conversion webhook listening');
        return this.address;
    }

    async stop(): Promise<void> {
        const server = this.server;
        if (!server) return;
        const closed = new Promise<void>((resolve) => server.close(() => resolve()));
        for (const socket of this.sockets) socket.destroy();
        await closed;
    }

    private handle(req: IncomingMessage, res: ServerResponse): void {
        const path = (req.url ?? '/').split('?')[0];
        if (path !== CONVERT_PATH) return this.refuse(req, res, 404, 'not_found', `not found; conversion is served at ${CONVERT_PATH}`);
        if (req.method !== 'POST') return this.refuse(req, res, 405, 'method_not_allowed', `${req.method} is not allowed; POST a ConversionReview`, { Allow: 'POST' });
        const declared = Number(req.headers['content-length'] ?? 0);
        if (declared > MAX_BODY_BYTES) return this.refuse(req, res, ...TOO_LARGE);
        const budget = this.opts.maxBufferedBytes ?? MAX_BUFFERED_BYTES;
        // A declared length is held from the start: a caller cannot promise much and send slowly.
        if (this.buffered + declared > budget) return this.refuse(req, res, ...BUSY);
        const stopTimer = this.seconds.startTimer();
        const chunks: Buffer[] = [];
        let size = 0;
        let counted = declared;
        this.buffered += counted;
        let refused = false;
        const release = () => {
            this.buffered -= counted;
            counted = 0;
        };
        res.once('close', release);
        req.on('data', (chunk: Buffer) => {
            if (refused) return;
            size += chunk.length;
            if (size > counted) {
                this.buffered += size - counted;
                counted = size;
            }
            if (size > MAX_BODY_BYTES || this.buffered > budget) {
                refused = true;
                chunks.length = 0;
                release();
                return this.refuse(req, res, ...(size > MAX_BODY_BYTES ? TOO_LARGE : BUSY));
            }
            chunks.push(chunk);
        });
        req.on('error', (err) => this.opts.logger.warn({ err: err.message }, 'conversion request failed'));
        req.on('end', () => {
            if (refused) return;
            const bytes = size;
            let body: unknown;
            try {
                body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
            } catch {
                return this.badRequest(res, 'the body is not JSON', bytes);
            } finally {
                chunks.length = 0;
                release();
            }
            let outcome: ReturnType<typeof answerConversionReview>;
            try {
                outcome = answerConversionReview(body, this.opts.convert);
            } catch (err) {
                // A JSON document nested too deep for structuredClone, say: refused, not a crash.
                return this.badRequest(res, `the ConversionReview could not be read: ${(err as Error).message}`, bytes);
            }
            if (!outcome.ok) return this.badRequest(res, outcome.message, bytes);
            const result = outcome.review.response.result;
            this.reviews.inc({ result: result.status === 'Success' ? 'success' : 'failure' });
            if (result.status === 'Failure') this.opts.logger.warn({ message: result.message }, 'conversion refused');
            reply(res, 200, outcome.review);
            stopTimer();
        });
    }

    /** Answers at once and closes the connection: the rest of the body is not read. */
    private refuse(req: IncomingMessage, res: ServerResponse, code: number, result: string, message: string, headers: Record<string, string> = {}): void {
        this.reviews.inc({ result });
        this.opts.logger.warn({ status: code, method: req.method, path: (req.url ?? '').slice(0, 100), contentLength: req.headers['content-length'] }, `conversion request refused: ${message}`);
        res.shouldKeepAlive = false;
        reply(res, code, { message }, { ...headers, Connection: 'close' });
        // Whatever the caller still sends is dropped once the answer is out.
        res.once('finish', () => req.socket.destroySoon?.() ?? req.socket.end());
    }

    private badRequest(res: ServerResponse, message: string, bytes: number): void {
        this.reviews.inc({ result: 'bad_request' });
        this.opts.logger.warn({ message, bytes }, 'bad ConversionReview');
        reply(res, 400, { message });
    }
}

function reply(res: ServerResponse, code: number, body: unknown, headers: Record<string, string> = {}): void {
    let text: string;
    try {
        text = JSON.stringify(body);
    } catch {
        // Objects nested too deep to write back: an error for this request, not for the process.
        [code, text] = [500, JSON.stringify({ message: 'the answer could not be written' })];
    }
    res.writeHead(code, { ...headers, 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) });
    res.end(text);
}
