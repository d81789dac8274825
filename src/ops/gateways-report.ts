// `gateways`: one line per Link, as `linkerd multicluster gateways` shows it: is the gateway
// alive, how fast it answers a probe, its addresses and how many Services are mirrored
// through it. Pure: the command measures the probe (if any) and passes the result in.
import { probeTarget as mayProbe } from '../ip/probe-target.js';
import type { ProbeResult } from '../net/probe.js';
import type { LinkReport } from './links-report.js';

export interface GatewayLine {
    link: string;
    cluster: string;
    /** Measured now when `probe` is given; else what the service mirror last reported. */
    alive: 'alive' | 'down' | 'not-probed' | 'invalid';
    /** Latency of our own probe, in ms. */
    latencyMs?: number;
    /** The probe's answer, or the service mirror's last report about it. */
    detail?: string;
    addresses: string[];
    /** Remote Services mirrored now (Mirrored=True). */
    mirroredServices: number;
}

export function gatewayLine(report: LinkReport, probe?: ProbeResult): GatewayLine {
    const line: GatewayLine = {
        link: report.name,
        cluster: report.targetClusterName,
        alive: report.invalid ? 'invalid' : report.probe.state,
        addresses: [...new Set(report.gatewayNames.flatMap((n) => n.addresses))],
        mirroredServices: report.summary?.mirrored ?? report.mirrors.filter((m) => m.mirrored?.status === 'True').length,
    };
    if (report.invalid) line.detail = report.invalid;
    else if (probe) {
        line.alive = probe.ok ? 'alive' : 'down';
        line.latencyMs = Math.round(probe.latencyMs);
        line.detail = probe.detail;
    } else if (report.probe.detail) line.detail = report.probe.detail;
    return line;
}

/**
 * Where our own probe goes: the Link's probe path and port on its first published address
 * that probes may go to (src/ip/probe-target.ts, as for the service mirror's probe), or on the
 * override (a proxy to the gateway; tests point it at loopback). Nothing when the Link has no
 * probe or no such address.
 */
export function probeTarget(
    report: LinkReport,
    override?: { host: string; port?: number },
): { host: string; port: number; path: string; timeoutMs: number } | undefined {
    const spec = report.probe.spec;
    if (!spec) return undefined;
    const host = override?.host ?? report.gatewayNames.flatMap((n) => n.addresses).find((a) => mayProbe(a).allowed);
    if (host === undefined) return undefined;
    return { host, port: override?.port ?? spec.port, path: spec.path, timeoutMs: spec.timeoutMs };
}
