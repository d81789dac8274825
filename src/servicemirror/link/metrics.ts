// The service mirror's metrics, all under mesh_endpoints_service_mirror_, labelled by Link
// (and its target cluster, the label Linkerd's gateway metrics use). It also implements the
// DNS watcher's observer, so gateway resolution shows under the same prefix.
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { DroppedAddress, GatewayAddress } from '../../dns/name-state.js';
import type { GatewayDnsObserver, ResolutionResult } from '../../dns/metrics.js';
import { METRICS_PREFIX } from '../../kube/manager.js';

const prefix = `${METRICS_PREFIX}service_mirror_`;
type LinkLabels = 'link' | 'target_cluster_name';

export interface LinkMetricLabels {
    link: string;
    target_cluster_name: string;
}

export class ServiceMirrorMetrics {
    readonly sliceWrites: Counter<'operation'>;
    readonly serviceWrites: Counter<'operation'>;
    readonly statusWrites: Counter<'link'>;
    readonly gatewayAlive: Gauge<LinkLabels>;
    readonly probes: Counter<LinkLabels | 'result'>;
    readonly probeLatency: Histogram<LinkLabels>;
    readonly mirroredServices: Gauge<LinkLabels>;
    readonly remoteWatches: Gauge;
    readonly remoteReadable: Gauge<LinkLabels>;
    private readonly resolutions: Counter<LinkLabels | 'result'>;
    private readonly droppedAnswers: Counter<LinkLabels | 'reason'>;
    private readonly addresses: Gauge<LinkLabels | 'name' | 'ready'>;
    /** "link target" → name → next refresh (ms since the epoch), turned into seconds when scraped. */
    private readonly refreshAt = new Map<string, { labels: LinkMetricLabels; names: Map<string, number> }>();

    constructor(registry: Registry, now: () => number = Date.now) {
        const registers = [registry];
        this.sliceWrites = new Counter({
            name: `${prefix}slice_writes_total`,
            help: 'Mirror EndpointSlice writes by operation (create, update, delete)',
            labelNames: ['operation'],
            registers,
        });
        this.serviceWrites = new Counter({
            name: `${prefix}service_writes_total`,
            help: 'Mirror Service writes by operation (create, update, delete)',
            labelNames: ['operation'],
            registers,
        });
        this.statusWrites = new Counter({ name: `${prefix}link_status_writes_total`, help: 'Link status writes', labelNames: ['link'], registers });
        this.gatewayAlive = new Gauge({
            name: `${prefix}gateway_alive`,
            help: '1 while the gateway probe of the Link passes (or the Link is not probed), 0 after failureThreshold failures',
            labelNames: ['link', 'target_cluster_name'],
            registers,
        });
        this.probes = new Counter({
            name: `${prefix}gateway_probes_total`,
            help: 'Gateway probes by result (success, failure, refused: no address of the gateway may be probed, nothing was sent)',
            labelNames: ['link', 'target_cluster_name', 'result'],
            registers,
        });
        this.probeLatency = new Histogram({
            name: `${prefix}gateway_probe_latency_seconds`,
            help: 'Time a gateway probe took, successful or not',
            labelNames: ['link', 'target_cluster_name'],
            buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
            registers,
        });
        this.mirroredServices = new Gauge({
            name: `${prefix}mirrored_services`,
            help: 'Remote Services mirrored by the Link (condition Mirrored=True)',
            labelNames: ['link', 'target_cluster_name'],
            registers,
        });
        this.remoteWatches = new Gauge({ name: `${prefix}remote_watches`, help: 'Links whose remote cluster is being watched', registers });
        this.remoteReadable = new Gauge({
            name: `${prefix}remote_readable`,
            help: '1 while the remote cluster of the Link can be listed and watched, 0 while reading it fails (mirrors are kept as they are)',
            labelNames: ['link', 'target_cluster_name'],
            registers,
        });
        this.resolutions = new Counter({
            name: `${prefix}dns_resolutions_total`,
            help: 'Resolutions of gateway hostnames (A and AAAA), by result',
            labelNames: ['link', 'target_cluster_name', 'result'],
            registers,
        });
        this.droppedAnswers = new Counter({
            name: `${prefix}dns_dropped_answers_total`,
            help: 'DNS answers left out of mirror endpoints (loopback, link-local, multicast, unspecified)',
            labelNames: ['link', 'target_cluster_name', 'reason'],
            registers,
        });
        this.addresses = new Gauge({
            name: `${prefix}dns_addresses`,
            help: 'Addresses published for a gateway hostname, by readiness',
            labelNames: ['link', 'target_cluster_name', 'name', 'ready'],
            registers,
        });
        const refreshAt = this.refreshAt;
        new Gauge({
            name: `${prefix}dns_seconds_until_refresh`,
            help: 'Seconds until a gateway hostname is resolved again (negative if overdue)',
            labelNames: ['link', 'target_cluster_name', 'name'],
            registers,
            collect() {
                this.reset();
                for (const { labels, names } of refreshAt.values()) {
                    for (const [name, at] of names) this.set({ ...labels, name }, (at - now()) / 1000);
                }
            },
        });
        for (const operation of ['create', 'update', 'delete']) {
            this.sliceWrites.inc({ operation }, 0);
            this.serviceWrites.inc({ operation }, 0);
        }
    }

    /** The DNS watcher's observer for one Link. */
    dnsObserver(labels: LinkMetricLabels): GatewayDnsObserver {
        const key = `${labels.link} ${labels.target_cluster_name}`;
        const names = new Map<string, number>();
        this.refreshAt.set(key, { labels, names });
        return {
            resolved: (_name: string, result: ResolutionResult) => this.resolutions.inc({ ...labels, result }),
            dropped: (_name: string, answer: DroppedAddress) => this.droppedAnswers.inc({ ...labels, reason: answer.reason }),
            published: (name: string, addresses: readonly GatewayAddress[], nextRefreshAt: number) => {
                const ready = addresses.filter((a) => a.ready).length;
                this.addresses.set({ ...labels, name, ready: 'true' }, ready);
                this.addresses.set({ ...labels, name, ready: 'false' }, addresses.length - ready);
                names.set(name, nextRefreshAt);
            },
            forget: (name: string) => {
                this.addresses.remove({ ...labels, name, ready: 'true' });
                this.addresses.remove({ ...labels, name, ready: 'false' });
                names.delete(name);
            },
        };
    }

    /** A Link is gone or restarted: its per-name and per-Link series go with it. */
    forgetLink(labels: LinkMetricLabels): void {
        const entry = this.refreshAt.get(`${labels.link} ${labels.target_cluster_name}`);
        for (const name of entry?.names.keys() ?? []) {
            this.addresses.remove({ ...labels, name, ready: 'true' });
            this.addresses.remove({ ...labels, name, ready: 'false' });
        }
        this.refreshAt.delete(`${labels.link} ${labels.target_cluster_name}`);
        this.gatewayAlive.remove(labels);
        this.mirroredServices.remove(labels);
        this.remoteReadable.remove(labels);
    }
}
