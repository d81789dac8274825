// The chart as helm sees it: `helm lint --strict` passes and `helm template` renders what the
// chart promises (HA, probes, hardening, switches, monitoring). Validation of the rendered
// objects by a real apiserver and the install proof are in install.test.ts.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import type { V1Deployment } from '@kubernetes/client-node';
import { chartDir, renderChart, runHelm, type ManifestObject } from '../../src/testing/chart.js';
import { readMcsCrds } from '../../src/testing/crds.js';

const namespace = 'mesh-endpoints';
const monitoring = { metrics: { serviceMonitor: { enabled: true }, prometheusRule: { enabled: true } } };
const components = ['external-workloads', 'service-mirror'];

const componentOf = (o: ManifestObject) => o.metadata.labels?.['app.kubernetes.io/component'];
const deployments = (objects: ManifestObject[]) => objects.filter((o) => o.kind === 'Deployment') as unknown as V1Deployment[];

describe('helm lint', () => {
    for (const [what, set] of [
        ['the default values', []],
        ['monitoring on', ['--set', 'metrics.serviceMonitor.enabled=true,metrics.prometheusRule.enabled=true']],
        ['one controller only', ['--set', 'serviceMirror.enabled=false']],
        ['the conversion webhook on', ['--set', 'externalWorkloads.conversionWebhook.enabled=true']],
    ] as const) {
        it(`passes --strict with ${what}`, async () => {
            const out = await runHelm(['lint', '--strict', chartDir, '--namespace', namespace, ...set]);
            assert.match(out, /1 chart\(s\) linted, 0 chart\(s\) failed/);
        });
    }
});

describe('helm template', () => {
    it('renders one Deployment per controller: 2 replicas, spread, probed, hardened', async () => {
        const objects = await renderChart({ namespace });
        assert.deepEqual(deployments(objects).map((d) => componentOf(d as unknown as ManifestObject)).sort(), components);
        for (const d of deployments(objects)) {
            const pod = d.spec!.template.spec!;
            const container = pod.containers[0]!;
            assert.equal(d.spec!.replicas, 2);
            assert.equal(pod.affinity?.podAntiAffinity?.preferredDuringSchedulingIgnoredDuringExecution?.[0]?.podAffinityTerm.topologyKey, 'kubernetes.io/hostname');
            assert.deepEqual([container.livenessProbe?.httpGet?.path, container.readinessProbe?.httpGet?.path], ['/healthz', '/readyz']);
            assert.equal(container.readinessProbe?.httpGet?.port, 'admin');
            assert.ok(container.resources?.requests?.cpu && container.resources.limits?.memory, 'resources set');
            assert.equal(pod.securityContext?.runAsNonRoot, true);
            assert.equal(pod.securityContext?.seccompProfile?.type, 'RuntimeDefault');
            assert.deepEqual(container.securityContext, { allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ['ALL'] } });
            assert.equal(pod.serviceAccountName, d.metadata!.name, 'its own ServiceAccount');
            assert.match(container.image!, /^ghcr\.io\/mesh-endpoints\/mesh-endpoints:0\.1\.0$/);
            assert.equal(container.args![0], componentOf(d as unknown as ManifestObject), 'the subcommand first');
        }
        for (const kind of ['PodDisruptionBudget', 'ServiceAccount', 'ClusterRole', 'ClusterRoleBinding', 'Role', 'RoleBinding', 'Service']) {
            const controllers = objects.filter((o) => o.kind === kind && componentOf(o) !== 'workload-agent');
            assert.deepEqual(controllers.map(componentOf).sort(), components, `a ${kind} per controller`);
        }
        assert.ok(objects.some((o) => o.kind === 'ConfigMap' && o.metadata.labels?.grafana_dashboard === '1'), 'the Grafana dashboard');
        assert.ok(!objects.some((o) => o.kind === 'ServiceMonitor' || o.kind === 'PrometheusRule'), 'no monitoring.coreos.com objects unless asked');
    });

    it('switches each controller off, with everything that is its own', async () => {
        for (const off of components) {
            const key = off === 'external-workloads' ? 'externalWorkloads' : 'serviceMirror';
            const objects = await renderChart({ namespace, values: { [key]: { enabled: false } } });
            assert.deepEqual(objects.filter((o) => componentOf(o) === off), [], `nothing of ${off}`);
            assert.equal(deployments(objects).length, 1);
        }
    });

    it('renders the workload agents’ ClusterRole and admission policies with workload groups, none without', async () => {
        const agents = (objects: ManifestObject[]) => objects.filter((o) => componentOf(o) === 'workload-agent').map((o) => `${o.kind} ${o.metadata.name}`).sort();
        assert.deepEqual(agents(await renderChart({ namespace })), [
            'ClusterRole mesh-endpoints-workload-agent',
            'ValidatingAdmissionPolicy mesh-endpoints-workload-agent-addresses',
            'ValidatingAdmissionPolicy mesh-endpoints-workload-agent-own-lease',
            'ValidatingAdmissionPolicyBinding mesh-endpoints-workload-agent-addresses',
            'ValidatingAdmissionPolicyBinding mesh-endpoints-workload-agent-own-lease',
        ]);
        const off = await renderChart({ namespace, values: { externalWorkloads: { workloadGroups: { enabled: false } } } });
        assert.deepEqual(agents(off), []);
        const args = deployments(off).find((d) => componentOf(d as unknown as ManifestObject) === 'external-workloads')!.spec!.template.spec!.containers[0]!.args!;
        assert.ok(args.includes('--workload-groups=false'));
    });

    it('passes values to flags, and puts the mirror Role where its Links are', async () => {
        const objects = await renderChart({
            namespace,
            values: {
                logLevel: 'debug',
                externalWorkloads: { watchNamespace: 'apps', maxEndpointsPerSlice: 50, extraArgs: ['--batch-period=1s'] },
                serviceMirror: { linkNamespace: 'linkerd-multicluster', dnsServers: ['10.0.0.10:53', '10.0.0.11:53'], dnsStaleWindow: '10m' },
            },
        });
        const args = (c: string) => deployments(objects).find((d) => componentOf(d as unknown as ManifestObject) === c)!.spec!.template.spec!.containers[0]!.args!;
        for (const a of ['--watch-namespace=apps', '--max-endpoints-per-slice=50', '--log-level=debug', '--namespace=mesh-endpoints', '--batch-period=1s']) {
            assert.ok(args('external-workloads').includes(a), a);
        }
        for (const a of ['--namespace=linkerd-multicluster', '--dns-servers=10.0.0.10:53,10.0.0.11:53', '--dns-stale-window=10m']) {
            assert.ok(args('service-mirror').includes(a), a);
        }
        const mirrorRole = objects.find((o) => o.kind === 'Role' && componentOf(o) === 'service-mirror')!;
        assert.equal(mirrorRole.metadata.namespace, 'linkerd-multicluster');
    });

    it("installs upstream's MCS CRDs unchanged but for Helm's keep policy, and skips them with mcs.installCRDs=false", async () => {
        const crds = (await renderChart({ namespace })).filter((o) => o.kind === 'CustomResourceDefinition');
        assert.deepEqual(crds.map((o) => o.metadata.name).sort(), ['clusterproperties.about.k8s.io', 'serviceexports.multicluster.x-k8s.io', 'serviceimports.multicluster.x-k8s.io']);
        const upstream = readMcsCrds() as unknown as ManifestObject[];
        for (const crd of crds) {
            const { annotations, ...metadata } = crd.metadata as ManifestObject['metadata'] & { annotations?: Record<string, string> };
            assert.equal(annotations?.['helm.sh/resource-policy'], 'keep', 'deleting the CRD would delete every export');
            const source = upstream.find((u) => u.metadata.name === crd.metadata.name)! as ManifestObject & { metadata: { annotations?: object } };
            const { annotations: sourceAnnotations, ...sourceMetadata } = source.metadata;
            assert.deepEqual({ ...crd, metadata }, { ...source, metadata: sourceMetadata }, `${crd.metadata.name} as vendored`);
            assert.deepEqual({ ...annotations, 'helm.sh/resource-policy': undefined }, { ...sourceAnnotations, 'helm.sh/resource-policy': undefined });
        }
        const skipped = await renderChart({ namespace, values: { mcs: { installCRDs: false } } });
        assert.equal(skipped.filter((o) => o.kind === 'CustomResourceDefinition').length, 0);
    });

    it('turns the conversion webhook on: its port, a Service for it, the flags, and the rights it needs only then', async () => {
        const byDefault = await renderChart({ namespace });
        assert.equal(byDefault.filter((o) => o.kind === 'Service' && o.metadata.name.endsWith('-webhook')).length, 0);
        const objects = await renderChart({ namespace, values: { externalWorkloads: { conversionWebhook: { enabled: true } } } });
        const ew = deployments(objects).find((d) => componentOf(d as unknown as ManifestObject) === 'external-workloads')!;
        const container = ew.spec!.template.spec!.containers[0]!;
        assert.deepEqual(container.ports?.map((p) => [p.name, p.containerPort]), [['admin', 9990], ['webhook', 9443]]);
        for (const a of [
            '--webhook-addr=0.0.0.0:9443',
            '--webhook-hosts=mesh-endpoints-external-workloads-webhook.mesh-endpoints.svc,mesh-endpoints-external-workloads-webhook.mesh-endpoints.svc.cluster.local',
            '--webhook-self-signed-secret=mesh-endpoints-external-workloads-webhook-cert',
            '--webhook-manage-crd=true',
            '--webhook-service=mesh-endpoints/mesh-endpoints-external-workloads-webhook:443',
        ]) {
            assert.ok(container.args!.includes(a), a);
        }
        const service = objects.find((o) => o.kind === 'Service' && o.metadata.name === 'mesh-endpoints-external-workloads-webhook') as ManifestObject & { spec: { ports: { port: number; targetPort: string }[] } };
        assert.deepEqual(service.spec.ports.map((p) => [p.port, p.targetPort]), [[443, 'webhook']]);
        type Rules = ManifestObject & { rules: { resources: string[]; verbs: string[]; resourceNames?: string[] }[] };
        const rules = (kind: string) => (objects.find((o) => o.kind === kind && componentOf(o) === 'external-workloads') as Rules).rules;
        assert.deepEqual(rules('Role').find((r) => r.resources.includes('secrets'))?.verbs, ['get', 'create', 'update']);
        assert.deepEqual(rules('ClusterRole').find((r) => r.resources.includes('customresourcedefinitions'))?.resourceNames, ['externalworkloads.workload.linkerd.io']);

        const certManager = await renderChart({ namespace, values: { externalWorkloads: { conversionWebhook: { enabled: true, certSecret: 'webhook-tls', manageCRD: false } } } });
        const args = deployments(certManager).find((d) => componentOf(d as unknown as ManifestObject) === 'external-workloads')!.spec!.template.spec!.containers[0]!.args!;
        assert.ok(args.includes('--webhook-cert-secret=webhook-tls'));
        assert.ok(!args.some((a) => a.startsWith('--webhook-service=') || a.startsWith('--webhook-self-signed-secret=')));
        const cmRules = (kind: string) => (certManager.find((o) => o.kind === kind && componentOf(o) === 'external-workloads') as Rules).rules;
        assert.deepEqual(cmRules('Role').find((r) => r.resources.includes('secrets'))?.verbs, ['get']);
        assert.equal(cmRules('ClusterRole').find((r) => r.resources.includes('customresourcedefinitions')), undefined);
    });

    it('runs the health checks by default with the right to write workload status, and drops both when they are off', async () => {
        type Rules = ManifestObject & { rules: { resources: string[]; verbs: string[] }[] };
        const ewOf = async (values: Record<string, unknown>) => {
            const objects = await renderChart({ namespace, values });
            const args = deployments(objects).find((d) => componentOf(d as unknown as ManifestObject) === 'external-workloads')!.spec!.template.spec!.containers[0]!.args!;
            const role = objects.find((o) => o.kind === 'ClusterRole' && componentOf(o) === 'external-workloads') as Rules;
            return { args, status: role.rules.find((r) => r.resources.includes('externalworkloads/status'))?.verbs };
        };
        const byDefault = await ewOf({});
        assert.ok(byDefault.args.includes('--health-checks=true') && byDefault.args.includes('--probe-concurrency=20'));
        assert.ok(!byDefault.args.some((a) => a.startsWith('--default-probe=')), 'annotated workloads only');
        assert.deepEqual(byDefault.status, ['patch']);
        const all = await ewOf({ externalWorkloads: { healthChecks: { defaultProbe: 'http:4191/ready', concurrency: 300 } } });
        assert.ok(all.args.includes('--default-probe=http:4191/ready') && all.args.includes('--probe-concurrency=300'));
        const off = await ewOf({ externalWorkloads: { healthChecks: { enabled: false } } });
        assert.ok(off.args.includes('--health-checks=false') && !off.args.some((a) => a.startsWith('--probe-')));
        assert.deepEqual(off.status, ['patch'], 'still granted: the workload groups write Ready too');
        const neither = await ewOf({ externalWorkloads: { healthChecks: { enabled: false }, workloadGroups: { enabled: false } } });
        assert.equal(neither.status, undefined);
    });

    it('renders the ServiceMonitor and the alerts when asked', async () => {
        const objects = await renderChart({ namespace, values: monitoring });
        const monitor = objects.find((o) => o.kind === 'ServiceMonitor') as ManifestObject & { spec: { endpoints: { port: string }[] } };
        assert.equal(monitor.spec.endpoints[0]!.port, 'admin');
        const rule = objects.find((o) => o.kind === 'PrometheusRule') as ManifestObject & { spec: { groups: { rules: { alert: string }[] }[] } };
        assert.deepEqual(rule.spec.groups.flatMap((g) => g.rules.map((r) => r.alert)).sort(), [
            'MeshEndpointsDroppedKeys',
            'MeshEndpointsGatewayDNSStale',
            'MeshEndpointsGatewayDown',
            'MeshEndpointsLinkNotServed',
            'MeshEndpointsNoLeader',
            'MeshEndpointsRemoteUnreachable',
            'MeshEndpointsSyncErrors',
        ]);
        const readme = readFileSync(join(chartDir, 'README.md'), 'utf8');
        for (const alert of rule.spec.groups.flatMap((g) => g.rules.map((r) => r.alert))) assert.ok(readme.includes(`| \`${alert}\` |`), `${alert} in the chart README`);
    });
});
