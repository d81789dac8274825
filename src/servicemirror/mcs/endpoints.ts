// The endpoints one member cluster gives the derived Service: its gateway's addresses (the
// mirror's own gateway groups, endpoints.ts one level up: TTL, stale window and probe included)
// or its own endpoints, copied from its Service's slices. Either way, only on the ports the
// import has as that member serves them. Pure; input for planSlices.
import type { DiscoveryV1EndpointPort, V1Endpoint, V1EndpointSlice, V1Service, V1ServicePort } from '@kubernetes/client-node';
import { normalisePorts, portMapKey } from '../../endpointslice/ports.js';
import type { AddressType, DesiredGroup } from '../../endpointslice/types.js';
import { desiredMirrorGroups } from '../plan/endpoints.js';
import { REMOTE_SVC_FQ_NAME_ANNOTATION } from '../api/keys.js';
import { remoteFqName } from '../plan/mirror.js';
import type { ImportPort, SourceEndpoints } from './types.js';

export interface SourceGroups {
    groups: DesiredGroup[];
    /** On every slice of this source: what Linkerd's destination reads to route through the gateway. */
    annotations: Record<string, string>;
}

/**
 * `service` is the member's exported Service, `ports` the import's (the derived Service's),
 * `addressTypes` the derived Service's.
 */
export function sourceGroups(source: SourceEndpoints, service: V1Service, ports: readonly ImportPort[], addressTypes: AddressType[]): SourceGroups {
    const served = servedPorts(service, ports);
    if (source.kind === 'slices') return { groups: copiedGroups(source.slices, served, addressTypes), annotations: {} };
    // The mirror's planner reads the Service a mirror would be: the remote's ports the import
    // has, the derived families. A port it leaves out would send the import's port number to a
    // gateway that forwards it to a remote Service without it.
    const mirror: V1Service = {
        metadata: { annotations: { [REMOTE_SVC_FQ_NAME_ANNOTATION]: remoteFqName(service, source.link) } },
        spec: { ports: served, ipFamilies: addressTypes },
    };
    const planned = desiredMirrorGroups({
        mirror,
        link: source.link,
        gatewayAddresses: source.addresses,
        remoteHasReadyEndpoints: source.hasReadyEndpoints,
        gatewayAlive: source.alive,
    });
    // A Service with ports none of which the import has gives it nothing; a gateway endpoint
    // with no port would mean no port at all, so it is not written either.
    const nothingServed = served.length === 0 && (service.spec?.ports ?? []).length > 0;
    return { groups: nothingServed ? [] : planned.groups, annotations: planned.annotations };
}

/**
 * The member Service's ports that the import has as they are: the same name, number, protocol
 * and appProtocol. kube-proxy matches a slice port to the derived Service's port by name only,
 * so a member whose `tcp` is 4242 while the import's `tcp` is the winner's 42 would otherwise
 * be sent port 42 traffic its Pods do not serve under that name (the KEP's conflict policy: the
 * oldest export's port wins, the others are not routed on it).
 */
function servedPorts(service: V1Service, ports: readonly ImportPort[]): V1ServicePort[] {
    const imported = new Map(ports.map((p) => [p.name ?? '', p]));
    return (service.spec?.ports ?? []).filter((p) => {
        const port = imported.get(p.name ?? '');
        return port !== undefined && port.port === p.port && (port.protocol ?? 'TCP') === (p.protocol ?? 'TCP') && (port.appProtocol ?? '') === (p.appProtocol ?? '');
    });
}

/**
 * The slices' endpoints, grouped as they are (address type, port list) on the served ports only;
 * other families left out, and so are endpoints a slice leaves with no served port (a slice with
 * no ports at all, a headless Service's, is copied as it is: there is nothing to misroute).
 */
function copiedGroups(slices: readonly V1EndpointSlice[], served: readonly V1ServicePort[], addressTypes: AddressType[]): DesiredGroup[] {
    const groups = new Map<string, DesiredGroup>();
    for (const slice of slices) {
        const addressType = slice.addressType as AddressType;
        if (!addressTypes.includes(addressType)) continue;
        const all = slice.ports ?? [];
        const ports = normalisePorts(all.filter((p) => isServed(p, served)));
        if (all.length > 0 && ports.length === 0) continue;
        const key = `${addressType} ${portMapKey(ports)}`;
        let group = groups.get(key);
        if (!group) groups.set(key, (group = { addressType, ports, endpoints: [] }));
        for (const endpoint of slice.endpoints ?? []) {
            if ((endpoint.addresses ?? []).length > 0) group.endpoints.push(copiedEndpoint(endpoint));
        }
    }
    return [...groups.values()].filter((g) => g.endpoints.length > 0);
}

/** A slice port carries its Service port's name and protocol (its number is the target's). */
function isServed(port: DiscoveryV1EndpointPort, served: readonly V1ServicePort[]): boolean {
    return served.some((p) => (p.name ?? '') === (port.name ?? '') && (p.protocol ?? 'TCP') === (port.protocol ?? 'TCP'));
}

function copiedEndpoint(from: V1Endpoint): V1Endpoint {
    const endpoint: V1Endpoint = { addresses: [...from.addresses] };
    if (from.conditions) endpoint.conditions = { ...from.conditions };
    if (from.hostname) endpoint.hostname = from.hostname;
    if (from.nodeName) endpoint.nodeName = from.nodeName;
    if (from.zone) endpoint.zone = from.zone;
    if (from.targetRef) endpoint.targetRef = { ...from.targetRef };
    return endpoint;
}
