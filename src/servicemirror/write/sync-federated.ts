// Converges one federated Service `<name>-federated` of one namespace from what every Link's
// remote cache (and the local cluster) holds now. A Link whose remote has not been read yet
// "cannot say", so its entry is kept: an outage or a restart never removes a member. Decisions
// are federated.ts's; the writes go through MirrorWrites.
import type { V1Service } from '@kubernetes/client-node';
import { desiredFederatedService, federatedMemberProblem, federatedOwnerProblem, federatedServiceName, type Membership } from '../plan/federated.js';
import type { Link } from '../api/link.js';
import { matchesSelector } from '../api/selector.js';
import type { MirrorWrites } from './sync-headless.js';

/** One Link of the controller's namespace, as the federation sees it. */
export interface FederationLink {
    cluster: string;
    /** The parsed Link and its synced remote Services; absent while they cannot be read. */
    remote?: { link: Link; service: (namespace: string, name: string) => V1Service | undefined };
}

export interface LocalMembers {
    /** The Services of the local cluster that the local federated selector selects. */
    get(namespace: string, name: string): V1Service | undefined;
    excludedLabels: readonly string[];
    excludedAnnotations: readonly string[];
}

export interface FederatedSyncDeps {
    writes: MirrorWrites & { deleteService(service: V1Service): Promise<void> };
    links: () => FederationLink[];
    /** Absent when local membership is off: a local-discovery already there is then left as it is. */
    local?: LocalMembers;
    /** The local `<name>-federated`, from the cache. */
    existing: (namespace: string, name: string) => V1Service | undefined;
    /** The Links' namespace: federated Services naming another one are another service mirror's. */
    federation?: string;
    /** Makes sure the namespace exists (creating it with --enable-namespace-creation); false when it does not. */
    ensureNamespace: (namespace: string, cluster: string) => Promise<boolean>;
}

export interface FederatedOutcome {
    /** The federated Service now, or null when there is none. */
    service: string | null;
    /** Members refused (by cluster, "" for the local one), and why. */
    refused: { cluster: string; message: string }[];
    problem?: string;
    /**
     * The namespace is missing from our cache. It may have just been created and not reached
     * the cache yet, and no other event would bring this key back: retried with backoff.
     */
    namespaceMissing?: boolean;
}

export class FederatedSync {
    constructor(private readonly deps: FederatedSyncDeps) {}

    async sync(namespace: string, name: string): Promise<FederatedOutcome> {
        const named = federatedServiceName(name);
        if ('error' in named) return { service: null, refused: [], problem: named.error };
        const refused: FederatedOutcome['refused'] = [];
        const judge = (cluster: string, svc: V1Service | undefined, extra: Omit<Extract<Membership, { state: 'member' }>['member'], 'service'>): Membership => {
            if (!svc) return { state: 'absent' };
            const problem = federatedMemberProblem(svc);
            if (problem !== null) {
                refused.push({ cluster, message: problem });
                return { state: 'absent' };
            }
            return { state: 'member', member: { service: svc, ...extra } };
        };

        const remotes = new Map<string, Membership>();
        for (const { cluster, remote } of this.deps.links()) {
            if (!remote) {
                remotes.set(cluster, { state: 'unknown' });
                continue;
            }
            const svc = remote.service(namespace, name);
            const selected = svc && matchesSelector(remote.link.spec.federatedServiceSelector, svc.metadata?.labels) ? svc : undefined;
            const extra = { excludedLabels: remote.link.spec.excludedLabels, excludedAnnotations: remote.link.spec.excludedAnnotations, linkCreated: remote.link.metadata.creationTimestamp };
            remotes.set(cluster, judge(cluster, selected, extra));
        }
        const localDeps = this.deps.local;
        const local: Membership = localDeps
            ? judge('', localDeps.get(namespace, name), { excludedLabels: localDeps.excludedLabels, excludedAnnotations: localDeps.excludedAnnotations })
            : { state: 'unknown' };

        const owner = (svc: V1Service) => federatedOwnerProblem(svc, this.deps.federation);
        const found = this.deps.existing(namespace, named.name);
        const foreign = found && owner(found);
        if (foreign) return { service: null, refused, problem: foreign };
        const desired = desiredFederatedService({ namespace, name, local, remotes, existing: found, federation: this.deps.federation });
        if (desired === null) {
            if (found) await this.deps.writes.deleteService(found);
            return { service: null, refused };
        }
        const creator = local.state === 'member' ? '' : ([...remotes.entries()].find(([, m]) => m.state === 'member')?.[0] ?? '');
        if (!found && !(await this.deps.ensureNamespace(namespace, creator))) {
            return { service: null, refused, problem: `namespace ${namespace} does not exist in this cluster`, namespaceMissing: true };
        }
        const ensured = await this.deps.writes.ensureService(namespace, named.name, desired, owner);
        if ('problem' in ensured) return { service: null, refused, problem: ensured.problem };
        return { service: named.name, refused };
    }
}
