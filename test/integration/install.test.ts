// Install proof: the chart, rendered by helm, is validated by a strict server-side dry run and
// applied to a real apiserver; then each controller runs as the process its rendered Deployment
// describes (its args and env, `tsx src/cli/main.ts` standing in for the image's entrypoint,
// credentials from a TokenRequest for its rendered ServiceAccount, as the kubelet would mount
// them) and passes the main external-workload and mirror scenarios. There is no kubelet here,
// so the test does what the kubelet would: resolve the downward API, start the container's
// command, probe /readyz and /healthz on the admin port.
import type { V1Deployment, V1EnvVar } from '@kubernetes/client-node';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { isNotFound } from '../../src/kube/errors.js';
import { collectionPath, Leases, Namespaces, objectPath, Secrets, Services } from '../../src/kube/resources.js';
import { freePort } from '../../src/testing/cluster.js';
import { applyObjects, parseManifests, renderChart, type ManifestObject } from '../../src/testing/chart.js';
import { repoRoot } from '../../src/testing/processes.js';
import { TestDnsServer } from '../../src/testing/dns-server.js';
import { eventually, setUp, startTestCluster } from '../../src/testing/harness.js';
import { createLink, createRemoteService, deleteRemoteService, endpointsOf, getLink, mirrorService, pairedNamespace, type MirrorEnv } from './mirror-support.js';
import { ControllerProcess } from './process-support.js';
import { addressesOf, createService, createWorkload, eventsAbout, setReady, slicesOf } from './support.js';

const [local, remote, dns] = await Promise.all([startTestCluster('install-l'), startTestCluster('install-r'), setUp('the DNS server', () => TestDnsServer.start())]);
after(() => dns.close());
const env: MirrorEnv = { local, remote, dns, controllers: new Set() };

const releaseNs = 'mesh-endpoints';
await setUp(`namespace ${releaseNs}`, () => local.admin.create(collectionPath(Namespaces), { metadata: { name: releaseNs } }));
const ports = { externalWorkloads: await freePort(), serviceMirror: await freePort(), webhook: await freePort() };
// What a user would set to run here: the loopback DNS server and short TTL bounds, probes to loopback,
// the admin endpoints on loopback ports (each pod has its own network in a cluster, these share one).
const values = {
    adminBindAddress: '127.0.0.1',
    externalWorkloads: {
        adminPort: ports.externalWorkloads,
        batchPeriod: '100ms',
        conversionWebhook: { enabled: true, bindAddress: '127.0.0.1', port: ports.webhook },
    },
    serviceMirror: { adminPort: ports.serviceMirror, dnsServers: [dns.address], dnsMinTtl: '1s', dnsMaxTtl: '3s', probeAddressOverride: '127.0.0.1' },
    metrics: { serviceMonitor: { enabled: true }, prometheusRule: { enabled: true } },
};
const objects = await setUp('helm template', () => renderChart({ namespace: releaseNs, values, includeCrds: true }));
const monitoringCrds = parseManifests(readFileSync(join(repoRoot, 'test/integration/fixtures/monitoring-crds.yaml'), 'utf8'));

interface Controller {
    deployment: V1Deployment;
    process: ControllerProcess;
    /** Everything it printed, as `kubectl logs` would show it. */
    logs: string[];
    adminPort: number;
}
const running: Controller[] = [];
after(() => {
    for (const c of running) c.process.proc.kill('SIGKILL');
});

/** The container of a rendered Deployment as a process: what the kubelet would start. */
async function startAsPod(deployment: V1Deployment, podName: string): Promise<Controller> {
    const pod = deployment.spec!.template.spec!;
    const container = pod.containers[0]!;
    const namespace = deployment.metadata!.namespace!;
    const sa = await local.serviceAccountClient(namespace, pod.serviceAccountName!);
    const kubeconfig = join(mkdtempSync(join(tmpdir(), 'mesh-endpoints-pod-')), 'kubeconfig');
    writeFileSync(kubeconfig, sa.kubeConfig.exportConfig(), { mode: 0o600 });
    sa.close();
    const fieldRefs: Record<string, string> = { 'metadata.name': podName, 'metadata.namespace': namespace };
    const podEnv = Object.fromEntries(
        (container.env ?? []).map((e: V1EnvVar) => [e.name, e.value ?? fieldRefs[e.valueFrom?.fieldRef?.fieldPath ?? ''] ?? assert.fail(`env ${e.name}: unsupported source`)]),
    );
    // The in-cluster service account mount becomes --kubeconfig; nothing else is added.
    const logs: string[] = [];
    const child = new ControllerProcess([...container.args!, `--kubeconfig=${kubeconfig}`], logs, { PATH: process.env.PATH, HOME: process.env.HOME, ...podEnv });
    const adminPort = container.ports!.find((p) => p.name === 'admin')!.containerPort;
    const controller = { deployment, process: child, logs, adminPort };
    running.push(controller);
    return controller;
}

/** On failure, the last lines the controller logged: what a user would read with `kubectl logs`. */
async function withLogs<T>(c: Controller, work: () => Promise<T>): Promise<T> {
    try {
        return await work();
    } catch (err) {
        throw new Error(`${(err as Error).message}\n${c.deployment.metadata!.name} logged:\n${c.logs.slice(-30).join('\n')}`);
    }
}

async function httpGet(port: number, path: string): Promise<{ status: number; body: string }> {
    const res = await fetch(`http://127.0.0.1:${port}${path}`);
    return { status: res.status, body: await res.text() };
}

/** The kubelet's probes: /readyz and /healthz as the rendered probes name them. */
async function waitReady(c: Controller): Promise<void> {
    const container = c.deployment.spec!.template.spec!.containers[0]!;
    const readiness = container.readinessProbe!.httpGet!;
    const liveness = container.livenessProbe!.httpGet!;
    assert.equal(readiness.port, 'admin');
    await eventually(`${c.deployment.metadata!.name} ready (${readiness.path})`, async () => (await httpGet(c.adminPort, readiness.path!)).status === 200, 120_000);
    assert.equal((await httpGet(c.adminPort, liveness.path!)).status, 200, 'alive');
}

function deploymentOf(component: string): V1Deployment {
    const found = objects.find((o) => o.kind === 'Deployment' && o.metadata.labels?.['app.kubernetes.io/component'] === component);
    assert.ok(found, `the chart renders a Deployment for ${component}`);
    return found as unknown as V1Deployment;
}

/** Metric names a PromQL text or dashboard refers to. */
function metricNamesIn(text: string): Set<string> {
    return new Set([...text.matchAll(/\bmesh_endpoints_[a-z_]+/g)].map((m) => m[0].replace(/_(bucket|sum|count)$/, '')));
}

describe('the chart installed on a real apiserver', () => {
    it('passes a strict server-side dry run, then applies', async () => {
        await applyObjects(local.admin, monitoringCrds);
        await applyObjects(local.admin, objects, { dryRun: true });
        const deployment = objects.find((o) => o.kind === 'Deployment')!;
        await assert.rejects(local.admin.get(`/apis/apps/v1/namespaces/${releaseNs}/deployments/${deployment.metadata.name}`), isNotFound, 'a dry run stores nothing');
        await applyObjects(local.admin, objects);
        const kinds = objects.map((o) => o.kind);
        for (const kind of ['CustomResourceDefinition', 'Deployment', 'ServiceAccount', 'ClusterRole', 'Role', 'PodDisruptionBudget', 'Service', 'ServiceMonitor', 'PrometheusRule', 'ConfigMap']) {
            assert.ok(kinds.includes(kind), `renders a ${kind}`);
        }
    });

    it('passes the strict dry run with every optional part on', async () => {
        const linkNs = 'linkerd-multicluster';
        await local.admin.create(collectionPath(Namespaces), { metadata: { name: linkNs } });
        const everything = await renderChart({
            release: 'everything',
            namespace: releaseNs,
            values: {
                ...values,
                // A Lease of its own: the chart makes it, and the first release's is there already.
                externalWorkloads: { ...values.externalWorkloads, watchNamespace: 'apps', conversionWebhook: { enabled: true }, leaseName: 'everything-external-workloads' },
                serviceMirror: { ...values.serviceMirror, linkNamespace: linkNs },
                metrics: { serviceMonitor: { enabled: true, labels: { release: 'prometheus' } }, prometheusRule: { enabled: true, labels: { release: 'prometheus' } } },
                // A second release in a cluster that has the MCS CRDs (from the first) leaves them out.
                mcs: { installCRDs: false },
            },
        });
        assert.ok(everything.some((o) => o.kind === 'Role' && o.metadata.namespace === linkNs), 'the mirror Role where its Links are');
        await applyObjects(local.admin, everything, { dryRun: true });
    });

    it('external-workloads, run as its Deployment and ServiceAccount, publishes workloads', async () => {
        const deployment = deploymentOf('external-workloads');
        const ew = await startAsPod(deployment, `${deployment.metadata!.name}-7d9f-abcde`);
        await withLogs(ew, async () => {
            await waitReady(ew);
            const ns = await local.namespace();
            await createService(local, ns, { metadata: { name: 'web' }, spec: { selector: { app: 'web' }, ports: [{ name: 'http', port: 80, targetPort: 'http' as never }] } });
            await createWorkload(local, ns, { name: 'vm-1', ips: ['192.0.2.1'] });
            await createWorkload(local, ns, { name: 'vm-2', ips: ['192.0.2.2'] });
            await createWorkload(local, ns, { name: 'vm-bad', ips: ['192.0.2.3'], ports: [{ name: 'other', port: 1 }] });
            await eventually('both workloads published', async () => {
                const addresses = addressesOf(await slicesOf(local, ns, 'web'));
                return addresses.includes('192.0.2.1') && addresses.includes('192.0.2.2');
            }, 60_000);
            await eventually('an Event about the workload left out', async () => (await eventsAbout(local, ns, 'vm-bad')).length > 0, 30_000);
            await setReady(local, ns, 'vm-2', false);
            await eventually('vm-2 not ready', async () => {
                const endpoints = (await slicesOf(local, ns, 'web')).flatMap((s) => s.endpoints ?? []);
                return endpoints.some((e) => e.addresses[0] === '192.0.2.2' && e.conditions?.ready === false);
            });
            await local.admin.delete(objectPath(Services, ns, 'web'));
            await eventually('its slices deleted with the Service', async () => (await slicesOf(local, ns, 'web')).length === 0);
            // The conversion webhook: its self-signed certificate in the release namespace, the
            // CRD's conversion pointed at the chart's Service with that CA (nothing here routes a
            // Service, so conversion itself is proved in conversion-webhook.test.ts).
            const secret = await local.admin.get<{ data: Record<string, string> }>(objectPath(Secrets, releaseNs, 'mesh-endpoints-external-workloads-webhook-cert'));
            const crd = await local.admin.get<{ spec: { conversion: { strategy: string; webhook: { clientConfig: { caBundle: string; service: { name: string; namespace: string } } } } } }>(
                '/apis/apiextensions.k8s.io/v1/customresourcedefinitions/externalworkloads.workload.linkerd.io',
            );
            assert.equal(crd.spec.conversion.strategy, 'Webhook');
            assert.deepEqual(crd.spec.conversion.webhook.clientConfig.service, { namespace: releaseNs, name: 'mesh-endpoints-external-workloads-webhook', path: '/convert', port: 443 });
            assert.equal(crd.spec.conversion.webhook.clientConfig.caBundle, secret.data['ca.crt']);
            const lease = await local.admin.get<{ spec: { holderIdentity?: string } }>(objectPath(Leases, releaseNs, 'mesh-endpoints-external-workloads'));
            assert.equal(lease.spec.holderIdentity, `${deployment.metadata!.name}-7d9f-abcde`, 'leads under its pod name (the downward API)');
        });
    });

    it('service-mirror, run as its Deployment and ServiceAccount, mirrors through a hostname gateway', async () => {
        const deployment = deploymentOf('service-mirror');
        const mirror = await startAsPod(deployment, `${deployment.metadata!.name}-5c4b-fghij`);
        await withLogs(mirror, async () => {
            await waitReady(mirror);
            dns.setRecords('gw.east.test', { A: [{ address: '192.0.2.10', ttl: 30 }] });
            await createLink(env, releaseNs, { name: 'east', gatewayAddress: 'gw.east.test' });
            const ns = await pairedNamespace(env);
            await createRemoteService(env, ns, 'web');
            await eventually('the mirror with the resolved gateway', async () => (await endpointsOf(env, ns, 'web-east')).join() === 'IPv4 192.0.2.10 ready', 60_000);
            await eventually('the Link status written', async () => (await getLink(env, releaseNs, 'east')).status !== undefined);
            await deleteRemoteService(env, ns, 'web');
            await eventually('the mirror deleted with the remote Service', async () => (await mirrorService(env, ns, 'web-east')) === undefined);
        });
    });

    it('serves every metric the alerts and the dashboard use', async () => {
        const scraped = new Set<string>();
        for (const c of running) {
            const { body } = await httpGet(c.adminPort, '/metrics');
            for (const m of body.matchAll(/^# TYPE (\S+)/gm)) scraped.add(m[1]!);
        }
        const rule = objects.find((o) => o.kind === 'PrometheusRule')!;
        const dashboard = objects.find((o) => o.kind === 'ConfigMap' && o.metadata.name.endsWith('-dashboard')) as ManifestObject & { data: Record<string, string> };
        JSON.parse(dashboard.data['mesh-endpoints.json']!); // the dashboard is JSON
        const used = new Set([...metricNamesIn(JSON.stringify(rule.spec)), ...metricNamesIn(dashboard.data['mesh-endpoints.json']!)]);
        assert.ok(used.size > 10, 'the alerts and the dashboard use the metrics');
        assert.deepEqual([...used].filter((name) => !scraped.has(name)).sort(), [], 'metrics no controller serves');
    });

    it('refuses nothing to either controller, and each stops cleanly on SIGTERM', async () => {
        for (const c of running) {
            await c.process.terminate();
            assert.equal(c.process.exitCode, 0, `${c.deployment.metadata!.name} exits 0`);
            const refused = c.logs.filter((line) => /forbidden|\b403\b/i.test(line));
            assert.deepEqual(refused, [], `${c.deployment.metadata!.name}: no request refused`);
        }
    });
});
