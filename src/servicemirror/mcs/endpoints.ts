// The endpoints one member cluster gives the derived Service: its gateway's addresses (the
// mirror's own gateway groups, endpoints.ts one level up: TTL, stale window and probe included)
// or its own endpoints, copied from its Service's slices. Pure; input for planSlices.
import type { V1Endpoint, V1EndpointSlice, V1Service } from '@kubernetes/client-node';
import { normalisePorts, portMapKey } from '../../endpointslice/ports.js';
import type { AddressType, DesiredGroup } from '../../endpointslice/types.js';
import { desiredMirrorGroups } from '../plan/endpoints.js';
import { REMOTE_SVC_FQ_NAME_ANNOTATION } from '../api/keys.js';
import { remoteFqName } from '../plan/mirror.js';
import type { SourceEndpoints } from './types.js';

export interface SourceGroups {
    groups: DesiredGroup[];
    /** On every slice of this source: what Linkerd's destination reads to route through the gateway. */
    annotations: Record<string, string>;
}

/** `service` is the member's exported Service; `addressTypes` the derived Service's. */
export function sourceGroups(source: SourceEndpoints, service: V1Service, addressTypes: AddressType[]): SourceGroups {
    if (source.kind === 'slices') return { groups: copiedGroups(source.slices, addressTypes), annotations: {} };
    // The mirror's planner reads the Service a mirror would be: the remote's ports, the derived families.
    const mirror: V1Service = {
        metadata: { annotations: { [REMOTE_SVC_FQ_NAME_ANNOTATION]: remoteFqName(service, source.link) } },
        spec: { ports: service.spec?.ports ?? [], ipFamilies: addressTypes },
    };
    const planned = desiredMirrorGroups({
        mirror,
        link: source.link,
        gatewayAddresses: source.addresses,
        remoteHasReadyEndpoints: source.hasReadyEndpoints,
        gatewayAlive: source.alive,
    });
    return { groups: planned.groups, annotations: planned.annotations };
}

/** The slices' endpoints, grouped as they are (address type, port list); other families left out. */
function copiedGroups(slices: readonly V1EndpointSlice[], addressTypes: AddressType[]): DesiredGroup[] {
    const groups = new Map<string, DesiredGroup>();
    for (const slice of slices) {
        const addressType = slice.addressType as AddressType;
        if (!addressTypes.includes(addressType)) continue;
        const ports = normalisePorts(slice.ports ?? []);
        const key = `${addressType} ${portMapKey(ports)}`;
        let group = groups.get(key);
        if (!group) groups.set(key, (group = { addressType, ports, endpoints: [] }));
        for (const endpoint of slice.endpoints ?? []) {
            if ((endpoint.addresses ?? []).length > 0) group.endpoints.push(copiedEndpoint(endpoint));
        }
    }
    return [...groups.values()].filter((g) => g.endpoints.length > 0);
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
