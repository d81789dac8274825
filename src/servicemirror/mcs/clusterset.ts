// The clusters the Links point at, as the controllers that read across Links see them: each
// Link's target cluster and, once its caches can be trusted, what can be read of it (each Link's
// controller publishes that, a source the federated Services watch too). MCS watches it as a
// source of the runtime (kube/controller.ts), as Cilium's controllers watch a raw source: a
// remote object's change is an event of the source, and a cluster that becomes readable, stops
// or whose gateway moved is a change of the membership, after which every key is looked at again.
import type { Source } from '../../kube/controller.js';
import { mapSource, SourceSet, type Published } from '../../kube/sources.js';
import type { InformerHandlers } from '../../kube/informer.js';
import type { ObjectStore } from '../../kube/store.js';
import type { AddressType } from '../../endpointslice/types.js';
import type { Link } from '../api/link.js';
import type { CompactRemoteSlice, CompactService } from '../cache/compact.js';
import type { ServiceExport } from './types.js';
import type { GatewayAddress } from '../plan/endpoints.js';

/**
 * A Link's remote cluster as everything that reads it sees it (its mirrors, the federated
 * Services, MCS), once its caches have synced and every gateway name has an answer or a seed:
 * before then a plan would delete or empty what is still true. Its Link's controller makes it,
 * the one place that decides readiness.
 */
export interface RemoteCluster {
    link: Link;
    services: ObjectStore<CompactService>;
    slices: ObjectStore<CompactRemoteSlice>;
    /** Its ServiceExports once known (listed, or the API is not served there); absent when MCS is not served. */
    exports?: ObjectStore<ServiceExport>;
    gatewayAddresses(families: readonly AddressType[], now: number): GatewayAddress[];
    gatewayAlive: boolean;
    /** Whether the remote Service is among the exports the Link's mirror limit admits. */
    admitted(namespace: string, name: string): boolean;
}

/** A cluster a Link points at; `remote` is absent while its watch is starting or cannot run, or its exports are not known. */
export interface ClusterMember {
    cluster: string;
    remote?: RemoteCluster & { exports: ObjectStore<ServiceExport> };
}

/** A remote object that changed: a Service, one of its EndpointSlices, or a ServiceExport. */
export interface RemoteObjectRef {
    /** The Link whose remote watch told it. */
    link: string;
    cluster: string;
    namespace: string;
    name: string;
    kind: 'service' | 'endpoints' | 'export';
}

export class ClusterSet implements Source<RemoteObjectRef> {
    private readonly membershipHandlers = new Set<InformerHandlers<readonly ClusterMember[]>>();

    /**
     * `links`: every Link's name and target cluster, as the local cache holds them now;
     * `changes`: what changes in the remote clusters, each Link's while its remote watch runs;
     * `readable`: what can be read of each Link's remote cluster now, as its controller publishes it.
     */
    constructor(
        private readonly links: () => Iterable<{ link: string; cluster: string }>,
        private readonly changes: Source<RemoteObjectRef>,
        private readonly readable: Published<RemoteCluster>,
    ) {
        this.watchMembership();
    }

    /** A Link was created, deleted or points elsewhere. */
    membershipChanged(): void {
        const members = this.members();
        for (const h of this.membershipHandlers) h.update?.(members, members);
    }

    /** The clusters the Links point at, each with its remote once it can be read. */
    members(): ClusterMember[] {
        const members = new Map<string, ClusterMember>();
        for (const { link, cluster } of this.links()) {
            if (cluster === '') continue;
            // MCS reads none of a remote until its exports are known.
            const remote = this.readable.get(link);
            const served = remote?.exports && remote.link.spec.targetClusterName === cluster ? (remote as ClusterMember['remote']) : undefined;
            // Two Links naming one cluster: the one being served speaks for it.
            if (!members.get(cluster)?.remote) members.set(cluster, { cluster, remote: served });
        }
        return [...members.values()];
    }

    on(handlers: InformerHandlers<RemoteObjectRef>): (() => void) | void {
        return this.changes.on(handlers);
    }

    /** Every remote ServiceExport: what a term starts from. */
    *list(): Iterable<RemoteObjectRef> {
        for (const { cluster, remote } of this.members()) {
            for (const exp of remote?.exports.list() ?? []) yield { link: remote!.link.metadata.name, cluster, namespace: exp.metadata!.namespace!, name: exp.metadata!.name!, kind: 'export' };
        }
    }

    /**
     * The membership as a source: one update per change (a Link's, or what can be read of its
     * remote), of the members as they are now; it names no key.
     */
    readonly membership = new SourceSet<readonly ClusterMember[]>();

    private watchMembership(): void {
        this.membership.set('readable', mapSource(this.readable, () => [this.members()]));
        this.membership.set('links', {
            on: (handlers) => {
                this.membershipHandlers.add(handlers);
                return () => this.membershipHandlers.delete(handlers);
            },
            list: () => [],
        });
    }
}
