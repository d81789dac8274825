// Which workloads a Service selects and which address families it serves. Exported for the
// controller's event handlers too: a workload change requeues exactly the Services for
// which selectsWorkload is true before or after the change.
import type { V1Service } from '@kubernetes/client-node';
import type { AddressType } from '../endpointslice/types.js';
import { parseIP } from '../ip/address.js';
import type { ExternalWorkload } from './types.js';

/**
 * A Service with a selector selects the workloads of its own namespace whose labels match
 * it; an empty selector {} matches them all. A Service without selector gets its slices
 * from someone else, and an ExternalName Service has no endpoints at all.
 */
export function selectsWorkload(service: V1Service, workload: ExternalWorkload): boolean {
    const selector = service.spec?.selector;
    if (selector == null || service.spec?.type === 'ExternalName') return false;
    if (service.metadata?.namespace !== workload.metadata.namespace) return false;
    const labels = workload.metadata.labels ?? {};
    return Object.entries(selector).every(([key, value]) => labels[key] === value);
}

/** Whether this controller writes slices for the Service at all. */
export function servesService(service: V1Service): boolean {
    return service.spec?.selector != null && service.spec.type !== 'ExternalName' && service.metadata?.deletionTimestamp == null;
}

/** "namespace/name", as Events and logs name a Service. */
export function serviceName(service: V1Service): string {
    return `${service.metadata?.namespace ?? ''}/${service.metadata?.name ?? ''}`;
}

/** ClusterIP "None": such a Service's endpoints get hostnames. */
export function isHeadless(service: V1Service): boolean {
    return service.spec?.clusterIP === 'None';
}

/**
 * One address type per entry of spec.ipFamilies. Without families (an object the apiserver
 * has not defaulted yet) the ClusterIP's family; headless or unallocated, both families,
 * as Linkerd and the upstream controller do.
 */
export function addressTypesForService(service: V1Service): AddressType[] {
    const types: AddressType[] = [];
    for (const family of service.spec?.ipFamilies ?? []) {
        if ((family === 'IPv4' || family === 'IPv6') && !types.includes(family)) types.push(family);
    }
    if (types.length > 0) return types;
    const clusterIP = service.spec?.clusterIP;
    if (clusterIP !== undefined && clusterIP !== 'None' && clusterIP !== '') {
        const parsed = parseIP(clusterIP);
        if (parsed.ok) return [parsed.family];
    }
    return ['IPv4', 'IPv6'];
}
