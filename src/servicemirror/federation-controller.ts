// Federated services in the controller. A federated Service spans Links, so it is converged
// here, once, from all of them, with its own queue of (namespace, name) work: a remote member
// changing, a Link's remote becoming readable or going away, the local member changing, or
// someone editing `<name>-federated` queues it, each a source it watches. Like every queue of
// the service mirror, it exists while the replica leads.
import type { Informer } from '../kube/informer.js';
import { Controller, replayOnly, type Source } from '../kube/controller.js';
import type { EventSink } from '../kube/events.js';
import type { Logger } from '../kube/log.js';
import { controllerRateLimiter } from '../kube/ratelimit.js';
import type { KubeObject } from '../kube/store.js';
import type { CompactService } from './cache/compact.js';
import type { WorkQueueMetrics } from '../kube/workqueue-metrics.js';
import { federatedMemberName, isFederatedService } from './plan/federated.js';
import type { LinkEvent } from './link/gateway-events.js';
import type { Link } from './api/link.js';
import type { RemoteCluster, RemoteObjectRef } from './mcs/clusterset.js';
import { isEmptySelector, matchesSelector } from './api/selector.js';
import { FederatedSync, type FederatedSyncDeps, type FederationLink } from './write/sync-federated.js';

/** One federated Service's work, as the queue holds it (a queue key must be a string). */
type FederatedKey = string & { readonly federatedWork: unique symbol };
const federatedKey = (namespace: string, name: string) => JSON.stringify([namespace, name]) as FederatedKey;

export interface FederationDeps {
    /** The controller's (its Links') namespace. */
    namespace?: string;
    /** The Links of the controller's namespace, as cached. */
    links: Informer<KubeObject>;
    /** The remote of a Link, when it is served and its caches have synced. */
    remoteOf: (link: string) => RemoteCluster | undefined;
    /** What can be read of each Link's remote now, as published when it changes (ready, gateway moved, stopped). */
    readableRemotes: Source<RemoteCluster>;
    /** What changes in the Links' remote clusters. */
    remoteChanges: Source<RemoteObjectRef>;
    /** A Link as parsed while its remote watch runs. */
    servedLink: (link: string) => Link | undefined;
    /** Our mirror Services (mirrored-service=true), federated ones among them. */
    services: Informer<CompactService>;
    /** Local Services the local federated selector selects; absent when local membership is off. */
    localMembers?: Informer<CompactService>;
    excludedLabels: readonly string[];
    excludedAnnotations: readonly string[];
    writes: FederatedSyncDeps['writes'];
    ensureNamespace: FederatedSyncDeps['ensureNamespace'];
    /** An Event on the Link that serves this cluster. */
    event: (cluster: string, event: LinkEvent) => void;
    queueMetrics: WorkQueueMetrics;
    /** Where the runtime records a Warning about a key it cannot converge. */
    events: EventSink;
    logger: Logger;
    resyncMs?: number;
}

/** The federated Service a mirror Service is, if it is one (`<name>-federated`). */
function federatedKeys(svc: CompactService): FederatedKey[] {
    const name = federatedMemberName(svc.metadata?.name ?? '');
    return name && isFederatedService(svc) ? [federatedKey(svc.metadata!.namespace!, name)] : [];
}

export class FederationController {
    private readonly syncer: FederatedSync;
    private readonly queue: Controller<FederatedKey>;
    /** Federated key → the problem last told in an Event, for those not converged. */
    private readonly problems = new Map<FederatedKey, string>();

    constructor(private readonly deps: FederationDeps) {
        const members = deps.localMembers;
        this.syncer = new FederatedSync({
            writes: deps.writes,
            links: () => this.federationLinks(),
            local: members && { get: (ns, name) => members.store.get(ns, name), excludedLabels: deps.excludedLabels, excludedAnnotations: deps.excludedAnnotations },
            existing: (ns, name) => deps.services.store.get(ns, name),
            ensureNamespace: deps.ensureNamespace,
            federation: deps.namespace,
        });
        this.queue = new Controller<FederatedKey>({
            name: 'service-mirror/federated',
            reconciler: { reconcile: (key) => this.sync(...(JSON.parse(key) as [string, string])) },
            metrics: deps.queueMetrics,
            events: deps.events,
            rateLimiter: controllerRateLimiter({ baseMs: 250, maxMs: 300_000 }),
            workers: 1,
            log: deps.logger,
            resyncMs: deps.resyncMs,
        });
        // Every federated Service that exists and every local member: what the runtime replays
        // at the start of a term, and what a Link's remote becoming readable or stopping queues again.
        this.queue.watch(deps.services, federatedKeys);
        if (members) this.queue.watch(members, (svc) => [federatedKey(svc.metadata!.namespace!, svc.metadata!.name!)]);
        // A Link's remote became readable, changed or stopped: every federated Service (it may
        // have left members there, kept while it restarts, dropped once its Link is gone), and
        // the members each readable remote federates (replayed by that resync and every term).
        this.queue.resyncOn(deps.readableRemotes);
        this.queue.watch(replayOnly(() => deps.readableRemotes.list()), (remote) => {
            const selector = remote.link.spec.federatedServiceSelector;
            if (isEmptySelector(selector)) return [];
            return remote.services.list().flatMap((svc) => (matchesSelector(selector, svc.metadata?.labels) ? [federatedKey(svc.metadata!.namespace!, svc.metadata!.name!)] : []));
        });
        // A remote member changed: its federated Service, when the Link federates by selector or it is already federated.
        this.queue.watch(deps.remoteChanges, ({ link, kind, namespace, name }) => {
            const served = kind === 'export' ? undefined : deps.servedLink(link);
            return served && (!isEmptySelector(served.spec.federatedServiceSelector) || deps.services.store.get(namespace, `${name}-federated`)) ? [federatedKey(namespace, name)] : [];
        });
    }

    start(): void {
        this.queue.start();
    }

    async stop(): Promise<void> {
        await this.queue.stop();
    }

    private async sync(namespace: string, name: string): Promise<void> {
        const outcome = await this.syncer.sync(namespace, name);
        for (const refused of outcome.refused) {
            const message = `${namespace}/${name} cannot join ${name}-federated: ${refused.message}`;
            if (refused.cluster === '') this.deps.logger.warn({ namespace, name }, message);
            else this.deps.event(refused.cluster, { type: 'Warning', reason: 'InvalidService', message });
        }
        if (outcome.namespaceMissing) throw new Error(outcome.problem);
        const key = federatedKey(namespace, name);
        if (!outcome.problem) {
            this.problems.delete(key);
            return;
        }
        this.deps.logger.warn({ namespace, name, problem: outcome.problem }, 'federated Service not converged');
        // Told once per change, on every Link that federates (the Service would stand for all of them).
        if (this.problems.get(key) === outcome.problem) return;
        this.problems.set(key, outcome.problem);
        for (const { cluster } of this.federationLinks()) this.deps.event(cluster, { type: 'Warning', reason: 'FederatedServiceNotConverged', message: `${name} not federated: ${outcome.problem}` });
    }

    /** Each Link's cluster, with its remote once readable (else its members are kept as they are). */
    private federationLinks(): FederationLink[] {
        const byCluster = new Map<string, FederationLink>();
        for (const obj of this.deps.links.store.list()) {
            const cluster = (obj as { spec?: { targetClusterName?: unknown } }).spec?.targetClusterName;
            if (typeof cluster !== 'string' || cluster === '') continue;
            const remote = this.deps.remoteOf(obj.metadata!.name!);
            const entry: FederationLink = { cluster };
            if (remote && remote.link.spec.targetClusterName === cluster) {
                entry.remote = { link: remote.link, service: (ns, name) => remote.services.get(ns, name) };
            }
            // Two Links naming one cluster: the one being served speaks for it.
            if (!byCluster.get(cluster)?.remote) byCluster.set(cluster, entry);
        }
        return [...byCluster.values()];
    }
}
