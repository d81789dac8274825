// The external-workloads controller against the runtime, with real informer stores and an
// apiserver in memory (testing/memory-rest.ts): what one Service's reconcile writes and that it
// writes nothing once converged, that a term starts from every Service and every Service our
// slices name, and that a workload moved between Services reaches both. The apiserver itself is
// in test/integration/external-workloads-*.test.ts.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Registry } from 'prom-client';
import { LABEL_MANAGED_BY, LABEL_SERVICE_NAME } from '../endpointslice/slice.js';
import type { EventSink } from '../kube/events.js';
import { newLogger } from '../kube/log.js';
import { WorkQueueMetrics } from '../kube/workqueue-metrics.js';
import { kinds, MemoryRest } from '../testing/memory-rest.js';
import { DEFAULT_MANAGED_BY, ExternalWorkloadsController } from './controller.js';
import { makeService, makeWorkload, NAMESPACE } from './testkit.js';

function setUp() {
    const rest = new MemoryRest();
    const registry = new Registry();
    const events: string[] = [];
    const sink: EventSink = { record: (obj, type, reason) => events.push(`${type} ${reason} ${obj.metadata?.name}`) };
    const controller = new ExternalWorkloadsController({
        rest,
        logger: newLogger('silent'),
        registry,
        queueMetrics: new WorkQueueMetrics(registry, 'test'),
        events: sink,
        isLeader: () => true,
        batchPeriodMs: 0,
    });
    rest.serve('services', controller.services);
    rest.serve('externalworkloads', controller.workloads);
    rest.serve('endpointslices', controller.slices.informer);
    const reconciles = async () => (await registry.getSingleMetric('test_reconcile_total')!.get()).values.find((v) => v.labels.result === 'success')?.value ?? 0;
    return { rest, controller, events, reconciles };
}

async function until(what: string, check: () => boolean | Promise<boolean>): Promise<void> {
    const deadline = Date.now() + 5000;
    while (!(await check())) {
        if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
        await new Promise((r) => setTimeout(r, 2));
    }
}

/** The endpoint addresses of a Service's slices, as the apiserver holds them. */
function endpointsOf(rest: MemoryRest, service: string): string[] {
    return rest
        .list('endpointslices')
        .filter((s) => s.metadata?.labels?.[LABEL_SERVICE_NAME] === service)
        .flatMap((s) => ((s as { endpoints?: { addresses: string[] }[] }).endpoints ?? []).flatMap((e) => e.addresses))
        .sort();
}

describe('the external-workloads controller', () => {
    it('writes one slice for a Service selecting two workloads, and nothing when run again', async () => {
        const { rest, controller } = setUp();
        rest.add('services', makeService());
        rest.add('externalworkloads', makeWorkload('vm-1', { ips: ['192.0.2.1'] }));
        rest.add('externalworkloads', makeWorkload('vm-2', { ips: ['192.0.2.2'] }));

        await controller.syncService(`${NAMESPACE}/web`);
        assert.deepEqual(kinds(rest.writes), ['POST endpointslices']);
        assert.deepEqual(endpointsOf(rest, 'web'), ['192.0.2.1', '192.0.2.2']);

        rest.writes.length = 0;
        await controller.syncService(`${NAMESPACE}/web`);
        assert.deepEqual(rest.writes, []);
    });

    it('starts a term from every Service and every Service its slices name: the slices of a Service deleted while no replica led go', async () => {
        const { rest, controller, reconciles } = setUp();
        rest.add('services', makeService());
        rest.add('externalworkloads', makeWorkload('vm-1'));
        rest.add('endpointslices', {
            apiVersion: 'discovery.k8s.io/v1',
            kind: 'EndpointSlice',
            metadata: { name: 'gone-abc', namespace: NAMESPACE, labels: { [LABEL_SERVICE_NAME]: 'gone', [LABEL_MANAGED_BY]: DEFAULT_MANAGED_BY } },
            addressType: 'IPv4',
            endpoints: [{ addresses: ['192.0.2.9'] }],
        });

        controller.startLeading();
        await until('both Services reconciled', async () => (await reconciles()) >= 2);
        await controller.stopLeading();
        assert.deepEqual(kinds(rest.writes).sort(), ['DELETE endpointslices', 'POST endpointslices']);
        assert.deepEqual(endpointsOf(rest, 'gone'), []);
        assert.deepEqual(endpointsOf(rest, 'web'), ['192.0.2.1']);

        // A new term with nothing changed: every Service reconciled again, nothing written.
        rest.writes.length = 0;
        const before = await reconciles();
        controller.startLeading();
        await until('the new term reconciled', async () => (await reconciles()) >= before + 1);
        await controller.stopLeading();
        assert.deepEqual(rest.writes, []);
    });

    it('moves a relabelled workload from the Service that selected it to the one that does now', async () => {
        const { rest, controller } = setUp();
        rest.add('services', makeService());
        rest.add('services', makeService({ selector: { app: 'api' } }, { name: 'api', uid: 'api-uid' }));
        rest.add('externalworkloads', makeWorkload('vm-1', { ips: ['192.0.2.1'] }));
        controller.startLeading();
        await until('web has vm-1', () => endpointsOf(rest, 'web').length === 1);

        rest.writes.length = 0;
        const moved = makeWorkload('vm-1', { ips: ['192.0.2.1'], labels: { app: 'api' } });
        rest.add('externalworkloads', moved);
        await until('api has vm-1 and web has none', () => endpointsOf(rest, 'api').length === 1 && endpointsOf(rest, 'web').length === 0);
        await controller.stopLeading();
        assert.deepEqual(kinds(rest.writes).sort(), ['DELETE endpointslices', 'POST endpointslices']);
    });
});
