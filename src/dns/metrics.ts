// Prometheus metrics of gateway name resolution, labelled by Link target cluster like
// Linkerd's gateway_* metrics. Registered on the Registry the caller passes, never the
// global one: tests and restarts create these repeatedly.
import { Counter, Gauge, type Registry } from 'prom-client';
import type { DroppedAddress, GatewayAddress, ResolutionErrorCode } from './name-state.js';

export type ResolutionResult = 'success' | 'partial_failure' | Lowercase<ResolutionErrorCode>;

/** What the watcher reports; a no-op implementation is fine where metrics are not wanted. */
export interface GatewayDnsObserver {
    resolved(name: string, result: ResolutionResult): void;
    dropped(name: string, answer: DroppedAddress): void;
    published(name: string, addresses: readonly GatewayAddress[], nextRefreshAt: number): void;
    forget(name: string): void;
}

export const noGatewayDnsMetrics: GatewayDnsObserver = {
    resolved: () => {},
    dropped: () => {},
    published: () => {},
    forget: () => {},
};

export class GatewayDnsMetrics {
    private readonly resolutions: Counter<'target_cluster_name' | 'result'>;
    private readonly droppedAnswers: Counter<'target_cluster_name' | 'reason'>;
    private readonly addresses: Gauge<'target_cluster_name' | 'name' | 'ready'>;
    /** target → name → next refresh (ms since epoch); turned into seconds at scrape time. */
    private readonly refreshAt = new Map<string, Map<string, number>>();

    constructor(registry: Registry, now: () => number = Date.now) {
        const registers = [registry];
        this.resolutions = new Counter({
            name: 'gateway_dns_resolutions_total',
            help: 'Resolutions of gateway hostnames (A and AAAA), by result',
            labelNames: ['target_cluster_name', 'result'],
            registers,
        });
        this.droppedAnswers = new Counter({
            name: 'gateway_dns_dropped_answers_total',
            help: 'DNS answers left out of gateway endpoints because Kubernetes rejects them',
            labelNames: ['target_cluster_name', 'reason'],
            registers,
        });
        this.addresses = new Gauge({
            name: 'gateway_dns_addresses',
            help: 'Addresses currently published for a gateway hostname, by readiness',
            labelNames: ['target_cluster_name', 'name', 'ready'],
            registers,
        });
        const refreshAt = this.refreshAt;
        new Gauge({
            name: 'gateway_dns_seconds_until_refresh',
            help: 'Seconds until a gateway hostname is resolved again (negative if overdue)',
            labelNames: ['target_cluster_name', 'name'],
            registers,
            collect() {
                this.reset();
                for (const [target, names] of refreshAt) {
                    for (const [name, at] of names) this.set({ target_cluster_name: target, name }, (at - now()) / 1000);
                }
            },
        });
    }

    forTarget(targetClusterName: string): GatewayDnsObserver {
        const target = targetClusterName;
        const refreshAt = this.refreshAt.get(target) ?? new Map<string, number>();
        this.refreshAt.set(target, refreshAt);
        return {
            resolved: (_name, result) => this.resolutions.inc({ target_cluster_name: target, result }),
            dropped: (_name, answer) => this.droppedAnswers.inc({ target_cluster_name: target, reason: answer.reason }),
            published: (name, addresses, nextRefreshAt) => {
                const ready = addresses.filter((a) => a.ready).length;
                this.addresses.set({ target_cluster_name: target, name, ready: 'true' }, ready);
                this.addresses.set({ target_cluster_name: target, name, ready: 'false' }, addresses.length - ready);
                refreshAt.set(name, nextRefreshAt);
            },
            forget: (name) => {
                this.addresses.remove({ target_cluster_name: target, name, ready: 'true' });
                this.addresses.remove({ target_cluster_name: target, name, ready: 'false' });
                refreshAt.delete(name);
            },
        };
    }
}
