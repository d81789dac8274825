// What the workload-group tests share: a group, a registration Lease written as an agent
// would, and reads of the materialised workloads and the group's status.
import { collectionPath, ExternalWorkloadGroups, ExternalWorkloads, Leases, objectPath } from '../../src/kube/resources.js';
import { KubeConfig } from '../../src/kube/kubeconfig.js';
import { KubeRest } from '../../src/kube/rest.js';
import { isNotFound } from '../../src/kube/errors.js';
import { applyObjects, renderChart } from '../../src/testing/chart.js';
import { kubeconfigForToken, type ClusterState } from '../../src/testing/cluster.js';
import { microTime } from '../../src/time/format.js';
import type { WorkloadCondition } from '../../src/externalworkloads/types.js';
import type { GroupStatus } from '../../src/externalworkloads/groups/status.js';

export interface GroupSpecInput {
    addressRanges?: string[];
    heartbeatPeriod?: string;
    leaseDuration?: string;
    gracePeriod?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    ports?: Array<{ name?: string; port: number }>;
}

export function groupObject(name: string, spec: GroupSpecInput = {}) {
    return {
        apiVersion: 'mesh-endpoints.io/v1alpha1',
        kind: 'ExternalWorkloadGroup',
        metadata: { name },
        spec: {
            addressRanges: spec.addressRanges ?? ['10.20.0.0/16', 'fd00:20::/64'],
            heartbeatPeriod: spec.heartbeatPeriod ?? '1s',
            leaseDuration: spec.leaseDuration ?? '3s',
            gracePeriod: spec.gracePeriod ?? '8s',
            template: {
                metadata: { labels: spec.labels ?? { app: 'web' }, annotations: spec.annotations ?? {} },
                spec: { ports: spec.ports ?? [{ name: 'http', port: 8080 }], meshTLS: { identity: '{serviceAccount}.{namespace}.serviceaccount.identity.linkerd.cluster.local', serverName: '{vm}.{group}' } },
            },
        },
    };
}

export async function createGroup(rest: KubeRest, ns: string, name: string, spec: GroupSpecInput = {}): Promise<{ metadata: { uid: string } }> {
    return rest.create(collectionPath(ExternalWorkloadGroups, ns), groupObject(name, spec) as never) as never;
}

export interface LeaseBody {
    metadata: { name: string; namespace?: string; resourceVersion?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
    spec: { holderIdentity?: string; leaseDurationSeconds?: number; renewTime?: string };
}

/** The Lease an agent of VM `vm` writes: `<group>.<vm>`, holder itself, its addresses. */
export function leaseBody(ns: string, group: string, vm: string, addresses: string[], opts: { renewTime?: Date; withdrawn?: boolean; holder?: string } = {}): LeaseBody {
    const name = `${group}.${vm}`;
    return {
        metadata: {
            name,
            labels: { 'mesh-endpoints.io/workload-group': group },
            annotations: { 'mesh-endpoints.io/addresses': addresses.join(','), ...(opts.withdrawn ? { 'mesh-endpoints.io/withdrawn': 'true' } : {}) },
        },
        spec: { holderIdentity: opts.holder ?? `system:serviceaccount:${ns}:${name}`, leaseDurationSeconds: 3, renewTime: microTime(opts.renewTime ?? new Date()) },
    };
}

/** Creates the Lease or renews it (a replace at its current version), as the agent does. */
export async function writeLease(rest: KubeRest, ns: string, body: LeaseBody): Promise<void> {
    try {
        const current = await rest.get<LeaseBody>(objectPath(Leases, ns, body.metadata.name));
        await rest.replace(objectPath(Leases, ns, body.metadata.name), { ...body, metadata: { ...body.metadata, resourceVersion: current.metadata.resourceVersion } } as never);
    } catch (err) {
        if ((err as { code?: number }).code !== 404) throw err;
        await rest.create(collectionPath(Leases, ns), body as never);
    }
}

export interface MaterialisedWorkload {
    metadata: { name: string; labels?: Record<string, string>; annotations?: Record<string, string>; ownerReferences?: Array<{ uid: string; kind: string }> };
    spec: { workloadIPs?: Array<{ ip: string }>; ports?: Array<{ name?: string; port: number }>; meshTLS?: { identity: string; serverName: string } };
    status?: { conditions?: WorkloadCondition[] };
}

export async function getWorkload(rest: KubeRest, ns: string, name: string): Promise<MaterialisedWorkload | undefined> {
    try {
        return await rest.get<MaterialisedWorkload>(objectPath(ExternalWorkloads, ns, name));
    } catch (err) {
        if (isNotFound(err)) return undefined;
        throw err;
    }
}

export async function readyOf(rest: KubeRest, ns: string, name: string): Promise<WorkloadCondition | undefined> {
    return (await getWorkload(rest, ns, name))?.status?.conditions?.find((c) => c.type === 'Ready');
}

export async function groupStatusOf(rest: KubeRest, ns: string, name: string): Promise<Partial<GroupStatus>> {
    return (await rest.get<{ status?: Partial<GroupStatus> }>(objectPath(ExternalWorkloadGroups, ns, name))).status ?? {};
}

export async function leaseExists(rest: KubeRest, ns: string, name: string): Promise<boolean> {
    try {
        await rest.get(objectPath(Leases, ns, name));
        return true;
    } catch (err) {
        if (isNotFound(err)) return false;
        throw err;
    }
}

/** The chart's rules for workload agents (their ClusterRole, the two ValidatingAdmissionPolicies and bindings), applied as rendered. */
export async function installAgentPolicies(rest: KubeRest): Promise<string> {
    const objects = (await renderChart({ namespace: 'mesh-endpoints' })).filter(
        (o) => (o.kind === 'ClusterRole' && o.metadata.name.endsWith('-workload-agent')) || o.kind.startsWith('ValidatingAdmissionPolicy'),
    );
    if (objects.length !== 5) throw new Error(`the chart rendered ${objects.length} of the agents' 5 objects`);
    await applyObjects(rest, objects);
    return objects.find((o) => o.kind === 'ClusterRole')!.metadata.name;
}

export interface VmCredentials {
    username: string;
    token: string;
    /** A client acting as the VM. */
    rest: KubeRest;
}

/** VM `vm` of `group`: its ServiceAccount <group>.<vm>, bound to the agents' ClusterRole in `ns`, and a token of it. */
export async function vmCredentials(cluster: { admin: KubeRest; state: ClusterState }, ns: string, group: string, vm: string, clusterRole: string): Promise<VmCredentials> {
    const account = `${group}.${vm}`;
    await cluster.admin.create(`/api/v1/namespaces/${ns}/serviceaccounts`, { metadata: { name: account } } as never);
    await cluster.admin.create(`/apis/rbac.authorization.k8s.io/v1/namespaces/${ns}/rolebindings`, {
        metadata: { name: account },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: clusterRole },
        subjects: [{ kind: 'ServiceAccount', name: account, namespace: ns }],
    } as never);
    const token = await requestToken(cluster.admin, ns, account);
    const kc = new KubeConfig();
    kc.loadFromString(kubeconfigForToken(cluster.state, `${ns}-${account}`, token));
    return { username: `system:serviceaccount:${ns}:${account}`, token, rest: new KubeRest(kc) };
}

/** A bound token of the ServiceAccount, as `kubectl create token` makes one. */
export async function requestToken(admin: KubeRest, ns: string, account: string, seconds = 3600): Promise<string> {
    const review = await admin.create<{ status: { token: string } }>(`/api/v1/namespaces/${ns}/serviceaccounts/${account}/token`, {
        apiVersion: 'authentication.k8s.io/v1',
        kind: 'TokenRequest',
        spec: { expirationSeconds: seconds },
    } as never);
    return review.status.token;
}
