// The admin endpoint every mesh-endpoints process serves: /metrics (Prometheus text),
// /healthz (the process is alive) and /readyz (every informer has synced; else why not).
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';

export interface AdminServerOptions {
    /** HOST:PORT; port 0 picks a free one (see `address` once started). */
    addr: string;
    registry: Registry;
    /** Undefined when ready; otherwise why not, as /readyz's body. */
    notReady: () => string | undefined;
}

export function parseHostPort(addr: string): { host: string; port: number } {
    const match = /^\[?([^\]]*?)\]?:(\d+)$/.exec(addr);
    if (!match) throw new Error(`"${addr}" is not HOST:PORT`);
    const port = Number(match[2]);
    if (port > 65535) throw new Error(`"${addr}": port out of range`);
    return { host: match[1] || '0.0.0.0', port };
}

export class AdminServer {
    private server: Server | undefined;
    address = '';

    constructor(private readonly opts: AdminServerOptions) {}

    async start(): Promise<string> {
        const { host, port } = parseHostPort(this.opts.addr);
        this.server = createServer((req, res) => {
            const path = (req.url ?? '/').split('?')[0];
            if (path === '/metrics') {
                this.opts.registry.metrics().then(
                    (text) => {
                        res.writeHead(200, { 'Content-Type': this.opts.registry.contentType });
                        res.end(text);
                    },
                    (err: Error) => {
                        res.writeHead(500);
                        res.end(err.message);
                    },
                );
            } else if (path === '/healthz' || path === '/livez') {
                res.writeHead(200, { 'Content-Type': 'text/plain' });
                res.end('ok');
            } else if (path === '/readyz') {
                const notReady = this.opts.notReady();
                res.writeHead(notReady === undefined ? 200 : 503, { 'Content-Type': 'text/plain' });
                res.end(notReady ?? 'ok');
            } else {
                res.writeHead(404);
                res.end();
            }
        });
        await new Promise<void>((resolve, reject) => {
            this.server!.once('error', reject);
            this.server!.listen(port, host, resolve);
        });
        const bound = this.server.address() as AddressInfo;
        this.address = bound.family === 'IPv6' ? `[${bound.address}]:${bound.port}` : `${bound.address}:${bound.port}`;
        return this.address;
    }

    async stop(): Promise<void> {
        this.server?.closeAllConnections();
        await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
    }
}
