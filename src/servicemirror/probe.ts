// The gateway probe of one Link (probeSpec): an HTTP GET of probeSpec.path on the gateway's
// probe port every period (jittered by up to 10%, as Linkerd does, so Links started together
// do not probe together), with probeSpec.timeout. failureThreshold failures in a row make the
// gateway dead; the first success makes it alive again. Only transitions are reported.
//
// Where the probe goes: the first gateway address the Link publishes (ready ones first), or,
// when set, the probe address override (`--probe-address-override HOST[:PORT]`). The override
// exists for tests and for gateways reachable from the controller only through a proxy; tests
// point it at a loopback server so no probe ever leaves the machine.
import { request } from 'node:http';
import { isIP } from 'node:net';
import type { LinkProbe } from './link.js';

export interface ProbeResult {
    ok: boolean;
    latencyMs: number;
    /** "200 OK from 127.0.0.1:4191", "timeout after 500 ms", "connect ECONNREFUSED …". */
    detail: string;
}

export interface ProbeAddressOverride {
    host: string;
    port?: number;
}

/** "HOST", "HOST:PORT" or "[IPv6]:PORT"; null when malformed. */
export function parseProbeAddressOverride(text: string): ProbeAddressOverride | null {
    const bracketed = /^\[([^\]]+)\](?::(\d+))?$/.exec(text);
    const plain = /^([^:[\]]+)(?::(\d+))?$/.exec(text);
    const match = bracketed ?? (isIP(text) === 6 ? [text, text, undefined] : plain);
    if (!match || !match[1]) return null;
    if (match[2] === undefined) return { host: match[1] };
    const port = Number(match[2]);
    return port >= 1 && port <= 65535 ? { host: match[1], port } : null;
}

/** One GET; success is a 200, as in Linkerd. Never throws. */
export function probeOnce(host: string, port: number, path: string, timeoutMs: number): Promise<ProbeResult> {
    const started = performance.now();
    const where = `${isIP(host) === 6 ? `[${host}]` : host}:${port}`;
    return new Promise((resolve) => {
        let settled = false;
        const finish = (ok: boolean, detail: string) => {
            if (settled) return;
            settled = true;
            resolve({ ok, latencyMs: performance.now() - started, detail });
        };
        // A fresh connection per probe: a pooled one would hide a gateway that stopped accepting.
        const req = request({ host, port, path, method: 'GET', agent: false, timeout: timeoutMs }, (res) => {
            res.resume();
            res.on('end', () => finish(res.statusCode === 200, `${res.statusCode} ${res.statusMessage ?? ''} from ${where}`.replace('  ', ' ')));
            res.on('error', (err) => finish(false, `${where}: ${err.message}`));
        });
        req.on('timeout', () => {
            finish(false, `no answer from ${where} within ${timeoutMs} ms`);
            req.destroy();
        });
        req.on('error', (err) => finish(false, `${where}: ${err.message}`));
        req.end();
    });
}

export interface ProbeWorkerOptions {
    probe: LinkProbe;
    /** The host to probe now; undefined when the gateway has no address yet (the round is skipped). */
    target: () => string | undefined;
    override?: ProbeAddressOverride;
    onResult?: (result: ProbeResult) => void;
    onLiveness: (alive: boolean, detail: string) => void;
    random?: () => number;
}

export class ProbeWorker {
    private timer: NodeJS.Timeout | undefined;
    private running = false;
    private failures = 0;
    private isAlive = true;
    private inFlight: Promise<void> | undefined;

    constructor(private readonly opts: ProbeWorkerOptions) {}

    /** Linkerd starts every gateway alive, so mirrors are ready until a probe says otherwise. */
    get alive(): boolean {
        return this.isAlive;
    }

    start(): void {
        if (this.running) return;
        this.running = true;
        this.schedule(0);
    }

    async stop(): Promise<void> {
        this.running = false;
        clearTimeout(this.timer);
        await this.inFlight;
    }

    private schedule(delayMs: number): void {
        if (!this.running) return;
        this.timer = setTimeout(() => {
            this.inFlight = this.round().finally(() => {
                this.inFlight = undefined;
                const jitter = 1 + 0.1 * (this.opts.random ?? Math.random)();
                this.schedule(this.opts.probe.periodMs * jitter);
            });
        }, delayMs);
        this.timer.unref();
    }

    private async round(): Promise<void> {
        const host = this.opts.override?.host ?? this.opts.target();
        if (host === undefined) return;
        const port = this.opts.override?.port ?? this.opts.probe.port;
        const result = await probeOnce(host, port, this.opts.probe.path, this.opts.probe.timeoutMs);
        if (!this.running) return;
        this.opts.onResult?.(result);
        if (result.ok) {
            this.failures = 0;
            if (!this.isAlive) this.transition(true, result.detail);
            return;
        }
        this.failures++;
        if (this.isAlive && this.failures >= this.opts.probe.failureThreshold) this.transition(false, result.detail);
    }

    private transition(alive: boolean, detail: string): void {
        this.isAlive = alive;
        this.opts.onLiveness(alive, detail);
    }
}
