// The Multi-Cluster Services API across two linked clusters, each running its own controller
// process: export, import, conflict, unexport and a cluster leaving the set. A controller killed
// during each of them is mcs-restart.test.ts.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { objectPath, ServiceImports } from '../../src/kube/resources.js';
import { derivedServiceName } from '../../src/servicemirror/mcs/types.js';
import type { McsReport } from '../../src/ops/mcs-report.js';
import { eventually } from '../../src/testing/harness.js';
import { cli } from './cli-support.js';
import {
    createLinkTo,
    createService,
    deleteLinkTo,
    exportCondition,
    exportService,
    getImport,
    getService,
    importedEndpoints,
    LINK_NS,
    mcsSlices,
    sharedNamespace,
    startMcsSet,
    unexportService,
    type McsMember,
} from './mcs-support.js';

const set = await startMcsSet('mcs');
const { east, west } = set;

/** Waits for the member's MCS endpoints to be `expected`, showing the last ones seen if they never are. */
async function endpointsBecome(member: McsMember, ns: string, name: string, expected: string[]): Promise<void> {
    let last: string[] = [];
    await eventually(`${member.name}: endpoints ${expected.join(', ')}`, async () => {
        last = await importedEndpoints(member, ns, name);
        return JSON.stringify(last) === JSON.stringify(expected);
    }).catch(() => assert.deepEqual(last, expected, `${member.name}'s MCS endpoints`));
}

async function imported(member: McsMember, ns: string, name: string, check: (si: NonNullable<Awaited<ReturnType<typeof getImport>>>) => boolean, what: string) {
    await eventually(`${member.name}: ${what}`, async () => {
        const si = await getImport(member, ns, name);
        return si !== undefined && check(si);
    });
}

describe('MCS across two linked clusters', () => {
    it('exporting a Service in east imports it in both clusters: ClusterSetIP, the derived ClusterIP, its ports, east listed', async () => {
        const ns = await sharedNamespace(set, 'export');
        await createService(east, ns, 'hello', { endpoints: ['10.1.0.1', '10.1.0.2'] });
        await exportService(east, ns, 'hello');
        for (const member of [east, west]) {
            await imported(member, ns, 'hello', (si) => (si.spec?.ips?.length ?? 0) > 0 && (si.status?.clusters ?? []).length === 1, 'the import with an IP and its cluster');
            const si = (await getImport(member, ns, 'hello'))!;
            const derived = await getService(member, ns, derivedServiceName('hello'));
            assert.equal(si.spec?.type, 'ClusterSetIP');
            assert.deepEqual(si.spec?.ips, derived?.spec?.clusterIPs);
            assert.deepEqual(si.spec?.ipFamilies, derived?.spec?.ipFamilies);
            assert.deepEqual(si.spec?.ports, [{ name: 'http', port: 80, protocol: 'TCP' }]);
            assert.deepEqual(si.status?.clusters, [{ cluster: 'east' }]);
            assert.equal(derived?.spec?.selector, undefined);
            // Not owned by the import: an import deleted while exported comes back with the same ClusterSetIP.
            assert.equal(derived?.metadata?.ownerReferences, undefined);
        }
        // east's own endpoints in east; east's gateway (west's Link to east) in west.
        await endpointsBecome(east, ns, 'hello', ['east 10.1.0.1:8080 ready', 'east 10.1.0.2:8080 ready']);
        await endpointsBecome(west, ns, 'hello', ['east 192.0.2.10:4143 ready']);
        const [slice] = await mcsSlices(west, ns, 'hello');
        assert.equal(slice?.metadata?.labels?.['kubernetes.io/service-name'], derivedServiceName('hello'));
        assert.equal(slice?.metadata?.labels?.['endpointslice.kubernetes.io/managed-by'], 'mcs.mesh-endpoints.io');
        assert.equal(slice?.metadata?.annotations?.['mirror.linkerd.io/remote-gateway-identity'], 'linkerd-gateway.linkerd-multicluster.serviceaccount.identity.linkerd.east.local');
        assert.equal(slice?.metadata?.annotations?.['mirror.linkerd.io/remote-svc-fq-name'], `hello.${ns}.svc.cluster.local`);
        await eventually('east says the export is valid and ready', async () => (await exportCondition(east, ns, 'hello', 'Ready'))?.status === 'True');
        assert.equal((await exportCondition(east, ns, 'hello', 'Valid'))?.status, 'True');
        assert.equal((await exportCondition(east, ns, 'hello', 'Conflict'))?.status, 'False');

        const before = (await getImport(west, ns, 'hello'))!;
        await west.cluster.admin.delete(objectPath(ServiceImports, ns, 'hello'));
        await imported(west, ns, 'hello', (si) => si.metadata?.uid !== before.metadata?.uid && (si.spec?.ips?.length ?? 0) > 0, 'the import deleted by hand made again');
        assert.deepEqual((await getImport(west, ns, 'hello'))!.spec?.ips, before.spec?.ips, 'the same ClusterSetIP');
    });

    it('an ExternalName Service is not valid and imports nothing', async () => {
        const ns = await sharedNamespace(set, 'extname');
        await east.cluster.admin.create(`/api/v1/namespaces/${ns}/services`, { metadata: { name: 'ext' }, spec: { type: 'ExternalName', externalName: 'example.com' } });
        await exportService(east, ns, 'ext');
        await eventually('Valid=False', async () => (await exportCondition(east, ns, 'ext', 'Valid'))?.reason === 'InvalidServiceType');
        assert.equal(await getImport(east, ns, 'ext'), undefined);
        assert.equal(await getImport(west, ns, 'ext'), undefined);
    });

    it('exported from both with conflicting ports: the union, the oldest wins, Conflict=True on both, endpoints from both', async () => {
        const ns = await sharedNamespace(set, 'conflict');
        await createService(east, ns, 'hello', { ports: [{ name: 'http', port: 80 }] });
        await exportService(east, ns, 'hello');
        await imported(west, ns, 'hello', () => true, 'the import');
        await new Promise((r) => setTimeout(r, 1100)); // creation timestamps have seconds
        await createService(west, ns, 'hello', { ports: [{ name: 'http', port: 81 }, { name: 'admin', port: 9000 }], endpoints: ['10.2.0.1'] });
        await exportService(west, ns, 'hello');
        for (const member of [east, west]) {
            await eventually(`${member.name}: Conflict=True`, async () => (await exportCondition(member, ns, 'hello', 'Conflict'))?.status === 'True');
            assert.equal((await exportCondition(member, ns, 'hello', 'Conflict'))?.reason, 'PortConflict');
            await imported(member, ns, 'hello', (si) => (si.status?.clusters ?? []).length === 2, 'both clusters listed');
            assert.deepEqual((await getImport(member, ns, 'hello'))?.spec?.ports, [
                { name: 'admin', port: 9000, protocol: 'TCP' },
                { name: 'http', port: 80, protocol: 'TCP' },
            ]);
        }
        // West serves http on 81, not the import's 80: its endpoints carry admin only (StrictPortConflict).
        await endpointsBecome(east, ns, 'hello', ['east 10.1.0.1:8080 ready', 'west 192.0.2.20:4143 ready']);
        await endpointsBecome(west, ns, 'hello', ['east 192.0.2.10:4143 ready', 'west 10.2.0.1:17000 ready']);
    });

    it('status shows the exports with their conditions and the imports with clusters, IPs and endpoints per source cluster; check passes them', async () => {
        const ns = await sharedNamespace(set, 'status');
        await createService(east, ns, 'hello');
        await createService(west, ns, 'hello', { endpoints: ['10.2.0.1', '10.2.0.2'] });
        await exportService(east, ns, 'hello');
        await exportService(west, ns, 'hello');
        await endpointsBecome(east, ns, 'hello', ['east 10.1.0.1:8080 ready', 'west 192.0.2.20:4143 ready']);
        await eventually('east: Ready', async () => (await exportCondition(east, ns, 'hello', 'Ready'))?.status === 'True');
        const status = await cli('status', '--kubeconfig', east.cluster.state.kubeconfig, '--namespace', LINK_NS, '-o', 'json');
        assert.equal(status.code, 0, status.stderr);
        const report = JSON.parse(status.stdout) as { mcs: McsReport };
        const si = (await getImport(east, ns, 'hello'))!;
        assert.deepEqual(
            report.mcs.imports.filter((i) => i.namespace === ns),
            [{ namespace: ns, name: 'hello', type: 'ClusterSetIP', ips: si.spec!.ips, clusters: ['east', 'west'], sources: [{ cluster: 'east', endpoints: 1, ready: 1 }, { cluster: 'west', endpoints: 1, ready: 1 }] }],
        );
        const conditions = report.mcs.exports.find((e) => e.namespace === ns)!.conditions.map((c) => `${c.type}=${c.status}`).sort();
        assert.deepEqual(conditions, ['Conflict=False', 'Ready=True', 'Valid=True']);
        const text = await cli('status', '--kubeconfig', east.cluster.state.kubeconfig, '--namespace', LINK_NS);
        assert.match(text.stdout, new RegExp(`${ns}/hello\\s+ClusterSetIP\\s+${si.spec!.ips![0]!.replaceAll('.', '\\.')}\\s+east,west\\s+east 1/1, west 1/1`));
        const check = await cli('check', '--kubeconfig', east.cluster.state.kubeconfig, '--namespace', LINK_NS, '-o', 'json');
        const results = (JSON.parse(check.stdout) as { results: { category: string; description: string; status: string; detail?: string }[] }).results.filter((r) => r.category === 'Multi-Cluster Services');
        assert.deepEqual(results.find((r) => r.description === `ServiceExport ${ns}/hello`)?.status, 'ok');
        // No ClusterProperty here (the controllers run with --cluster-name): check says what MCS then needs.
        assert.match(results.find((r) => r.description === 'this cluster has a name in the clusterset')?.detail ?? '', /--cluster-name/);
    });

    it('unexported in west: west\'s endpoints leave both imports; unexported in east too: every import, derived Service and slice goes', async () => {
        const ns = await sharedNamespace(set, 'unexport');
        await createService(east, ns, 'hello');
        await createService(west, ns, 'hello', { endpoints: ['10.2.0.1'] });
        await exportService(east, ns, 'hello');
        await exportService(west, ns, 'hello');
        await endpointsBecome(east, ns, 'hello', ['east 10.1.0.1:8080 ready', 'west 192.0.2.20:4143 ready']);
        await endpointsBecome(west, ns, 'hello', ['east 192.0.2.10:4143 ready', 'west 10.2.0.1:8080 ready']);
        await unexportService(west, ns, 'hello');
        await endpointsBecome(east, ns, 'hello', ['east 10.1.0.1:8080 ready']);
        await endpointsBecome(west, ns, 'hello', ['east 192.0.2.10:4143 ready']);
        for (const member of [east, west]) await imported(member, ns, 'hello', (si) => JSON.stringify(si.status?.clusters) === '[{"cluster":"east"}]', 'only east listed');
        await unexportService(east, ns, 'hello');
        for (const member of [east, west]) {
            await eventually(`${member.name}: no import`, async () => (await getImport(member, ns, 'hello')) === undefined);
            await eventually(`${member.name}: no derived Service`, async () => (await getService(member, ns, derivedServiceName('hello'))) === undefined);
            await endpointsBecome(member, ns, 'hello', []);
        }
    });

    it('a cluster leaving the set (its Link deleted) takes its exports out of the imports, and brings them back when linked again', async () => {
        const ns = await sharedNamespace(set, 'leave');
        await createService(west, ns, 'hello', { endpoints: ['10.2.0.1'] });
        await exportService(west, ns, 'hello');
        await imported(east, ns, 'hello', () => true, 'the import of west\'s export');
        await endpointsBecome(east, ns, 'hello', ['west 192.0.2.20:4143 ready']);
        await deleteLinkTo(east, west);
        await eventually('east: the import is gone', async () => (await getImport(east, ns, 'hello')) === undefined);
        await endpointsBecome(east, ns, 'hello', []);
        assert.ok(await getImport(west, ns, 'hello'), 'west still imports its own export');
        await createLinkTo(east, west);
        await endpointsBecome(east, ns, 'hello', ['west 192.0.2.20:4143 ready']);
    });

    it('a Service the Link exports in remote-discovery mode: the import copies the remote cluster\'s own endpoints', async () => {
        const ns = await sharedNamespace(set, 'discovery');
        await createService(west, ns, 'hello', { endpoints: ['10.2.0.8'] });
        await west.cluster.admin.mergePatch(`/api/v1/namespaces/${ns}/services/hello`, { metadata: { labels: { 'mirror.linkerd.io/exported': 'remote-discovery' } } });
        await exportService(west, ns, 'hello');
        await endpointsBecome(east, ns, 'hello', ['west 10.2.0.8:8080 ready']);
    });

    it('a remote export whose namespace does not exist here is imported once the namespace is created', async () => {
        const ns = await west.cluster.namespace('late');
        await createService(west, ns, 'hello', { endpoints: ['10.2.0.1'] });
        await exportService(west, ns, 'hello');
        await imported(west, ns, 'hello', () => true, 'its own import');
        assert.equal(await getImport(east, ns, 'hello'), undefined);
        await east.cluster.admin.create('/api/v1/namespaces', { metadata: { name: ns } });
        await endpointsBecome(east, ns, 'hello', ['west 192.0.2.20:4143 ready']);
    });

    it('a Link without a gateway (a flat network): the import copies the remote cluster\'s own endpoints', async () => {
        const ns = await sharedNamespace(set, 'flat');
        await createService(west, ns, 'hello', { endpoints: ['10.2.0.7'] });
        await exportService(west, ns, 'hello');
        await endpointsBecome(east, ns, 'hello', ['west 192.0.2.20:4143 ready']);
        await deleteLinkTo(east, west);
        await createLinkTo(east, west, { gateway: false });
        try {
            await endpointsBecome(east, ns, 'hello', ['west 10.2.0.7:8080 ready']);
        } finally {
            await deleteLinkTo(east, west);
            await createLinkTo(east, west);
        }
        await endpointsBecome(east, ns, 'hello', ['west 192.0.2.20:4143 ready']);
    });
});
