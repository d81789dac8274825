// The external-workloads controller end to end against a real kube-apiserver.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, describe, it } from 'node:test';
import { parseAllDocuments } from 'yaml';
import { collectionPath, ExternalWorkloads, objectPath, Services } from '../../src/kube/resources.js';
import { installCrds } from '../../src/testing/crds.js';
import { eventually, startTestCluster } from '../../src/testing/harness.js';
import { addressesOf, createService, createWorkload, runExternalWorkloads, slicesOf } from './support.js';

const cluster = await startTestCluster('ew');
await installCrds(cluster.admin);
const running = await runExternalWorkloads(cluster);
after(() => running.stop());

describe('external workloads controller', () => {
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
