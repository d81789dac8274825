// The external-workloads controller's behaviour matrix end to end against a real
// kube-apiserver: the example of the original design, which Services get slices, address families, headless Services,
// endpoint conditions and ports. What changes over time (labels, membership, deletion,
// edits by others, batching) is in external-workloads-changes.test.ts.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import type { V1EndpointSlice, V1Service } from '@kubernetes/client-node';
import { after, describe, it } from 'node:test';
import { parseAllDocuments } from 'yaml';
import { collectionPath, ExternalWorkloads, objectPath, Services } from '../../src/kube/resources.js';
import { installCrds } from '../../src/testing/crds.js';
import { eventually, setUp, startTestCluster } from '../../src/testing/harness.js';
import {
    addressesOf,
    createService,
    createWorkload,
    endpointsByWorkload,
    eventsAbout,
    runExternalWorkloads,
    setReady,
    slicesOf,
    SyncLog,
    workloadUid,
    type WorkloadSpec,
} from './support.js';

const cluster = await startTestCluster('ewb');
await setUp('the CRDs', () => installCrds(cluster.admin));
const running = await setUp('the external-workloads controller', () => runExternalWorkloads(cluster));
const syncs = new SyncLog(running.controller);
after(() => running.stop());

const httpPort = { name: 'http', port: 80, targetPort: 'http' as never };

async function slicesWhen(ns: string, service: string, what: string, check: (slices: V1EndpointSlice[]) => boolean) {
    let last: V1EndpointSlice[] = [];
    try {
        await eventually(what, async () => check((last = await slicesOf(cluster, ns, service))));
    } catch (err) {
        throw new Error(`${(err as Error).message}; last seen: ${JSON.stringify(last.map((s) => ({ type: s.addressType, ports: s.ports, endpoints: s.endpoints })))}`);
    }
    return last;
}

/** Workloads the controller's cache holds, so a sync that follows sees them. */
async function workloadsCached(ns: string, ...names: string[]) {
    await eventually(`${names.join(', ')} in the controller's cache`, () =>
        names.every((name) => running.controller.workloads.store.get(ns, name) !== undefined),
    );
}

async function createWorkloads(ns: string, ...workloads: WorkloadSpec[]) {
    for (const w of workloads) await createWorkload(cluster, ns, w);
    await workloadsCached(ns, ...workloads.map((w) => w.name));
}

/** Creates the Service and waits for a sync of it that saw it. */
async function createServiceSynced(ns: string, svc: V1Service): Promise<V1Service> {
    const created = await createService(cluster, ns, svc);
    const name = created.metadata!.name!;
    await syncs.syncedAfter(`${ns}/${name}`, { informer: 'services', namespace: ns, name, resourceVersion: created.metadata!.resourceVersion });
    return created;
}

describe('examples/nginx.yaml', () => {
    it('publishes the example from the original design as written', async () => {
        const ns = await cluster.namespace();
        for (const doc of parseAllDocuments(readFileSync('examples/nginx.yaml', 'utf8'))) {
            const obj = doc.toJS() as { apiVersion: string; kind: string };
            const path = obj.kind === 'Service' ? collectionPath(Services, ns) : `/apis/${obj.apiVersion}/namespaces/${ns}/externalworkloads`;
            await cluster.admin.create(path, obj);
        }
        await eventually('a slice for nginx-svc', async () => (await slicesOf(cluster, ns, 'nginx-svc')).length === 1);
        const [slice] = await slicesOf(cluster, ns, 'nginx-svc');
        const workload = await cluster.admin.get<{ metadata: { uid: string } }>(objectPath(ExternalWorkloads, ns, 'test'));
        assert.equal(slice!.addressType, 'IPv4');
        assert.deepEqual(slice!.ports, [{ name: 'http', port: 80, protocol: 'TCP' }]);
        assert.equal(slice!.endpoints?.length, 1);
        const [endpoint] = slice!.endpoints!;
        assert.deepEqual(endpoint!.addresses, ['192.0.2.0']);
        assert.deepEqual(endpoint!.targetRef, {
            apiVersion: 'workload.linkerd.io/v1beta1',
            kind: 'ExternalWorkload',
            namespace: ns,
            name: 'test',
            uid: workload.metadata.uid,
        });
        assert.deepEqual(endpoint!.conditions, { ready: false, serving: false, terminating: false });
        assert.equal(slice!.metadata?.labels?.['endpointslice.kubernetes.io/managed-by'], 'external-workloads.mesh-endpoints.io');
        assert.equal(slice!.metadata?.ownerReferences?.[0]?.kind, 'Service');
    });
});

describe('which Services get slices', () => {
    it('a Service without a selector gets no slices from us', async () => {
        const ns = await cluster.namespace();
        await createWorkloads(ns, { name: 'vm-1', ips: ['192.0.2.1'] });
        await createServiceSynced(ns, { metadata: { name: 'manual' }, spec: { ports: [httpPort] } });
        assert.deepEqual(await slicesOf(cluster, ns, 'manual'), []);
    });

    it('an ExternalName Service gets no slices from us, even with a selector', async () => {
        const ns = await cluster.namespace();
        await createWorkloads(ns, { name: 'vm-1', ips: ['192.0.2.1'] });
        await createServiceSynced(ns, {
            metadata: { name: 'alias' },
            spec: { type: 'ExternalName', externalName: 'web.example.org', selector: { app: 'web' }, ports: [httpPort] },
        });
        assert.deepEqual(await slicesOf(cluster, ns, 'alias'), []);
    });

    it('a Service that becomes ExternalName loses its slices', async () => {
        const ns = await cluster.namespace();
        await createWorkloads(ns, { name: 'vm-1', ips: ['192.0.2.1'] });
        await createService(cluster, ns, { metadata: { name: 'web' }, spec: { selector: { app: 'web' }, ports: [httpPort] } });
        await slicesWhen(ns, 'web', 'vm-1 published', (s) => addressesOf(s).join() === '192.0.2.1');
        await cluster.admin.mergePatch(objectPath(Services, ns, 'web'), { spec: { type: 'ExternalName', externalName: 'web.example.org' } });
        await slicesWhen(ns, 'web', 'the slices of an ExternalName Service deleted', (s) => s.length === 0);
    });

    it('a Service pending deletion loses its slices and gets no new ones', async () => {
        const ns = await cluster.namespace();
        const finalizer = 'test.mesh-endpoints.io/hold';
        await createWorkloads(ns, { name: 'vm-1', ips: ['192.0.2.1'] });
        await createService(cluster, ns, { metadata: { name: 'web', finalizers: [finalizer] }, spec: { selector: { app: 'web' }, ports: [httpPort] } });
        await slicesWhen(ns, 'web', 'vm-1 published', (s) => addressesOf(s).join() === '192.0.2.1');

        const pending = await cluster.admin.request<V1Service>('DELETE', objectPath(Services, ns, 'web'));
        assert.ok(pending.metadata?.deletionTimestamp, 'the finalizer keeps the Service, pending deletion');
        await slicesWhen(ns, 'web', 'the slices of a Service pending deletion deleted', (s) => s.length === 0);

        await createWorkload(cluster, ns, { name: 'vm-2', ips: ['192.0.2.2'] });
        await syncs.syncedAfter(`${ns}/web`, { informer: 'workloads', namespace: ns, name: 'vm-2' });
        assert.deepEqual(await slicesOf(cluster, ns, 'web'), []);
        await cluster.admin.mergePatch(objectPath(Services, ns, 'web'), { metadata: { finalizers: null } });
    });

    it('slices we wrote are deleted when the Service loses its selector', async () => {
        const ns = await cluster.namespace();
        await createWorkloads(ns, { name: 'vm-1', ips: ['192.0.2.1'] });
        await createService(cluster, ns, { metadata: { name: 'web' }, spec: { selector: { app: 'web' }, ports: [httpPort] } });
        await slicesWhen(ns, 'web', 'vm-1 published', (s) => addressesOf(s).join() === '192.0.2.1');
        const patched = await cluster.admin.mergePatch<V1Service>(objectPath(Services, ns, 'web'), { spec: { selector: null } });
        assert.equal(patched.spec?.selector, undefined);
        await slicesWhen(ns, 'web', 'the slices of a Service without selector deleted', (s) => s.length === 0);
    });

    it('selection is namespace-scoped: the same labels in another namespace are not selected', async () => {
        const [ns1, ns2] = [await cluster.namespace(), await cluster.namespace()];
        await createWorkloads(ns1, { name: 'vm-a', ips: ['192.0.2.1'] });
        await createWorkloads(ns2, { name: 'vm-b', ips: ['192.0.2.2'] });
        for (const ns of [ns1, ns2]) await createServiceSynced(ns, { metadata: { name: 'web' }, spec: { selector: { app: 'web' }, ports: [httpPort] } });
        assert.deepEqual(addressesOf(await slicesOf(cluster, ns1, 'web')), ['192.0.2.1']);
        assert.deepEqual(addressesOf(await slicesOf(cluster, ns2, 'web')), ['192.0.2.2']);
        const [slice] = await slicesOf(cluster, ns1, 'web');
        assert.equal(slice!.endpoints![0]!.targetRef?.namespace, ns1);
    });
});

describe('address families', () => {
    // One address of each family written non-canonically, to see it published canonically.
    const mixedFamilies: WorkloadSpec[] = [
        { name: 'dual', ips: ['192.0.2.1', '2001:DB8:0:0:0:0:0:1'] },
        { name: 'v4-only', ips: ['192.0.2.2'] },
        { name: 'v6-only', ips: ['2001:db8::3'] },
    ];
    const byType = (slices: V1EndpointSlice[], type: string) => slices.filter((s) => s.addressType === type);

    it('an IPv4 Service gets IPv4 slices holding the IPv4 address of each workload that has one', async () => {
        const ns = await cluster.namespace();
        await createWorkloads(ns, ...mixedFamilies);
        const svc = await createService(cluster, ns, { metadata: { name: 'web' }, spec: { selector: { app: 'web' }, ports: [httpPort] } });
        assert.deepEqual(svc.spec?.ipFamilies, ['IPv4']);
        assert.match(svc.spec!.clusterIP!, /^10\.96\./);
        const slices = await slicesWhen(ns, 'web', 'two IPv4 endpoints', (s) => addressesOf(s).length === 2);
        assert.deepEqual(addressesOf(slices), ['192.0.2.1', '192.0.2.2']);
        assert.deepEqual(slices.map((s) => s.addressType), ['IPv4']);
    });

    it('an IPv6 single-stack Service gets IPv6 slices, addresses in canonical form', async () => {
        const ns = await cluster.namespace();
        await createWorkloads(ns, ...mixedFamilies);
        const svc = await createService(cluster, ns, {
            metadata: { name: 'web' },
            spec: { selector: { app: 'web' }, ipFamilies: ['IPv6'], ipFamilyPolicy: 'SingleStack', ports: [httpPort] },
        });
        assert.match(svc.spec!.clusterIP!, /^fd00:10:96::/);
        const slices = await slicesWhen(ns, 'web', 'two IPv6 endpoints', (s) => addressesOf(s).length === 2);
        assert.deepEqual(addressesOf(slices), ['2001:db8::1', '2001:db8::3']);
        assert.deepEqual(slices.map((s) => s.addressType), ['IPv6']);
    });

    it('a dual-stack Service gets one slice set per family, a dual-stack workload in both', async () => {
        const ns = await cluster.namespace();
        await createWorkloads(ns, ...mixedFamilies);
        const svc = await createService(cluster, ns, {
            metadata: { name: 'web' },
            spec: { selector: { app: 'web' }, ipFamilyPolicy: 'RequireDualStack', ports: [httpPort] },
        });
        assert.deepEqual(svc.spec?.ipFamilies, ['IPv4', 'IPv6']);
        const slices = await slicesWhen(ns, 'web', 'four endpoints', (s) => addressesOf(s).length === 4);
        assert.equal(slices.length, 2);
        assert.deepEqual(addressesOf(byType(slices, 'IPv4')), ['192.0.2.1', '192.0.2.2']);
        assert.deepEqual(addressesOf(byType(slices, 'IPv6')), ['2001:db8::1', '2001:db8::3']);
        const dual = endpointsByWorkload(slices).get('dual')!;
        assert.equal(dual.length, 2);
        assert.equal(dual[0]!.targetRef?.uid, await workloadUid(cluster, ns, 'dual'));
        assert.deepEqual(dual[0]!.targetRef, dual[1]!.targetRef);
    });
    it('a dual-stack Service made single-stack loses its slices of the family it dropped', async () => {
        const ns = await cluster.namespace();
        await createWorkloads(ns, ...mixedFamilies);
        await createService(cluster, ns, { metadata: { name: 'web' }, spec: { selector: { app: 'web' }, ipFamilyPolicy: 'RequireDualStack', ports: [httpPort] } });
        const before = await slicesWhen(ns, 'web', 'four endpoints', (s) => addressesOf(s).length === 4);
        const svc = await cluster.admin.get<V1Service>(objectPath(Services, ns, 'web'));
        await cluster.admin.mergePatch(objectPath(Services, ns, 'web'), {
            spec: { ipFamilyPolicy: 'SingleStack', ipFamilies: ['IPv4'], clusterIPs: [svc.spec!.clusterIP] },
        });
        const slices = await slicesWhen(ns, 'web', 'only the IPv4 slice left', (s) => s.length === 1 && s[0]!.addressType === 'IPv4');
        assert.deepEqual(slices, byType(before, 'IPv4'), 'the IPv4 slice is not rewritten');
    });
});

describe('headless Services', () => {
    it('a headless Service names each endpoint after its workload and its slices carry the headless label', async () => {
        const ns = await cluster.namespace();
        await createWorkloads(ns, { name: 'vm-1', ips: ['192.0.2.1'] }, { name: 'vm-2', ips: ['192.0.2.2'] });
        const svc = await createService(cluster, ns, { metadata: { name: 'db' }, spec: { clusterIP: 'None', selector: { app: 'web' }, ports: [httpPort] } });
        const slices = await slicesWhen(ns, 'db', 'two endpoints', (s) => addressesOf(s).length === 2);
        assert.deepEqual(slices.map((s) => s.addressType), svc.spec?.ipFamilies);
        assert.equal(slices[0]!.metadata?.labels?.['service.kubernetes.io/headless'], '');
        const hostnames = slices.flatMap((s) => s.endpoints!.map((e) => [e.targetRef?.name, e.hostname]));
        assert.deepEqual(hostnames.sort(), [['vm-1', 'vm-1'], ['vm-2', 'vm-2']]);
    });

    it('a headless Service without ports gets slices without ports', async () => {
        const ns = await cluster.namespace();
        await createWorkloads(ns, { name: 'vm-1', ips: ['192.0.2.1'] });
        await createService(cluster, ns, { metadata: { name: 'db' }, spec: { clusterIP: 'None', selector: { app: 'web' } } });
        const [slice, ...others] = await slicesWhen(ns, 'db', 'vm-1 published', (s) => addressesOf(s).join() === '192.0.2.1');
        assert.equal(others.length, 0);
        assert.deepEqual(slice!.ports ?? [], []);
        assert.equal(slice!.endpoints![0]!.hostname, 'vm-1');
    });
});

describe('endpoint conditions', () => {
    const web = { metadata: { name: 'web' }, spec: { selector: { app: 'web' }, ports: [httpPort] } };
    const conditionsOf = (slices: V1EndpointSlice[], name: string) => endpointsByWorkload(slices).get(name)?.[0]?.conditions;

    it('a workload that is not ready is published not ready, and turns ready when it does', async () => {
        const ns = await cluster.namespace();
        await createWorkloads(ns, { name: 'no-status', ips: ['192.0.2.1'], ready: false }, { name: 'unready', ips: ['192.0.2.2'], ready: false });
        await setReady(cluster, ns, 'unready', false);
        await createService(cluster, ns, web);
        let slices = await slicesWhen(ns, 'web', 'both published', (s) => addressesOf(s).length === 2);
        for (const name of ['no-status', 'unready']) {
            assert.deepEqual(conditionsOf(slices, name), { ready: false, serving: false, terminating: false }, name);
        }
        await setReady(cluster, ns, 'unready', true);
        slices = await slicesWhen(ns, 'web', 'unready turned ready', (s) => conditionsOf(s, 'unready')?.ready === true);
        assert.deepEqual(conditionsOf(slices, 'unready'), { ready: true, serving: true, terminating: false });
        assert.deepEqual(conditionsOf(slices, 'no-status'), { ready: false, serving: false, terminating: false });
    });

    it('a workload being deleted is published terminating and not ready, serving as before', async () => {
        const ns = await cluster.namespace();
        const finalizers = ['test.mesh-endpoints.io/hold'];
        await createWorkloads(ns, { name: 'was-ready', ips: ['192.0.2.1'], finalizers }, { name: 'was-unready', ips: ['192.0.2.2'], ready: false, finalizers });
        await createService(cluster, ns, web);
        await slicesWhen(ns, 'web', 'both published', (s) => addressesOf(s).length === 2);
        for (const name of ['was-ready', 'was-unready']) await cluster.admin.delete(objectPath(ExternalWorkloads, ns, name));
        const slices = await slicesWhen(ns, 'web', 'both terminating', (s) => [...endpointsByWorkload(s).values()].every((e) => e[0]!.conditions?.terminating));
        assert.deepEqual(conditionsOf(slices, 'was-ready'), { ready: false, serving: true, terminating: true });
        assert.deepEqual(conditionsOf(slices, 'was-unready'), { ready: false, serving: false, terminating: true });

        for (const name of ['was-ready', 'was-unready']) await cluster.admin.mergePatch(objectPath(ExternalWorkloads, ns, name), { metadata: { finalizers: null } });
        await slicesWhen(ns, 'web', 'deleted workloads gone', (s) => s.length === 0);
    });

    it('publishNotReadyAddresses makes every endpoint ready, terminating ones too', async () => {
        const ns = await cluster.namespace();
        const finalizers = ['test.mesh-endpoints.io/hold'];
        await createWorkloads(ns, { name: 'unready', ips: ['192.0.2.1'], ready: false }, { name: 'leaving', ips: ['192.0.2.2'], finalizers });
        await cluster.admin.delete(objectPath(ExternalWorkloads, ns, 'leaving'));
        await createService(cluster, ns, { ...web, spec: { ...web.spec, publishNotReadyAddresses: true } });
        const slices = await slicesWhen(ns, 'web', 'both published', (s) => addressesOf(s).length === 2);
        assert.deepEqual(conditionsOf(slices, 'unready'), { ready: true, serving: false, terminating: false });
        assert.deepEqual(conditionsOf(slices, 'leaving'), { ready: true, serving: true, terminating: true });
        await cluster.admin.mergePatch(objectPath(ExternalWorkloads, ns, 'leaving'), { metadata: { finalizers: null } });
    });

    it('two workloads with the same IP both appear, each with its own targetRef and zone', async () => {
        const ns = await cluster.namespace();
        const zone = 'topology.kubernetes.io/zone';
        await createWorkloads(
            ns,
            { name: 'vm-a', ips: ['192.0.2.7'], labels: { app: 'web', [zone]: 'zone-a' } },
            { name: 'vm-b', ips: ['192.0.2.7'], labels: { app: 'web', [zone]: 'zone-b' } },
        );
        await createService(cluster, ns, web);
        const slices = await slicesWhen(ns, 'web', 'two endpoints', (s) => addressesOf(s).length === 2);
        assert.deepEqual(addressesOf(slices), ['192.0.2.7', '192.0.2.7']);
        const endpoints = endpointsByWorkload(slices);
        assert.equal(endpoints.get('vm-a')?.[0]?.zone, 'zone-a');
        assert.equal(endpoints.get('vm-b')?.[0]?.zone, 'zone-b');
    });
});

describe('ports', () => {
    const portsOf = (slice: V1EndpointSlice) => (slice.ports ?? []).map((p) => `${p.name}=${p.port}/${p.protocol}`).sort();
    const sliceOf = (slices: V1EndpointSlice[], workload: string) => slices.find((s) => s.endpoints?.some((e) => e.targetRef?.name === workload))!;

    it('a named targetPort resolves to each workload’s port of that name, one slice per resolved port set', async () => {
        const ns = await cluster.namespace();
        await createWorkloads(
            ns,
            { name: 'vm-a', ips: ['192.0.2.1'], ports: [{ name: 'http', port: 8080 }] },
            { name: 'vm-b', ips: ['192.0.2.2'], ports: [{ name: 'http', port: 9090 }, { name: 'metrics', port: 9100 }] },
        );
        await createService(cluster, ns, {
            metadata: { name: 'web' },
            spec: { selector: { app: 'web' }, ports: [httpPort, { name: 'metrics', port: 9100, targetPort: 9100 as never }] },
        });
        const slices = await slicesWhen(ns, 'web', 'two slices', (s) => s.length === 2 && addressesOf(s).length === 2);
        assert.deepEqual(portsOf(sliceOf(slices, 'vm-a')), ['http=8080/TCP', 'metrics=9100/TCP']);
        assert.deepEqual(portsOf(sliceOf(slices, 'vm-b')), ['http=9090/TCP', 'metrics=9100/TCP']);
    });

    it('a workload missing a named port gets a Warning Event and is published for the Service’s other ports', async () => {
        const ns = await cluster.namespace();
        await createWorkloads(
            ns,
            { name: 'vm-full', ips: ['192.0.2.1'], ports: [{ name: 'http', port: 8080 }, { name: 'admin', port: 9990 }] },
            { name: 'vm-partial', ips: ['192.0.2.2'], ports: [{ name: 'http', port: 8080 }, { name: 'admin', port: 9990, protocol: 'UDP' }] },
        );
        await createService(cluster, ns, {
            metadata: { name: 'web' },
            spec: { selector: { app: 'web' }, ports: [httpPort, { name: 'admin', port: 9990, targetPort: 'admin' as never }] },
        });
        const slices = await slicesWhen(ns, 'web', 'two slices', (s) => s.length === 2 && addressesOf(s).length === 2);
        assert.deepEqual(portsOf(sliceOf(slices, 'vm-full')), ['admin=9990/TCP', 'http=8080/TCP']);
        assert.deepEqual(portsOf(sliceOf(slices, 'vm-partial')), ['http=8080/TCP']);

        await eventually('a MissingNamedPort Event', async () => (await eventsAbout(cluster, ns, 'vm-partial', 'MissingNamedPort')).length > 0);
        const [event, ...more] = await eventsAbout(cluster, ns, 'vm-partial', 'MissingNamedPort');
        assert.equal(more.length, 0);
        assert.equal(event!.type, 'Warning');
        assert.equal(event!.involvedObject.kind, 'ExternalWorkload');
        assert.equal(event!.involvedObject.uid, await workloadUid(cluster, ns, 'vm-partial'));
        assert.match(event!.message!, /"admin"/);
        assert.deepEqual(await eventsAbout(cluster, ns, 'vm-full'), []);
    });
});
