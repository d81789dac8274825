// One-shot network probes: an HTTP(S) GET or a TCP connect with a deadline, on a fresh
// connection each time (a pooled one would hide a peer that stopped accepting, and probes to
// thousands of peers must not leave keep-alive sockets behind). Never throws: every outcome
// is a result with a detail for Events and logs. Used by the gateway probe of a Link and by
// the health checks of ExternalWorkloads.
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { connect, isIP } from 'node:net';
import { systemClock } from '../time/clock.js';

export interface ProbeResult {
    ok: boolean;
    latencyMs: number;
    /** "200 OK from 127.0.0.1:4191", "no answer from … within 500 ms", "127.0.0.1:1: connect ECONNREFUSED …". */
    detail: string;
}

export interface HttpProbe {
    scheme?: 'http' | 'https';
    host: string;
    port: number;
    path: string;
    timeoutMs: number;
    /** Which status codes pass; 200 only by default (Linkerd's gateway probe). */
    passes?: (statusCode: number) => boolean;
    /** Ends the probe early (a failed result) when aborted. */
    signal?: AbortSignal;
}

/**
 * Where probes go instead of their target (`--probe-address-override`): for tests, which point
 * it at loopback servers so no probe leaves the machine, and for peers reachable only through
 * a local proxy. Without a port, the probe's own port is kept.
 */
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

export function hostPort(host: string, port: number): string {
    return `${isIP(host) === 6 ? `[${host}]` : host}:${port}`;
}

/**
 * One GET. HTTPS certificates are not verified: kubelet's readiness probes do not either. The
 * answer's status line is all that is read: the connection is closed as soon as the headers
 * are in, so a body (of any size, or one that never ends) is never read, and a redirect is
 * only its status code (never followed: its Location could name any address). The reason
 * phrase is the peer's text and goes into conditions and Events: it is cut short.
 */
export function probeHttp(probe: HttpProbe): Promise<ProbeResult> {
    const where = hostPort(probe.host, probe.port);
    const passes = probe.passes ?? ((code: number) => code === 200);
    return settleOnce(probe.timeoutMs, where, (finish) => {
        const send = probe.scheme === 'https' ? httpsRequest : httpRequest;
        const req = send(
            {
                host: probe.host,
                port: probe.port,
                path: probe.path,
                method: 'GET',
                agent: false,
                rejectUnauthorized: false,
                signal: probe.signal,
                maxHeaderSize: MAX_HEADER_BYTES,
                headers: { 'User-Agent': 'mesh-endpoints-probe', Connection: 'close' },
            },
            (res: IncomingMessage) => {
                const code = res.statusCode ?? 0;
                finish(passes(code), `${code} ${reasonPhrase(res.statusMessage)}`.trim() + ` from ${where}`);
                req.destroy();
            },
        );
        req.on('error', (err) => finish(false, `${where}: ${err.message}`));
        req.end();
        return () => req.destroy();
    });
}

/** Response headers a probe accepts (Node's default is 16 KiB); a longer head fails the probe. */
const MAX_HEADER_BYTES = 8 * 1024;
const MAX_REASON_CHARS = 40;

/** The peer's reason phrase, printable ASCII only and at most MAX_REASON_CHARS. */
export function reasonPhrase(text: string | undefined): string {
    const printable = (text ?? '').replace(/[^\x20-\x7e]/g, '');
    return printable.length > MAX_REASON_CHARS ? `${printable.slice(0, MAX_REASON_CHARS)}…` : printable;
}

/** One TCP connect, closed at once. */
export function probeTcp(probe: { host: string; port: number; timeoutMs: number; signal?: AbortSignal }): Promise<ProbeResult> {
    const where = hostPort(probe.host, probe.port);
    return settleOnce(probe.timeoutMs, where, (finish) => {
        const socket = connect({ host: probe.host, port: probe.port, signal: probe.signal });
        socket.once('connect', () => {
            finish(true, `connected to ${where}`);
            socket.destroy();
        });
        socket.once('error', (err) => finish(false, `${where}: ${err.message}`));
        return () => socket.destroy();
    });
}

/** Runs `start` and resolves with its first outcome, or a timeout after `timeoutMs` (then `start`'s cleanup runs). */
function settleOnce(
    timeoutMs: number,
    where: string,
    start: (finish: (ok: boolean, detail: string) => void) => () => void,
): Promise<ProbeResult> {
    const started = performance.now();
    return new Promise((resolve) => {
        let settled = false;
        let cancelTimer: (() => void) | undefined;
        const finish = (ok: boolean, detail: string) => {
            if (settled) return;
            settled = true;
            cancelTimer?.();
            resolve({ ok, latencyMs: performance.now() - started, detail });
        };
        const cleanup = start(finish);
        cancelTimer = systemClock.schedule(() => {
            finish(false, `no answer from ${where} within ${timeoutMs} ms`);
            cleanup();
        }, timeoutMs);
    });
}
