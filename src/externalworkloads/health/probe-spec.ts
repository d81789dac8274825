// Which health check a workload asked for: the `mesh-endpoints.io/probe` annotation and its
// siblings, or the controller's --default-probe for a workload without one. Pure: annotations
// in, a probe or a clear error out. Defaults are those of a Kubernetes readiness probe.
import { hostPort } from '../../net/probe.js';
import { parseDurationMs } from '../../time/duration.js';

import { PROBE_ANNOTATION } from '../types.js';

export { PROBE_ANNOTATION };
export const PERIOD_ANNOTATION = 'mesh-endpoints.io/probe-period';
export const TIMEOUT_ANNOTATION = 'mesh-endpoints.io/probe-timeout';
export const SUCCESS_THRESHOLD_ANNOTATION = 'mesh-endpoints.io/probe-success-threshold';
export const FAILURE_THRESHOLD_ANNOTATION = 'mesh-endpoints.io/probe-failure-threshold';
/** The probe annotation's value that opts a workload out of --default-probe. */
export const NO_PROBE = 'none';

export const DEFAULT_PERIOD_MS = 10_000;
export const DEFAULT_TIMEOUT_MS = 1_000;
export const DEFAULT_SUCCESS_THRESHOLD = 1;
export const DEFAULT_FAILURE_THRESHOLD = 3;
/** Below this a period or timeout is a typo (e.g. "10" read as 10 ms by some tool), not a wish. */
const MIN_DURATION_MS = 100;
const MAX_DURATION_MS = 3_600_000;
const MAX_THRESHOLD = 1_000;

/** What to connect to: an HTTP(S) GET of a path (2xx and 3xx pass, as in Kubernetes) or a TCP connect. */
export type ProbeTarget = { scheme: 'http' | 'https'; port: number; path: string } | { scheme: 'tcp'; port: number };

export interface ProbeSpec {
    target: ProbeTarget;
    periodMs: number;
    timeoutMs: number;
    successThreshold: number;
    failureThreshold: number;
}

/** Not probed (no annotation and no default, or opted out), probed, or asked for with a mistake. */
export type WorkloadProbe = { kind: 'none' } | { kind: 'probe'; spec: ProbeSpec } | { kind: 'invalid'; message: string };

/** `http:4191/ready`, `https:8443/healthz`, `tcp:8080`; a message saying what is wrong otherwise. */
export function parseProbeTarget(text: string): ProbeTarget | string {
    const match = /^(https?|tcp):(\d{1,5})(\/\S*)?$/.exec(text.trim());
    if (!match) return `${JSON.stringify(text)} is not a probe such as http:4191/ready, https:8443/healthz or tcp:8080`;
    const scheme = match[1] as ProbeTarget['scheme'];
    const port = Number(match[2]);
    if (port < 1 || port > 65535) return `${JSON.stringify(text)}: port ${port} is not in 1..65535`;
    if (scheme === 'tcp') return match[3] === undefined ? { scheme, port } : `${JSON.stringify(text)}: a tcp probe takes no path`;
    return { scheme, port, path: match[3] ?? '/' };
}

/**
 * The probe of a workload from its annotations. Its own `mesh-endpoints.io/probe` wins over
 * `defaultProbe`; `none` opts out. The sibling annotations apply to either.
 */
export function workloadProbe(annotations: Readonly<Record<string, string>> | undefined, defaultProbe?: ProbeTarget): WorkloadProbe {
    const own = annotations?.[PROBE_ANNOTATION];
    if (own?.trim() === NO_PROBE) return { kind: 'none' };
    let target: ProbeTarget | undefined = defaultProbe;
    if (own !== undefined) {
        const parsed = parseProbeTarget(own);
        if (typeof parsed === 'string') return invalid(`${PROBE_ANNOTATION}: ${parsed}`);
        target = parsed;
    }
    if (!target) return { kind: 'none' };
    const errors: string[] = [];
    const duration = (key: string, fallback: number): number => {
        const text = annotations?.[key];
        if (text === undefined) return fallback;
        const ms = parseDurationMs(text);
        if (ms === null || ms < MIN_DURATION_MS || ms > MAX_DURATION_MS) {
            errors.push(`${key}: ${JSON.stringify(text)} is not a duration from 100ms to 1h such as 10s`);
        }
        return ms ?? fallback;
    };
    const threshold = (key: string, fallback: number): number => {
        const text = annotations?.[key];
        if (text === undefined) return fallback;
        const n = Number(text);
        if (!/^\s*\d+\s*$/.test(text) || n < 1 || n > MAX_THRESHOLD) errors.push(`${key}: ${JSON.stringify(text)} is not a whole number from 1 to ${MAX_THRESHOLD}`);
        return n;
    };
    const spec: ProbeSpec = {
        target,
        periodMs: duration(PERIOD_ANNOTATION, DEFAULT_PERIOD_MS),
        timeoutMs: duration(TIMEOUT_ANNOTATION, DEFAULT_TIMEOUT_MS),
        successThreshold: threshold(SUCCESS_THRESHOLD_ANNOTATION, DEFAULT_SUCCESS_THRESHOLD),
        failureThreshold: threshold(FAILURE_THRESHOLD_ANNOTATION, DEFAULT_FAILURE_THRESHOLD),
    };
    return errors.length > 0 ? invalid(errors.join('; ')) : { kind: 'probe', spec };
}

function invalid(message: string): WorkloadProbe {
    return { kind: 'invalid', message: `${message}; the workload is not probed until the annotation is fixed` };
}

/** `http://192.0.2.10:4191/ready`, `tcp://[2001:db8::1]:8080`: where a probe goes, for messages. */
export function describeTarget(target: ProbeTarget, host: string, port = target.port): string {
    const where = hostPort(host, port);
    return target.scheme === 'tcp' ? `tcp://${where}` : `${target.scheme}://${where}${target.path}`;
}
