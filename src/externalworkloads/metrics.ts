// The upstream endpointslice controller's metric family, under our prefix, plus a
// count of the bad input we left out. Created once per registry.
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import { METRICS_PREFIX } from '../kube/manager.js';

const prefix = `${METRICS_PREFIX}external_workloads_`;

interface ServiceFigures {
    actual: number;
    desired: number;
    endpoints: number;
}
const perSyncBuckets = [0, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768];

export class ExternalWorkloadsMetrics {
    readonly endpointsAdded: Histogram;
    readonly endpointsRemoved: Histogram;
    readonly sliceWrites: Counter<'operation'>;
    readonly invalidInputs: Counter<'reason'>;
    readonly ignoredUpdates: Counter<'resource'>;
    /** Per Service, so the gauges are sums that forget deleted Services. */
    private readonly perService = new Map<string, ServiceFigures>();
    private readonly totals: ServiceFigures = { actual: 0, desired: 0, endpoints: 0 };

    constructor(registry: Registry) {
        const registers = [registry];
        this.endpointsAdded = new Histogram({
            name: `${prefix}endpoints_added_per_sync`,
            help: 'Endpoints added to slices by one Service sync',
            buckets: perSyncBuckets,
            registers,
        });
        this.endpointsRemoved = new Histogram({
            name: `${prefix}endpoints_removed_per_sync`,
            help: 'Endpoints removed from slices by one Service sync',
            buckets: perSyncBuckets,
            registers,
        });
        this.sliceWrites = new Counter({
            name: `${prefix}endpointslice_changes_total`,
            help: 'EndpointSlice writes by operation',
            labelNames: ['operation'],
            registers,
        });
        this.invalidInputs = new Counter({
            name: `${prefix}invalid_inputs_total`,
            help: 'Addresses, ports, hostnames or workloads left out of slices, by reason',
            labelNames: ['reason'],
            registers,
        });
        this.ignoredUpdates = new Counter({
            name: `${prefix}updates_ignored_total`,
            help: 'Updates of Services and ExternalWorkloads cached without a sync: nothing the controller reads changed',
            labelNames: ['resource'],
            registers,
        });
        // Read from the totals when scraped, not set at every sync (three prom-client calls, each storing a new value object).
        const totals = this.totals;
        const gauge = (name: string, help: string, read: () => number) =>
            new Gauge({
                name: `${prefix}${name}`,
                help,
                registers,
                collect() {
                    this.set(read());
                },
            });
        gauge('num_endpoint_slices', 'EndpointSlices we manage', () => totals.actual);
        gauge('desired_endpoint_slices', 'EndpointSlices needed with perfect packing', () => totals.desired);
        gauge('endpoints_desired', 'Endpoints we publish', () => totals.endpoints);
        for (const operation of ['create', 'update', 'delete']) this.sliceWrites.inc({ operation }, 0);
    }

    recordService(key: string, actual: number, desired: number, endpoints: number): void {
        const before = this.perService.get(key) ?? { actual: 0, desired: 0, endpoints: 0 };
        this.totals.actual += actual - before.actual;
        this.totals.desired += desired - before.desired;
        this.totals.endpoints += endpoints - before.endpoints;
        if (actual === 0 && desired === 0) this.perService.delete(key);
        else this.perService.set(key, { actual, desired, endpoints });
    }
}
