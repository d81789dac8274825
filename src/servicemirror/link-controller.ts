// Everything of one Link, in one object (Linkerd's shape: a cluster watcher per Link): its
// remote cluster's caches (RemoteWatch, replaced when the spec or credentials change), its
// gateway (LinkGateway: the names' DNS state, kept across those replacements and seeded from
// the Link status when this process starts leading, and the probe), its status, its Events
// and metric labels, and its work (mirrors, status) on the reconciler runtime. It exists while
// its replica leads. It reads the caches it is handed and calls nothing of its parent's: the
// parent decides which Link serves a cluster and when a cluster's mirrors go.
//
// No mirror is planned until the remote caches have synced and every gateway name has an
// answer or a seed: planning earlier would delete or empty what is still true.
import type { KubeConfig } from '../kube/kubeconfig.js';
import type { DnsPolicy, NameState } from '../dns/name-state.js';
import { Controller, type ReconcileResult } from '../kube/controller.js';
import { logFn, type Logger } from '../kube/log.js';
import { controllerRateLimiter } from '../kube/ratelimit.js';
import type { KubeRest } from '../kube/rest.js';
import type { KubeObject, ObjectStore } from '../kube/store.js';
import type { ControllerDeps } from '../kube/manager.js';
import type { CompactService } from './cache/compact.js';
import { CLUSTER_NAME_LABEL, namesLink } from './api/keys.js';
import type { LinkEvent } from './link/gateway-events.js';
import { formatDuration } from '../time/duration.js';
import { parseLink, type Link, type LinkStatus } from './api/link.js';
import { LinkStatusBook } from './link/link-status.js';
import type { ServiceMirrorMetrics } from './link/metrics.js';
import type { FederationController } from './federation-controller.js';
import { mirroredRemoteName } from './plan/headless.js';
import { exportMode } from './plan/mirror.js';
import { isEmptySelector } from './api/selector.js';
import { DEFAULT_MAX_MIRRORS_PER_LINK, exportRank, MirrorLimit } from './plan/mirror-limit.js';
import { remoteFailureReason, type RemoteHealth } from './plan/status.js';
import type { MirrorSync } from './write/mirror-sync.js';
import type { ProbeCidr } from '../ip/probe-target.js';
import type { ProbeAddressOverride } from '../net/probe.js';
import { LinkGateway } from './link/link-gateway.js';
import { LinkSetupError, REMOTE_OBJECT_MAX_BYTES, RemoteWatch } from './link/remote-watch.js';
import type { CredentialsProblem } from './link/credentials.js';
import type { KubeconfigPolicy } from '../kube/untrusted-kubeconfig.js';
import { systemClock } from '../time/clock.js';
import type { ClusterSet, RemoteCluster, RemoteObjectRef } from './mcs/clusterset.js';

/** A unit of a Link's work: the mirror of one remote Service, or the Link's status. */
export type LinkWork = { kind: 'mirror'; namespace: string; name: string } | { kind: 'status' } | { kind: 'unserved' };
/** LinkWork as the runtime holds it (a key must be a string). */
type LinkWorkKey = string & { readonly linkWork: unique symbol };
const workKey = (work: LinkWork) => JSON.stringify(work) as LinkWorkKey;
const STATUS_WORK = workKey({ kind: 'status' });
const UNSERVED_WORK = workKey({ kind: 'unserved' });
// A name per Link: one Link's thousand mirrors do not wait behind another's, and the series
// are as many as Links, like the Link metrics'. "link/": a Link named "mcs" is not MCS's queue.
const workName = (link: string) => `service-mirror/link/${link}`;

type LinkObject = KubeObject & { status?: LinkStatus };

/** LinkConfig's defaults: a Link not served yet is tried again this often; status changes within this window are one write; workers per Link. */
const DEFAULT_LINK_RETRY_MS = 10_000;
const DEFAULT_STATUS_DELAY_MS = 500;
const DEFAULT_LINK_WORKERS = 2;

/**
 * The service mirror's settings a Link's controller reads: ServiceMirrorOptions extends it, so
 * the process's options reach every Link as given, not copied field by field.
 */
export interface LinkConfig extends ControllerDeps {
    /** Namespace of the Links (and their credentials Secrets) this process serves. */
    namespace: string;
    /** "host:port" DNS servers for gateway names; the system's when absent. */
    dnsServers?: string[];
    /** Per-try DNS timeout and tries (c-ares); a black-holed server fails after about their product. */
    dnsTimeoutMs?: number;
    dnsTries?: number;
    probeAddressOverride?: ProbeAddressOverride;
    /** Refused probe targets allowed all the same (--probe-allow-cidrs). */
    probeAllowCidrs?: readonly ProbeCidr[];
    /** Workers per Link. */
    workers?: number;
    /** Retry of a Link that cannot be served yet (missing Secret, unreadable kubeconfig). */
    linkRetryMs?: number;
    /** Changes within this window produce one Link status write. */
    statusDelayMs?: number;
    newRemoteRest?: (kubeConfig: KubeConfig) => KubeRest;
    /** --allow-kubeconfig-exec and --allow-insecure-remote-tls: what a credentials kubeconfig may hold beyond inline material. */
    credentialsPolicy?: KubeconfigPolicy;
    /** Linkerd's --enable-headless-services (off by default, as there): the remote slices' hostnames matter. */
    enableHeadlessServices?: boolean;
    /** --max-mirrors-per-link: past it a Link mirrors its oldest exports only (mirror-limit.ts). */
    maxMirrorsPerLink?: number;
}

/** What every Link's controller shares, built once by the service mirror. */
export interface LinkOptions {
    config: LinkConfig;
    /** The Links of the namespace as cached: each one's status and Events. */
    links: ObjectStore<LinkObject>;
    /** The credentials Secrets as cached: a new resourceVersion is new credentials. */
    secrets: ObjectStore<KubeObject>;
    /** The local mirror Services, indexed by cluster name: those whose remote Service is gone converge too. */
    localMirrors: ObjectStore<CompactService>;
    mirrors: MirrorSync;
    metrics: ServiceMirrorMetrics;
    logger: Logger;
    /** The DNS policy, defaults filled in. */
    policy: DnsPolicy;
    /** Told of each Link's remote Services: federated Services span Links. */
    federation?: Pick<FederationController, 'remoteChanged' | 'linkReady' | 'linkStopped'>;
    /** Where each Link's remote cluster is published, with its ServiceExports, Services and gateway, when MCS is served. */
    clusterSet?: ClusterSet;
}

export class LinkController {
    private link: Link | undefined;
    private remote: RemoteWatch | undefined;
    private readonly gateway: LinkGateway;
    private readonly status: LinkStatusBook;
    private readonly work: Controller<LinkWorkKey>;
    private readonly log: Logger;
    /** Whether the remote can be read; undefined until its first list. */
    private remoteHealth: RemoteHealth | undefined;
    /** Whether the credentials were loaded (null) or why not; undefined until tried. */
    private credentials: CredentialsProblem | null | undefined;
    /** Since when the Link cannot be served (invalid, duplicate, remote watch cannot start). */
    private unservedSince: number | undefined;
    /** Whether the mirrors were queued since the current remote watch became ready. */
    private toldReady = false;
    /**
     * Mirrors queued by the last full convergence and not synced once since: the status counts
     * what the syncs report, so until they have all run a new leader would write a partial count
     * (and then the full one) over a status that was right all along.
     */
    private converging: Set<LinkWorkKey> | undefined;
    /** The exports of the current remote watch and those the mirror limit admits. */
    private readonly limit: MirrorLimit;

    private readonly config: LinkConfig;

    /** `gatewayMemory`: its gateway names' states as this process's last controller of the Link stopped (see LinkGateway). */
    constructor(
        private readonly opts: LinkOptions,
        readonly name: string,
        gatewayMemory?: ReadonlyMap<string, NameState>,
    ) {
        const config = (this.config = opts.config);
        this.limit = new MirrorLimit(config.maxMirrorsPerLink ?? DEFAULT_MAX_MIRRORS_PER_LINK);
        this.log = opts.logger.child({ link: name });
        this.status = new LinkStatusBook({
            rest: config.rest,
            namespace: config.namespace,
            name: name,
            stored: () => this.stored(),
            isLeader: config.isLeader,
            policy: opts.policy,
            event: (event) => this.event(event),
            written: () => opts.metrics.statusWrites.inc({ link: name }),
            logger: this.log,
        });
        this.gateway = new LinkGateway({
            name: name,
            policy: opts.policy,
            dnsServers: config.dnsServers,
            dnsTimeoutMs: config.dnsTimeoutMs,
            dnsTries: config.dnsTries,
            probeOverride: config.probeAddressOverride,
            probeAllowCidrs: config.probeAllowCidrs,
            metrics: opts.metrics,
            logger: this.log,
            event: (event) => this.event(event),
            recorded: () => this.stored()?.status?.gatewayResolution ?? [],
            remembered: gatewayMemory,
            changed: (mirrorsChanged) => this.onGatewayChanged(mirrorsChanged),
            resolved: (state) => this.status.recordDue(state) && this.queueStatus(),
        });
        this.work = new Controller<LinkWorkKey>({
            name: workName(name),
            reconciler: { reconcile: (key) => this.sync(JSON.parse(key) as LinkWork), eventTarget: () => this.stored() },
            workers: config.workers ?? DEFAULT_LINK_WORKERS,
            rateLimiter: controllerRateLimiter({ baseMs: 250, maxMs: 300_000 }),
            metrics: config.queueMetrics,
            events: config.events,
            log: this.log,
            resyncMs: config.resyncMs,
        });
        this.work.start([]); // its life is a term
    }

    /** The cluster of the Link as last parsed, served or not. */
    get linkedCluster(): string | undefined {
        return this.link?.spec.targetClusterName;
    }

    /** The cluster whose mirrors this controller serves now (its remote watch runs). */
    get servedCluster(): string | undefined {
        return this.remote ? this.link?.spec.targetClusterName : undefined;
    }

    get remoteWatch(): RemoteWatch | undefined {
        return this.remote;
    }

    /** The remote as its mirrors, the federated Services and MCS read it, once it can be trusted (ready). */
    get readableRemote(): RemoteCluster | undefined {
        const [link, remote] = [this.link, this.remote];
        if (!link || !remote || !this.ready) return undefined;
        return {
            link,
            services: remote.services.store,
            slices: remote.slices.store,
            exports: remote.exportsKnown ? remote.exports?.store : undefined,
            gatewayAddresses: (families, now) => this.gateway.addresses(families, now),
            gatewayAlive: this.gateway.alive,
            admitted: (namespace, name) => this.limit.admitted(`${namespace}/${name}`),
        };
    }

    /** Whether the mirrors can be planned: remote caches synced, every gateway name settled. */
    get ready(): boolean {
        return (this.remote?.synced ?? false) && this.gateway.settled;
    }

    get nameStates(): ReadonlyMap<string, NameState> {
        return this.gateway.nameStates;
    }

    /**
     * Brings the watches in line with the Link as cached now; while `holder` (another Link) has
     * the cluster, it is waited for. Asks to run again while it may pass.
     */
    async reconcile(obj: KubeObject, holder: string | undefined): Promise<ReconcileResult> {
        const parsed = parseLink(obj);
        if ('error' in parsed) {
            // Mirrors are kept: a typo in a Link must not take every mirrored Service away.
            this.event({ type: 'Warning', reason: 'InvalidLink', message: `Link not served: ${parsed.error}` });
            await this.stopRemote();
            this.unserved();
            return;
        }
        const link = parsed.link;
        // A new uid (deleted and created again), a new spec or new credentials: a new remote watch.
        const secret = this.opts.secrets.get(this.config.namespace, link.spec.clusterCredentialsSecret)?.metadata?.resourceVersion ?? 'none';
        const specKey = `${obj.metadata?.uid} ${secret} ${JSON.stringify((obj as { spec?: unknown }).spec)}`;
        if (this.remote?.specKey === specKey) return;
        for (const warning of parsed.warnings) this.event({ type: 'Warning', reason: 'InvalidSelector', message: warning });
        const cluster = link.spec.targetClusterName;
        const retry = { requeueAfterMs: (this.config.linkRetryMs ?? DEFAULT_LINK_RETRY_MS) };
        if (holder) {
            this.event({ type: 'Warning', reason: 'DuplicateTargetCluster', message: `Link ${holder} already mirrors cluster ${JSON.stringify(cluster)}; this Link waits until it is gone` });
            await this.stopRemote();
            this.unserved();
            return retry;
        }
        const restarted = this.remote !== undefined;
        await this.stopRemote();
        this.link = link;
        const gatewayErrors = await this.gateway.update(link);
        try {
            this.remote = await RemoteWatch.start(link, specKey, this.config.rest, this.remoteHooks(), {
                log: logFn(this.log),
                resyncMs: this.config.resyncMs,
                newRemoteRest: this.config.newRemoteRest,
                // An MCS import copies the remote's own endpoints on a flat network (no gateway) and
                // for the Services the Link exports in remote-discovery mode.
                hostnames: this.config.enableHeadlessServices || (this.opts.clusterSet !== undefined && (link.gateway === null || !isEmptySelector(link.spec.remoteDiscoverySelector))),
                serviceExports: this.opts.clusterSet !== undefined,
                credentialsPolicy: this.config.credentialsPolicy,
            });
        } catch (err) {
            this.unserved();
            if (err instanceof LinkSetupError && err.problem.refused) {
                // Nothing changes until the Secret, the Link or the flags do: those reconcile again.
                this.credentials = err.problem;
                this.event({ type: 'Warning', reason: err.reason, message: `Link not served: ${err.message}` });
                this.work.add(STATUS_WORK);
                return;
            }
            if (err instanceof LinkSetupError) {
                this.credentials = err.problem;
                this.work.add(STATUS_WORK);
            }
            const reason = err instanceof LinkSetupError ? err.reason : 'RemoteWatchFailed';
            const message = `cannot watch cluster ${JSON.stringify(cluster)}: ${(err as Error).message}; retrying every ${formatDuration((this.config.linkRetryMs ?? DEFAULT_LINK_RETRY_MS))}`;
            this.event({ type: 'Warning', reason, message });
            return retry;
        }
        this.credentials = null;
        this.unservedSince = undefined; // a withdrawal still queued finds nothing to do
        this.opts.metrics.remoteWatches.inc();
        for (const error of gatewayErrors) this.event({ type: 'Warning', reason: 'InvalidGatewayAddress', message: error });
        this.log.info({ cluster, restarted }, 'watching remote cluster');
    }

    /**
     * The Link cannot be served: its mirrors keep what they have for the stale window, like the
     * addresses of a failing gateway name, and are then made not ready, never left ready forever.
     */
    private unserved(): void {
        if (this.unservedSince !== undefined) return;
        this.unservedSince = systemClock.now();
        this.work.addAfter(UNSERVED_WORK, this.opts.policy.staleWindowMs + 1);
    }

    /** Past the stale window of an unserved Link: every endpoint of its mirrors not ready. */
    private async withdrawReadiness(): Promise<ReconcileResult> {
        if (this.unservedSince === undefined) return;
        // Queued for an earlier term of being unserved (served in between): the window runs on.
        const dueMs = this.unservedSince + this.opts.policy.staleWindowMs + 1 - systemClock.now();
        if (dueMs > 0) return { requeueAfterMs: dueMs };
        if ((await this.opts.mirrors.withdrawReadiness(this.mirrorsOfLink())) === 0) return;
        this.event({ type: 'Warning', reason: 'MirrorsNotReady', message: `the Link has not been served for longer than ${formatDuration(this.opts.policy.staleWindowMs)}: every endpoint of its mirrors is not ready until it is` });
    }

    /** Local mirror Services that name this Link as theirs. */
    private mirrorsOfLink(): CompactService[] {
        return this.opts.localMirrors.list().filter((svc) => namesLink(svc, this.config.namespace, this.name));
    }

    private remoteHooks() {
        return {
            serviceChanged: (namespace: string, name: string, what: RemoteObjectRef['kind']) => {
                this.rankExport(namespace, name);
                this.add({ kind: 'mirror', namespace, name });
                if (this.link) this.opts.federation?.remoteChanged(this.link, namespace, name);
                this.remoteObjectChanged(namespace, name, what);
            },
            exportChanged: (namespace: string, name: string) => this.remoteObjectChanged(namespace, name, 'export'),
            exportsSynced: () => this.publishRemote(),
            synced: () => {
                if (!this.remoteHealth) {
                    this.remoteHealth = { readable: true, since: systemClock.now() };
                    this.opts.metrics.remoteReadable.set(this.labels(), 1);
                }
                this.maybeReady();
            },
            health: (error: string | undefined) => this.onRemoteHealth(error),
            oversized: (kind: string, object: { namespace?: string; name?: string }, chars: number) =>
                this.event({
                    type: 'Warning',
                    reason: 'RemoteObjectTooLarge',
                    message: `remote ${kind} ${object.namespace ?? ''}/${object.name ?? '(unnamed)'} is ${chars} bytes, more than the ${REMOTE_OBJECT_MAX_BYTES} a remote object may have: not cached, so not mirrored`,
                }),
        };
    }

    /**
     * The remote became unreadable, failed another way, or is readable again: status, Event,
     * metric, once per change. Mirrors stay as they are.
     */
    private onRemoteHealth(error: string | undefined): void {
        const before = this.remoteHealth;
        if (error !== undefined && before?.readable === false && remoteFailureReason(error) === remoteFailureReason(before.error ?? '')) return;
        const since = before?.readable === (error === undefined) ? before.since : systemClock.now();
        this.remoteHealth = error === undefined ? { readable: true, since } : { readable: false, since, error };
        this.opts.metrics.remoteReadable.set(this.labels(), error === undefined ? 1 : 0);
        if (error === undefined) {
            this.event({ type: 'Normal', reason: 'RemoteClusterReadable', message: 'the remote cluster can be read again; converging every mirror' });
            this.enqueueMirrors(true);
        } else {
            this.event({ type: 'Warning', reason: 'RemoteClusterUnreachable', message: `reading the remote cluster failed: ${error}; mirrors stay as they are, retrying` });
        }
        this.work.add(STATUS_WORK);
    }

    /**
     * A gateway name or the probe changed: the status says so, and when what the mirrors get
     * changed, their slices are rewritten. A transient DNS error within the stale window changes
     * only the status: syncing every mirror of the Link for it wrote nothing, at ~2 ms of CPU per
     * mirror, each time the name started or stopped failing (frequent on a loaded machine).
     */
    private onGatewayChanged(mirrorsChanged: boolean): void {
        if (mirrorsChanged) {
            this.enqueueMirrors(false);
            this.publishRemote();
        }
        this.queueStatus();
        this.maybeReady();
    }

    /** What MCS can read of the remote now, told to the ClusterSet (a change of its membership). */
    private publishRemote(): void {
        this.opts.clusterSet?.publish(this.name, this.readableRemote);
    }

    private remoteObjectChanged(namespace: string, name: string, kind: RemoteObjectRef['kind']): void {
        const cluster = this.link?.spec.targetClusterName;
        if (cluster) this.opts.clusterSet?.changed({ cluster, namespace, name, kind });
    }

    private maybeReady(): void {
        if (this.toldReady || !this.ready) return;
        this.toldReady = true;
        this.enqueueMirrors(true);
        this.publishRemote();
    }

    /**
     * The remote Service changed: its place among the exports the mirror limit admits, and the
     * mirrors of the others whose admission changed with it queued.
     */
    private rankExport(namespace: string, name: string): void {
        const [link, remote] = [this.link, this.remote];
        if (!link || !remote) return;
        const wasReached = this.limit.reached;
        const svc = remote.services.store.get(namespace, name);
        for (const other of this.limit.set(`${namespace}/${name}`, svc && exportRank(svc, link))) {
            const [ns, n] = other.split('/') as [string, string];
            this.add({ kind: 'mirror', namespace: ns, name: n });
        }
        if (wasReached || this.limit.reached) this.queueStatus();
    }

    /** Queues every mirror of the Link (all), or those the gateway's addresses feed. */
    enqueueMirrors(all: boolean): void {
        const [link, remote] = [this.link, this.remote];
        if (!link || !remote || !this.ready) return;
        if (all) {
            // Ranked anew from the whole cache, oldest first, so the admitted set does not depend on arrival order.
            this.limit.clear();
            const ranked = remote.services.store.list().flatMap((svc) => {
                const rank = exportRank(svc, link);
                return rank === undefined ? [] : [[`${svc.metadata!.namespace}/${svc.metadata!.name}`, rank] as const];
            });
            for (const [key, rank] of ranked.sort(([, a], [, b]) => (a < b ? -1 : a > b ? 1 : 0))) this.limit.set(key, rank);
        }
        const queued = new Set<LinkWorkKey>();
        const add = (namespace: string, name: string) => queued.add(this.add({ kind: 'mirror', namespace, name }));
        for (const svc of remote.services.store.list()) {
            if (all || exportMode(svc, link) === 'mirror') add(svc.metadata!.namespace!, svc.metadata!.name!);
        }
        if (!all) return;
        const cluster = link.spec.targetClusterName;
        for (const local of this.opts.localMirrors.byLabel(CLUSTER_NAME_LABEL, cluster)) {
            const name = mirroredRemoteName(local.metadata!.name!, local.metadata?.labels, cluster);
            if (name) add(local.metadata!.namespace!, name);
        }
        this.converging = queued.size > 0 ? queued : undefined;
        this.opts.federation?.linkReady(this.readableRemote!);
        this.work.add(STATUS_WORK);
    }

    /** Queues the mirror of the remote Service that the local mirror `name` (with these labels) stands for. */
    enqueueLocalMirror(namespace: string, name: string, labels: Record<string, string> | undefined, delayMs = 0): void {
        const cluster = this.servedCluster;
        const remote = cluster ? mirroredRemoteName(name, labels, cluster) : null;
        if (remote) this.work.addAfter(workKey({ kind: 'mirror', namespace, name: remote }), delayMs);
    }

    /** Queues the mirrors of one namespace (it was just created). */
    enqueueNamespace(namespace: string): void {
        if (!this.ready) return;
        for (const svc of this.remote!.services.store.list(namespace)) this.add({ kind: 'mirror', namespace, name: svc.metadata!.name! });
    }

    private add(work: LinkWork): LinkWorkKey {
        const key = workKey(work);
        this.work.add(key);
        return key;
    }

    private queueStatus(): void {
        this.work.addAfter(STATUS_WORK, this.config.statusDelayMs ?? DEFAULT_STATUS_DELAY_MS);
    }

    /** Throws to be retried; a NotLeaderError too, in case the late renew succeeds (a lost term stops this controller). */
    private async sync(work: LinkWork): Promise<ReconcileResult> {
        if (work.kind === 'mirror') return this.syncMirror(work.namespace, work.name);
        if (work.kind === 'unserved') return this.withdrawReadiness();
        await this.status.write({
            complete: this.ready && this.converging === undefined,
            entries: this.link?.gateway ? this.gateway.entries : undefined,
            nameStates: this.nameStates,
            remote: this.remoteHealth,
            credentials: this.credentials,
            limit: { max: this.limit.max, exported: this.limit.exported },
        });
    }

    private async syncMirror(namespace: string, name: string): Promise<void> {
        const source = this.readableRemote;
        if (!source) return; // queued again once ready
        try {
            const outcome = await this.opts.mirrors.sync(source, namespace, name);
            if (this.status.record(outcome, `${namespace}/${name}`)) {
                this.opts.metrics.mirroredServices.set(this.labels(), this.status.mirrored);
                this.queueStatus();
            }
        } finally {
            this.converged(namespace, name);
        }
    }

    /** A mirror of the full convergence was synced (or tried once): the status waits for the last. */
    private converged(namespace: string, name: string): void {
        if (!this.converging?.delete(workKey({ kind: 'mirror', namespace, name })) || this.converging.size > 0) return;
        this.converging = undefined;
        this.work.add(STATUS_WORK);
    }

    private labels() {
        return { link: this.name, target_cluster_name: this.link?.spec.targetClusterName ?? '' };
    }

    private stored(): LinkObject | undefined {
        return this.opts.links.get(this.config.namespace, this.name);
    }

    /** An Event on the Link as cached. */
    event(event: LinkEvent): void {
        const obj = this.stored();
        if (obj) this.config.events.record(obj, event.type, event.reason, event.message);
    }

    private async stopRemote(): Promise<void> {
        const remote = this.remote;
        if (!remote) return;
        this.remote = undefined;
        this.toldReady = false;
        this.converging = undefined;
        this.remoteHealth = undefined;
        this.limit.clear();
        this.opts.metrics.remoteWatches.dec();
        await remote.stop();
        // Its federated members are kept while it restarts, dropped if the Link is gone.
        this.opts.federation?.linkStopped();
        this.publishRemote();
    }

    /**
     * Stops every watch, the probe and the work in hand; mirrors stay as they are. `linkGone`: the
     * work's series go too, else they stay for the next term, counting on (no reset at each failover).
     * Returns the gateway names' states, for the Link's next controller (gatewayMemory).
     */
    async stop(linkGone = false): Promise<ReadonlyMap<string, NameState>> {
        await this.work.stop();
        const [, gatewayMemory] = await Promise.all([this.stopRemote(), this.gateway.stop()]);
        this.opts.metrics.forgetLink(this.labels());
        if (linkGone) this.config.queueMetrics.forget(workName(this.name));
        this.log.info({ cluster: this.link?.spec.targetClusterName }, 'stopped watching remote cluster');
        return gatewayMemory;
    }
}
