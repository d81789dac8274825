// The figures a benchmark reports, and the small statistics behind them. Figures are printed
// as they are measured (one line each: what, N, result with unit) and collected for the JSON
// summary. An expected count that differs is flagged, never thrown: a benchmark reports, a
// test asserts.

export interface Figure {
    benchmark: string;
    what: string;
    /** The size the figure is about, and what is counted (e.g. 10000 "endpoints"). */
    n: number;
    of: string;
    unit: string;
    /** A single measurement (a count, or one elapsed time). */
    value?: number;
    /** Several runs of the same measurement. */
    runs?: number;
    median?: number;
    p95?: number;
    min?: number;
    max?: number;
    samples?: number[];
    expected?: number;
    /** Extra counts that explain the figure (e.g. creates/updates/deletes). */
    detail?: Record<string, number>;
}

export function percentile(samples: readonly number[], p: number): number {
    if (samples.length === 0) return Number.NaN;
    const sorted = [...samples].sort((a, b) => a - b);
    // Nearest rank: with few runs a p95 is the largest but one or the largest, never interpolated.
    const rank = Math.ceil((p / 100) * sorted.length);
    return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1]!;
}

export const median = (samples: readonly number[]) => percentile(samples, 50);

const round = (x: number) => (Math.abs(x) >= 100 ? Math.round(x) : Math.round(x * 100) / 100);

/** Runs `fn` `warmup` times unmeasured (JIT, caches), then `runs` times; elapsed ms of each. */
export function timeRuns(fn: () => void, warmup: number, runs: number): number[] {
    for (let i = 0; i < warmup; i++) fn();
    const samples: number[] = [];
    for (let i = 0; i < runs; i++) {
        const started = performance.now();
        fn();
        samples.push(performance.now() - started);
    }
    return samples;
}

export class Report {
    readonly figures: Figure[] = [];
    readonly errors: { benchmark: string; message: string }[] = [];

    constructor(private readonly print: (line: string) => void) {}

    /** Several runs: median, p95 and max. */
    timing(benchmark: string, what: string, n: number, of: string, samplesMs: number[], detail?: Record<string, number>): void {
        const figure: Figure = {
            benchmark,
            what,
            n,
            of,
            unit: 'ms',
            runs: samplesMs.length,
            median: round(median(samplesMs)),
            p95: round(percentile(samplesMs, 95)),
            min: round(Math.min(...samplesMs)),
            max: round(Math.max(...samplesMs)),
            samples: samplesMs.map(round),
            detail,
        };
        this.figures.push(figure);
        this.print(
            `[${benchmark}] ${what}, N=${n} ${of}: median ${figure.median} ms, p95 ${figure.p95} ms, max ${figure.max} ms ` +
                `(${figure.runs} runs)${detailText(detail)}`,
        );
    }

    /** One measurement: a count (writes, queries) or one elapsed time. */
    value(benchmark: string, what: string, n: number, of: string, value: number, unit: string, expected?: number, detail?: Record<string, number>): void {
        const figure: Figure = { benchmark, what, n, of, unit, value: round(value), expected, detail };
        this.figures.push(figure);
        const verdict = expected === undefined ? '' : value === expected ? ` (expected ${expected})` : ` (EXPECTED ${expected}: differs)`;
        this.print(`[${benchmark}] ${what}, N=${n} ${of}: ${figure.value} ${unit}${verdict}${detailText(detail)}`);
    }

    error(benchmark: string, err: unknown): void {
        const message = err instanceof Error ? (err.stack ?? err.message) : String(err);
        this.errors.push({ benchmark, message });
        this.print(`[${benchmark}] FAILED: ${message}`);
    }

    /** Figures whose count is not what the design promises (e.g. a no-op sync that wrote). */
    unexpected(): Figure[] {
        return this.figures.filter((f) => f.expected !== undefined && f.value !== f.expected);
    }
}

function detailText(detail: Record<string, number> | undefined): string {
    if (!detail || Object.keys(detail).length === 0) return '';
    return `; ${Object.entries(detail).map(([k, v]) => `${k} ${round(v)}`).join(', ')}`;
}
