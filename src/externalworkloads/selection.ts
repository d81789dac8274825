// Which workloads a Service selects and which address families it serves. Exported for the
// controller's event handlers too: a workload change requeues exactly the Services for
// which selectsWorkload is true before or after the change.
import type { V1Service } from '@kubernetes/client-node';
import type { AddressType } from '../endpointslice/types.js';
import { parseIP } from '../ip/address.js';

/** What selection reads of a workload: its namespace and labels. */
export interface Selectable {
    metadata: { namespace: string; labels?: Record<string, string> };
}

/**
 * A Service with a selector selects the workloads of its own namespace whose labels match
 * it; an empty selector {} matches them all. A Service without selector gets its slices
 * from someone else, and an ExternalName Service has no endpoints at all.
 */
export function selectsWorkload(service: V1Service, workload: Selectable): boolean {
    const selector = service.spec?.selector;
    if (selector == null || service.spec?.type === 'ExternalName') return false;
    if (service.metadata?.namespace !== workload.metadata.namespace) return false;
    const labels = workload.metadata.labels ?? {};
    // A loop, not Object.entries: this runs for every candidate workload of every sync.
    for (const key in selector) {
        if (labels[key] !== selector[key]) return false;
    }
    return true;
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

// Indexes that let a Service find its workloads, and a workload its Services, without
// scanning a namespace: a workload is filed under each of its labels; a Service under one
// pair of its selector (a workload it selects carries every pair, that one included), or
// under "every workload of the namespace" for an empty selector. Candidates found through
// them are still checked with selectsWorkload.
const ALL = '*';
const labelPair = (namespace: string, key: string, value: string) => `${namespace}\0${key}=${value}`;

/** The values a workload is filed under in the label index. */
export function workloadIndexValues(workload: Selectable): string[] {
    const { namespace, labels = {} } = workload.metadata;
    return Object.entries(labels).map(([key, value]) => labelPair(namespace, key, value));
}

/** The one value a Service is filed under in the selector index; none when it selects nothing. */
export function serviceIndexValues(service: V1Service): string[] {
    const selector = service.spec?.selector;
    const namespace = service.metadata?.namespace;
    if (selector == null || service.spec?.type === 'ExternalName' || !namespace) return [];
    const first = Object.keys(selector).sort()[0];
    return [first === undefined ? labelPair(namespace, ALL, '') : labelPair(namespace, first, selector[first]!)];
}

/** Selector-index values under which the Services that may select this workload are filed. */
export function servicesIndexLookups(workload: Selectable): string[] {
    return [labelPair(workload.metadata.namespace, ALL, ''), ...workloadIndexValues(workload)];
}

/**
 * Label-index values whose workloads include every one the Service selects: each pair of its
 * selector (the caller takes the smallest), or undefined for an empty selector (the namespace).
 */
export function workloadsIndexLookups(service: V1Service): string[] | undefined {
    const selector = service.spec?.selector ?? {};
    const namespace = service.metadata?.namespace ?? '';
    const pairs = Object.entries(selector).map(([key, value]) => labelPair(namespace, key, value));
    return pairs.length > 0 ? pairs : undefined;
}
