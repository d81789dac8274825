// docs/ keeps up with the code: the flag tables of configuration.md are what the commands
// declare (`make docs` rewrites them), and metrics.md names every series a controller serves.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { KubeConfig } from '@kubernetes/client-node';
import { collectDefaultMetrics, Registry } from 'prom-client';
import { HealthCheckMetrics } from '../externalworkloads/health/metrics.js';
import { ExternalWorkloadsMetrics } from '../externalworkloads/metrics.js';
import { EventRecorder } from '../kube/events.js';
import { newLogger } from '../kube/log.js';
import { Manager, METRICS_PREFIX } from '../kube/manager.js';
import { KubeRest } from '../kube/rest.js';
import { WorkQueueMetrics } from '../kube/workqueue-metrics.js';
import { ServiceMirrorMetrics } from '../servicemirror/link/metrics.js';
import { convertWorkload } from '../externalworkloads/conversion.js';
import { WebhookServer } from '../webhook/server.js';
import { flagsMarkdown, withFlags } from './flags-doc.js';
import { buildProgram } from './program.js';

describe('docs', () => {
    it('configuration.md lists every flag of every command as the commands declare it (run `make docs` after changing a flag)', () => {
        const env = { namespace: process.env.POD_NAMESPACE, name: process.env.POD_NAME };
        delete process.env.POD_NAMESPACE;
        delete process.env.POD_NAME;
        try {
            const document = readFileSync('docs/configuration.md', 'utf8');
            assert.equal(document, withFlags(document, flagsMarkdown(buildProgram())));
        } finally {
            if (env.namespace !== undefined) process.env.POD_NAMESPACE = env.namespace;
            if (env.name !== undefined) process.env.POD_NAME = env.name;
        }
    });

    it('metrics.md explains every series a controller process serves', async () => {
        const registry = new Registry();
        const kubeConfig = new KubeConfig();
        kubeConfig.loadFromOptions({
            clusters: [{ name: 'c', server: 'https://127.0.0.1:1' }],
            users: [{ name: 'u' }],
            contexts: [{ name: 'c', cluster: 'c', user: 'u' }],
            currentContext: 'c',
        });
        const rest = new KubeRest(kubeConfig);
        new Manager({ rest, logger: newLogger('silent'), registry });
        new WorkQueueMetrics(registry, METRICS_PREFIX.replace(/_$/, ''));
        new EventRecorder(rest, 'test', () => {}, 0, { registry });
        new ExternalWorkloadsMetrics(registry);
        new HealthCheckMetrics(registry);
        new ServiceMirrorMetrics(registry);
        new WebhookServer({ addr: '127.0.0.1:0', registry, logger: newLogger('silent'), convert: convertWorkload });
        collectDefaultMetrics({ register: registry, prefix: METRICS_PREFIX });
        const documented = readFileSync('docs/metrics.md', 'utf8');
        const names = (await registry.getMetricsAsJSON()).map((m) => m.name);
        // Node's process metrics are documented as a family.
        const ours = names.filter((n) => !/^mesh_endpoints_(process|nodejs)_/.test(n));
        assert.ok(ours.length > 30);
        assert.deepEqual(ours.filter((n) => !documented.includes(`\`${n}\``)), []);
        rest.close();
    });
});
