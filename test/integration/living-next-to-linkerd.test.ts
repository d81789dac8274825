// mesh-endpoints next to Linkerd's own controllers (docs/living-next-to-linkerd.md): what can be
// shown without Linkerd itself, on two local clusters. Linkerd's writes are made here as Linkerd
// makes them: its external-workload slices (managed-by linkerd-external-workloads-controller),
// its mirror Services (mirror labels, no mesh-endpoints annotation) and the slices Kubernetes'
// EndpointSliceMirroring makes of the v1 Endpoints Linkerd's service mirror writes.
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import type { V1EndpointSlice, V1Service } from '@kubernetes/client-node';
import { collectionPath, EndpointSlices, objectPath, Services } from '../../src/kube/resources.js';
import { eventually, setUp } from '../../src/testing/harness.js';
import { createLink, createRemoteService, endpointsOf, pairedNamespace, runServiceMirror, startMirrorEnv } from './mirror-support.js';
import { addressesOf, createService, createWorkload, runExternalWorkloads, slicesOf } from './support.js';

const env = await startMirrorEnv('linkerd');
const cluster = env.local;
const externalWorkloads = await setUp('the external-workloads controller', () => runExternalWorkloads(cluster));
after(() => externalWorkloads.stop());

const LINKERD_WORKLOADS = 'linkerd-external-workloads-controller';
const KUBE_MIRRORING = 'endpointslicemirroring-controller.k8s.io';

/** A slice as another controller writes it for `service`. */
function foreignSlice(name: string, service: V1Service, managedBy: string, address: string): V1EndpointSlice {
    return {
        apiVersion: 'discovery.k8s.io/v1',
        kind: 'EndpointSlice',
        metadata: {
            name,
            labels: { 'kubernetes.io/service-name': service.metadata!.name!, 'endpointslice.kubernetes.io/managed-by': managedBy },
            ownerReferences: [{ apiVersion: 'v1', kind: 'Service', name: service.metadata!.name!, uid: service.metadata!.uid!, controller: true }],
        },
        addressType: 'IPv4',
        endpoints: [{ addresses: [address], conditions: { ready: true } }],
        ports: [{ name: 'http', port: 8080, protocol: 'TCP' }],
    };
}

async function allSlices(ns: string, service: string): Promise<V1EndpointSlice[]> {
    const list = await cluster.admin.get<{ items: V1EndpointSlice[] }>(collectionPath(EndpointSlices, ns), { labelSelector: `kubernetes.io/service-name=${service}` });
    return list.items;
}

describe('next to Linkerd', () => {
    it("publishes external workloads beside Linkerd's slices of the same Service, never touching them, so Linkerd's can go without a gap", async () => {
        const ns = await cluster.namespace();
        const web = await createService(cluster, ns, { metadata: { name: 'web' }, spec: { selector: { app: 'web' }, ports: [{ name: 'http', port: 80, targetPort: 'http' as never }] } });
        const linkerds = await cluster.admin.create<V1EndpointSlice>(collectionPath(EndpointSlices, ns), foreignSlice('web-linkerd', web, LINKERD_WORKLOADS, '192.0.2.1'));
        await createWorkload(cluster, ns, { name: 'vm-1', ips: ['192.0.2.1'] });
        await eventually('our slice beside Linkerd\'s', async () => addressesOf(await slicesOf(cluster, ns, 'web')).join() === '192.0.2.1');

        // Both publish: consumers (kube-proxy, Linkerd's destination) merge every slice of the Service.
        const both = await allSlices(ns, 'web');
        assert.deepEqual(both.map((s) => s.metadata?.labels?.['endpointslice.kubernetes.io/managed-by']).sort(), ['external-workloads.mesh-endpoints.io', LINKERD_WORKLOADS]);
        const untouched = await cluster.admin.get<V1EndpointSlice>(objectPath(EndpointSlices, ns, 'web-linkerd'));
        assert.equal(untouched.metadata?.resourceVersion, linkerds.metadata?.resourceVersion, "Linkerd's slice is never written");

        // Linkerd's side goes; ours stays as it was, so the Service never lacks its endpoint.
        const ours = (await slicesOf(cluster, ns, 'web'))[0]!;
        await cluster.admin.delete(objectPath(EndpointSlices, ns, 'web-linkerd'));
        await createWorkload(cluster, ns, { name: 'vm-2', ips: ['192.0.2.2'] });
        await eventually('the next change published', async () => addressesOf(await slicesOf(cluster, ns, 'web')).join() === '192.0.2.1,192.0.2.2');
        const [updated] = await slicesOf(cluster, ns, 'web');
        assert.equal(updated!.metadata?.name, ours.metadata?.name, 'the same slice, updated in place');
        assert.equal((await allSlices(ns, 'web')).length, 1);
    });

    it("takes over a mirror Service Linkerd's service mirror made, and leaves the slices mirrored from Linkerd's Endpoints alone", async () => {
        const linkNs = await env.local.namespace('mc');
        const mirror = await runServiceMirror(env, linkNs);
        after(() => mirror.stop());
        const ns = await pairedNamespace(env);
        // What Linkerd left: the mirror Service and the slice Kubernetes mirrored from its Endpoints.
        const linkerdMirror = await cluster.admin.create<V1Service>(collectionPath(Services, ns), {
            metadata: { name: 'web-east', labels: { 'mirror.linkerd.io/mirrored-service': 'true', 'mirror.linkerd.io/cluster-name': 'east' }, annotations: { 'mirror.linkerd.io/remote-svc-fq-name': `web.${ns}.svc.cluster.local` } },
            spec: { ports: [{ name: 'http', port: 80 }] },
        });
        const mirrored = await cluster.admin.create<V1EndpointSlice>(collectionPath(EndpointSlices, ns), foreignSlice('web-east-mirrored', linkerdMirror, KUBE_MIRRORING, '192.0.2.50'));

        await createLink(env, linkNs, { name: 'east', gatewayAddress: '192.0.2.60' });
        await createRemoteService(env, ns, 'web');
        await eventually('our mirror slice', async () => (await endpointsOf(env, ns, 'web-east')).join() === 'IPv4 192.0.2.60 ready');

        const service = await cluster.admin.get<V1Service>(objectPath(Services, ns, 'web-east'));
        assert.equal(service.metadata?.uid, linkerdMirror.metadata?.uid, 'the same Service, adopted rather than replaced');
        assert.equal(service.metadata?.annotations?.['mesh-endpoints.io/link'], `${linkNs}/east`);
        const theirs = await cluster.admin.get<V1EndpointSlice>(objectPath(EndpointSlices, ns, 'web-east-mirrored'));
        assert.equal(theirs.metadata?.resourceVersion, mirrored.metadata?.resourceVersion, 'the mirrored slice is never written');
        assert.deepEqual((await allSlices(ns, 'web-east')).map((s) => s.metadata?.labels?.['endpointslice.kubernetes.io/managed-by']).sort(), [KUBE_MIRRORING, 'service-mirror.mesh-endpoints.io']);
    });
});
