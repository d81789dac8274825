// A loopback TCP proxy that a test controls, to put real network faults between a
// client and the real apiserver: cut every connection, refuse new ones, freeze them
// (sockets stay open, bytes stop flowing: the silent dead connection), or forget the idle
// ones for good while new ones work (a load balancer or NAT whose flow table dropped them).
import { createServer, connect, type Server, type Socket } from 'node:net';

interface Pair {
    client: Socket;
    upstream: Socket;
    /** performance.now() of the last bytes either way. */
    lastActive: number;
    /** Carries nothing any more, and never closes. */
    forgotten: boolean;
}

export class TcpProxy {
    private server: Server | undefined;
    private readonly pairs = new Set<Pair>();
    private refusing = false;
    private frozen = false;
    port = 0;
    connections = 0;

    constructor(
        private readonly targetHost: string,
        private readonly targetPort: number,
    ) {}

    async start(): Promise<number> {
        this.server = createServer((client) => this.accept(client));
        await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
        const address = this.server.address();
        this.port = typeof address === 'object' && address ? address.port : 0;
        return this.port;
    }

    private accept(client: Socket): void {
        if (this.refusing) {
            client.destroy();
            return;
        }
        this.connections++;
        const upstream = connect(this.targetPort, this.targetHost);
        const pair: Pair = { client, upstream, lastActive: performance.now(), forgotten: false };
        this.pairs.add(pair);
        const forward = (from: Socket, to: Socket) =>
            from.on('data', (chunk) => {
                if (this.frozen || pair.forgotten) return;
                pair.lastActive = performance.now();
                to.write(chunk);
            });
        forward(client, upstream);
        forward(upstream, client);
        const close = () => {
            client.destroy();
            upstream.destroy();
            this.pairs.delete(pair);
        };
        client.on('close', close).on('error', close);
        upstream.on('close', close).on('error', close);
    }

    /** Resets every open connection, as a dropped network path or a restarted LB would. */
    cutAll(): void {
        for (const { client, upstream } of this.pairs) {
            client.resetAndDestroy();
            upstream.destroy();
        }
        this.pairs.clear();
    }

    /**
     * Every open connection that carried nothing for `idleMs` carries nothing ever again, yet
     * stays open (no FIN, no RST): a quiet watch or a pooled keep-alive connection goes dead
     * silently while a busy one (a lease renewed every few hundred ms) and new ones work.
     * Returns how many were forgotten.
     */
    forgetIdle(idleMs: number): number {
        const now = performance.now();
        let forgotten = 0;
        for (const pair of this.pairs) {
            if (pair.forgotten || now - pair.lastActive < idleMs) continue;
            pair.forgotten = true;
            forgotten++;
        }
        return forgotten;
    }

    /** While refusing, new connections are closed at once. */
    refuse(on: boolean): void {
        this.refusing = on;
    }

    /** While frozen, open connections stay open but carry no bytes. */
    freeze(on: boolean): void {
        this.frozen = on;
    }

    async stop(): Promise<void> {
        this.cutAll();
        await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
    }
}
