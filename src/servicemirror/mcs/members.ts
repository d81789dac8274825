// The clusterset as it concerns one imported Service now, read from the caches: this cluster
// first (its own ServiceExport, Service and upstream's slices), then each cluster a Link points
// at (through the ClusterSet: unknown while its watch is starting). Both reconcilers plan from it.
import type { V1EndpointSlice, V1Service } from '@kubernetes/client-node';
import { LABEL_SERVICE_NAME } from '../../endpointslice/slice.js';
import type { Informer } from '../../kube/informer.js';
import type { KubeObject } from '../../kube/store.js';
import type { ClusterSet } from './clusterset.js';
import { exportMode, hasReadyEndpoints } from '../plan/mirror.js';
import type { MemberCluster, ServiceExport, ServiceImport } from './types.js';

type Local<T> = T & KubeObject;

/** What this cluster's MCS controller caches, and the clusters it reads through the Links. */
export interface McsCaches {
    exports: Informer<ServiceExport>;
    imports: Informer<ServiceImport>;
    /** Every local Service: exported ones compact, derived ones as written. */
    services: Informer<Local<V1Service>>;
    /** Upstream's slices of local Services. */
    sourceSlices: Informer<Local<V1EndpointSlice>>;
    clusterSet: ClusterSet;
}

export function membersOf(caches: McsCaches, namespace: string, name: string, cluster: string, now: number): MemberCluster[] {
    const members: MemberCluster[] = [
        {
            name: cluster,
            known: true,
            export: caches.exports.store.get(namespace, name),
            service: caches.services.store.get(namespace, name),
            endpoints: { kind: 'slices', slices: caches.sourceSlices.store.byLabel(LABEL_SERVICE_NAME, name, namespace) },
        },
    ];
    for (const member of caches.clusterSet.members()) {
        if (member.cluster === cluster) continue; // a Link back to ourselves adds nothing
        const remote = member.remote;
        if (!remote) {
            members.push({ name: member.cluster, known: false, endpoints: { kind: 'slices', slices: [] } });
            continue;
        }
        const slices = remote.slices.byLabel(LABEL_SERVICE_NAME, name, namespace);
        const service = remote.services.get(namespace, name);
        // Through the gateway, unless there is none (a flat network) or the Link exports this
        // Service in remote-discovery mode (Linkerd's destination reads the remote's endpoints).
        const direct = remote.link.gateway === null || (service !== undefined && exportMode(service, remote.link) === 'remote-discovery');
        members.push({
            name: member.cluster,
            known: true,
            export: remote.exports.get(namespace, name),
            service,
            endpoints: direct
                ? { kind: 'slices', slices }
                : { kind: 'gateway', link: remote.link, addresses: remote.gatewayAddresses(['IPv4', 'IPv6'], now), alive: remote.gatewayAlive, hasReadyEndpoints: hasReadyEndpoints(slices) },
        });
    }
    return members;
}

/** Whether namespace/name is exported here or by a readable member, or imported here: only then is it a key. */
export function concernsMcs(caches: McsCaches, namespace: string, name: string): boolean {
    if (caches.exports.store.get(namespace, name) || caches.imports.store.get(namespace, name)) return true;
    return caches.clusterSet.members().some((m) => m.remote?.exports.get(namespace, name) !== undefined);
}
