// Mirror Services: which remote Services a Link exports, and the local Service that stands for
// each of them (`<name>-<targetClusterName>` in the same namespace, no selector).
// Owns: mirror names, export modes, the mirror's labels/annotations/ports, change detection.
// Must not: talk to any apiserver, resolve the gateway, or build endpoints (endpoints.ts does).
import type { V1EndpointSlice, V1Service, V1ServicePort } from '@kubernetes/client-node';
import type { Link } from '../api/link.js';
import {
    CLUSTER_NAME_LABEL,
    DROPPED_ANNOTATIONS,
    HEADLESS_MIRROR_SVC_NAME_LABEL,
    isReservedKey,
    LINK_ANNOTATION,
    linkKey,
    MIRRORED_SERVICE_LABEL,
    mirrorLinkKey,
    OPAQUE_PORTS_ANNOTATION,
    REMOTE_DISCOVERY_LABEL,
    REMOTE_RESOURCE_VERSION_ANNOTATION,
    REMOTE_SERVICE_LABEL,
    REMOTE_SVC_FQ_NAME_ANNOTATION,
    isExcludedKey,
} from '../api/keys.js';
import { matchesSelector } from '../api/selector.js';
import { usableEndpointIP } from '../../ip/address.js';
import { metadataProblem, portsProblem } from './mirror-validate.js';


export type ExportMode = 'mirror' | 'remote-discovery' | 'none';

const DNS1035_LABEL = /^[a-z]([-a-z0-9]*[a-z0-9])?$/;
const DEFAULT_CLUSTER_DOMAIN = 'cluster.local';

/** `<remoteName>-<clusterName>`, or why that is not a valid Service name (DNS-1035, ≤ 63). */
export function mirrorServiceName(remoteName: string, clusterName: string): { name: string } | { error: string } {
    const name = `${remoteName}-${clusterName}`;
    if (name.length > 63) {
        return { error: `mirror name ${JSON.stringify(name)} is ${name.length} characters, more than the 63 a Service name allows` };
    }
    if (!DNS1035_LABEL.test(name)) {
        return { error: `mirror name ${JSON.stringify(name)} is not a DNS-1035 label (lower-case letters, digits and '-', starting with a letter)` };
    }
    return { name };
}

/** The remote Service name a mirror of this cluster stands for (inverse of mirrorServiceName). */
export function remoteServiceName(mirrorName: string, clusterName: string): string | null {
    const suffix = `-${clusterName}`;
    return clusterName !== '' && mirrorName.endsWith(suffix) && mirrorName.length > suffix.length
        ? mirrorName.slice(0, -suffix.length)
        : null;
}

/**
 * How a Link exports a remote Service. Remote discovery wins when both selectors match, as in
 * Linkerd (it only adds the remote-discovery labels). Gateway mode needs a gateway: a Link with
 * no gatewayAddress (`link --gateway=false`) would otherwise give mirrors that can never have
 * endpoints. A Link with an empty targetClusterName is Linkerd's local-mirror mode: nothing.
 */
export function exportMode(remote: V1Service, link: Link): ExportMode {
    if (link.spec.targetClusterName === '') return 'none';
    const labels = remote.metadata?.labels;
    if (matchesSelector(link.spec.remoteDiscoverySelector, labels)) return 'remote-discovery';
    if (link.gateway !== null && matchesSelector(link.spec.selector, labels)) return 'mirror';
    return 'none';
}

/** Why this exported remote Service cannot be mirrored (for the Link status), or null. */
export function mirrorProblem(remote: V1Service, link: Link): string | null {
    const named = mirrorServiceName(remote.metadata?.name ?? '', link.spec.targetClusterName);
    if ('error' in named) return named.error;
    if (remote.spec?.type === 'ExternalName') return 'ExternalName Services have no endpoints to mirror';
    // A ClusterIP Service without ports is refused by the apiserver.
    if ((remote.spec?.ports ?? []).length === 0) return 'the Service exposes no ports';
    return (
        portsProblem(remote.spec?.ports ?? []) ??
        metadataProblem(copiedLabels(remote.metadata?.labels, link.spec.excludedLabels), copiedAnnotations(remote.metadata?.annotations, link.spec.excludedAnnotations))
    );
}

/**
 * The mirror Service for a remote Service that exportMode selects and mirrorProblem accepts;
 * it throws if called for one it does not (a caller bug, not a runtime condition).
 *
 * A headless remote is mirrored as an ordinary ClusterIP Service pointing at the gateway, as
 * Linkerd does without `-enable-headless-services`: per-pod mirrors are out of scope here.
 */
export function buildMirrorService(remote: V1Service, link: Link): V1Service {
    const mode = exportMode(remote, link);
    const problem = mirrorProblem(remote, link);
    if (mode === 'none' || problem !== null) {
        throw new Error(`buildMirrorService: ${remote.metadata?.namespace}/${remote.metadata?.name} is not mirrorable: ${problem ?? 'not exported'}`);
    }
    const remoteName = remote.metadata?.name ?? '';
    const named = mirrorServiceName(remoteName, link.spec.targetClusterName) as { name: string };
    return {
        apiVersion: 'v1',
        kind: 'Service',
        metadata: {
            name: named.name,
            namespace: remote.metadata?.namespace ?? '',
            labels: mirrorLabels(remote, link, mode),
            annotations: mirrorAnnotations(remote, link),
        },
        spec: mirrorSpec(remote),
    };
}

/**
 * The spec of a Service standing for `source` (a mirror, an endpoint mirror, a federated
 * Service): its ports and IP families, no selector, a ClusterIP allocated here.
 */
export function mirrorSpec(source: V1Service): NonNullable<V1Service['spec']> {
    const spec: NonNullable<V1Service['spec']> = { type: 'ClusterIP', ports: (source.spec?.ports ?? []).map(mirrorPort) };
    if (source.spec?.ipFamilies?.length) spec.ipFamilies = [...source.spec.ipFamilies];
    if (source.spec?.ipFamilyPolicy) spec.ipFamilyPolicy = mirrorFamilyPolicy(source.spec.ipFamilyPolicy);
    return spec;
}

/**
 * RequireDualStack is a property of the remote cluster's network; on a single-stack local
 * cluster it would make the mirror impossible to create, while PreferDualStack keeps both
 * families wherever the local cluster has them.
 */
function mirrorFamilyPolicy(policy: string): string {
    return policy === 'RequireDualStack' ? 'PreferDualStack' : policy;
}

/** In the apiserver's defaulted form (protocol TCP, targetPort = port) so read-backs compare equal. */
function mirrorPort(port: V1ServicePort): V1ServicePort {
    const out: V1ServicePort = { port: port.port, protocol: port.protocol ?? 'TCP', targetPort: port.targetPort ?? port.port };
    if (port.name) out.name = port.name;
    if (port.appProtocol) out.appProtocol = port.appProtocol;
    return out;
}

function mirrorLabels(remote: V1Service, link: Link, mode: ExportMode): Record<string, string> {
    const labels = copiedLabels(remote.metadata?.labels, link.spec.excludedLabels);
    labels[MIRRORED_SERVICE_LABEL] = 'true';
    labels[CLUSTER_NAME_LABEL] = link.spec.targetClusterName;
    if (mode === 'remote-discovery') {
        labels[REMOTE_DISCOVERY_LABEL] = link.spec.targetClusterName;
        labels[REMOTE_SERVICE_LABEL] = remote.metadata?.name ?? '';
    }
    return labels;
}

/**
 * The labels of a source Service (remote, or a local federated member) that the Service
 * standing for it carries: all but the reserved ones (keys.ts: Linkerd's bookkeeping, ours,
 * Kubernetes') and the `excluded` ones (Linkerd's excludedLabels). The remote-discovery labels
 * are reserved too: only the export mode decides that, never a label that happens to be on
 * the remote (a mirror of a mirror).
 */
export function copiedLabels(source: Record<string, string> | undefined, excluded: readonly string[]): Record<string, string> {
    const labels: Record<string, string> = {};
    for (const [key, value] of Object.entries(source ?? {})) {
        if (isReservedKey(key) || isExcludedKey(key, excluded)) continue;
        labels[key] = value;
    }
    return labels;
}

function mirrorAnnotations(remote: V1Service, link: Link): Record<string, string> {
    const annotations = copiedAnnotations(remote.metadata?.annotations, link.spec.excludedAnnotations);
    annotations[REMOTE_SVC_FQ_NAME_ANNOTATION] = remoteFqName(remote, link);
    annotations[REMOTE_RESOURCE_VERSION_ANNOTATION] = remote.metadata?.resourceVersion ?? '';
    annotations[LINK_ANNOTATION] = linkKey(link.metadata);
    return annotations;
}

/** The annotations of a source Service that the Service standing for it carries (Linkerd's excludedAnnotations). */
export function copiedAnnotations(source: Record<string, string> | undefined, excluded: readonly string[]): Record<string, string> {
    const annotations: Record<string, string> = {};
    for (const [key, value] of Object.entries(source ?? {})) {
        if (DROPPED_ANNOTATIONS.has(key) || isReservedKey(key)) continue;
        // The destination needs opaque ports to proxy the mirror correctly: never excluded.
        if (key !== OPAQUE_PORTS_ANNOTATION && isExcludedKey(key, excluded)) continue;
        annotations[key] = value;
    }
    return annotations;
}

/** `<name>.<namespace>.svc.<targetClusterDomain>`, the name the gateway routes on. */
export function remoteFqName(remote: V1Service, link: Link): string {
    const domain = link.spec.targetClusterDomain || DEFAULT_CLUSTER_DOMAIN;
    return `${remote.metadata?.name ?? ''}.${remote.metadata?.namespace ?? ''}.svc.${domain}`;
}

/** A local Service this Link's mirror wrote (so it may update or delete it). */
export function isMirrorOf(local: V1Service, link: Link): boolean {
    return mirrorOwnerProblem(local, link) === null;
}

/**
 * Why a local Service with the name of one of this Link's mirrors is not that mirror (so it
 * is never changed, adopted or deleted), or null when it is. Ours: labelled a mirror of the
 * Link's cluster, of the right kind (an endpoint mirror of `headless`, else not an endpoint
 * mirror), and naming no other Link. A mirror without the Link annotation is one Linkerd's
 * own service mirror wrote for this cluster: taken over, as a migration from Linkerd expects.
 */
export function mirrorOwnerProblem(local: V1Service, link: Link, headless?: string): string | null {
    const labels = local.metadata?.labels ?? {};
    const cluster = link.spec.targetClusterName;
    const where = `${local.metadata?.namespace}/${local.metadata?.name}`;
    const notOurs = (why: string) => `${where} exists and is not a mirror of Link ${link.metadata.name}: ${why}; it is left alone`;
    if (labels[MIRRORED_SERVICE_LABEL] !== 'true') return notOurs(`it is not labelled ${MIRRORED_SERVICE_LABEL}=true`);
    if (labels[CLUSTER_NAME_LABEL] !== cluster) {
        return notOurs(labels[CLUSTER_NAME_LABEL] === undefined ? `it has no ${CLUSTER_NAME_LABEL} label` : `it mirrors cluster ${JSON.stringify(labels[CLUSTER_NAME_LABEL])}`);
    }
    const owner = mirrorLinkKey(local);
    if (owner !== undefined && owner !== linkKey(link.metadata)) return notOurs(`it is a mirror of Link ${owner}`);
    const endpointOf = labels[HEADLESS_MIRROR_SVC_NAME_LABEL];
    if (headless === undefined && endpointOf !== undefined) return notOurs(`it is an endpoint mirror of ${endpointOf}`);
    if (headless !== undefined && endpointOf !== headless) return notOurs(`it is not an endpoint mirror of ${headless}`);
    return null;
}

/** Why a local Service may not be changed by this writer, or null when it may. */
export type OwnerCheck = (local: V1Service) => string | null;

/** What to do with the Service standing for a remote one, given what is stored under its name. */
export type ServicePlan = { action: 'create' | 'update' | 'recreate' | 'keep' } | { action: 'refuse'; problem: string };

/**
 * The decision for one mirror (or endpoint mirror, or federated) Service: a Service that is
 * not ours is refused before anything else is looked at, so no path of the writer can change,
 * adopt or delete it. `local` is what is known to be stored (undefined: nothing known).
 */
export function planMirrorService(local: V1Service | undefined, desired: V1Service, owner: OwnerCheck): ServicePlan {
    if (local === undefined) return { action: 'create' };
    const problem = owner(local);
    if (problem !== null) return { action: 'refuse', problem };
    if (mirrorServiceNeedsRecreate(local, desired)) return { action: 'recreate' };
    return { action: mirrorServiceChanged(local, desired) ? 'update' : 'keep' };
}

/**
 * Whether writing `desired` would change `existing` in a field the mirror owns: labels,
 * annotations, type, selector, ports, IP families. Fields the apiserver fills in (clusterIP,
 * sessionAffinity, internalTrafficPolicy, defaulted protocol/targetPort) are not ours, so a
 * resync with nothing new writes nothing.
 */
export function mirrorServiceChanged(existing: V1Service, desired: V1Service): boolean {
    const have = existing.spec ?? {};
    const want = desired.spec ?? {};
    if (!sameMap(existing.metadata?.labels, desired.metadata?.labels)) return true;
    if (!sameMap(existing.metadata?.annotations, desired.metadata?.annotations)) return true;
    if ((have.type ?? 'ClusterIP') !== (want.type ?? 'ClusterIP')) return true;
    if (!sameMap(have.selector, want.selector)) return true;
    if (!samePorts(have.ports, want.ports)) return true;
    if (want.ipFamilyPolicy !== undefined && have.ipFamilyPolicy !== want.ipFamilyPolicy) return true;
    return want.ipFamilies !== undefined && !familiesSatisfied(have.ipFamilies ?? [], want.ipFamilies, want.ipFamilyPolicy);
}

/**
 * Changes an update cannot make: clusterIP and the primary IP family are immutable, so a
 * headless mirror (Linkerd's headless mode) or one whose remote changed primary family must be
 * deleted and created again.
 */
export function mirrorServiceNeedsRecreate(existing: V1Service, desired: V1Service): boolean {
    if ((existing.spec?.clusterIP === 'None') !== (desired.spec?.clusterIP === 'None')) return true;
    const havePrimary = existing.spec?.ipFamilies?.[0];
    const wantPrimary = desired.spec?.ipFamilies?.[0];
    return havePrimary !== undefined && wantPrimary !== undefined && havePrimary !== wantPrimary;
}

/** PreferDualStack on a single-stack cluster keeps only the primary family: that is not a change. */
function familiesSatisfied(have: string[], want: string[], policy: string | undefined): boolean {
    if (have.length === want.length) return have.every((family, i) => family === want[i]);
    return policy === 'PreferDualStack' && have.length === 1 && have[0] === want[0];
}

function samePorts(have: V1ServicePort[] | undefined, want: V1ServicePort[] | undefined): boolean {
    const a = (have ?? []).map(portIdentity);
    const b = (want ?? []).map(portIdentity);
    return a.length === b.length && a.every((key, i) => key === b[i]);
}

function portIdentity(port: V1ServicePort): string {
    const target = port.targetPort ?? port.port;
    return JSON.stringify([port.name ?? '', port.protocol ?? 'TCP', port.port, String(target), port.appProtocol ?? '']);
}

function sameMap(a: Record<string, string> | undefined, b: Record<string, string> | undefined): boolean {
    const left = Object.entries(a ?? {});
    const right = b ?? {};
    return left.length === Object.keys(right).length && left.every(([key, value]) => Object.hasOwn(right, key) && right[key] === value);
}

/**
 * Whether the remote Service has at least one ready endpoint, read from its EndpointSlices.
 * A nil `ready` is "unknown", which the API says consumers should treat as ready. An endpoint
 * counts only with an address that may be an endpoint (src/ip/): a remote that lists only
 * 127.0.0.1 or 169.254.169.254 has nothing to route to (remoteEndpointWarnings says so).
 */
export function hasReadyEndpoints(remoteSlices: readonly V1EndpointSlice[]): boolean {
    return remoteSlices.some((slice) => (slice.endpoints ?? []).some((endpoint) => endpoint.conditions?.ready !== false && hasUsableAddress(endpoint)));
}

/** compact.ts stands this one address for "some ready endpoint at a usable address". */
export const SOME_USABLE_ADDRESS = '(some usable address)';

export function hasUsableAddress(endpoint: { addresses?: readonly string[] }): boolean {
    return (endpoint.addresses ?? []).some((address) => address === SOME_USABLE_ADDRESS || usableEndpointIP(address).usable);
}

/** Refused addresses told per remote slice at most: a slice of 1 000 bad endpoints is one Event line. */
export const WARNED_ADDRESSES_PER_SLICE = 3;

/**
 * The remote endpoint addresses left out because no endpoint may hold them (src/ip/:
 * loopback, link-local, unspecified, multicast, not an IP), one line per remote slice naming
 * it, at most WARNED_ADDRESSES_PER_SLICE addresses each, sorted.
 */
export function remoteEndpointWarnings(remoteSlices: readonly V1EndpointSlice[]): string[] {
    const warnings: string[] = [];
    for (const slice of remoteSlices) {
        const refused: string[] = [];
        for (const endpoint of slice.endpoints ?? []) {
            for (const address of endpoint.addresses ?? []) {
                if (address === SOME_USABLE_ADDRESS || refused.length >= WARNED_ADDRESSES_PER_SLICE) continue;
                const ip = usableEndpointIP(address);
                if (!ip.usable) refused.push(`${JSON.stringify(address)} (${ip.reason})`);
            }
        }
        if (refused.length > 0) {
            warnings.push(`remote EndpointSlice ${slice.metadata?.namespace}/${slice.metadata?.name}: left out ${refused.join(', ')}`);
        }
    }
    return warnings.sort();
}

/**
 * The namespace `--enable-namespace-creation` creates for a mirror whose namespace is missing,
 * labelled as Linkerd labels it (cluster-name "" for the local cluster's federated members).
 * Namespaces are never updated or deleted: they may hold anything by now.
 */
export function buildMirrorNamespace(name: string, clusterName: string): { apiVersion: 'v1'; kind: 'Namespace'; metadata: { name: string; labels: Record<string, string> } } {
    return { apiVersion: 'v1', kind: 'Namespace', metadata: { name, labels: { [MIRRORED_SERVICE_LABEL]: 'true', [CLUSTER_NAME_LABEL]: clusterName } } };
}
