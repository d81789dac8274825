// The Event recorder against a real kube-apiserver: only the leader records, a flood about one
// object and reason is cut to client-go's burst, identical events raise the count of one Event,
// and record() returns at once even when the apiserver does not answer.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Registry } from 'prom-client';
import { EventRecorder } from '../../src/kube/events.js';
import { KubeRest } from '../../src/kube/rest.js';
import { collectionPath, ConfigMaps } from '../../src/kube/resources.js';
import type { KubeObject } from '../../src/kube/store.js';
import { eventually, startTestCluster } from '../../src/testing/harness.js';
import { TcpProxy } from '../../src/testing/tcp-proxy.js';
import { eventsAbout, metricValue } from './support.js';

const cluster = await startTestCluster('events');
const quiet = () => undefined;

async function configMap(ns: string, name: string): Promise<KubeObject> {
    const created = await cluster.admin.create<KubeObject>(collectionPath(ConfigMaps, ns), { metadata: { name } });
    return { ...created, apiVersion: 'v1', kind: 'ConfigMap' };
}

describe('Event recorder', () => {
    it('records nothing on a replica that does not lead', async () => {
        const ns = await cluster.namespace();
        const obj = await configMap(ns, 'standby');
        let leading = false;
        const recorder = new EventRecorder(cluster.admin, 'test', quiet, undefined, { isLeader: () => leading });
        recorder.record(obj, 'Warning', 'Broken', 'seen by the standby');
        leading = true;
        recorder.record(obj, 'Warning', 'Broken', 'seen by the leader');
        await eventually('the leader’s Event', async () => (await eventsAbout(cluster, ns, 'standby')).length === 1);
        await new Promise((r) => setTimeout(r, 300));
        assert.deepEqual((await eventsAbout(cluster, ns, 'standby')).map((e) => e.message), ['seen by the leader']);
    });

    it('writes 25 Events about one object and reason, then filters, and counts repeats on one Event', async () => {
        const ns = await cluster.namespace();
        const obj = await configMap(ns, 'flood');
        const registry = new Registry();
        const recorder = new EventRecorder(cluster.admin, 'test', quiet, undefined, { registry });
        for (let i = 0; i < 40; i++) recorder.record(obj, 'Warning', 'Distinct', `message ${i}`);
        await eventually('the queue drained', () => recorder.pending() === 0);
        await eventually('25 Events written', async () => (await eventsAbout(cluster, ns, 'flood', 'Distinct')).length === 25);
        assert.equal(await metricValue(registry, 'mesh_endpoints_events_total', { result: 'spam' }), 15);

        for (let i = 0; i < 5; i++) recorder.record(obj, 'Normal', 'Same', 'the same thing again');
        await eventually('one Event counting five', async () => {
            const same = await eventsAbout(cluster, ns, 'flood', 'Same');
            return same.length === 1 && same[0]!.count === 5;
        });
    });

    it('returns at once from record() while the apiserver hangs, and drops what overflows its queue', async () => {
        const ns = await cluster.namespace();
        const obj = await configMap(ns, 'hang');
        const proxy = new TcpProxy('127.0.0.1', cluster.state.apiserverPort);
        const port = await proxy.start();
        const rest = new KubeRest(cluster.kubeConfig(`https://127.0.0.1:${port}`), { timeoutMs: 2_000 });
        const registry = new Registry();
        const recorder = new EventRecorder(rest, 'test', quiet, 0, { registry, queueSize: 5 });
        proxy.freeze(true);
        const started = performance.now();
        for (let i = 0; i < 20; i++) recorder.record({ ...obj, metadata: { ...obj.metadata, name: `hang-${i}` } }, 'Warning', 'Hung', 'x');
        const tookMs = performance.now() - started;
        // No timing bound here (tests assert no times); what matters is that record() never awaited a request.
        assert.ok(recorder.pending() <= 5, `queued ${recorder.pending()}`);
        assert.ok(await metricValue(registry, 'mesh_endpoints_events_total', { result: 'dropped' }) >= 14);
        proxy.freeze(false);
        rest.close();
        await proxy.stop();
        console.log(`# 20 record() calls against a frozen apiserver returned in ${tookMs.toFixed(1)} ms`);
    });
});
