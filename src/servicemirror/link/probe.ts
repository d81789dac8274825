// The gateway probe of one Link (probeSpec): an HTTP GET of probeSpec.path on the gateway's
// probe port every period (jittered by up to 10%, as Linkerd does, so Links started together
// do not probe together), with probeSpec.timeout. failureThreshold failures in a row make the
// gateway dead; the first success makes it alive again. Only transitions are reported.
//
// Where the probe goes: the first of the gateway's addresses (ready published ones first) that
// src/ip/probe-target.ts allows, or, when set, the probe address override
// (`--probe-address-override HOST[:PORT]`). The override exists for tests and for gateways
// reachable from the controller only through a proxy; tests point it at a loopback server so
// no probe ever leaves the machine. Whoever writes a Link chooses its gateway addresses, so
// a gateway whose every address is refused (loopback, link-local, cloud metadata, unless
// --probe-allow-cidrs lists it) is not probed at all: nothing is sent, it counts as alive, as
// a Link without a probe does, and onTarget says why.
import { probeTarget, refusedTargets, type ProbeCidr } from '../../ip/probe-target.js';
import { probeHttp, type ProbeAddressOverride, type ProbeResult } from '../../net/probe.js';
import type { LinkProbe } from '../api/link.js';
import { backgroundClock } from '../../time/clock.js';

/** One GET; success is a 200, as in Linkerd. Never throws. */
export function probeOnce(host: string, port: number, path: string, timeoutMs: number): Promise<ProbeResult> {
    return probeHttp({ host, port, path, timeoutMs });
}

export interface ProbeWorkerOptions {
    probe: LinkProbe;
    /** The gateway's addresses now, best first; none when it has no address yet (the round is skipped). */
    targets: () => readonly string[];
    override?: ProbeAddressOverride;
    /** Refused addresses the operator allows all the same (--probe-allow-cidrs). */
    allowCidrs?: readonly ProbeCidr[];
    onResult?: (result: ProbeResult) => void;
    onLiveness: (alive: boolean, detail: string) => void;
    /**
     * Each round with addresses, without an override: the address probed, or why none may be
     * (nothing is sent then).
     */
    onTarget?: (target: { address: string } | { refused: string }) => void;
    /** One probe; probeOnce unless a test watches what is sent. */
    send?: typeof probeOnce;
    random?: () => number;
}

export class ProbeWorker {
    private cancelTimer: (() => void) | undefined;
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
        this.cancelTimer?.();
        await this.inFlight;
    }

    private schedule(delayMs: number): void {
        if (!this.running) return;
        this.cancelTimer = backgroundClock.schedule(() => {
            this.inFlight = this.round().finally(() => {
                this.inFlight = undefined;
                const jitter = 1 + 0.1 * (this.opts.random ?? Math.random)();
                this.schedule(this.opts.probe.periodMs * jitter);
            });
        }, delayMs);
    }

    private async round(): Promise<void> {
        const host = this.opts.override?.host ?? this.allowedTarget();
        if (host === undefined) return;
        const port = this.opts.override?.port ?? this.opts.probe.port;
        const result = await (this.opts.send ?? probeOnce)(host, port, this.opts.probe.path, this.opts.probe.timeoutMs);
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

    /** The first address a probe may go to; undefined when there is none (the refusal is reported). */
    private allowedTarget(): string | undefined {
        const targets = this.opts.targets();
        if (targets.length === 0) return undefined;
        const verdicts = targets.map((address) => probeTarget(address, this.opts.allowCidrs));
        const allowed = verdicts.find((v) => v.allowed);
        if (allowed?.allowed) {
            this.opts.onTarget?.({ address: allowed.address });
            return allowed.address;
        }
        // Not probed counts as alive, as for a Link without a probe: its failures start over.
        this.failures = 0;
        this.isAlive = true;
        this.opts.onTarget?.({ refused: refusedTargets(verdicts) });
        return undefined;
    }

    private transition(alive: boolean, detail: string): void {
        this.isAlive = alive;
        this.opts.onLiveness(alive, detail);
    }
}
