// Durations as mesh-endpoints reads and writes them: Go's time.Duration text ("1m30s"), the
// form Linkerd's Link fields, our annotations and our flags share. Pure.

const UNIT_MS: Record<string, number> = { ns: 1e-6, us: 1e-3, '\u00b5s': 1e-3, '\u03bcs': 1e-3, ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/**
 * A Go duration ("3s", "1m30s", "1.5s", "500ms") in milliseconds, or null if malformed.
 * v1alpha1 had no format on probeSpec.period, so a bare number is read as seconds, the unit
 * Linkerd's gateway annotation `mirror.linkerd.io/probe-period` is written in.
 */
export function parseDurationMs(text: string): number | null {
    const s = text.trim();
    if (/^\d+(\.\d+)?$/.test(s)) return Number(s) * 1000;
    const match = /^([+-]?)((?:(?:\d+\.?\d*|\.\d+)(?:ns|us|\u00b5s|\u03bcs|ms|s|m|h))+)$/.exec(s);
    if (!match) return null;
    let total = 0;
    for (const part of (match[2] ?? '').matchAll(/(\d+\.?\d*|\.\d+)(ns|us|\u00b5s|\u03bcs|ms|s|m|h)/g)) {
        total += Number(part[1]) * (UNIT_MS[part[2] ?? ''] ?? Number.NaN);
    }
    if (!Number.isFinite(total)) return null;
    return match[1] === '-' ? -total : total;
}

/** The shortest exact form of `ms` that parseDurationMs reads back: how flags and messages show a duration. */
export function formatDuration(ms: number): string {
    if (ms % 3_600_000 === 0 && ms > 0) return `${ms / 3_600_000}h`;
    if (ms % 60_000 === 0 && ms > 0) return `${ms / 60_000}m`;
    if (ms % 1000 === 0) return `${ms / 1000}s`;
    return `${ms}ms`;
}
