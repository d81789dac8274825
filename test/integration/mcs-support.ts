// Shared by the MCS integration tests: two real clusters, east and west, each with the MCS CRDs
// and a Link to the other (each reads the other, no hub), each running its own service-mirror
// process (`--cluster-name`), and helpers to export Services and read back what each cluster
// imported. Unless grown (McsSetOptions.controllers) the clusters have no endpointslice
// controller: a Service's own endpoints are EndpointSlices the test writes, labelled as
// upstream's controller labels them (createService).
import { readFileSync } from 'node:fs';
import type { V1Condition, V1EndpointSlice, V1Service } from '@kubernetes/client-node';
import { after } from 'node:test';
import { collectionPath, EndpointSlices, Links, Namespaces, objectPath, Secrets, Services, ServiceExports, ServiceImports } from '../../src/kube/resources.js';
import { LABEL_MCS_SERVICE_NAME, type ServiceExport, type ServiceImport } from '../../src/servicemirror/mcs/types.js';
import { installCrds, installMcsCrds } from '../../src/testing/crds.js';
import type { UpOptions } from '../../src/testing/cluster.js';
import { eventually, setUp, startTestCluster, type TestCluster } from '../../src/testing/harness.js';
import type { NodeHost } from '../../src/testing/node-host.js';
import { startNode, type NodeImage, type RealNode } from '../../src/testing/node.js';
import { startSecondHost } from '../../src/testing/second-node.js';
import { ControllerProcess, FAST_ELECTION } from './process-support.js';

export const LINK_NS = 'mc';
export const GATEWAY = { east: '192.0.2.10', west: '192.0.2.20' } as const;
export type ClusterName = 'east' | 'west';

export interface McsMember {
    name: ClusterName;
    cluster: TestCluster;
    process?: ControllerProcess;
}

export interface McsSet {
    east: McsMember;
    west: McsMember;
}

export interface McsSetOptions {
    /** Grown clusters: kube-controller-manager, kube-scheduler and kwok nodes (src/testing/controllers.ts). */
    controllers?: UpOptions['controllers'];
    /** More kube-apiserver flags for both clusters. */
    extraApiserverArgs?: string[];
    /** The address both kube-apiservers bind (UpOptions.address): NODE_IP for clusters with real nodes. */
    address?: string;
    /** Links with no gateway: a flat network, the imports carry the exporting cluster's own endpoints. */
    flat?: boolean;
    /** Clusters whose Link to the other the test makes itself (`mesh-endpoints link`), after the set is up. */
    unlinked?: ClusterName[];
    /** More flags for each cluster's service-mirror process (--dns-servers, ...). */
    controllerArgs?: Partial<Record<ClusterName, string[]>>;
}

/** Call at the top level of a test file: both clusters, their CRDs and Links, and both controllers. */
export async function startMcsSet(prefix: string, opts: McsSetOptions = {}): Promise<McsSet> {
    const [e, w] = await Promise.all([startTestCluster(`${prefix}-e`, opts), startTestCluster(`${prefix}-w`, opts)]);
    const set: McsSet = { east: { name: 'east', cluster: e }, west: { name: 'west', cluster: w } };
    after(async () => {
        for (const member of [set.east, set.west]) await stopController(member);
    });
    await setUp('the CRDs, Links and controllers', async () => {
        for (const [member, other] of [
            [set.east, set.west],
            [set.west, set.east],
        ] as const) {
            const admin = member.cluster.admin;
            await installCrds(admin);
            await installMcsCrds(admin);
            await admin.create(collectionPath(Namespaces), { metadata: { name: LINK_NS } });
            if (!opts.unlinked?.includes(member.name)) await createLinkTo(member, other, { gateway: !opts.flat });
        }
        await Promise.all([startController(set.east, opts.controllerArgs?.east), startController(set.west, opts.controllerArgs?.west)]);
    });
    return set;
}

/** `member`'s Link to `other`: a credentials Secret with other's admin kubeconfig, and the Link. */
export async function createLinkTo(member: McsMember, other: McsMember, opts: { gateway?: boolean } = {}): Promise<void> {
    const admin = member.cluster.admin;
    const secret = `creds-${other.name}`;
    await admin
        .create(collectionPath(Secrets, LINK_NS), {
            metadata: { name: secret },
            type: 'mirror.linkerd.io/remote-kubeconfig',
            data: { kubeconfig: Buffer.from(readFileSync(other.cluster.state.kubeconfig, 'utf8')).toString('base64') },
        })
        .catch(() => undefined);
    await admin.create(collectionPath(Links, LINK_NS), {
        apiVersion: 'multicluster.linkerd.io/v1alpha3',
        kind: 'Link',
        metadata: { name: other.name },
        spec: {
            targetClusterName: other.name,
            targetClusterDomain: 'cluster.local',
            clusterCredentialsSecret: secret,
            // No gateway: a flat network, where the import copies the remote's own endpoints.
            gatewayAddress: opts.gateway === false ? '' : GATEWAY[other.name],
            gatewayPort: '4143',
            gatewayIdentity: `linkerd-gateway.linkerd-multicluster.serviceaccount.identity.linkerd.${other.name}.local`,
            selector: { matchLabels: { 'mirror.linkerd.io/exported': 'true' } },
            remoteDiscoverySelector: { matchLabels: { 'mirror.linkerd.io/exported': 'remote-discovery' } },
        },
    });
}

export async function deleteLinkTo(member: McsMember, other: McsMember): Promise<void> {
    await member.cluster.admin.delete(objectPath(Links, LINK_NS, other.name));
}

/** Starts `mesh-endpoints service-mirror --cluster-name <name>` (and `extraArgs`) for the member and waits for /readyz. */
export async function startController(member: McsMember, extraArgs: string[] = []): Promise<ControllerProcess> {
    const proc = new ControllerProcess([
        'service-mirror',
        '--kubeconfig', member.cluster.state.kubeconfig,
        '--namespace', LINK_NS,
        '--identity', `${member.name}-${Date.now()}`,
        '--admin-addr', '127.0.0.1:0',
        '--cluster-name', member.name,
        ...FAST_ELECTION,
        '--log-level', process.env.TEST_LOG_LEVEL ?? 'warn',
        ...extraArgs,
    ]);
    member.process = proc;
    await eventually(`${member.name}'s controller ready`, () => proc.ready(), 60_000);
    return proc;
}

/** SIGKILL: the process dies as a node would lose it, its Lease still held. */
export async function killController(member: McsMember): Promise<void> {
    const proc = member.process;
    if (!proc) return;
    member.process = undefined;
    proc.proc.kill('SIGKILL');
    await proc.exit;
}

async function stopController(member: McsMember): Promise<void> {
    const proc = member.process;
    if (!proc || proc.exitCode !== undefined) return;
    proc.proc.kill('SIGTERM');
    await proc.exit;
}

export async function sharedNamespace(set: McsSet, prefix: string): Promise<string> {
    const ns = await set.east.cluster.namespace(prefix);
    await set.west.cluster.admin.create(collectionPath(Namespaces), { metadata: { name: ns } });
    return ns;
}

export interface ServiceSpec {
    ports?: { name?: string; port: number; protocol?: string }[];
    headless?: boolean;
    /** Pod IPs of the Service's own (upstream-labelled) slice. */
    endpoints?: string[];
}

export async function createService(member: McsMember, ns: string, name: string, spec: ServiceSpec = {}): Promise<V1Service> {
    const admin = member.cluster.admin;
    const svc = await admin.create<V1Service>(collectionPath(Services, ns), {
        apiVersion: 'v1',
        kind: 'Service',
        metadata: { name },
        spec: { selector: { app: name }, ports: spec.ports ?? [{ name: 'http', port: 80, protocol: 'TCP' }], ...(spec.headless ? { clusterIP: 'None' } : {}) },
    });
    const slice: V1EndpointSlice = {
        apiVersion: 'discovery.k8s.io/v1',
        kind: 'EndpointSlice',
        metadata: { name: `${name}-upstream`, labels: { 'kubernetes.io/service-name': name, 'endpointslice.kubernetes.io/managed-by': 'endpointslice-controller.k8s.io' } },
        addressType: 'IPv4',
        endpoints: (spec.endpoints ?? ['10.1.0.1']).map((ip) => ({ addresses: [ip], conditions: { ready: true } })),
        ports: (spec.ports ?? [{ name: 'http', port: 80 }]).map((p) => ({ name: p.name, port: 8000 + p.port, protocol: p.protocol ?? 'TCP' })),
    };
    await admin.create(collectionPath(EndpointSlices, ns), slice);
    return svc;
}

export async function exportService(member: McsMember, ns: string, name: string, spec: ServiceExport['spec'] = {}): Promise<void> {
    await member.cluster.admin.create(collectionPath(ServiceExports, ns), { apiVersion: 'multicluster.x-k8s.io/v1beta1', kind: 'ServiceExport', metadata: { name }, spec });
}

export async function unexportService(member: McsMember, ns: string, name: string): Promise<void> {
    await member.cluster.admin.delete(objectPath(ServiceExports, ns, name));
}

export async function getImport(member: McsMember, ns: string, name: string): Promise<ServiceImport | undefined> {
    return member.cluster.admin.get<ServiceImport>(objectPath(ServiceImports, ns, name)).catch(() => undefined);
}

export async function getService(member: McsMember, ns: string, name: string): Promise<V1Service | undefined> {
    return member.cluster.admin.get<V1Service>(objectPath(Services, ns, name)).catch(() => undefined);
}

export async function mcsSlices(member: McsMember, ns: string, name: string): Promise<V1EndpointSlice[]> {
    const list = await member.cluster.admin.get<{ items: V1EndpointSlice[] }>(collectionPath(EndpointSlices, ns), { labelSelector: `${LABEL_MCS_SERVICE_NAME}=${name}` });
    return list.items;
}

/** "west 192.0.2.20:4143 ready", one line per endpoint, sorted. */
export async function importedEndpoints(member: McsMember, ns: string, name: string): Promise<string[]> {
    return (await mcsSlices(member, ns, name))
        .flatMap((s) =>
            (s.endpoints ?? []).map((e) => `${s.metadata?.labels?.['multicluster.kubernetes.io/source-cluster']} ${e.addresses.join(',')}:${(s.ports ?? []).map((p) => p.port).join(',')} ${e.conditions?.ready ? 'ready' : 'not-ready'}`),
        )
        .sort();
}

export async function exportCondition(member: McsMember, ns: string, name: string, type: string): Promise<V1Condition | undefined> {
    const exp = await member.cluster.admin.get<ServiceExport>(objectPath(ServiceExports, ns, name)).catch(() => undefined);
    return exp?.status?.conditions?.find((c) => c.type === type);
}

/** uid of every ServiceImport and MCS slice of the namespace in both clusters: a restart must change none. */
export async function mcsUids(set: McsSet, ns: string): Promise<string[]> {
    const uids: string[] = [];
    for (const member of [set.east, set.west]) {
        const imports = await member.cluster.admin.get<{ items: ServiceImport[] }>(collectionPath(ServiceImports, ns));
        const slices = await member.cluster.admin.get<{ items: V1EndpointSlice[] }>(collectionPath(EndpointSlices, ns), { labelSelector: 'endpointslice.kubernetes.io/managed-by=mcs.mesh-endpoints.io' });
        for (const obj of imports.items) uids.push(`${member.name} ServiceImport ${obj.metadata?.name} ${obj.metadata?.uid}`);
        for (const obj of slices.items) uids.push(`${member.name} EndpointSlice ${obj.metadata?.name} ${obj.metadata?.uid}`);
    }
    return uids.sort();
}

/** One event of an MCS object (ServiceImport or MCS slice) seen by watchMcs. */
export interface McsEvent {
    cluster: ClusterName;
    type: string;
    kind: 'ServiceImport' | 'EndpointSlice';
    name: string;
    uid: string;
    /** The slice's multicluster.kubernetes.io/source-cluster label; '' for a ServiceImport. */
    source: string;
}

export interface McsWatch {
    events: McsEvent[];
    deleted(): McsEvent[];
    stop(): void;
}

/**
 * Real watches (from the list's resourceVersion, so nothing between is missed) of the namespace's
 * ServiceImports and MCS slices in both clusters; resolves once the apiserver holds all four, so a
 * kill after it is seen.
 */
export async function watchMcs(set: McsSet, ns: string): Promise<McsWatch> {
    const events: McsEvent[] = [];
    const abort = new AbortController();
    const streams: Promise<void>[] = [];
    const kinds = [
        { kind: 'ServiceImport' as const, path: collectionPath(ServiceImports, ns), query: {} },
        { kind: 'EndpointSlice' as const, path: collectionPath(EndpointSlices, ns), query: { labelSelector: 'endpointslice.kubernetes.io/managed-by=mcs.mesh-endpoints.io' } },
    ];
    for (const member of [set.east, set.west]) {
        for (const { kind, path, query } of kinds) {
            const list = await member.cluster.admin.get<{ metadata?: { resourceVersion?: string } }>(path, query);
            streams.push(
                new Promise<void>((opened, failed) => {
                    member.cluster.admin
                        .watch(
                            path,
                            { ...query, resourceVersion: list.metadata?.resourceVersion, allowWatchBookmarks: false },
                            abort.signal,
                            (ev) => {
                                const meta = (ev.object as V1EndpointSlice).metadata;
                                events.push({ cluster: member.name, type: ev.type, kind, name: meta?.name ?? '', uid: meta?.uid ?? '', source: meta?.labels?.['multicluster.kubernetes.io/source-cluster'] ?? '' });
                            },
                            opened,
                        )
                        .catch((err: unknown) => (abort.signal.aborted ? undefined : failed(err)));
                }),
            );
        }
    }
    await Promise.all(streams);
    return { events, deleted: () => events.filter((e) => e.type === 'DELETED'), stop: () => abort.abort() };
}

/**
 * A real node with its data plane (kube-proxy, CoreDNS) in each cluster of a set started on
 * NODE_IP: east's in the node namespace, west's in a child namespace of it (second-node.ts), one
 * flat Pod network. Each stops before its cluster goes down. `second` is west's node host.
 */
export async function startRealNodes(set: McsSet, images: NodeImage[]): Promise<{ east: RealNode; west: RealNode; second: NodeHost }> {
    const second = await startSecondHost();
    set.west.cluster.stopsWith({ stop: () => second.namespace?.stop() });
    const started = await Promise.allSettled([
        startNode(set.east.cluster.state, 'node-east', images, { dataPlane: true }),
        startNode(set.west.cluster.state, 'node-west', images, { dataPlane: true, host: second }),
    ]);
    [set.east, set.west].forEach((member, i) => {
        const node = started[i]!;
        if (node.status === 'fulfilled') member.cluster.stopsWith(node.value);
    });
    const [east, west] = started.map((node) => {
        if (node.status === 'rejected') throw node.reason;
        return node.value;
    });
    return { east: east!, west: west!, second };
}
