// The gateway of one Link: its gatewayAddress entries, the DNS state of its hostnames, its
// probe, and the Events they give. The DNS state outlives changes of the Link's spec and
// credentials (only added and dropped names change), and a first start seeds each name from
// the Link status, the record of its last good answer that an earlier process left.
import type { AddressType } from '../../endpointslice/types.js';
import { parseGatewayAddress, type GatewayEntry } from '../../dns/gateway-address.js';
import { mirrorGatewayAddresses } from '../../dns/gateway-endpoints.js';
import { GatewayWatcher } from '../../dns/gateway-watcher.js';
import type { DnsPolicy, NameState } from '../../dns/name-state.js';
import { newerSeed, seedNameState, type GatewayNameStatus } from '../../dns/resolution-status.js';
import { GatewayResolver } from '../../dns/resolver.js';
import type { Logger } from '../../kube/log.js';
import type { GatewayAddress } from '../plan/endpoints.js';
import { gatewayNameEvents, probeEvent, probeRefusedEvent, probeTargetEvent, type LinkEvent } from './gateway-events.js';
import type { Link } from '../api/link.js';
import type { ServiceMirrorMetrics } from './metrics.js';
import type { ProbeCidr } from '../../ip/probe-target.js';
import { hostPort, type ProbeAddressOverride } from '../../net/probe.js';
import { ProbeWorker } from './probe.js';
import { systemClock } from '../../time/clock.js';

export interface LinkGatewayDeps {
    /** The Link's name, for Events and metric labels. */
    name: string;
    policy: DnsPolicy;
    dnsServers?: string[];
    dnsTimeoutMs?: number;
    dnsTries?: number;
    probeOverride?: ProbeAddressOverride;
    probeAllowCidrs?: readonly ProbeCidr[];
    metrics: ServiceMirrorMetrics;
    logger: Logger;
    event: (event: LinkEvent) => void;
    /** The Link status's record of each name, read on a first start. */
    recorded: () => readonly GatewayNameStatus[];
    /** What this process knew of each name when its last gateway of this Link stopped (an earlier term as leader). */
    remembered?: ReadonlyMap<string, NameState>;
    /**
     * A name's state or the gateway's liveness changed. `mirrorsChanged`: whether what the
     * mirrors get (addresses, their readiness, liveness) changed with it; a name that starts or
     * stops failing within its stale window, or a note, changes only the Link status.
     */
    changed: (mirrorsChanged: boolean) => void;
    /** A name resolved, changed or not. */
    resolved: (state: NameState) => void;
}

export class LinkGateway {
    private link: Link | undefined;
    private gatewayEntries: GatewayEntry[] = [];
    /** IP literals of gatewayAddress no endpoint may hold: probed only if --probe-allow-cidrs allows. */
    private unpublishedIPs: string[] = [];
    private watcher: GatewayWatcher | undefined;
    private resolver: GatewayResolver | undefined;
    private probe: ProbeWorker | undefined;
    /** Where probes go, or why they may go nowhere, as last told in an Event; outlives a restarted probe. */
    private probeTargetTold: string | undefined;
    /** The probe's spec, the gateway's and its addresses when the probe was last (re)started. */
    private probeKey: string | undefined;

    constructor(private readonly deps: LinkGatewayDeps) {}

    get entries(): readonly GatewayEntry[] {
        return this.gatewayEntries;
    }

    get nameStates(): ReadonlyMap<string, NameState> {
        return this.watcher?.states ?? new Map();
    }

    /** Every hostname has an answer, a failure or a seed: what it publishes can be trusted. */
    get settled(): boolean {
        return this.watcher?.settled ?? true;
    }

    /** Whether the gateway answers its probe; true for a Link that is not probed. */
    get alive(): boolean {
        return this.probe?.alive ?? true;
    }

    /**
     * Follows the Link's new spec: names added and dropped, the probe restarted if its spec or
     * the gateway changed. Returns the gatewayAddress parts left out, and why.
     */
    async update(link: Link): Promise<string[]> {
        const previous = this.link;
        this.link = link;
        const parsed = link.gateway ? parseGatewayAddress(link.spec.gatewayAddress) : { entries: [], errors: [], unpublishedIPs: [] };
        this.gatewayEntries = parsed.entries;
        this.unpublishedIPs = parsed.unpublishedIPs;
        this.watchNames(previous);
        // Rotated credentials or a retried remote watch leave the probe and its liveness as they are.
        const probeKey = JSON.stringify([link.probe, link.gateway, parsed.entries, parsed.unpublishedIPs, link.spec.targetClusterName]);
        const restart = previous === undefined || probeKey !== this.probeKey;
        this.probeKey = probeKey;
        if (restart) await this.restartProbe();
        return parsed.errors;
    }

    /** The gateway addresses a mirror of these families gets now, in endpoints.ts's form. */
    addresses(families: readonly AddressType[], now: number): GatewayAddress[] {
        return mirrorGatewayAddresses(this.gatewayEntries, this.nameStates, families, now, this.deps.policy).map((a) => ({
            address: a.address,
            family: a.family,
            ready: a.ready,
        }));
    }

    /**
     * A new watcher (first start, or new metric labels when the target cluster changed) starts
     * from the previous one's states, else from the Link status.
     */
    private watchNames(previous: Link | undefined): void {
        const names = this.gatewayEntries.flatMap((e) => (e.kind === 'hostname' ? [e.name] : []));
        const relabelled = previous !== undefined && previous.spec.targetClusterName !== this.link!.spec.targetClusterName;
        const seeds = new Map(this.watcher?.states ?? []);
        if (relabelled || names.length === 0) this.stopWatcher(previous);
        if (names.length === 0) return;
        const now = systemClock.now();
        const recorded = new Map(this.deps.recorded().map((entry) => [entry.name, entry]));
        const remembered = this.deps.remembered;
        for (const name of names) {
            if (seeds.has(name)) continue;
            const entry = recorded.get(name);
            const seed = newerSeed(remembered?.get(name), entry && seedNameState(entry, now), now);
            if (seed) seeds.set(name, seed);
        }
        if (!this.watcher) {
            this.resolver = new GatewayResolver({ servers: this.deps.dnsServers, timeoutMs: this.deps.dnsTimeoutMs, tries: this.deps.dnsTries });
            this.watcher = new GatewayWatcher({
                resolver: this.resolver,
                policy: this.deps.policy,
                metrics: this.deps.metrics.dnsObserver(this.labels()),
                onChange: (_name, state, { reach, before, after }) => {
                    for (const event of gatewayNameEvents(before, after, state, this.deps.policy.staleWindowMs)) this.deps.event(event);
                    this.deps.changed(reach === 'mirrors');
                },
                onResolved: (_name, state) => this.deps.resolved(state),
                onError: (name, error) => this.deps.logger.error({ name, err: error }, 'gateway DNS watcher failed'),
            });
        }
        this.watcher.setNames(names, seeds);
    }

    private async restartProbe(): Promise<void> {
        await this.probe?.stop();
        this.probe = undefined;
        const link = this.link!;
        const labels = this.labels();
        this.deps.metrics.gatewayAlive.set(labels, 1);
        if (!link.probe || !link.gateway) return;
        this.probe = new ProbeWorker({
            probe: link.probe,
            override: this.deps.probeOverride,
            allowCidrs: this.deps.probeAllowCidrs,
            targets: () => {
                const all = this.addresses(['IPv4', 'IPv6'], systemClock.now());
                return [...all.filter((a) => a.ready), ...all.filter((a) => !a.ready)].map((a) => a.address).concat(this.unpublishedIPs);
            },
            onTarget: (target) => {
                if ('refused' in target) this.deps.metrics.probes.inc({ ...labels, result: 'refused' });
                const told = 'refused' in target ? target.refused : `http://${hostPort(target.address, link.probe!.port)}${link.probe!.path}`;
                if (told === this.probeTargetTold) return;
                this.probeTargetTold = told;
                if (!('refused' in target)) return this.deps.event(probeTargetEvent(told));
                this.deps.event(probeRefusedEvent(target.refused));
                this.deps.metrics.gatewayAlive.set(labels, 1);
                // Not probed counts as alive: a gateway the probe had found dead comes back.
                this.deps.changed(true);
            },
            onResult: (result) => {
                this.deps.metrics.probes.inc({ ...labels, result: result.ok ? 'success' : 'failure' });
                this.deps.metrics.probeLatency.observe(labels, result.latencyMs / 1000);
            },
            onLiveness: (alive, detail) => {
                this.deps.metrics.gatewayAlive.set(labels, alive ? 1 : 0);
                this.deps.event(probeEvent(alive, detail, link.probe?.failureThreshold ?? 0));
                this.deps.changed(true);
            },
        });
        this.probe.start();
    }

    private labels() {
        return { link: this.deps.name, target_cluster_name: this.link?.spec.targetClusterName ?? '' };
    }

    private stopWatcher(previous: Link | undefined): void {
        this.watcher?.stop();
        this.resolver?.cancel();
        this.watcher = undefined;
        this.resolver = undefined;
        if (previous) this.deps.metrics.forgetLink({ link: this.deps.name, target_cluster_name: previous.spec.targetClusterName });
    }

    /** Returns what it knows of each name, for this Link's gateway in the next term of this process. */
    async stop(): Promise<ReadonlyMap<string, NameState>> {
        await this.probe?.stop();
        const states = this.watcher ? new Map(this.watcher.states) : (this.deps.remembered ?? new Map());
        this.stopWatcher(this.link);
        return states;
    }
}
