// Prometheus metrics of workqueues, with client-go's names and meanings under our prefix.
// The metric objects are registered once per Registry and every queue reports under its
// own `name` label, so several controllers share one registry. Gauges are computed when
// the registry is scraped, so no refresh timer runs (client-go polls every 500 ms).
import { Counter, Gauge, Histogram, exponentialBuckets, type Registry } from 'prom-client';

/** What the gauges read from a queue at scrape time. */
export interface QueueGaugeSource {
    depth(): number;
    /** How long (seconds) each key now in a worker's hands has been there. */
    inFlightSeconds(): number[];
}

/** One queue's view of the metrics, bound to its `name` label. */
export interface QueueMetrics {
    added(): void;
    handedOut(queuedSeconds: number): void;
    finished(workSeconds: number): void;
    retried(): void;
    dropped(): void;
    /** Stops reporting the queue's gauges and frees its name for a successor. */
    detach(): void;
}

type Label = 'name';

const OUTCOMES = ['success', 'requeue', 'invalid', 'error'] as const;
/** How one reconcile of a controller on the runtime (controller.ts) ended. */
export type ReconcileOutcome = (typeof OUTCOMES)[number];

// Keys are handed out within milliseconds and worked for up to minutes; the clock has ms resolution.
const durationBuckets = exponentialBuckets(0.001, 10, 7);

export class WorkQueueMetrics {
    private readonly sources = new Map<string, QueueGaugeSource>();
    private readonly adds: Counter<Label>;
    private readonly retries: Counter<Label>;
    private readonly drops: Counter<Label>;
    private readonly queueDuration: Histogram<Label>;
    private readonly workDuration: Histogram<Label>;
    private readonly reconciles: Counter<Label | 'result'>;

    /** `prefix` (e.g. "mesh_endpoints") names the metrics `<prefix>_workqueue_*`. */
    constructor(registry: Registry, prefix: string) {
        const name = (suffix: string) => `${prefix ? `${prefix}_` : ''}workqueue_${suffix}`;
        const common = { labelNames: ['name'] as const, registers: [registry] };
        const sources = this.sources;
        const gauge = (suffix: string, help: string, read: (source: QueueGaugeSource) => number) =>
            new Gauge<Label>({
                name: name(suffix),
                help,
                ...common,
                collect() {
                    this.reset();
                    for (const [queue, source] of sources) this.set({ name: queue }, read(source));
                },
            });

        gauge('depth', 'Keys waiting in the workqueue to be handed to a worker.', (s) => s.depth());
        gauge(
            'unfinished_work_seconds',
            'Seconds of work in progress not yet observed by work_duration; a large value suggests stuck workers.',
            (s) => s.inFlightSeconds().reduce((sum, seconds) => sum + seconds, 0),
        );
        gauge(
            'longest_running_processor_seconds',
            'Seconds the longest-running worker has been processing its key.',
            (s) => s.inFlightSeconds().reduce((longest, seconds) => Math.max(longest, seconds), 0),
        );
        const counter = (suffix: string, help: string) => new Counter<Label>({ name: name(suffix), help, ...common });
        const histogram = (suffix: string, help: string) => new Histogram<Label>({ name: name(suffix), help, buckets: durationBuckets, ...common });
        this.adds = counter('adds_total', 'Keys added to the workqueue.');
        this.retries = counter('retries_total', 'Rate-limited re-adds of failed keys.');
        this.drops = counter('drops_total', 'Keys given up on after exceeding the retry limit.');
        this.queueDuration = histogram('queue_duration_seconds', 'Seconds a key waits in the workqueue before a worker takes it.');
        this.workDuration = histogram('work_duration_seconds', 'Seconds a worker spends on a key, from get to done.');
        this.reconciles = new Counter({
            name: `${prefix ? `${prefix}_` : ''}reconcile_total`,
            help: 'Reconciles of a controller (kube/controller.ts) by result: success, requeue (a conflict, run again at once), invalid (a Warning Event, not retried), error (retried with backoff).',
            labelNames: ['name', 'result'],
            registers: [registry],
        });
    }

    /** One reconcile of controller `name` ended so. */
    reconciled(name: string, result: ReconcileOutcome): void {
        this.reconciles.inc({ name, result });
    }

    /** Drops the series of controller `name`, gone for good (its gauges go with its queue's detach). */
    forget(name: string): void {
        for (const metric of [this.adds, this.retries, this.drops, this.queueDuration, this.workDuration]) metric.remove({ name });
        for (const result of OUTCOMES) this.reconciles.remove({ name, result });
    }

    /** Starts reporting a queue; two live queues may not share a name. */
    attach(queue: string, source: QueueGaugeSource): QueueMetrics {
        if (this.sources.has(queue)) throw new Error(`a workqueue named "${queue}" is already reporting metrics`);
        this.sources.set(queue, source);
        const labels = { name: queue };
        // Series exist at zero from the start, so rate() works from the first scrape.
        for (const counter of [this.adds, this.retries, this.drops]) counter.inc(labels, 0);
        this.queueDuration.zero(labels);
        this.workDuration.zero(labels);
        return {
            added: () => this.adds.inc(labels),
            handedOut: (seconds) => this.queueDuration.observe(labels, seconds),
            finished: (seconds) => this.workDuration.observe(labels, seconds),
            retried: () => this.retries.inc(labels),
            dropped: () => this.drops.inc(labels),
            detach: () => {
                if (this.sources.get(queue) === source) this.sources.delete(queue);
            },
        };
    }
}
