// Metrics of the workload health checks (docs/metrics.md explains each).
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import { METRICS_PREFIX } from '../../kube/manager.js';

const prefix = `${METRICS_PREFIX}external_workloads_`;

export class HealthCheckMetrics {
    readonly probes: Counter<'result'>;
    readonly transitions: Counter<'status'>;
    readonly probeDuration: Histogram;
    readonly probedWorkloads: Gauge;
    readonly invalidProbes: Gauge;
    readonly refusedProbes: Gauge;

    constructor(registry: Registry) {
        const registers = [registry];
        this.probes = new Counter({ name: `${prefix}probes_total`, help: 'Workload health probes by result (success, failure)', labelNames: ['result'], registers });
        this.transitions = new Counter({
            name: `${prefix}ready_transitions_total`,
            help: 'Ready conditions written by the health checks, by the status written (True, False)',
            labelNames: ['status'],
            registers,
        });
        this.probeDuration = new Histogram({
            name: `${prefix}probe_duration_seconds`,
            help: 'How long one workload health probe took, failures (timeouts included) too',
            buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
            registers,
        });
        this.probedWorkloads = new Gauge({ name: `${prefix}probed_workloads`, help: 'Workloads this leader probes', registers });
        this.invalidProbes = new Gauge({ name: `${prefix}invalid_probe_workloads`, help: 'Workloads not probed because their probe annotations are malformed', registers });
        this.refusedProbes = new Gauge({
            name: `${prefix}refused_probe_workloads`,
            help: 'Workloads not probed because none of their addresses is a target probes may go to (loopback, link-local, metadata; see --probe-allow-cidrs)',
            registers,
        });
        for (const result of ['success', 'failure']) this.probes.inc({ result }, 0);
        for (const status of ['True', 'False']) this.transitions.inc({ status }, 0);
    }
}
