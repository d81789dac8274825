// Federated services (Link spec.federatedServiceSelector; Linkerd's `<name>-federated`): a
// Service that several linked clusters (and the local one) export as members becomes one local
// Service `<name>-federated`, with no endpoints of its own, whose annotations tell Linkerd's
// destination where the endpoints are: multicluster.linkerd.io/remote-discovery lists the
// remote members `name@cluster,...`, multicluster.linkerd.io/local-discovery names the local one.
// Pure: (what each cluster says of the member, the existing Service) → the desired Service or
// none. Linkerd gets there through Join/Leave events; we compute it from the members, so a
// member that left while no controller ran is removed too, and a restart rewrites nothing.
import type { V1Service } from '@kubernetes/client-node';
import { FEDERATION_ANNOTATION, LOCAL_DISCOVERY_ANNOTATION, MIRRORED_SERVICE_LABEL, REMOTE_DISCOVERY_ANNOTATION } from '../api/keys.js';
import type { Link } from '../api/link.js';
import { matchesSelector } from '../api/selector.js';
import { copiedAnnotations, copiedLabels, mirrorServiceName, mirrorSpec, type OwnerCheck } from './mirror.js';
import { metadataProblem, portsProblem } from './mirror-validate.js';

export const FEDERATED_SUFFIX = 'federated';

/** One cluster's member: its Service and the exclusions of the Link (or flags) it comes through. */
export interface FederatedMember {
    service: V1Service;
    excludedLabels: readonly string[];
    excludedAnnotations: readonly string[];
    /** The Link's creationTimestamp (RFC 3339); the oldest Link's member gives the metadata. Absent for the local member. */
    linkCreated?: string;
}

/**
 * What one cluster says of the federated service: it has a member, it has none, or it cannot
 * say (its remote cannot be read yet), in which case what the Service lists for it is kept,
 * because an outage never removes a member.
 */
export type Membership = { state: 'member'; member: FederatedMember } | { state: 'absent' } | { state: 'unknown' };

export interface FederatedInput {
    namespace: string;
    /** The members' name; the Service is `<name>-federated`. */
    name: string;
    local: Membership;
    /** By target cluster name. A cluster listed nowhere here (its Link is gone) has no member. */
    remotes: ReadonlyMap<string, Membership>;
    /** The `<name>-federated` this controller wrote, if any. */
    existing?: V1Service;
    /** The Links' namespace, written in FEDERATION_ANNOTATION. */
    federation?: string;
}

/** `<name>-federated`, or why that is not a valid Service name. */
export function federatedServiceName(name: string): { name: string } | { error: string } {
    return mirrorServiceName(name, FEDERATED_SUFFIX);
}

/**
 * Why a selected Service cannot be a member (for the Link status), or null. Headless members
 * are refused as in Linkerd ("Headless service cannot join federated service"): the federated
 * Service has a ClusterIP and no endpoints of its own. A Service without ports would give a
 * federated Service the apiserver refuses.
 */
export function federatedMemberProblem(service: V1Service): string | null {
    const named = federatedServiceName(service.metadata?.name ?? '');
    if ('error' in named) return named.error;
    if (service.spec?.clusterIP === 'None') return 'Headless service cannot join federated service';
    if (service.spec?.type === 'ExternalName') return 'an ExternalName Service cannot join a federated service';
    if ((service.spec?.ports ?? []).length === 0) return 'the Service exposes no ports';
    return portsProblem(service.spec?.ports ?? []) ?? metadataProblem(copiedLabels(service.metadata?.labels, []), copiedAnnotations(service.metadata?.annotations, []));
}

/** A local Service that is a federated Service this controller (or Linkerd's) wrote. */
export function isFederatedService(local: V1Service): boolean {
    return local.metadata?.labels?.[MIRRORED_SERVICE_LABEL] === 'true' && (local.metadata?.name ?? '').endsWith(`-${FEDERATED_SUFFIX}`);
}

/** Why a local Service under a federated Service's name is not the federation of `federation`'s Links to change, or null. */
export function federatedOwnerProblem(local: V1Service, federation: string | undefined): string | null {
    const where = `${local.metadata?.namespace}/${local.metadata?.name}`;
    if (!isFederatedService(local)) return `${where} exists and is not a federated Service; it is left alone`;
    const owner = local.metadata?.annotations?.[FEDERATION_ANNOTATION];
    if (federation !== undefined && owner !== undefined && owner !== federation) {
        return `${where} exists and is the federated Service of the Links in namespace ${owner}; it is left alone`;
    }
    return null;
}

/** The members' name of a federated Service (`web-federated` → `web`), or null. */
export function federatedMemberName(localName: string): string | null {
    const suffix = `-${FEDERATED_SUFFIX}`;
    return localName.endsWith(suffix) && localName.length > suffix.length ? localName.slice(0, -suffix.length) : null;
}

/**
 * The federated Service there should be, or null when no cluster has a member (the last one
 * left: delete it).
 *
 * - remote-discovery: the entries of the existing Service that stay members (or whose cluster
 *   cannot say) in their order, then the new members by cluster name, as Linkerd appends on
 *   Join. Absent when there is no remote member (Linkerd leaves `""` when only the local
 *   member remains; the destination logs such an entry as malformed).
 * - local-discovery: the name, when the local cluster has a member.
 * - Labels, annotations and ports come from one member, as Linkerd's "oldest" rule: the local
 *   member if there is one, else the member whose Link is oldest (ties broken by cluster name,
 *   where Linkerd lets the last Join win). Its own labels and annotations minus exclusions,
 *   plus `mirrored-service=true`; no cluster-name label (the Service belongs to no one cluster).
 * - When only clusters that cannot say remain, the existing metadata is kept.
 */
export function desiredFederatedService(input: FederatedInput): V1Service | null {
    const named = federatedServiceName(input.name);
    if ('error' in named) return null;
    const remote = remoteDiscovery(input);
    const local = localDiscovery(input);
    if (remote === '' && local === undefined) return null;

    const primary = primaryMember(input);
    let labels: Record<string, string>;
    let annotations: Record<string, string>;
    let spec: V1Service['spec'];
    if (primary) {
        labels = copiedLabels(primary.service.metadata?.labels, primary.excludedLabels);
        annotations = copiedAnnotations(primary.service.metadata?.annotations, primary.excludedAnnotations);
        spec = mirrorSpec(primary.service);
    } else if (input.existing) {
        labels = { ...input.existing.metadata?.labels };
        annotations = { ...input.existing.metadata?.annotations };
        spec = mirrorSpec(input.existing);
    } else {
        return null;
    }
    labels[MIRRORED_SERVICE_LABEL] = 'true';
    delete annotations[REMOTE_DISCOVERY_ANNOTATION];
    delete annotations[LOCAL_DISCOVERY_ANNOTATION];
    if (remote !== '') annotations[REMOTE_DISCOVERY_ANNOTATION] = remote;
    if (input.federation !== undefined) annotations[FEDERATION_ANNOTATION] = input.federation;
    if (local !== undefined) annotations[LOCAL_DISCOVERY_ANNOTATION] = local;
    return { apiVersion: 'v1', kind: 'Service', metadata: { name: named.name, namespace: input.namespace, labels, annotations }, spec };
}

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

export interface FederatedPlanInput {
    namespace: string;
    /** The members' name. */
    name: string;
    links: readonly FederationLink[];
    /** Absent when local membership is off: a local-discovery already there is then left as it is. */
    local?: LocalMembers;
    /** The local Service stored under a name, as the cache holds it. */
    stored: (name: string) => V1Service | undefined;
    /** The Links' namespace: federated Services naming another one are another service mirror's. */
    federation?: string;
}

/** One sync of one federated Service, decided before any write (write/sync-federated.ts applies it). */
export type FederatedPlan = {
    /** Members refused (by cluster, "" for the local one), and why. */
    refused: { cluster: string; message: string }[];
} & (
    /** Nothing is written: no Service may have the name, or the one under it is not this federation's. */
    | { action: 'refuse'; problem: string }
    /** No cluster has a member: `found`, when there is one, is deleted. */
    | { action: 'delete'; found?: V1Service }
    /**
     * `desired` is created or updated. `creator` is set when nothing is there yet: the
     * namespace must exist first (with --enable-namespace-creation it is created, labelled
     * with that cluster, "" for the local one).
     */
    | { action: 'ensure'; desired: V1Service; owner: OwnerCheck; creator?: string }
);

/**
 * What each Link's remote cache (and the local cluster) says of the members, and so of the
 * federated Service. A Link whose remote has not been read yet cannot say, so its entry is
 * kept: an outage or a restart never removes a member.
 */
export function planFederated(input: FederatedPlanInput): FederatedPlan {
    const { namespace, name } = input;
    const named = federatedServiceName(name);
    if ('error' in named) return { action: 'refuse', problem: named.error, refused: [] };
    const refused: FederatedPlan['refused'] = [];
    const judge = (cluster: string, svc: V1Service | undefined, extra: Omit<FederatedMember, 'service'>): Membership => {
        if (!svc) return { state: 'absent' };
        const problem = federatedMemberProblem(svc);
        if (problem !== null) {
            refused.push({ cluster, message: problem });
            return { state: 'absent' };
        }
        return { state: 'member', member: { service: svc, ...extra } };
    };
    const remotes = new Map<string, Membership>();
    for (const { cluster, remote } of input.links) {
        if (!remote) {
            remotes.set(cluster, { state: 'unknown' });
            continue;
        }
        const svc = remote.service(namespace, name);
        const selected = svc && matchesSelector(remote.link.spec.federatedServiceSelector, svc.metadata?.labels) ? svc : undefined;
        const extra = { excludedLabels: remote.link.spec.excludedLabels, excludedAnnotations: remote.link.spec.excludedAnnotations, linkCreated: remote.link.metadata.creationTimestamp };
        remotes.set(cluster, judge(cluster, selected, extra));
    }
    const localMembers = input.local;
    const local: Membership = localMembers
        ? judge('', localMembers.get(namespace, name), { excludedLabels: localMembers.excludedLabels, excludedAnnotations: localMembers.excludedAnnotations })
        : { state: 'unknown' };

    const owner: OwnerCheck = (svc) => federatedOwnerProblem(svc, input.federation);
    const found = input.stored(named.name);
    const foreign = found && owner(found);
    if (foreign) return { action: 'refuse', problem: foreign, refused };
    const desired = desiredFederatedService({ namespace, name, local, remotes, existing: found, federation: input.federation });
    if (desired === null) return { action: 'delete', found, refused };
    if (found) return { action: 'ensure', desired, owner, refused };
    const creator = local.state === 'member' ? '' : ([...remotes.entries()].find(([, m]) => m.state === 'member')?.[0] ?? '');
    return { action: 'ensure', desired, owner, creator, refused };
}

function membership(input: FederatedInput, cluster: string): Membership {
    return input.remotes.get(cluster) ?? { state: 'absent' };
}

function remoteDiscovery(input: FederatedInput): string {
    const entries: string[] = [];
    const listed = new Set<string>();
    const existing = input.existing?.metadata?.annotations?.[REMOTE_DISCOVERY_ANNOTATION] ?? '';
    for (const entry of existing.split(',')) {
        const parts = entry.trim().split('@');
        if (parts.length !== 2 || parts[1] === '' || listed.has(parts[1]!)) continue;
        const [service, cluster] = parts as [string, string];
        const state = membership(input, cluster).state;
        if (state === 'unknown' || (state === 'member' && service === input.name)) {
            entries.push(`${service}@${cluster}`);
            listed.add(cluster);
        }
    }
    const joining = [...input.remotes.entries()].filter(([cluster, m]) => m.state === 'member' && !listed.has(cluster)).map(([cluster]) => cluster);
    for (const cluster of joining.sort()) entries.push(`${input.name}@${cluster}`);
    return entries.join(',');
}

function localDiscovery(input: FederatedInput): string | undefined {
    if (input.local.state === 'member') return input.name;
    if (input.local.state === 'unknown') return input.existing?.metadata?.annotations?.[LOCAL_DISCOVERY_ANNOTATION];
    return undefined;
}

function primaryMember(input: FederatedInput): FederatedMember | undefined {
    if (input.local.state === 'member') return input.local.member;
    let best: { cluster: string; member: FederatedMember } | undefined;
    for (const [cluster, m] of input.remotes) {
        if (m.state !== 'member') continue;
        if (!best || olderThan(m.member, cluster, best.member, best.cluster)) best = { cluster, member: m.member };
    }
    return best?.member;
}

function olderThan(a: FederatedMember, aCluster: string, b: FederatedMember, bCluster: string): boolean {
    const at = Date.parse(a.linkCreated ?? '');
    const bt = Date.parse(b.linkCreated ?? '');
    // A Link without a (readable) creation time sorts last.
    const ak = Number.isNaN(at) ? Infinity : at;
    const bk = Number.isNaN(bt) ? Infinity : bt;
    return ak !== bk ? ak < bk : aCluster < bCluster;
}
