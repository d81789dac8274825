// One workload as one EndpointSlice endpoint. Every field is set in the form the apiserver
// stores it (all three conditions as booleans, optional fields absent rather than empty),
// so that comparing a desired endpoint with a stored one finds no phantom difference.
import type { V1Endpoint, V1EndpointConditions, V1ObjectReference, V1Service } from '@kubernetes/client-node';
import { isDNS1123Label } from '../endpointslice/names.js';
import { isHeadless, serviceName } from './selection.js';
import type { CompactWorkload } from './compact.js';
import { WORKLOAD_API_VERSION, WORKLOAD_KIND, type ProblemDetail } from './types.js';

export const ZONE_LABEL = 'topology.kubernetes.io/zone';

/** hostnameFor of every workload of a Service that is not headless: one object for all. */
const NO_HOSTNAME = Object.freeze({});

/**
 * A headless Service names each endpoint after its workload. A workload name the slice
 * cannot hold as a hostname (dots, over 63 characters) would make the apiserver reject the
 * whole slice, so the endpoint is published without a hostname and the problem reported.
 */
export function hostnameFor(service: V1Service, workload: CompactWorkload): Readonly<{ hostname?: string; problem?: ProblemDetail }> {
    if (!isHeadless(service)) return NO_HOSTNAME;
    const name = workload.metadata.name;
    if (isDNS1123Label(name)) return { hostname: name };
    return {
        problem: {
            reason: 'InvalidHostname',
            message: `headless Service ${serviceName(service)} cannot use the workload name as hostname: not a DNS label (lowercase letters, digits and "-", at most 63 characters); the endpoint is published without a hostname`,
        },
    };
}

/** Every combination of the three conditions, frozen and shared by the endpoints: one object fewer per endpoint a plan builds and keeps. */
const CONDITIONS: readonly V1EndpointConditions[] = Array.from({ length: 8 }, (_, bits) =>
    Object.freeze({ ready: (bits & 4) !== 0, serving: (bits & 2) !== 0, terminating: (bits & 1) !== 0 }),
);

/**
 * Conditions follow the upstream controller, not Linkerd: a workload being deleted is
 * terminating, and publishNotReadyAddresses makes every endpoint ready.
 */
export function workloadEndpoint(
    service: V1Service,
    workload: CompactWorkload,
    address: string,
    hostname: string | undefined,
): V1Endpoint {
    const { ready: serving, terminating } = workload;
    const ready = service.spec?.publishNotReadyAddresses === true || (serving && !terminating);
    const { namespace, name, uid } = workload.metadata;
    const targetRef: V1ObjectReference = { apiVersion: WORKLOAD_API_VERSION, kind: WORKLOAD_KIND, namespace, name };
    if (uid) targetRef.uid = uid;
    const endpoint: V1Endpoint = { addresses: [address], conditions: CONDITIONS[(ready ? 4 : 0) + (serving ? 2 : 0) + (terminating ? 1 : 0)], targetRef };
    if (hostname !== undefined) endpoint.hostname = hostname;
    const zone = workload.metadata.labels?.[ZONE_LABEL];
    if (zone) endpoint.zone = zone;
    return endpoint;
}
