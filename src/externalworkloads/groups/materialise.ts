// What a registered VM's ExternalWorkload should be: the group's template (labels, annotations,
// ports, mesh identity) and the addresses the VM claims in its Lease, each checked twice: an
// endpoint must be able to hold it (src/ip/address.ts, the apiserver's rules and ours) and it
// must lie in the group's ranges (src/ip/cidr.ts). Only addresses come from the VM; everything
// else comes from the template, which the VM cannot write. Pure.
import { inRanges } from '../../ip/cidr.js';
import { usableEndpointIP } from '../../ip/address.js';
import type { AddressType } from '../../ip/family.js';
import { PROBE_ANNOTATION, WORKLOAD_API_VERSION, WORKLOAD_KIND, type MeshTLS, type WorkloadPort } from '../types.js';
import { GENERATION_ANNOTATION, GROUP_API_VERSION, GROUP_KIND, GROUP_LABEL, type RegistrationLease, type WorkloadGroup } from './types.js';

export interface DesiredWorkload {
    apiVersion: typeof WORKLOAD_API_VERSION;
    kind: typeof WORKLOAD_KIND;
    metadata: {
        name: string;
        namespace: string;
        labels: Record<string, string>;
        annotations: Record<string, string>;
        ownerReferences: Array<{ apiVersion: string; kind: string; name: string; uid: string; controller: true; blockOwnerDeletion: false }>;
    };
    spec: { meshTLS: Required<MeshTLS>; ports: WorkloadPort[]; workloadIPs: Array<{ ip: string }> };
}

export interface AddressRefusal {
    address: string;
    why: string;
}

export interface Materialised {
    workload: DesiredWorkload;
    refused: AddressRefusal[];
}

/** The workload for `lease` in `group`; `probing`: false while its heartbeat has lapsed (no probe may mark it ready then). */
export function materialise(group: WorkloadGroup, lease: RegistrationLease, probing: boolean): Materialised {
    const { workloadIPs, refused } = claimedAddresses(lease.addresses, group);
    const annotations: Record<string, string> = {};
    for (const [key, value] of Object.entries(group.template.annotations)) {
        if (probing || !key.startsWith(PROBE_ANNOTATION)) annotations[key] = value;
    }
    annotations[GENERATION_ANNOTATION] = String(group.generation);
    return {
        workload: {
            apiVersion: WORKLOAD_API_VERSION,
            kind: WORKLOAD_KIND,
            metadata: {
                name: lease.name,
                namespace: lease.namespace,
                labels: { ...group.template.labels, [GROUP_LABEL]: group.name },
                annotations,
                // Deleting the group deletes its workloads (the garbage collector); not blocking
                // its deletion, which would need update on the group's finalizers.
                ownerReferences: [{ apiVersion: GROUP_API_VERSION, kind: GROUP_KIND, name: group.name, uid: group.uid, controller: true, blockOwnerDeletion: false }],
            },
            spec: {
                meshTLS: { identity: expand(group.template.meshTLS.identity, group, lease), serverName: expand(group.template.meshTLS.serverName, group, lease) },
                ports: group.template.ports.map((p) => ({ ...p })),
                workloadIPs,
            },
        },
        refused,
    };
}

/** The claimed addresses a workload may hold (canonical, one per family, in the group's ranges) and why each other one is refused. */
export function claimedAddresses(claimed: readonly string[], group: Pick<WorkloadGroup, 'ranges' | 'name'>): { workloadIPs: Array<{ ip: string }>; refused: AddressRefusal[] } {
    const byFamily = new Map<AddressType, string>();
    const refused: AddressRefusal[] = [];
    for (const address of claimed) {
        const ip = usableEndpointIP(address);
        if (!ip.usable) refused.push({ address, why: `${JSON.stringify(address)} ${ip.why}` });
        else if (!inRanges(ip.address, group.ranges)) {
            refused.push({ address, why: `${ip.address} is outside the address ranges of group ${group.name} (${group.ranges.map((r) => r.text).join(', ')})` });
        } else if (byFamily.has(ip.family)) refused.push({ address, why: `${ip.address} is a second ${ip.family} address (a workload holds one per family; ${byFamily.get(ip.family)} was claimed first)` });
        else byFamily.set(ip.family, ip.address);
    }
    return { workloadIPs: [...byFamily.values()].map((ip) => ({ ip })), refused };
}

/** {vm}, {group}, {namespace} and {serviceAccount} in a meshTLS pattern. */
function expand(pattern: string, group: WorkloadGroup, lease: RegistrationLease): string {
    const values: Record<string, string> = { vm: lease.vm, group: group.name, namespace: group.namespace, serviceAccount: lease.name };
    return pattern.replace(/\{(vm|group|namespace|serviceAccount)\}/g, (_, key: string) => values[key]!);
}
