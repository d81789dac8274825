// Everything the service mirror runs for one Link: the remote cluster's Services and
// EndpointSlices (through the kubeconfig in the Link's credentials Secret), the DNS watcher of
// its gateway hostnames, and its gateway probe. A Link added, changed or deleted starts,
// replaces or stops its own LinkWatch and no other. It reads, resolves and probes; it never
// writes: what changed is handed to the controller through the hooks.
import { KubeConfig, type V1EndpointSlice, type V1Service } from '@kubernetes/client-node';
import type { AddressType } from '../endpointslice/types.js';
import { LABEL_SERVICE_NAME } from '../endpointslice/slice.js';
import { parseGatewayAddress, type GatewayEntry } from '../dns/gateway-address.js';
import { mirrorGatewayAddresses } from '../dns/gateway-endpoints.js';
import { GatewayWatcher } from '../dns/gateway-watcher.js';
import type { DnsPolicy, NameState } from '../dns/name-state.js';
import { GatewayResolver } from '../dns/resolver.js';
import { Informer } from '../kube/informer.js';
import { logFn, type Logger } from '../kube/log.js';
import { isNotFound, KubeRest } from '../kube/rest.js';
import { EndpointSlices, objectPath, Secrets, Services } from '../kube/resources.js';
import type { KubeObject } from '../kube/store.js';
import type { GatewayAddress } from './endpoints.js';
import { CREDENTIALS_SECRET_KEY, type Link } from './link.js';
import type { ServiceMirrorMetrics } from './metrics.js';
import { ProbeWorker, type ProbeAddressOverride } from './probe.js';

export interface LinkWatchHooks {
    /** A remote Service, or its EndpointSlices, changed. Only called once the caches synced. */
    remoteServiceChanged(namespace: string, name: string): void;
    /**
     * The remote caches hold a full list and every gateway name has an answer or a seed: the
     * mirrors of this Link can be reconciled now.
     */
    synced(): void;
    gatewayNameChanged(name: string, state: NameState): void;
    /** A gateway name resolved, changed or not. */
    gatewayNameResolved(name: string, state: NameState): void;
    livenessChanged(alive: boolean, detail: string): void;
    /** Listing or watching the remote cluster failed (retried with backoff by the informer). */
    remoteFailed(error: string): void;
}

export interface LinkWatchDeps {
    /** Reads the credentials Secret on the local cluster. */
    localRest: KubeRest;
    newRemoteRest?: (kubeConfig: KubeConfig) => KubeRest;
    dnsServers?: string[];
    dnsTimeoutMs?: number;
    dnsTries?: number;
    dnsPolicy: DnsPolicy;
    probeOverride?: ProbeAddressOverride;
    metrics: ServiceMirrorMetrics;
    logger: Logger;
    resyncMs?: number;
}

/** The Link cannot be served as written (missing Secret, bad kubeconfig); retried later. */
export class LinkSetupError extends Error {
    constructor(
        readonly reason: string,
        message: string,
    ) {
        super(message);
    }
}

type RemoteService = V1Service & KubeObject;
type RemoteSlice = V1EndpointSlice & KubeObject;

export class LinkWatch {
    readonly services: Informer<RemoteService>;
    readonly slices: Informer<RemoteSlice>;
    /** Parsed gatewayAddress; `errors` are reported once by the controller. */
    readonly entries: GatewayEntry[];
    readonly gatewayErrors: string[];
    readonly startedAt = Date.now();
    private readonly dns: GatewayWatcher | undefined;
    private readonly resolver: GatewayResolver | undefined;
    private readonly probe: ProbeWorker | undefined;
    private stopped = false;
    private cachesSynced = false;
    private toldSynced = false;

    private constructor(
        readonly link: Link,
        /** The Link uid, credentials version and spec this watch serves: a different one means restart. */
        readonly specKey: string,
        private readonly remote: KubeRest,
        private readonly deps: LinkWatchDeps,
        private readonly hooks: LinkWatchHooks,
        seeds: ReadonlyMap<string, NameState>,
    ) {
        const log = deps.logger.child({ link: link.metadata.name, cluster: link.spec.targetClusterName });
        const logToLog = logFn(log);
        // A remote that cannot be read (bad token, unreachable apiserver) would otherwise show
        // only in our logs; the informer retries, the Link's users get an Event.
        const informerLog: typeof logToLog = (level, msg, fields) => {
            logToLog(level, msg, fields);
            if (level === 'warn' && !this.stopped && typeof fields?.error === 'string') hooks.remoteFailed(fields.error);
        };
        const common = { resyncMs: deps.resyncMs, log: informerLog };
        this.services = new Informer(remote, { resource: Services, ...common });
        this.slices = new Informer(remote, { resource: EndpointSlices, ...common });
        this.slices.store.indexLabel(LABEL_SERVICE_NAME);
        this.registerHandlers();

        const parsed = link.gateway ? parseGatewayAddress(link.spec.gatewayAddress) : { entries: [], errors: [] };
        this.entries = parsed.entries;
        this.gatewayErrors = parsed.errors;
        const names = this.entries.flatMap((e) => (e.kind === 'hostname' ? [e.name] : []));
        const labels = { link: link.metadata.name, target_cluster_name: link.spec.targetClusterName };
        if (names.length > 0) {
            this.resolver = new GatewayResolver({ servers: deps.dnsServers, timeoutMs: deps.dnsTimeoutMs, tries: deps.dnsTries });
            this.dns = new GatewayWatcher({
                resolver: this.resolver,
                policy: deps.dnsPolicy,
                metrics: deps.metrics.dnsObserver(labels),
                onChange: (name, state) => {
                    hooks.gatewayNameChanged(name, state);
                    this.maybeSynced();
                },
                onResolved: (name, state) => hooks.gatewayNameResolved(name, state),
                onError: (name, error) => log.error({ name, err: error }, 'gateway DNS watcher failed'),
            });
            this.dns.setNames(names, seeds);
        }
        deps.metrics.gatewayAlive.set(labels, 1);
        if (link.probe && link.gateway) {
            this.probe = new ProbeWorker({
                probe: link.probe,
                override: deps.probeOverride,
                target: () => this.probeTarget(),
                onResult: (result) => {
                    deps.metrics.probes.inc({ ...labels, result: result.ok ? 'success' : 'failure' });
                    deps.metrics.probeLatency.observe(labels, result.latencyMs / 1000);
                },
                onLiveness: (alive, detail) => {
                    deps.metrics.gatewayAlive.set(labels, alive ? 1 : 0);
                    hooks.livenessChanged(alive, detail);
                },
            });
        }
    }

    /**
     * Loads the Link's credentials and starts watching; throws LinkSetupError when it cannot.
     * Gateway names start from `seeds`: what is known of them from before this watch.
     */
    static async start(
        link: Link,
        specKey: string,
        deps: LinkWatchDeps,
        hooks: LinkWatchHooks,
        seeds: ReadonlyMap<string, NameState>,
    ): Promise<LinkWatch> {
        const kubeConfig = await loadCredentials(link, deps.localRest);
        const remote = deps.newRemoteRest ? deps.newRemoteRest(kubeConfig) : new KubeRest(kubeConfig);
        const watch = new LinkWatch(link, specKey, remote, deps, hooks, seeds);
        watch.run();
        return watch;
    }

    /** Whether the mirrors can be planned: see LinkWatchHooks.synced. */
    get synced(): boolean {
        return this.cachesSynced && (this.dns?.settled ?? true);
    }

    /** Whether the gateway answers its probe; true for a Link that is not probed. */
    get gatewayAlive(): boolean {
        return this.probe?.alive ?? true;
    }

    get probed(): boolean {
        return this.probe !== undefined;
    }

    get nameStates(): ReadonlyMap<string, NameState> {
        return this.dns?.states ?? new Map();
    }

    /** The gateway addresses a mirror of these families gets now, in endpoints.ts's form. */
    gatewayAddresses(families: readonly AddressType[], now: number): GatewayAddress[] {
        return mirrorGatewayAddresses(this.entries, this.nameStates, families, now, this.deps.dnsPolicy).map((a) => ({
            address: a.address,
            family: a.family === 'IPv6' ? 6 : 4,
            ready: a.ready,
        }));
    }

    private probeTarget(): string | undefined {
        const all = mirrorGatewayAddresses(this.entries, this.nameStates, ['IPv4', 'IPv6'], Date.now(), this.deps.dnsPolicy);
        return (all.find((a) => a.ready) ?? all[0])?.address;
    }

    private run(): void {
        this.services.start();
        this.slices.start();
        this.probe?.start();
        void Promise.all([this.services.synced, this.slices.synced]).then(() => {
            this.cachesSynced = true;
            this.maybeSynced();
        });
    }

    private maybeSynced(): void {
        if (this.stopped || this.toldSynced || !this.synced) return;
        this.toldSynced = true;
        this.hooks.synced();
    }

    private registerHandlers(): void {
        const service = (svc: RemoteService) => {
            if (this.synced) this.hooks.remoteServiceChanged(svc.metadata!.namespace!, svc.metadata!.name!);
        };
        this.services.on({ add: service, update: (_, svc) => service(svc), delete: service });
        // Slices only matter for whether the remote Service has a ready endpoint.
        const slice = (s: RemoteSlice) => {
            const name = s.metadata?.labels?.[LABEL_SERVICE_NAME];
            if (name && this.synced && this.services.store.get(s.metadata?.namespace, name)) {
                this.hooks.remoteServiceChanged(s.metadata!.namespace!, name);
            }
        };
        this.slices.on({ add: slice, update: (_, s) => slice(s), delete: slice });
    }

    async stop(): Promise<void> {
        this.stopped = true;
        this.dns?.stop();
        this.resolver?.cancel();
        await Promise.all([this.services.stop(), this.slices.stop(), this.probe?.stop()]);
        this.remote.close();
        this.deps.metrics.forgetLink({ link: this.link.metadata.name, target_cluster_name: this.link.spec.targetClusterName });
    }
}

async function loadCredentials(link: Link, rest: KubeRest): Promise<KubeConfig> {
    const name = link.spec.clusterCredentialsSecret;
    const where = `${link.metadata.namespace}/${name}`;
    if (name === '') throw new LinkSetupError('MissingCredentials', 'spec.clusterCredentialsSecret is empty');
    let secret: { data?: Record<string, string> };
    try {
        secret = await rest.get(objectPath(Secrets, link.metadata.namespace, name));
    } catch (err) {
        if (isNotFound(err)) throw new LinkSetupError('MissingCredentials', `credentials Secret ${where} not found`);
        throw err;
    }
    const encoded = secret.data?.[CREDENTIALS_SECRET_KEY];
    if (!encoded) throw new LinkSetupError('InvalidCredentials', `credentials Secret ${where} has no key ${CREDENTIALS_SECRET_KEY}`);
    const kubeConfig = new KubeConfig();
    try {
        kubeConfig.loadFromString(Buffer.from(encoded, 'base64').toString('utf8'));
    } catch (err) {
        throw new LinkSetupError('InvalidCredentials', `credentials Secret ${where}: key ${CREDENTIALS_SECRET_KEY} is not a kubeconfig: ${(err as Error).message}`);
    }
    if (!kubeConfig.getCurrentCluster()) throw new LinkSetupError('InvalidCredentials', `credentials Secret ${where}: the kubeconfig has no current cluster`);
    return kubeConfig;
}
