// One Link's lifetime (Linkerd's shape: a cluster watcher per Link): its remote cluster's
// caches (RemoteWatch, replaced when the spec or credentials change), its gateway (LinkGateway:
// the names' DNS state, kept across those replacements and seeded from the Link status when this
// process starts leading, and the probe), the remote's health, its credentials, its Events and
// metric labels, and the one view of its remote the mirrors, the federated Services and MCS
// read. Its work runs on the reconciler runtime: its mirrors on a queue of its own
// (link-mirrors.ts), its status and the withdrawal of an unserved Link's readiness on the
// Links' shared queues (link-work.ts), which read what this observes. It exists while
// its replica leads. It calls nothing of its parent's: the parent decides which Link serves a
// cluster and when a cluster's mirrors go.
//
// No mirror is planned until the remote caches have synced and every gateway name has an
// answer or a seed: planning earlier would delete or empty what is still true.
import type { NameState } from '../dns/name-state.js';
import type { ReconcileResult } from '../kube/controller.js';
import { logFn, type Logger } from '../kube/log.js';
import type { KubeObject } from '../kube/store.js';
import type { LinkEvent } from './link/gateway-events.js';
import { formatDuration } from '../time/duration.js';
import { parseLink, type Link } from './api/link.js';
import { LinkStatusBook, type LinkStatusSource } from './link/link-status.js';
import { isEmptySelector } from './api/selector.js';
import type { RemoteHealth } from './plan/status.js';
import { LinkGateway } from './link/link-gateway.js';
import { LinkSetupError, REMOTE_OBJECT_MAX_BYTES, RemoteWatch } from './link/remote-watch.js';
import type { CredentialsProblem } from './link/credentials.js';
import { systemClock } from '../time/clock.js';
import type { RemoteCluster } from './mcs/clusterset.js';
import { LinkMirrors } from './link-mirrors.js';
import { DEFAULT_LINK_RETRY_MS, DEFAULT_STATUS_DELAY_MS, type LinkConfig, type LinkName, type LinkObject, type LinkOptions } from './link-options.js';

export class LinkController {
    private link: Link | undefined;
    private remote: RemoteWatch | undefined;
    private readonly gateway: LinkGateway;
    /** The outcome of each mirror's last sync, and the writer of the Link status. */
    readonly status: LinkStatusBook;
    /** Its mirrors' queue (link-mirrors.ts). */
    readonly mirrors: LinkMirrors;
    private readonly log: Logger;
    /** Whether the credentials were loaded (null) or why not; undefined until tried. */
    private credentials: CredentialsProblem | null | undefined;
    /** Since when the Link cannot be served (invalid, duplicate, remote watch cannot start). */
    private unservedAt: number | undefined;
    /** Whether the mirrors were queued since the current remote watch became ready. */
    private toldReady = false;

    private readonly config: LinkConfig;

    /** `gatewayMemory`: its gateway names' states as this process's last controller of the Link stopped (see LinkGateway). */
    constructor(
        private readonly opts: LinkOptions,
        readonly name: LinkName,
        gatewayMemory?: ReadonlyMap<string, NameState>,
    ) {
        const config = (this.config = opts.config);
        this.log = opts.logger.child({ link: name });
        this.status = new LinkStatusBook({
            rest: config.rest,
            namespace: config.namespace,
            name: name,
            stored: () => this.stored(),
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
            resolved: (state) => this.status.recordDue(state) && this.statusChanged(false),
        });
        this.mirrors = new LinkMirrors({
            opts,
            name,
            remote: () => this.readableRemote,
            watched: () => this.remote && this.link && { link: this.link, services: this.remote.services.store },
            status: this.status,
            statusChanged: (now) => this.statusChanged(now),
            stored: () => this.stored(),
            labels: () => this.labels(),
            log: this.log,
        });
    }

    /** The cluster of the Link as last parsed, served or not. */
    get linkedCluster(): string | undefined {
        return this.link?.spec.targetClusterName;
    }

    /** The cluster whose mirrors this controller serves now (its remote watch runs). */
    get servedCluster(): string | undefined {
        return this.remote ? this.link?.spec.targetClusterName : undefined;
    }

    /** The Link as parsed while its remote watch runs: what its remote's changes are read with. */
    get servedLink(): Link | undefined {
        return this.remote ? this.link : undefined;
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
            admitted: (namespace, name) => this.mirrors.admitted(namespace, name),
        };
    }

    /** Whether the mirrors can be planned: remote caches synced, every gateway name settled. */
    get ready(): boolean {
        return (this.remote?.synced ?? false) && this.gateway.settled;
    }

    get nameStates(): ReadonlyMap<string, NameState> {
        return this.gateway.nameStates;
    }

    get unservedSince(): number | undefined {
        return this.unservedAt;
    }

    /** What the Link status shows besides the mirrors' outcomes, as observed now. */
    get observed(): LinkStatusSource {
        return {
            complete: this.ready && this.mirrors.converged,
            entries: this.link?.gateway ? this.gateway.entries : undefined,
            nameStates: this.nameStates,
            remote: this.remote?.health,
            credentials: this.credentials,
            limit: this.mirrors.limitReport,
        };
    }

    /**
     * Brings the watches in line with the Link as cached now; while `holder` (another Link) has
     * the cluster, it is waited for. Asks to run again while it may pass (the Link reconciler's).
     */
    async serve(obj: KubeObject, holder: string | undefined): Promise<ReconcileResult> {
        const parsed = parseLink(obj);
        if ('error' in parsed) {
            // Mirrors are kept: a typo in a Link must not take every mirrored Service away.
            this.event({ type: 'Warning', reason: 'InvalidLink', message: `Link not served: ${parsed.error}` });
            await this.stopRemote();
            this.markUnserved();
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
            this.markUnserved();
            return retry;
        }
        const restarted = this.remote !== undefined;
        await this.stopRemote();
        this.link = link;
        const gatewayErrors = await this.gateway.update(link);
        try {
            this.remote = await RemoteWatch.start(link, specKey, this.config.rest, this.remoteHooks(), {
                log: logFn(this.log),
                newRemoteRest: this.config.newRemoteRest,
                // An MCS import copies the remote's own endpoints on a flat network (no gateway) and
                // for the Services the Link exports in remote-discovery mode.
                hostnames: this.config.enableHeadlessServices || (this.opts.clusterSet !== undefined && (link.gateway === null || !isEmptySelector(link.spec.remoteDiscoverySelector))),
                serviceExports: this.opts.clusterSet !== undefined,
                credentialsPolicy: this.config.credentialsPolicy,
            });
        } catch (err) {
            this.markUnserved();
            if (err instanceof LinkSetupError && err.problem.refused) {
                // Nothing changes until the Secret, the Link or the flags do: those reconcile again.
                this.credentials = err.problem;
                this.event({ type: 'Warning', reason: err.reason, message: `Link not served: ${err.message}` });
                this.statusChanged(true);
                return;
            }
            if (err instanceof LinkSetupError) {
                this.credentials = err.problem;
                this.statusChanged(true);
            }
            const reason = err instanceof LinkSetupError ? err.reason : 'RemoteWatchFailed';
            const message = `cannot watch cluster ${JSON.stringify(cluster)}: ${(err as Error).message}; retrying every ${formatDuration((this.config.linkRetryMs ?? DEFAULT_LINK_RETRY_MS))}`;
            this.event({ type: 'Warning', reason, message });
            return retry;
        }
        // Its changes reach whoever watches the remotes (the mirrors, federation, MCS) from now until it stops.
        this.opts.remoteChanges.set(this.name, this.remote.changes);
        this.credentials = null;
        this.unservedAt = undefined; // a withdrawal still queued finds nothing to do
        this.opts.metrics.remoteWatches.inc();
        for (const error of gatewayErrors) this.event({ type: 'Warning', reason: 'InvalidGatewayAddress', message: error });
        this.log.info({ cluster, restarted }, 'watching remote cluster');
    }

    /**
     * The Link cannot be served: its mirrors keep what they have for the stale window, like the
     * addresses of a failing gateway name, and are then made not ready (link-work.ts).
     */
    private markUnserved(): void {
        if (this.unservedAt !== undefined) return;
        this.unservedAt = systemClock.now();
        this.opts.unserved.addAfter(this.name, this.opts.policy.staleWindowMs + 1);
    }

    private remoteHooks() {
        return {
            exportsSynced: () => this.publishRemote(),
            synced: () => {
                this.opts.metrics.remoteReadable.set(this.labels(), this.remote?.health?.readable === false ? 0 : 1);
                this.maybeReady();
            },
            health: (health: RemoteHealth) => this.onRemoteHealth(health),
            oversized: (kind: string, object: { namespace?: string; name?: string }, chars: number) =>
                this.event({
                    type: 'Warning',
                    reason: 'RemoteObjectTooLarge',
                    message: `remote ${kind} ${object.namespace ?? ''}/${object.name ?? '(unnamed)'} is ${chars} bytes, more than the ${REMOTE_OBJECT_MAX_BYTES} a remote object may have: not cached, so not mirrored`,
                }),
        };
    }

    /** The remote became unreadable, failed another way, or is readable again: status, Event, metric. Mirrors stay as they are. */
    private onRemoteHealth(health: RemoteHealth): void {
        this.opts.metrics.remoteReadable.set(this.labels(), health.readable ? 1 : 0);
        if (health.readable) {
            this.event({ type: 'Normal', reason: 'RemoteClusterReadable', message: 'the remote cluster can be read again; converging every mirror' });
            this.enqueueMirrors(true);
            // Told anew: the federated Services and MCS converge from it again too.
            this.publishRemote();
        } else {
            this.event({ type: 'Warning', reason: 'RemoteClusterUnreachable', message: `reading the remote cluster failed: ${health.error}; mirrors stay as they are, retrying` });
        }
        this.statusChanged(true);
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
        this.statusChanged(false);
        this.maybeReady();
    }

    /** What can be read of the remote now (nothing: not ready, or stopped), for the federated Services and MCS, which watch it. */
    private publishRemote(): void {
        this.opts.readableRemotes.set(this.name, this.readableRemote);
    }

    private maybeReady(): void {
        if (this.toldReady || !this.ready) return;
        this.toldReady = true;
        this.enqueueMirrors(true);
        this.publishRemote();
    }

    /** Queues every mirror of the Link (all: and asks for the status), or those the gateway's addresses feed. */
    private enqueueMirrors(all: boolean): void {
        const remote = this.readableRemote;
        if (!remote) return;
        this.mirrors.enqueue(remote, all);
        if (all) this.statusChanged(true);
    }

    /** The status is to be written: at once, or (a change that may come in a burst) within the status delay. */
    private statusChanged(now: boolean): void {
        if (now) this.opts.status.add(this.name);
        else this.opts.status.addAfter(this.name, this.config.statusDelayMs ?? DEFAULT_STATUS_DELAY_MS);
    }

    private labels() {
        return { link: this.name, target_cluster_name: this.link?.spec.targetClusterName ?? '' };
    }

    stored(): LinkObject | undefined {
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
        this.opts.remoteChanges.remove(this.name);
        this.toldReady = false;
        this.mirrors.reset();
        this.opts.metrics.remoteWatches.dec();
        await remote.stop();
        // Its federated members are kept while it restarts, dropped if the Link is gone.
        this.publishRemote();
    }

    /**
     * Stops every watch, the probe and the mirrors in hand; mirrors stay as they are. `linkGone`:
     * the mirrors' series go too, else they stay for the next term, counting on (no reset at each
     * failover). Returns the gateway names' states, for the Link's next controller (gatewayMemory).
     */
    async stop(linkGone = false): Promise<ReadonlyMap<string, NameState>> {
        await this.mirrors.stop();
        const [, gatewayMemory] = await Promise.all([this.stopRemote(), this.gateway.stop()]);
        this.opts.metrics.forgetLink(this.labels());
        if (linkGone) this.mirrors.forgetSeries();
        this.log.info({ cluster: this.link?.spec.targetClusterName }, 'stopped watching remote cluster');
        return gatewayMemory;
    }
}
