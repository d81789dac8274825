// The endpoints a mirror Service should have: every gateway address of the mirror's IP families,
// each serving every mirror port on the gateway port (the gateway routes on the authority).
// Produces input for the shared EndpointSlice reconciler (src/endpointslice/); must not
// resolve names (src/dns/ does), probe the gateway, or write anything.
import type { DiscoveryV1EndpointPort, V1Endpoint, V1EndpointSlice, V1Service } from '@kubernetes/client-node';
import { normalisePort } from '../../endpointslice/ports.js';
import type { AddressType, DesiredGroup } from '../../endpointslice/types.js';
import type { GatewayAddress } from '../../dns/name-state.js';
import { parseIP, usableEndpointIP } from '../../ip/address.js';
import {
    CLUSTER_NAME_LABEL,
    MIRRORED_SERVICE_LABEL,
    REMOTE_DISCOVERY_LABEL,
    REMOTE_GATEWAY_IDENTITY_ANNOTATION,
    REMOTE_SVC_FQ_NAME_ANNOTATION,
} from '../api/keys.js';
import type { Link } from '../api/link.js';

/** One resolved gateway address, as src/dns/ hands it over. */
export type { GatewayAddress };

export interface MirrorGroupsInput {
    mirror: V1Service;
    link: Link;
    gatewayAddresses: readonly GatewayAddress[];
    remoteHasReadyEndpoints: boolean;
    /** False after probeSpec.failureThreshold consecutive probe failures. */
    gatewayAlive: boolean;
}

export interface MirrorGroups {
    addressTypes: AddressType[];
    groups: DesiredGroup[];
    annotations: Record<string, string>;
    extraLabels: Record<string, string>;
}

/**
 * What the mirror's slices should hold. No endpoints at all (and so no groups) when the remote
 * has no ready endpoint, when the mirror is in remote-discovery mode (the destination reads the
 * remote cluster directly), or when the Link has no gateway: the reconciler then removes any
 * slices left over, and a later call with endpoints brings them back.
 */
export function desiredMirrorGroups(input: MirrorGroupsInput): MirrorGroups {
    const { mirror, link } = input;
    const result = emptyMirrorGroups(mirror, link);
    const addressTypes = result.addressTypes;
    const remoteDiscovery = mirror.metadata?.labels?.[REMOTE_DISCOVERY_LABEL] !== undefined;
    if (!input.remoteHasReadyEndpoints || remoteDiscovery || link.gateway === null) return result;

    const ports = gatewayPorts(mirror, link.gateway.port);
    for (const addressType of addressTypes) {
        const endpoints = gatewayEndpoints(input.gatewayAddresses, addressType, input.gatewayAlive);
        if (endpoints.length > 0) result.groups.push({ addressType, ports, endpoints });
    }
    return result;
}

/** A mirror's slices with no endpoints: their address types, labels and annotations. */
export function emptyMirrorGroups(mirror: V1Service, link: Link): MirrorGroups {
    return {
        addressTypes: mirrorAddressTypes(mirror),
        groups: [],
        annotations: sliceAnnotations(mirror, link),
        extraLabels: { [MIRRORED_SERVICE_LABEL]: 'true', [CLUSTER_NAME_LABEL]: link.spec.targetClusterName },
    };
}

/**
 * One address type per family of the mirror, as the EndpointSlice controller does; a Service
 * read from an apiserver that predates dual-stack has no ipFamilies, so its ClusterIP decides.
 */
export function mirrorAddressTypes(mirror: V1Service): AddressType[] {
    const types: AddressType[] = [];
    for (const family of mirror.spec?.ipFamilies ?? []) {
        const type = family === 'IPv6' ? 'IPv6' : family === 'IPv4' ? 'IPv4' : null;
        if (type !== null && !types.includes(type)) types.push(type);
    }
    if (types.length > 0) return types;
    const clusterIP = parseIP(mirror.spec?.clusterIP ?? '');
    return clusterIP.ok && clusterIP.family === 'IPv6' ? ['IPv6'] : ['IPv4'];
}

/**
 * Every mirror port, renumbered to the gateway port. appProtocol is left out: it describes the
 * remote workload's protocol, while the gateway port speaks the proxies' mTLS transport.
 */
function gatewayPorts(mirror: V1Service, gatewayPort: number): DiscoveryV1EndpointPort[] {
    return (mirror.spec?.ports ?? []).map((port) => {
        const endpointPort: DiscoveryV1EndpointPort = { port: gatewayPort, protocol: port.protocol ?? 'TCP' };
        if (port.name) endpointPort.name = port.name;
        return normalisePort(endpointPort);
    });
}

function gatewayEndpoints(addresses: readonly GatewayAddress[], addressType: AddressType, alive: boolean): V1Endpoint[] {
    // Two gateway names may resolve to one IP: one endpoint, ready if either says so.
    const readiness = new Map<string, boolean>();
    for (const gateway of addresses) {
        // An address that contradicts its own family is a resolver bug: trust neither.
        if (gateway.family !== addressType) continue;
        const ip = endpointIP(gateway.address, addressType);
        if (ip === null) continue;
        readiness.set(ip, (readiness.get(ip) ?? false) || gateway.ready);
    }
    return [...readiness.entries()]
        .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
        .map(([ip, ready]) => {
            const up = ready && alive;
            return { addresses: [ip], conditions: { ready: up, serving: up, terminating: false } };
        });
}

/**
 * The canonical form of an IP of the wanted family that an EndpointSlice may hold (src/ip/),
 * else null. Checked again here although src/dns/ hands over canonical IPs, because a
 * hostname or an empty string in an endpoint address is exactly Linkerd's EKS bug (#4582,
 * #5343): the write is refused and the mirror loses every endpoint.
 */
export function endpointIP(address: string, family: AddressType): string | null {
    const ip = usableEndpointIP(address);
    return ip.usable && ip.family === family ? ip.address : null;
}

/** What Linkerd's destination reads from a mirror's slices (it reads them from the slice, not the Service). */
function sliceAnnotations(mirror: V1Service, link: Link): Record<string, string> {
    const annotations: Record<string, string> = {};
    const fqName = mirror.metadata?.annotations?.[REMOTE_SVC_FQ_NAME_ANNOTATION];
    if (fqName) annotations[REMOTE_SVC_FQ_NAME_ANNOTATION] = fqName;
    const identity = link.gateway?.identity ?? link.spec.gatewayIdentity;
    if (identity) annotations[REMOTE_GATEWAY_IDENTITY_ANNOTATION] = identity;
    return annotations;
}

/**
 * The slice with every endpoint not ready (and not serving), or undefined when none was
 * ready: what the mirrors of a Link that cannot be served get once its stale window has run
 * out. Addresses stay, so they come back ready as soon as the Link is served again.
 */
export function withoutReadiness(slice: V1EndpointSlice): V1EndpointSlice | undefined {
    const endpoints = slice.endpoints ?? [];
    if (!endpoints.some((e) => e.conditions?.ready !== false)) return undefined;
    return { ...slice, endpoints: endpoints.map((e) => ({ ...e, conditions: { ...e.conditions, ready: false, serving: false } })) };
}
