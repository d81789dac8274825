// Headless mirrors (Linkerd's --enable-headless-services): a remote headless Service whose
// endpoints have hostnames (a StatefulSet) is mirrored as a local headless Service
// `<svc>-<cluster>` plus one endpoint mirror `<hostname>-<cluster>` per remote hostname. Each
// endpoint mirror is an ordinary ClusterIP mirror pointing at the gateway (its slices are
// desiredMirrorGroups'); the headless mirror's slices carry the hostnames, each with its
// endpoint mirror's ClusterIP as address, so `pod-0.<svc>-<cluster>` resolves.
// Pure: no I/O. Linkerd writes v1 Endpoints and reads remote v1 Endpoints; we read the remote
// EndpointSlices and write EndpointSlices, and say below where that translation chose.
import type { V1Endpoint, V1EndpointSlice, V1Service } from '@kubernetes/client-node';
import { isDNS1123Label } from '../../endpointslice/names.js';
import { slicePortsProblems } from '../../endpointslice/validate.js';
import { normalisePorts, portMapKey } from '../../endpointslice/ports.js';
import type { AddressType, DesiredGroup } from '../../endpointslice/types.js';
import { usableEndpointIP } from '../../ip/address.js';
import { emptyMirrorGroups, type MirrorGroups } from './endpoints.js';
import {
    CLUSTER_NAME_LABEL,
    HEADLESS_MIRROR_SVC_NAME_LABEL,
    LINK_ANNOTATION,
    linkKey,
    mirrorLinkKey,
    REMOTE_RESOURCE_VERSION_ANNOTATION,
    REMOTE_SVC_FQ_NAME_ANNOTATION,
} from '../api/keys.js';
import type { Link } from '../api/link.js';
import { buildMirrorService, hasUsableAddress, mirrorOwnerProblem, mirrorServiceName, mirrorSpec, remoteFqName, remoteServiceName, type OwnerCheck } from './mirror.js';
import type { MirrorWarning } from './status.js';

/** A remote hostname and whether any endpoint carrying it is ready. */
export interface RemoteHost {
    hostname: string;
    ready: boolean;
}

/**
 * The hostnames of a remote Service's endpoints, sorted, with their readiness (ready if any of
 * its endpoints is: a dual-stack remote lists a pod once per family). Linkerd takes the
 * hostname from `targetRef.name` when it creates a mirror and from `hostname` when it updates
 * one; we take `hostname` only. A pod gets one when its hostname and subdomain are set (always
 * for a StatefulSet), and only such a name resolves in the remote cluster, which is where the
 * gateway sends `<hostname>.<svc>.<ns>.svc.<domain>`. A nil `ready` is ready, as the API says.
 */
export function remoteHosts(remoteSlices: readonly V1EndpointSlice[]): RemoteHost[] {
    const ready = new Map<string, boolean>();
    for (const slice of remoteSlices) {
        if (!hasValidPorts(slice)) continue;
        for (const endpoint of slice.endpoints ?? []) {
            // An endpoint at no usable address (127.0.0.1, 169.254.169.254) is no pod to name.
            if (!endpoint.hostname || !hasUsableAddress(endpoint)) continue;
            ready.set(endpoint.hostname, (ready.get(endpoint.hostname) ?? false) || endpoint.conditions?.ready !== false);
        }
    }
    return [...ready.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([hostname, isReady]) => ({ hostname, ready: isReady }));
}

/** Whether the apiserver would take this remote slice's ports in a slice of ours (headless mirrors copy them). */
export function hasValidPorts(slice: V1EndpointSlice): boolean {
    return slicePortsProblems(slice.ports ?? []).length === 0;
}

/**
 * Whether the mirror of an exported remote Service is headless. Linkerd decides once, when it
 * creates the mirror, and never again; we decide from what the remote shows now, so a mirror
 * made before its pods had hostnames does not stay wrong forever: a headless remote whose
 * endpoints have hostnames → headless; one with endpoints but no hostname (a Deployment behind
 * a headless Service) → ClusterIP to the gateway, as without the flag. A remote with no
 * endpoints at all tells nothing, so the mirror keeps the mode it has (ClusterIP when new).
 * Switching costs a delete and create (clusterIP is immutable), only on a real change.
 */
export function mirrorsAsHeadless(remote: V1Service, remoteSlices: readonly V1EndpointSlice[], existingMirror: V1Service | undefined): boolean {
    if (remote.spec?.clusterIP !== 'None') return false;
    if (remoteHosts(remoteSlices).length > 0) return true;
    const hasEndpoints = remoteSlices.some((slice) => (slice.endpoints ?? []).length > 0);
    return !hasEndpoints && existingMirror?.spec?.clusterIP === 'None';
}

/** The headless mirror `<svc>-<cluster>`: the ordinary mirror with clusterIP None. */
export function buildHeadlessMirrorService(remote: V1Service, link: Link): V1Service {
    const mirror = buildMirrorService(remote, link);
    mirror.spec = { ...mirror.spec, clusterIP: 'None' };
    return mirror;
}

/** `<hostname>-<cluster>` (it does not contain the Service's name, as in Linkerd), or why it cannot be a Service name. */
export function endpointMirrorName(hostname: string, clusterName: string): { name: string } | { error: string } {
    return mirrorServiceName(hostname, clusterName);
}

/**
 * The endpoint mirror of one remote hostname: the mirror's labels plus the headless mirror it
 * belongs to, and (as in Linkerd) none of the remote's annotations, only the fq-name the
 * gateway routes on, `<hostname>.<svc>.<ns>.svc.<domain>`, and the remote resourceVersion.
 * Linkerd writes the remote Endpoints' resourceVersion at creation and never updates an
 * endpoint mirror; we write the remote Service's, which changes exactly when what the endpoint
 * mirror copies (ports, labels) may have changed, so an endpoint mirror is kept up to date
 * and not rewritten on every pod change.
 */
export function buildEndpointMirror(remote: V1Service, link: Link, hostname: string): V1Service {
    const named = endpointMirrorName(hostname, link.spec.targetClusterName);
    const headless = mirrorServiceName(remote.metadata?.name ?? '', link.spec.targetClusterName);
    if ('error' in named || 'error' in headless) throw new Error(`buildEndpointMirror: ${'error' in named ? named.error : (headless as { error: string }).error}`);
    const mirror = buildMirrorService(remote, link);
    return {
        apiVersion: 'v1',
        kind: 'Service',
        metadata: {
            name: named.name,
            namespace: remote.metadata?.namespace ?? '',
            labels: { ...mirror.metadata!.labels, [HEADLESS_MIRROR_SVC_NAME_LABEL]: headless.name },
            annotations: {
                [REMOTE_SVC_FQ_NAME_ANNOTATION]: `${hostname}.${remoteFqName(remote, link)}`,
                [REMOTE_RESOURCE_VERSION_ANNOTATION]: remote.metadata?.resourceVersion ?? '',
                [LINK_ANNOTATION]: linkKey(link.metadata),
            },
        },
        spec: mirrorSpec(remote),
    };
}

/** A local Service that is an endpoint mirror of the headless mirror `headlessName` of this cluster. */
export function isEndpointMirrorOf(local: V1Service, headlessName: string, clusterName: string): boolean {
    const labels = local.metadata?.labels ?? {};
    return labels[HEADLESS_MIRROR_SVC_NAME_LABEL] === headlessName && labels[CLUSTER_NAME_LABEL] === clusterName;
}

/**
 * The endpoint mirrors of headless mirror `headlessName` to delete, from the cached Services
 * labelled as its endpoint mirrors: all but those in `keep`, and never one that names a Link
 * other than `link` (the headless mirror's, when known): that is another Link's.
 */
export function endpointMirrorsToDelete(cached: readonly V1Service[], headlessName: string, cluster: string, link: string | undefined, keep: ReadonlySet<string> = new Set()): V1Service[] {
    return cached.filter((svc) => {
        if (keep.has(svc.metadata!.name!) || !isEndpointMirrorOf(svc, headlessName, cluster)) return false;
        const owner = mirrorLinkKey(svc);
        return link === undefined || owner === undefined || owner === link;
    });
}

export interface HeadlessPlanInput {
    link: Link;
    remote: V1Service;
    remoteSlices: readonly V1EndpointSlice[];
    /** The headless mirror's name (its namespace is the remote's). */
    name: string;
    /** The cached local Services labelled as its endpoint mirrors. */
    endpointMirrors: readonly V1Service[];
}

/**
 * One sync of a headless mirror past its Service, decided before any write. The writer
 * creates or updates `mirrors` in order, each followed by its slices at the gateway
 * (desiredMirrorGroups: they need the stored Service's IP families), then deletes `deletes`,
 * then writes the headless mirror's slices (headlessMirrorGroups: they need the endpoint
 * mirrors' ClusterIPs).
 */
export interface HeadlessPlan {
    /** One endpoint mirror per remote hostname that makes a valid Service name, in hostname order. */
    mirrors: { hostname: string; ready: boolean; service: V1Service }[];
    /** Which local Services under an endpoint mirror's name may be changed. */
    owner: OwnerCheck;
    /** This Link's endpoint mirrors of hostnames gone. */
    deletes: V1Service[];
    /** Hostnames left out, and why (for the Link status). */
    problems: string[];
    /** Remote slices whose ports no slice of ours could hold give no hostname: each said, naming it. */
    warnings: MirrorWarning[];
}

export function planHeadless(input: HeadlessPlanInput): HeadlessPlan {
    const { link, remote, name } = input;
    const mirrors: HeadlessPlan['mirrors'] = [];
    const problems: string[] = [];
    for (const host of remoteHosts(input.remoteSlices)) {
        // The hostname is written into the headless mirror's slices: the apiserver wants a DNS-1123 label.
        if (!isDNS1123Label(host.hostname)) {
            problems.push(`hostname ${JSON.stringify(host.hostname.slice(0, 100))} has no endpoint mirror: it is not a DNS-1123 label`);
            continue;
        }
        const named = endpointMirrorName(host.hostname, link.spec.targetClusterName);
        if ('error' in named) {
            problems.push(`hostname ${JSON.stringify(host.hostname)} has no endpoint mirror: ${named.error}`);
            continue;
        }
        mirrors.push({ hostname: host.hostname, ready: host.ready, service: buildEndpointMirror(remote, link, host.hostname) });
    }
    const keep = new Set(mirrors.map((m) => m.service.metadata!.name!));
    return {
        mirrors,
        problems,
        owner: (svc) => mirrorOwnerProblem(svc, link, name),
        deletes: endpointMirrorsToDelete(input.endpointMirrors, name, link.spec.targetClusterName, linkKey(link.metadata), keep),
        warnings: input.remoteSlices
            .filter((slice) => !hasValidPorts(slice))
            .map((slice) => ({ reason: 'RemoteEndpointsRefused', message: `remote EndpointSlice ${slice.metadata?.namespace}/${slice.metadata?.name}: left out, its ports could not be those of a slice (${slicePortsProblems(slice.ports ?? [])[0]})` })),
    };
}

export interface HeadlessGroupsInput {
    /** The stored headless mirror (its IP families are the apiserver's). */
    mirror: V1Service;
    link: Link;
    remoteSlices: readonly V1EndpointSlice[];
    /** Stored endpoint mirrors by hostname: their ClusterIPs are the addresses. */
    endpointMirrors: ReadonlyMap<string, V1Service>;
}

/**
 * The headless mirror's slices: for each remote endpoint with a hostname, one endpoint per
 * address type of the mirror, `{hostname, addresses: [ClusterIP of <hostname>-<cluster> of
 * that family]}`. A hostname whose endpoint mirror has no ClusterIP yet (not created, or not
 * of that family) is left out until it has one.
 *
 * Where the slices differ from Linkerd's Endpoints, by choice:
 * - Ports are the remote slice's own ports (Linkerd copies the remote Endpoints subset's
 *   ports verbatim: the pods' ports, not the gateway's), one group per remote port list.
 * - Not-ready remote endpoints are kept, with the remote's conditions. Linkerd keeps only
 *   ready addresses and deletes the endpoint mirror of a pod that turns not ready, so its
 *   ClusterIP changes on every blip. With the conditions, DNS leaves the pod out exactly as
 *   the remote cluster's DNS does, and its endpoint mirror (and ClusterIP) stays.
 */
export function headlessMirrorGroups(input: HeadlessGroupsInput): MirrorGroups {
    const result = emptyMirrorGroups(input.mirror, input.link);
    const groups = new Map<string, DesiredGroup & { byHost: Map<string, V1Endpoint> }>();
    const slices = [...input.remoteSlices].sort((a, b) => ((a.metadata?.name ?? '') < (b.metadata?.name ?? '') ? -1 : 1));
    for (const slice of slices) {
        // Its ports are copied into ours: a list the apiserver refuses would make our slice refused too.
        if (!hasValidPorts(slice)) continue;
        const ports = normalisePorts(slice.ports);
        for (const endpoint of slice.endpoints ?? []) {
            const hostname = endpoint.hostname;
            const target = hostname ? input.endpointMirrors.get(hostname) : undefined;
            if (!hostname || !target) continue;
            for (const addressType of result.addressTypes) {
                const ip = clusterIPOf(target, addressType);
                if (ip === null) continue;
                const key = `${addressType} ${portMapKey(ports)}`;
                let group = groups.get(key);
                if (!group) {
                    group = { addressType, ports, endpoints: [], byHost: new Map() };
                    groups.set(key, group);
                }
                group.byHost.set(hostname, mergeEndpoint(group.byHost.get(hostname), hostEndpoint(hostname, ip, endpoint)));
            }
        }
    }
    for (const { addressType, ports, byHost } of groups.values()) {
        const endpoints = [...byHost.keys()].sort().map((host) => byHost.get(host)!);
        result.groups.push({ addressType, ports, endpoints });
    }
    return result;
}

function clusterIPOf(service: V1Service, addressType: AddressType): string | null {
    const ips = service.spec?.clusterIPs?.length ? service.spec.clusterIPs : [service.spec?.clusterIP ?? ''];
    for (const text of ips) {
        const ip = usableEndpointIP(text);
        if (ip.usable && ip.family === addressType) return ip.address;
    }
    return null;
}

function hostEndpoint(hostname: string, ip: string, remote: V1Endpoint): V1Endpoint {
    const ready = remote.conditions?.ready !== false;
    return {
        addresses: [ip],
        hostname,
        conditions: { ready, serving: remote.conditions?.serving ?? ready, terminating: remote.conditions?.terminating ?? false },
    };
}

/** The same pod listed in two remote slices (one per family): ready or serving if either says so. */
function mergeEndpoint(a: V1Endpoint | undefined, b: V1Endpoint): V1Endpoint {
    if (!a) return b;
    return {
        ...b,
        conditions: {
            ready: a.conditions!.ready! || b.conditions!.ready!,
            serving: a.conditions!.serving! || b.conditions!.serving!,
            terminating: a.conditions!.terminating! && b.conditions!.terminating!,
        },
    };
}

/**
 * The remote Service a local mirror Service (or one of its slices, which carry its labels)
 * stands for: an endpoint mirror `pod-0-<cluster>` stands for its headless mirror's remote,
 * not for a remote Service `pod-0`. Null when it is no mirror of this cluster.
 */
export function mirroredRemoteName(localName: string, labels: Record<string, string> | undefined, clusterName: string): string | null {
    const headless = labels?.[HEADLESS_MIRROR_SVC_NAME_LABEL];
    return remoteServiceName(headless ?? localName, clusterName);
}
