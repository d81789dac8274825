// The Multi-Cluster Services CRDs the chart installs (upstream's ServiceExport and ServiceImport,
// the About API's ClusterProperty), as the apiserver serves them: both versions of each MCS kind
// read and write the same objects, and upstream's validation holds.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ApiError } from '../../src/kube/errors.js';
import { installMcsCrds } from '../../src/testing/crds.js';
import { setUp, startTestCluster } from '../../src/testing/harness.js';

const cluster = await startTestCluster('mcs-crds');
await setUp('the MCS CRDs', () => installMcsCrds(cluster.admin));

const mcs = (version: string, ns: string, plural: string) => `/apis/multicluster.x-k8s.io/${version}/namespaces/${ns}/${plural}`;

interface Export {
    apiVersion: string;
    metadata: { name: string };
    spec?: { exportedLabels?: Record<string, string> };
}
interface Import {
    apiVersion: string;
    metadata: { name: string };
    spec: { type: string; ips?: string[]; ports: { port: number; protocol?: string }[] };
    status?: { clusters?: { cluster: string }[] };
}

describe('MCS CRDs', () => {
    it('serves a ServiceExport written as v1alpha1 as v1beta1 too, with v1beta1 exportedLabels', async () => {
        const ns = await cluster.namespace('export');
        await cluster.admin.create(mcs('v1alpha1', ns, 'serviceexports'), { apiVersion: 'multicluster.x-k8s.io/v1alpha1', kind: 'ServiceExport', metadata: { name: 'hello' } });
        const beta = await cluster.admin.get<Export>(`${mcs('v1beta1', ns, 'serviceexports')}/hello`);
        assert.equal(beta.apiVersion, 'multicluster.x-k8s.io/v1beta1');
        await cluster.admin.mergePatch(`${mcs('v1beta1', ns, 'serviceexports')}/hello`, { spec: { exportedLabels: { tier: 'web' } } });
        const again = await cluster.admin.get<Export>(`${mcs('v1beta1', ns, 'serviceexports')}/hello`);
        assert.deepEqual(again.spec?.exportedLabels, { tier: 'web' });
    });

    it('stores a ServiceImport with its status subresource, and rejects more than two ips', async () => {
        const ns = await cluster.namespace('import');
        const path = mcs('v1beta1', ns, 'serviceimports');
        await cluster.admin.create(path, {
            apiVersion: 'multicluster.x-k8s.io/v1beta1',
            kind: 'ServiceImport',
            metadata: { name: 'hello' },
            spec: { type: 'ClusterSetIP', ips: ['10.96.0.50'], ports: [{ port: 80, protocol: 'TCP' }] },
        });
        await cluster.admin.mergePatch(`${path}/hello/status`, { status: { clusters: [{ cluster: 'east' }] } });
        const alpha = await cluster.admin.get<Import>(`${mcs('v1alpha1', ns, 'serviceimports')}/hello`);
        assert.deepEqual(alpha.spec.ips, ['10.96.0.50']);
        assert.deepEqual(alpha.status?.clusters, [{ cluster: 'east' }]);
        await assert.rejects(
            cluster.admin.create(path, {
                apiVersion: 'multicluster.x-k8s.io/v1beta1',
                kind: 'ServiceImport',
                metadata: { name: 'three' },
                spec: { type: 'ClusterSetIP', ips: ['10.96.0.1', '10.96.0.2', '10.96.0.3'], ports: [{ port: 80 }] },
            }),
            (err: unknown) => err instanceof ApiError && err.code === 422,
        );
    });

    it('serves the cluster-scoped ClusterProperty cluster.clusterset.k8s.io, and rejects an empty value', async () => {
        const path = '/apis/about.k8s.io/v1alpha1/clusterproperties';
        await cluster.admin.create(path, { apiVersion: 'about.k8s.io/v1alpha1', kind: 'ClusterProperty', metadata: { name: 'cluster.clusterset.k8s.io' }, spec: { value: 'east' } });
        const got = await cluster.admin.get<{ spec: { value: string } }>(`${path}/cluster.clusterset.k8s.io`);
        assert.equal(got.spec.value, 'east');
        await assert.rejects(
            cluster.admin.create(path, { apiVersion: 'about.k8s.io/v1alpha1', kind: 'ClusterProperty', metadata: { name: 'clusterset.k8s.io' }, spec: { value: '' } }),
            (err: unknown) => err instanceof ApiError && err.code === 422,
        );
    });
});
