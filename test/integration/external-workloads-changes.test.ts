// The external-workloads controller end to end against a real kube-apiserver, as things
// change: Service labels, workloads arriving and leaving, deletions (there is no garbage collector in
// the test cluster, so whatever is deleted, we deleted), slices changed by others, and
// the batching of workload events.
import assert from 'node:assert/strict';
import type { V1EndpointSlice, V1Service } from '@kubernetes/client-node';
import { after, describe, it } from 'node:test';
import { collectionPath, EndpointSlices, ExternalWorkloads, objectPath, Services } from '../../src/kube/resources.js';
import { installCrds } from '../../src/testing/crds.js';
import { eventually, setUp, startTestCluster } from '../../src/testing/harness.js';
import {
    addressesOf,
    createService,
    createWorkload,
    metricValue,
    runExternalWorkloads,
    setReady,
    slicesOf,
    SyncLog,
    type WorkloadSpec,
} from './support.js';

const cluster = await startTestCluster('ewc');
await setUp('the CRDs', () => installCrds(cluster.admin));
const running = await setUp('the external-workloads controller', () => runExternalWorkloads(cluster));
const syncs = new SyncLog(running.controller);
after(() => running.stop());

const LABEL_MANAGED_BY = 'endpointslice.kubernetes.io/managed-by';
const web: V1Service = { metadata: { name: 'web' }, spec: { selector: { app: 'web' }, ports: [{ name: 'http', port: 80, targetPort: 'http' as never }] } };

async function slicesWhen(ns: string, service: string, what: string, check: (slices: V1EndpointSlice[]) => boolean, managedBy?: string) {
    let last: V1EndpointSlice[] = [];
    try {
        await eventually(what, async () => check((last = await slicesOf(cluster, ns, service, managedBy))));
    } catch (err) {
        throw new Error(`${(err as Error).message}; last seen: ${JSON.stringify(last.map((s) => ({ labels: s.metadata?.labels, endpoints: s.endpoints })))}`);
    }
    return last;
}

/** A namespace with the Service `web` publishing the given workloads. */
async function published(...workloads: WorkloadSpec[]): Promise<{ ns: string; slices: V1EndpointSlice[] }> {
    const ns = await cluster.namespace();
    for (const w of workloads) await createWorkload(cluster, ns, w);
    await createService(cluster, ns, web);
    const want = workloads.flatMap((w) => w.ips).sort().join();
    const slices = await slicesWhen(ns, 'web', 'the workloads published', (s) => addressesOf(s).join() === want);
    return { ns, slices };
}

describe('Service labels', () => {
    it('a label added to the Service reaches its slices, and a label removed from it leaves them', async () => {
        const { ns } = await published({ name: 'vm-1', ips: ['192.0.2.1'] });
        const labelled = (slices: V1EndpointSlice[], key: string) => slices.length > 0 && slices.every((s) => s.metadata?.labels?.[key] !== undefined);
        await cluster.admin.mergePatch(objectPath(Services, ns, 'web'), { metadata: { labels: { team: 'a', tier: 'gold' } } });
        let slices = await slicesWhen(ns, 'web', 'the labels on the slices', (s) => labelled(s, 'team') && labelled(s, 'tier'));
        assert.equal(slices[0]!.metadata!.labels!.team, 'a');

        await cluster.admin.mergePatch(objectPath(Services, ns, 'web'), { metadata: { labels: { team: null } } });
        slices = await slicesWhen(ns, 'web', 'team removed from the slices', (s) => s.length > 0 && !s.some((x) => 'team' in (x.metadata?.labels ?? {})));
        assert.equal(slices[0]!.metadata!.labels!.tier, 'gold');
        assert.deepEqual(addressesOf(slices), ['192.0.2.1']);
    });

    it('reserved labels on the Service are ignored', async () => {
        const ns = await cluster.namespace();
        await createWorkload(cluster, ns, { name: 'vm-1', ips: ['192.0.2.1'] });
        const reserved = {
            'kubernetes.io/service-name': 'impostor',
            [LABEL_MANAGED_BY]: 'someone-else.example.org',
            'service.kubernetes.io/headless': '',
        };
        await createService(cluster, ns, { ...web, metadata: { name: 'web', labels: { ...reserved, team: 'a' } } });
        const [slice] = await slicesWhen(ns, 'web', 'vm-1 published', (s) => addressesOf(s).join() === '192.0.2.1');
        assert.deepEqual(slice!.metadata?.labels, {
            'kubernetes.io/service-name': 'web',
            [LABEL_MANAGED_BY]: 'external-workloads.mesh-endpoints.io',
            team: 'a',
        });
    });
});

describe('workloads arriving', () => {
    it('follows a workload that becomes ready, and one that appears', async () => {
        const ns = await cluster.namespace();
        await createService(cluster, ns, { metadata: { name: 'web' }, spec: { selector: { app: 'web' }, ports: [{ name: 'http', port: 80, targetPort: 'http' as never }] } });
        await createWorkload(cluster, ns, { name: 'vm-1', ips: ['192.0.2.1'] });
        await eventually('vm-1 published', async () => addressesOf(await slicesOf(cluster, ns, 'web')).join() === '192.0.2.1');
        await createWorkload(cluster, ns, { name: 'vm-2', ips: ['192.0.2.2'] });
        await eventually('vm-2 published', async () => addressesOf(await slicesOf(cluster, ns, 'web')).join() === '192.0.2.1,192.0.2.2');
        // Readiness is a second write (the status patch after the create), so it may come later.
        await eventually('both ready', async () => (await slicesOf(cluster, ns, 'web'))[0]!.endpoints!.every((e) => e.conditions?.ready === true));
        const [slice] = await slicesOf(cluster, ns, 'web');
        assert.deepEqual(slice!.ports, [{ name: 'http', port: 8080, protocol: 'TCP' }]);
    });
});

describe('workloads leaving', () => {
    it('a workload whose labels no longer match loses its endpoint, and an emptied slice is deleted', async () => {
        const { ns } = await published({ name: 'vm-1', ips: ['192.0.2.1'] }, { name: 'vm-2', ips: ['192.0.2.2'] });
        await cluster.admin.mergePatch(objectPath(ExternalWorkloads, ns, 'vm-1'), { metadata: { labels: { app: 'other' } } });
        await slicesWhen(ns, 'web', 'only vm-2 left', (s) => addressesOf(s).join() === '192.0.2.2');
        await cluster.admin.mergePatch(objectPath(ExternalWorkloads, ns, 'vm-2'), { metadata: { labels: { app: null } } });
        await slicesWhen(ns, 'web', 'the emptied slice deleted', (s) => s.length === 0);
    });

    it('a workload whose labels change moves from the Service it left to the Service it now matches', async () => {
        const { ns } = await published({ name: 'vm-1', ips: ['192.0.2.1'] }, { name: 'vm-2', ips: ['192.0.2.2'] });
        await createService(cluster, ns, { ...web, metadata: { name: 'api' }, spec: { ...web.spec, selector: { app: 'api' } } });
        await cluster.admin.mergePatch(objectPath(ExternalWorkloads, ns, 'vm-1'), { metadata: { labels: { app: 'api' } } });
        await slicesWhen(ns, 'api', 'vm-1 in api', (s) => addressesOf(s).join() === '192.0.2.1');
        await slicesWhen(ns, 'web', 'only vm-2 in web', (s) => addressesOf(s).join() === '192.0.2.2');
    });

    it('a workload’s changed address replaces its old one, in the same slice', async () => {
        const { ns, slices: before } = await published({ name: 'vm-1', ips: ['192.0.2.1'] }, { name: 'vm-2', ips: ['192.0.2.2'] });
        await cluster.admin.mergePatch(objectPath(ExternalWorkloads, ns, 'vm-1'), { spec: { workloadIPs: [{ ip: '192.0.2.11' }] } });
        const slices = await slicesWhen(ns, 'web', 'the new address', (s) => addressesOf(s).join() === '192.0.2.11,192.0.2.2');
        assert.deepEqual(slices.map((s) => s.metadata?.uid), before.map((s) => s.metadata?.uid));
    });

    it('a deleted workload disappears from the slices', async () => {
        const { ns, slices: before } = await published({ name: 'vm-1', ips: ['192.0.2.1'] }, { name: 'vm-2', ips: ['192.0.2.2'] });
        await cluster.admin.delete(objectPath(ExternalWorkloads, ns, 'vm-1'));
        const slices = await slicesWhen(ns, 'web', 'only vm-2 left', (s) => addressesOf(s).join() === '192.0.2.2');
        assert.deepEqual(slices.map((s) => s.metadata?.uid), before.map((s) => s.metadata?.uid), 'the slice is updated in place');
    });

    it('a deleted Service has its slices deleted by us', async () => {
        const { ns } = await published({ name: 'vm-1', ips: ['192.0.2.1'] });
        await cluster.admin.delete(objectPath(Services, ns, 'web'));
        await slicesWhen(ns, 'web', 'the slices of the deleted Service gone', (s) => s.length === 0);
    });
    it('a Service deleted and recreated under the same name gets slices owned by the new one', async () => {
        const { ns, slices: before } = await published({ name: 'vm-1', ips: ['192.0.2.1'] });
        await cluster.admin.delete(objectPath(Services, ns, 'web'));
        const recreated = await createService(cluster, ns, web);
        const slices = await slicesWhen(ns, 'web', 'a slice owned by the new Service', (s) =>
            s.length === 1 && s[0]!.metadata?.ownerReferences?.[0]?.uid === recreated.metadata?.uid,
        );
        assert.notEqual(slices[0]!.metadata?.uid, before[0]!.metadata?.uid);
        assert.deepEqual(addressesOf(slices), ['192.0.2.1']);
    });
});

describe('slices changed by others', () => {
    it('a slice deleted out of band is recreated', async () => {
        const { ns, slices: [before] } = await published({ name: 'vm-1', ips: ['192.0.2.1'] });
        await cluster.admin.delete(objectPath(EndpointSlices, ns, before!.metadata!.name!));
        const [slice] = await slicesWhen(ns, 'web', 'a new slice', (s) => s.length === 1 && s[0]!.metadata?.uid !== before!.metadata?.uid);
        assert.deepEqual(slice!.endpoints, before!.endpoints);
        assert.deepEqual(slice!.ports, before!.ports);
    });

    it('a slice edited out of band is put back', async () => {
        const { ns, slices: [before] } = await published({ name: 'vm-1', ips: ['192.0.2.1'] }, { name: 'vm-2', ips: ['192.0.2.2'] });
        const path = objectPath(EndpointSlices, ns, before!.metadata!.name!);
        const edited = await cluster.admin.replace<V1EndpointSlice>(path, {
            ...before!,
            metadata: { ...before!.metadata, labels: { ...before!.metadata!.labels, intruder: 'yes' } },
            endpoints: [],
        });
        const [slice] = await slicesWhen(ns, 'web', 'the endpoints back', (s) => addressesOf(s).length === 2);
        assert.equal(slice!.metadata?.uid, before!.metadata?.uid);
        assert.ok(Number(slice!.metadata!.generation) > Number(edited.metadata!.generation));
        assert.deepEqual(slice!.endpoints, before!.endpoints);
        assert.deepEqual(slice!.metadata?.labels, before!.metadata?.labels);
    });

    it('a slice of another managed-by value for the same Service is never touched', async () => {
        const ns = await cluster.namespace();
        const foreignManager = 'someone-else.example.org';
        const foreign = await cluster.admin.create<V1EndpointSlice>(collectionPath(EndpointSlices, ns), {
            apiVersion: 'discovery.k8s.io/v1',
            kind: 'EndpointSlice',
            metadata: { name: 'web-by-hand', labels: { 'kubernetes.io/service-name': 'web', [LABEL_MANAGED_BY]: foreignManager } },
            addressType: 'IPv4',
            ports: [{ name: 'http', port: 8080, protocol: 'TCP' }],
            endpoints: [{ addresses: ['192.0.2.99'], conditions: { ready: true } }],
        });
        await createWorkload(cluster, ns, { name: 'vm-1', ips: ['192.0.2.1'] });
        await createService(cluster, ns, web);
        await slicesWhen(ns, 'web', 'vm-1 published', (s) => addressesOf(s).join() === '192.0.2.1');
        const labelled = await cluster.admin.mergePatch<V1Service>(objectPath(Services, ns, 'web'), { metadata: { labels: { team: 'a' } } });
        await slicesWhen(ns, 'web', 'the label on our slice', (s) => s[0]?.metadata?.labels?.team === 'a');
        await syncs.syncedAfter(`${ns}/web`, { informer: 'services', namespace: ns, name: 'web', resourceVersion: labelled.metadata!.resourceVersion });
        await cluster.admin.delete(objectPath(Services, ns, 'web'));
        await slicesWhen(ns, 'web', 'our slices of the deleted Service gone', (s) => s.length === 0);
        await syncs.syncedAfter(`${ns}/web`, { informer: 'services', namespace: ns, name: 'web', deleted: true });

        const [still] = await slicesOf(cluster, ns, 'web', foreignManager);
        assert.equal(still?.metadata?.resourceVersion, foreign.metadata?.resourceVersion);
    });
});

describe('batching', () => {
    it('a lone change syncs at once; a burst of changes for one Service costs at most two syncs', async () => {
        const ns = await cluster.namespace();
        // A second controller of its own (own managed-by value, one namespace) with a batch
        // period long enough that the burst surely fits in it on a busy machine.
        const managedBy = 'batching-test.mesh-endpoints.io';
        const batchPeriodMs = 3000;
        const batched = await runExternalWorkloads(cluster, { namespace: ns, managedBy, batchPeriodMs });
        try {
            const batchSyncs = new SyncLog(batched.controller);
            const svc = await createService(cluster, ns, web);
            const key = `${ns}/web`;
            await batchSyncs.syncedAfter(key, { informer: 'services', namespace: ns, name: 'web', resourceVersion: svc.metadata!.resourceVersion });
            // Every result counts: a sync that failed or met a stale cache is a sync too.
            const syncsTotal = async () => {
                const results = ['success', 'requeue', 'invalid', 'error'];
                const values = await Promise.all(results.map((result) => metricValue(batched.registry, 'mesh_endpoints_reconcile_total', { name: 'external-workloads', result })));
                return values.reduce((a, b) => a + b, 0);
            };
            const names = Array.from({ length: 10 }, (_, i) => `vm-${i}`);
            const quiet = () => new Promise((r) => setTimeout(r, batchPeriodMs + 500)); // past the window: anything still held has run

            // The first change syncs at once, the other nineteen (10 creates, 10 status writes) ride in one batch.
            let writesBefore = batched.rest.writes();
            await Promise.all(names.map((name, i) => createWorkload(cluster, ns, { name, ips: [`192.0.2.${i + 1}`] })));
            await slicesWhen(ns, 'web', 'ten ready endpoints', (s) => s.flatMap((x) => x.endpoints ?? []).filter((e) => e.conditions?.ready).length === 10, managedBy);
            await quiet();
            const burstWrites = batched.rest.writes() - writesBefore;
            assert.ok(burstWrites >= 1 && burstWrites <= 2, `${burstWrites} writes for ten workloads created and made ready`);

            // A lone change to a quiet Service: one sync, one write, without waiting for a batch.
            let syncsBefore = await syncsTotal();
            writesBefore = batched.rest.writes();
            await setReady(cluster, ns, 'vm-0', false);
            await slicesWhen(ns, 'web', 'vm-0 not ready', (s) => s.flatMap((x) => x.endpoints ?? []).some((e) => e.targetRef?.name === 'vm-0' && !e.conditions?.ready), managedBy);
            await quiet();
            // The echo of our write can beat the write's response; it then costs one sync that writes nothing.
            const loneSyncs = (await syncsTotal()) - syncsBefore;
            assert.ok(loneSyncs >= 1 && loneSyncs <= 2, `${loneSyncs} syncs for one change`);
            assert.equal(batched.rest.writes() - writesBefore, 1, 'one slice updated');

            // Nine more in a burst: the first at once, the rest together.
            syncsBefore = await syncsTotal();
            writesBefore = batched.rest.writes();
            await Promise.all(names.slice(1).map((name) => setReady(cluster, ns, name, false)));
            await slicesWhen(ns, 'web', 'ten endpoints not ready', (s) => s.flatMap((x) => x.endpoints ?? []).every((e) => !e.conditions?.ready), managedBy);
            await quiet();
            const syncs = (await syncsTotal()) - syncsBefore;
            const writes = batched.rest.writes() - writesBefore;
            assert.ok(syncs >= 1 && syncs <= 3, `${syncs} syncs for nine workloads turning not ready`);
            assert.ok(writes >= 1 && writes <= 2, `${writes} writes for nine workloads turning not ready`);
        } finally {
            await batched.stop();
        }
    });
});
