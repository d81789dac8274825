import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Registry } from 'prom-client';
import { ExternalWorkloadsMetrics } from './metrics.js';

async function gauge(registry: Registry, name: string): Promise<number> {
    return (await registry.getSingleMetric(`mesh_endpoints_external_workloads_${name}`)!.get()).values[0]!.value;
}

describe('external workloads metrics', () => {
    it('sums slices and endpoints over Services, following updates and forgetting deleted Services', async () => {
        const registry = new Registry();
        const metrics = new ExternalWorkloadsMetrics(registry);
        metrics.recordService('a/web', 3, 3, 250);
        metrics.recordService('b/db', 2, 1, 10);
        assert.deepEqual([await gauge(registry, 'num_endpoint_slices'), await gauge(registry, 'desired_endpoint_slices'), await gauge(registry, 'endpoints_desired')], [5, 4, 260]);
        metrics.recordService('a/web', 1, 1, 50);
        metrics.recordService('b/db', 0, 0, 0);
        assert.deepEqual([await gauge(registry, 'num_endpoint_slices'), await gauge(registry, 'desired_endpoint_slices'), await gauge(registry, 'endpoints_desired')], [1, 1, 50]);
    });

    it('starts every slice operation at zero, so dashboards see the series', async () => {
        const registry = new Registry();
        new ExternalWorkloadsMetrics(registry);
        const text = await registry.metrics();
        for (const line of ['endpointslice_changes_total{operation="delete"} 0']) {
            assert.ok(text.includes(`mesh_endpoints_external_workloads_${line}`), line);
        }
    });
});
