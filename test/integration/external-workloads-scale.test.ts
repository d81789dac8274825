// Slice packing and write counts of the external-workloads controller against the real
// apiserver: the churn-minimising algorithm measured in API writes.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1Service } from '@kubernetes/client-node';
import { objectPath, Services } from '../../src/kube/resources.js';
import { installCrds } from '../../src/testing/crds.js';
import { eventually, setUp, startTestCluster } from '../../src/testing/harness.js';
import { createService, createWorkload, metricValue, runExternalWorkloads, sizesOf, slicesOf } from './support.js';

const cluster = await startTestCluster('ew-scale');
await setUp('the CRDs', () => installCrds(cluster.admin));

const webService = (port = 80): V1Service => ({
    metadata: { name: 'web' },
    spec: { selector: { app: 'web' }, ports: [{ name: 'http', port, targetPort: 'http' as never }] },
});

async function createWorkloads(ns: string, count: number, from = 0, port = (_i: number) => 8080) {
    for (let i = from; i < from + count; i++) {
        const ip = `10.${Math.floor(i / 250)}.${i % 250}.${1 + (i % 7)}`;
        await createWorkload(cluster, ns, { name: `vm-${i}`, ips: [ip], ports: [{ name: 'http', port: port(i) }], ready: false });
    }
}

async function packed(ns: string, expected: number[]) {
    let sizes: number[] = [];
    await eventually(`slices of sizes ${expected}`, async () => {
        sizes = sizesOf(await slicesOf(cluster, ns, 'web'));
        return sizes.join() === expected.join();
    }, 60_000).catch((err: Error) => {
        throw new Error(`${err.message}; the slices have ${sizes.join(',') || 'none'}`);
    });
}

describe('external workloads at scale', () => {
    it('packs 250 workloads into slices of 100, 100 and 50 in 3 writes, and a no-op resync writes nothing', async (t) => {
        const ns = await cluster.namespace();
        await createWorkloads(ns, 250);
        await createService(cluster, ns, webService());
        const running = await runExternalWorkloads(cluster, { namespace: ns, resyncMs: 500 });
        await packed(ns, [100, 100, 50]);
        const initial = running.rest.writes();
        t.diagnostic(`initial sync of 250 workloads: ${initial} writes (${JSON.stringify(running.rest.counts)})`);
        assert.equal(initial, 3);
        running.rest.reset();
        const syncsBefore = await metricValue(running.registry, 'mesh_endpoints_reconcile_total', { name: 'external-workloads', result: 'success' });
        await eventually('several resyncs', async () =>
            (await metricValue(running.registry, 'mesh_endpoints_reconcile_total', { name: 'external-workloads', result: 'success' })) >= syncsBefore + 4,
        );
        // Leadership regained also reconciles everything from scratch.
        await running.controller.stopLeading();
        running.controller.startLeading();
        await eventually('the from-scratch sync', async () =>
            (await metricValue(running.registry, 'mesh_endpoints_reconcile_total', { name: 'external-workloads', result: 'success' })) >= syncsBefore + 6,
        );
        t.diagnostic(`no-op resyncs: ${running.rest.writes()} writes`);
        assert.equal(running.rest.writes(), 0, 'a sync with nothing to change writes nothing');
        await running.stop();
    });

    it('puts 300 workloads whose named port maps to 5 numbers into 5 slices of 60', async () => {
        const ns = await cluster.namespace();
        await createWorkloads(ns, 300, 0, (i) => 8000 + (i % 5));
        await createService(cluster, ns, webService());
        const running = await runExternalWorkloads(cluster, { namespace: ns });
        await packed(ns, [60, 60, 60, 60, 60]);
        const ports = (await slicesOf(cluster, ns, 'web')).map((s) => s.ports?.[0]?.port).sort();
        assert.deepEqual(ports, [8000, 8001, 8002, 8003, 8004]);
        assert.equal(running.rest.writes(), 5);
        await running.stop();
    });

    it('fills slices of 62 and 61 with 127 new endpoints by 1 create and 1 update', async () => {
        const ns = await cluster.namespace();
        await createWorkloads(ns, 123);
        await createService(cluster, ns, webService());
        const small = await runExternalWorkloads(cluster, { namespace: ns, maxEndpointsPerSlice: 62 });
        await packed(ns, [62, 61]);
        await small.stop();
        await createWorkloads(ns, 127, 123);
        const running = await runExternalWorkloads(cluster, { namespace: ns, maxEndpointsPerSlice: 100 });
        await packed(ns, [100, 89, 61]);
        assert.deepEqual({ POST: running.rest.counts.POST, PUT: running.rest.counts.PUT, DELETE: running.rest.counts.DELETE }, { POST: 1, PUT: 1, DELETE: undefined });
        await running.stop();
    });

    it('recycles 10 slices of 30 into 3 of 100 after a port change: 3 updates and 7 deletes', async () => {
        const ns = await cluster.namespace();
        await createWorkloads(ns, 300);
        await createService(cluster, ns, webService());
        const small = await runExternalWorkloads(cluster, { namespace: ns, maxEndpointsPerSlice: 30 });
        await packed(ns, Array(10).fill(30));
        await small.stop();
        const svc = await cluster.admin.get<V1Service>(objectPath(Services, ns, 'web'));
        // The slice port is the resolved target (8080), named after the Service port:
        // renaming the Service port moves every endpoint to a new port group.
        svc.spec!.ports![0]!.name = 'web';
        await cluster.admin.replace(objectPath(Services, ns, 'web'), svc);
        const running = await runExternalWorkloads(cluster, { namespace: ns, maxEndpointsPerSlice: 100 });
        await packed(ns, [100, 100, 100]);
        assert.deepEqual({ POST: running.rest.counts.POST, PUT: running.rest.counts.PUT, DELETE: running.rest.counts.DELETE }, { POST: undefined, PUT: 3, DELETE: 7 });
        assert.ok((await slicesOf(cluster, ns, 'web')).every((s) => s.ports?.[0]?.name === 'web' && s.ports[0].port === 8080));
        await running.stop();
    });
});
