// The HTTPS endpoint the apiserver calls for conversion (POST /convert). It runs on every
// replica, leader or not: the apiserver may call any of them. A renewed certificate is
// swapped in without a restart (setSecureContext); connections already open keep theirs.
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
/** The apiserver's own limit for a request body is 3 MiB; a list of converted objects stays below this. */
const MAX_BODY_BYTES = 16 << 20;

export interface WebhookServerOptions {
    /** HOST:PORT; port 0 picks a free one (see `address` once started). */
    addr: string;
    registry: Registry;
    logger: Logger;
    convert: Parameters<typeof answerConversionReview>[1];
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
    private readonly seconds: Histogram;
    address = '';

    constructor(private readonly opts: WebhookServerOptions) {
        this.reviews = new Counter({
            name: `${METRICS_PREFIX}conversion_reviews_total`,
            help: 'ConversionReviews answered, by result (success, failure: an object could not be converted, bad_request)',
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
        this.server?.setSecureContext({ cert: pair.cert, key: pair.key });
    }

    /** Listening, with a certificate. */
    serving(): boolean {
        return this.server?.listening === true && this.certificate !== undefined;
    }

    /** Listens at once (a port in use fails here); handshakes succeed once a certificate is set. */
    async start(): Promise<string> {
        const tls = this.certificate ? { cert: this.certificate.cert, key: this.certificate.key } : {};
        const server = createServer(tls, (req, res) => this.handle(req, res));
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
        if (path !== CONVERT_PATH) return reply(res, 404, { message: `not found; conversion is served at ${CONVERT_PATH}` });
        if (req.method !== 'POST') return reply(res, 405, { message: 'POST a ConversionReview' });
        const stopTimer = this.seconds.startTimer();
        const chunks: Buffer[] = [];
        let size = 0;
        req.on('data', (chunk: Buffer) => {
            size += chunk.length;
            if (size > MAX_BODY_BYTES) req.destroy(new Error('body too large'));
            else chunks.push(chunk);
        });
        req.on('error', (err) => this.opts.logger.warn({ err }, 'conversion request failed'));
        req.on('end', () => {
            let body: unknown;
            try {
                body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
            } catch {
                return this.badRequest(res, 'the body is not JSON');
            }
            const outcome = answerConversionReview(body, this.opts.convert);
            if (!outcome.ok) return this.badRequest(res, outcome.message);
            const result = outcome.review.response.result;
            this.reviews.inc({ result: result.status === 'Success' ? 'success' : 'failure' });
            if (result.status === 'Failure') this.opts.logger.warn({ message: result.message }, 'conversion refused');
            reply(res, 200, outcome.review);
            stopTimer();
        });
    }

    private badRequest(res: ServerResponse, message: string): void {
        this.reviews.inc({ result: 'bad_request' });
        this.opts.logger.warn({ message }, 'bad ConversionReview');
        reply(res, 400, { message });
    }
}

function reply(res: ServerResponse, code: number, body: unknown): void {
    const text = JSON.stringify(body);
    res.writeHead(code, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) });
    res.end(text);
}
