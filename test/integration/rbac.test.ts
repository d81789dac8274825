// The RBAC manifests in deploy/rbac/ are enough: each controller runs as its ServiceAccount
// with exactly those rights, converges, and is refused nothing.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { parseAllDocuments } from 'yaml';
import { EventRecorder } from '../../src/kube/events.js';
import { logFn, newLogger } from '../../src/kube/log.js';
import { objectPath, Services } from '../../src/kube/resources.js';
import { eventually, type TestCluster } from '../../src/testing/harness.js';
import { createLink, createRemoteService, endpointsOf, pairedNamespace, runServiceMirror, startMirrorEnv } from './mirror-support.js';
import { addressesOf, CountingRest, createService, createWorkload, runExternalWorkloads, slicesOf } from './support.js';

const env = await startMirrorEnv('rbac');

const paths: Record<string, string> = {
    ServiceAccount: 'serviceaccounts',
    ClusterRole: 'clusterroles',
    ClusterRoleBinding: 'clusterrolebindings',
    Role: 'roles',
    RoleBinding: 'rolebindings',
};

/** Applies a deploy/rbac file with its namespace replaced; returns a client acting as its ServiceAccount. */
async function applyRbac(cluster: TestCluster, file: string, namespace: string): Promise<CountingRest> {
    const text = readFileSync(file, 'utf8').replace(/namespace: (mesh-endpoints|linkerd-multicluster)$/gm, `namespace: ${namespace}`);
    let account = '';
    for (const doc of parseAllDocuments(text)) {
        const obj = doc.toJS() as { apiVersion: string; kind: string; metadata: { name: string; namespace?: string } };
        if (obj.kind === 'ServiceAccount') account = obj.metadata.name;
        // Cluster-scoped names get the namespace too, so each test has its own.
        if (!obj.metadata.namespace) obj.metadata.name = `${obj.metadata.name}-${namespace}`;
        if (obj.kind === 'ClusterRoleBinding') (obj as unknown as { roleRef: { name: string } }).roleRef.name += `-${namespace}`;
        const base = obj.apiVersion === 'v1' ? '/api/v1' : `/apis/${obj.apiVersion}`;
        const ns = obj.metadata.namespace ? `/namespaces/${obj.metadata.namespace}` : '';
        await cluster.admin.create(`${base}${ns}/${paths[obj.kind]}`, obj);
    }
    const sa = await cluster.serviceAccountClient(namespace, account);
    return new CountingRest(sa.kubeConfig);
}

describe('RBAC manifests', () => {
    it('external-workloads runs, leads and converges with only deploy/rbac/external-workloads.yaml', async () => {
        const cluster = env.local;
        const controllerNs = await cluster.namespace('mesh-endpoints');
        const rest = await applyRbac(cluster, 'deploy/rbac/external-workloads.yaml', controllerNs);
        const ns = await cluster.namespace();
        await createService(cluster, ns, { metadata: { name: 'web' }, spec: { selector: { app: 'web' }, ports: [{ name: 'http', port: 80, targetPort: 'http' as never }] } });
        await createWorkload(cluster, ns, { name: 'vm-1', ips: ['192.0.2.1'] });
        await createWorkload(cluster, ns, { name: 'vm-bad', ips: ['192.0.2.2'], ports: [{ name: 'other', port: 1 }] }); // an Event to write

        const { controller, stop } = await runExternalWorkloads(cluster, { rest, leaseNamespace: controllerNs });
        await eventually('the leader publishes vm-1', async () => addressesOf(await slicesOf(cluster, ns, 'web')).includes('192.0.2.1'));
        await cluster.admin.delete(objectPath(Services, ns, 'web'));
        await eventually('its slices deleted with the Service', async () => (await slicesOf(cluster, ns, 'web')).length === 0);
        await stop();
        assert.deepEqual(rest.rejected, [], 'no write refused');
        assert.deepEqual(controller.informers.map((i) => i.stats.errors), [0, 0, 0], 'no list or watch refused');
    });

    it('service-mirror mirrors with only deploy/rbac/service-mirror.yaml', async () => {
        const linkNs = await env.local.namespace('mc');
        const rest = await applyRbac(env.local, 'deploy/rbac/service-mirror.yaml', linkNs);
        await createLink(env, linkNs, { name: 'east', gatewayAddress: '192.0.2.1' });
        const ns = await pairedNamespace(env);
        await createRemoteService(env, ns, 'web');
        const running = await runServiceMirror(env, linkNs, {
            rest,
            events: new EventRecorder(rest, 'mesh-endpoints-service-mirror', logFn(newLogger('silent')), 0),
        });
        await eventually('the mirror with its endpoint', async () => (await endpointsOf(env, ns, 'web-east')).join() === 'IPv4 192.0.2.1 ready');
        await eventually('the Link status written', async () => rest.counts.PATCH !== undefined && rest.counts.PATCH > 0);
        await running.stop();
        assert.deepEqual(rest.rejected, [], 'no write refused');
        assert.deepEqual(running.controller.informers.map((i) => i.stats.errors), running.controller.informers.map(() => 0), 'no list or watch refused');
    });
});
