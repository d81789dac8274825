// Installed as users install it: `helm install` of the chart with the image `make image` built,
// on a real node (src/testing/node.ts: containerd, runc, the kubelet) joined to a local cluster
// with kube-controller-manager and kube-scheduler, everything inside a network namespace this
// file makes (it runs itself again in it). The Pods get addresses on the node's CNI bridge and
// reach kube-apiserver at the kubernetes Service's address with their ServiceAccounts' tokens,
// the remote cluster, the DNS server and the gateway probe server at the node's address.
// Timings it prints (`# ...`) are measurements, never assertions.
import type { V1EndpointSlice, V1Pod } from '@kubernetes/client-node';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { parseAllDocuments } from 'yaml';
import { imageRef } from '../../hack/image/config.js';
import { runCli } from '../../src/demo/cli.js';
import { createExportedService, createHostnameGateway, ensureNamespace, GATEWAY_NAMESPACE, startProbeServer } from '../../src/demo/mirror-remote.js';
import { collectionPath, EndpointSlices, Leases, Links, objectPath, Secrets, Services } from '../../src/kube/resources.js';
import { MIRROR_SLICE_MANAGED_BY } from '../../src/servicemirror/api/keys.js';
import { chartDir, runHelm } from '../../src/testing/chart.js';
import { TestDnsServer } from '../../src/testing/dns-server.js';
import { eventually, setUp, startLocalCluster } from '../../src/testing/harness.js';
import { cannotRunContainers, productImage } from '../../src/testing/image.js';
import { inNodeNamespace, NODE_IP, reexecInNodeNamespace } from '../../src/testing/node-namespace.js';
import { NODE_APISERVER_ARGS, podLog, startNode } from '../../src/testing/node.js';
import { addressesOf, createService, createWorkload, eventsAbout, setReady, slicesOf } from './support.js';

// Before anything starts: from here on this process runs inside the node's namespace.
const unsupported = await cannotRunContainers();
if (!unsupported && !inNodeNamespace()) await reexecInNodeNamespace();

const RELEASE = 'mesh-endpoints';
const RELEASE_NS = 'mesh-endpoints';
const EW = 'mesh-endpoints-external-workloads';
const SM = 'mesh-endpoints-service-mirror';
const GATEWAY_HOST = 'gateway.east.example.test';
const APP_NS = 'shop';
const MIRROR = 'web-east';

interface Lease {
    spec: { holderIdentity?: string; leaseDurationSeconds?: number; acquireTime?: string; renewTime?: string; leaseTransitions?: number };
}

function measured(what: string, ms: number): void {
    process.stderr.write(`# ${what}: ${(ms / 1000).toFixed(1)} s\n`);
}

describe('helm install on a real node', { skip: unsupported && `cannot run containers here: ${unsupported}` }, async () => {
    if (unsupported) return;
    const [local, remote] = await Promise.all([
        setUp('local cluster', () => startLocalCluster('t-helm-l', NODE_APISERVER_ARGS, { address: NODE_IP, controllers: {} })),
        setUp('remote cluster', () => startLocalCluster('t-helm-r', [], { address: NODE_IP })),
    ]);
    const dns = await setUp('DNS server', () => TestDnsServer.start(NODE_IP));
    const probe = await setUp('probe server', () => startProbeServer(NODE_IP));
    const archive = await setUp('image', () => productImage());
    const node = await setUp('node', () => startNode(local.state, 'node-0', [{ archive, baseName: imageRef().split(':')[0]! }]));
    after(async () => {
        await node.stop();
        await probe.close();
        dns.close();
        await Promise.all([local.stop(), remote.stop()]);
    });

    const kubeconfig = ['--kubeconfig', local.state.kubeconfig];
    const values = {
        image: { pullPolicy: 'Never' },
        externalWorkloads: { batchPeriod: '100ms', conversionWebhook: { enabled: true } },
        serviceMirror: { linkNamespace: GATEWAY_NAMESPACE, dnsServers: [dns.address], dnsMinTtl: '1s', dnsMaxTtl: '3s', dnsStaleWindow: '30s', probeAddressOverride: probe.address },
    };
    const valuesFile = join(mkdtempSync(join(tmpdir(), 'mesh-endpoints-e2e-')), 'values.json');
    writeFileSync(valuesFile, JSON.stringify(values));

    const pods = async (component?: string) =>
        (
            await local.admin.get<{ items: V1Pod[] }>(`/api/v1/namespaces/${RELEASE_NS}/pods`, {
                labelSelector: `app.kubernetes.io/instance=${RELEASE}${component ? `,app.kubernetes.io/component=${component}` : ''}`,
            })
        ).items;
    const isReady = (p: V1Pod) => !p.metadata?.deletionTimestamp && (p.status?.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True');
    const lease = (name: string, ns = RELEASE_NS) => local.admin.get<Lease>(objectPath(Leases, ns, name));
    /** On failure, what the Pods logged: what a user would read with `kubectl logs`. */
    const withLogs = async <T>(work: () => Promise<T>): Promise<T> => {
        try {
            return await work();
        } catch (err) {
            const logs = await Promise.all(
                (await pods()).map(async (p) => `--- ${p.metadata!.name} (${p.status?.phase}):\n${(await podLog(local.state, RELEASE_NS, p.metadata!.name!).catch((e: Error) => e.message)).split('\n').slice(-15).join('\n')}`),
            );
            throw new Error(`${(err as Error).message}\n${logs.join('\n')}`);
        }
    };
    const mirrorEndpoints = async () =>
        (
            await local.admin.get<{ items: V1EndpointSlice[] }>(collectionPath(EndpointSlices, APP_NS), {
                labelSelector: `kubernetes.io/service-name=${MIRROR},endpointslice.kubernetes.io/managed-by=${MIRROR_SLICE_MANAGED_BY}`,
            })
        ).items
            .flatMap((s) => (s.endpoints ?? []).map((e) => `${e.addresses.join('+')} ${e.conditions?.ready ? 'ready' : 'not-ready'}`))
            .sort()
            .join(',');
    let workloadNs = '';

    it("installs: both controllers' Pods Ready through their readiness probes, as their ServiceAccounts", async () => {
        await ensureNamespace(local.admin, GATEWAY_NAMESPACE);
        const started = Date.now();
        await runHelm(['install', RELEASE, chartDir, '--namespace', RELEASE_NS, '--create-namespace', '-f', valuesFile, ...kubeconfig]);
        await withLogs(() => eventually('4 Pods Ready', async () => (await pods()).filter(isReady).length === 4, 180_000));
        measured('helm install -> all 4 Pods Ready', Date.now() - started);
        for (const [component, sa] of [['external-workloads', EW], ['service-mirror', SM]] as const) {
            const mine = await pods(component);
            assert.equal(mine.length, 2, `2 replicas of ${component}`);
            for (const pod of mine) {
                assert.equal(pod.spec?.nodeName, 'node-0');
                assert.equal(pod.spec?.serviceAccountName, sa);
                assert.ok(pod.spec?.volumes?.some((v) => v.projected?.sources?.some((s) => s.serviceAccountToken)), 'its ServiceAccount token mounted');
                assert.match(pod.status?.podIP ?? '', /^10\.214\.0\.\d+$/, 'its own address on the bridge');
                assert.equal(pod.spec?.containers[0]?.readinessProbe?.httpGet?.path, '/readyz');
                assert.ok(pod.spec?.affinity?.podAntiAffinity?.preferredDuringSchedulingIgnoredDuringExecution?.length, 'anti-affinity, preferred');
                assert.equal(pod.spec?.containers[0]?.image, imageRef());
            }
            const leaseName = component === 'external-workloads' ? EW : SM;
            const leaseNs = component === 'external-workloads' ? RELEASE_NS : GATEWAY_NAMESPACE;
            // kubectl logs: kube-apiserver asks the kubelet for what the container printed.
            assert.match(await podLog(local.state, RELEASE_NS, mine[0]!.metadata!.name!), /caches synced/);
            await eventually(`${leaseName} held by one of its Pods`, async () => {
                const holder = (await lease(leaseName, leaseNs)).spec.holderIdentity;
                return mine.some((p) => p.metadata!.name === holder);
            });
        }
    });

    it('publishes external workloads through the installed Pods', async () => {
        const ns = (workloadNs = await local.namespace('apps'));
        await withLogs(async () => {
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
            await eventually('vm-2 not ready', async () => (await slicesOf(local, ns, 'web')).flatMap((s) => s.endpoints ?? []).some((e) => e.addresses[0] === '192.0.2.2' && e.conditions?.ready === false));
            await setReady(local, ns, 'vm-2', true);
            await eventually('vm-2 ready again', async () => (await slicesOf(local, ns, 'web')).flatMap((s) => s.endpoints ?? []).every((e) => e.conditions?.ready === true));
        });
    });

    it('mirrors a Service through a hostname gateway, following its DNS record', async () => {
        await withLogs(async () => {
            await createHostnameGateway(remote.admin, GATEWAY_HOST);
            await createExportedService(remote.admin, APP_NS, 'web');
            await ensureNamespace(local.admin, APP_NS);
            dns.setRecords(GATEWAY_HOST, { A: [{ address: '192.0.2.10', ttl: 1 }, { address: '192.0.2.11', ttl: 1 }] });
            const linked = await runCli('link', '--remote-kubeconfig', remote.state.kubeconfig, '--cluster-name', 'east');
            for (const doc of parseAllDocuments(linked.stdout).map((d) => d.toJS() as { kind: string; metadata: { namespace: string } })) {
                // The Link and its Secret, and the Secret Linkerd's destination reads in its own namespace.
                await ensureNamespace(local.admin, doc.metadata.namespace);
                await local.admin.create(collectionPath(doc.kind === 'Secret' ? Secrets : Links, doc.metadata.namespace), doc);
            }
            await eventually('the mirror with both resolved addresses', async () => (await mirrorEndpoints()) === '192.0.2.10 ready,192.0.2.11 ready', 60_000);
            dns.setRecords(GATEWAY_HOST, { A: [{ address: '192.0.2.10', ttl: 1 }, { address: '192.0.2.12', ttl: 1 }] });
            await eventually('the mirror following the record', async () => (await mirrorEndpoints()) === '192.0.2.10 ready,192.0.2.12 ready', 30_000);
            await eventually('gateway probes from the Pods', () => probe.probes > 0, 30_000);
        });
    });

    it('serves the conversion webhook through its Service and certificate Secret: a v1alpha1 workload reads as v1beta1', async () => {
        const crdPath = '/apis/apiextensions.k8s.io/v1/customresourcedefinitions/externalworkloads.workload.linkerd.io';
        type Crd = { spec: { conversion?: { strategy: string; webhook?: { clientConfig?: { caBundle?: string; service?: { name: string; namespace: string } } } } } };
        await withLogs(async () => {
            await eventually('the CRD converting through the chart Service', async () => {
                const crd = await local.admin.get<Crd>(crdPath);
                return crd.spec.conversion?.strategy === 'Webhook' && crd.spec.conversion.webhook?.clientConfig?.service?.name === `${EW}-webhook`;
            });
            const secret = await local.admin.get<{ data: Record<string, string> }>(objectPath(Secrets, RELEASE_NS, `${EW}-webhook-cert`));
            assert.equal((await local.admin.get<Crd>(crdPath)).spec.conversion?.webhook?.clientConfig?.caBundle, secret.data['ca.crt'], 'the CA of its Secret');
            const ns = await local.namespace('conv');
            const path = (version: string, name = '') => `/apis/workload.linkerd.io/${version}/namespaces/${ns}/externalworkloads${name && `/${name}`}`;
            await eventually('a v1alpha1 workload accepted (converted to the stored v1beta1)', async () => {
                await local.admin.create(path('v1alpha1'), {
                    apiVersion: 'workload.linkerd.io/v1alpha1',
                    kind: 'ExternalWorkload',
                    metadata: { name: 'old' },
                    spec: { meshTls: { identity: 'old.ns.serviceaccount.identity.linkerd.cluster.local', serverName: 'old' }, workloadIPs: [{ ip: '192.0.2.50' }], ports: [{ port: 80 }] },
                });
                return true;
            }, 60_000);
            const read = await local.admin.get<{ apiVersion: string; spec: { meshTLS?: { serverName: string }; meshTls?: unknown } }>(path('v1beta1', 'old'));
            assert.equal(read.apiVersion, 'workload.linkerd.io/v1beta1');
            assert.equal(read.spec.meshTLS?.serverName, 'old');
            assert.equal(read.spec.meshTls, undefined);
            const back = await local.admin.get<{ spec: { meshTls?: { serverName: string } } }>(path('v1alpha1', 'old'));
            assert.equal(back.spec.meshTls?.serverName, 'old', 'and back to v1alpha1');
        });
    });

    it('deleting the leader Pod: another replica takes over within the Lease time, slices unchanged', async () => {
        const before = await lease(EW);
        const leader = before.spec.holderIdentity!;
        const slices = JSON.stringify((await slicesOf(local, workloadNs, 'web')).map((s) => [s.metadata?.name, s.metadata?.resourceVersion, s.endpoints]));
        const deleted = Date.now();
        await local.admin.delete(`/api/v1/namespaces/${RELEASE_NS}/pods/${leader}`);
        // The leader hands the Lease over on SIGTERM; the standby or the Pod replacing the
        // deleted one, whichever asks first, takes it.
        await withLogs(() => eventually('another replica holding the Lease', async () => ![leader, undefined, ''].includes((await lease(EW)).spec.holderIdentity), 60_000));
        const taken = await lease(EW);
        const replicas = (await pods('external-workloads')).map((p) => p.metadata!.name!);
        assert.ok(replicas.includes(taken.spec.holderIdentity!), 'a replica of the Deployment');
        measured(`leader Pod deleted -> ${taken.spec.holderIdentity} holds the Lease`, Date.now() - deleted);
        const expiry = Date.parse(before.spec.renewTime!) + before.spec.leaseDurationSeconds! * 1000;
        assert.ok(Date.parse(taken.spec.acquireTime!) <= expiry, 'taken over before the old term could have run out: the leader handed it over');
        assert.equal(taken.spec.leaseTransitions, (before.spec.leaseTransitions ?? 0) + 1);
        assert.equal(JSON.stringify((await slicesOf(local, workloadNs, 'web')).map((s) => [s.metadata?.name, s.metadata?.resourceVersion, s.endpoints])), slices, 'slices untouched');
        await withLogs(() => eventually('the Deployment back at 2 Ready Pods', async () => (await pods('external-workloads')).filter(isReady).length === 2, 120_000));
    });

    it('helm upgrade changing a flag rolls the Pods within the PodDisruptionBudget, no mirror emptied', async () => {
        const old = new Set((await pods()).map((p) => p.metadata!.name!));
        const seen = { minReady: { 'external-workloads': 2, 'service-mirror': 2 } as Record<string, number>, emptyMirror: 0, samples: 0 };
        let rolling = true;
        const watcher = (async () => {
            while (rolling) {
                const [all, mirror] = await Promise.all([pods(), mirrorEndpoints()]);
                for (const component of ['external-workloads', 'service-mirror']) {
                    const ready = all.filter((p) => p.metadata?.labels?.['app.kubernetes.io/component'] === component && isReady(p)).length;
                    seen.minReady[component] = Math.min(seen.minReady[component]!, ready);
                }
                if (!mirror.includes('ready')) seen.emptyMirror++;
                seen.samples++;
                await new Promise((r) => setTimeout(r, 100));
            }
        })();
        const started = Date.now();
        await runHelm(['upgrade', RELEASE, chartDir, '--namespace', RELEASE_NS, '-f', valuesFile, '--set', 'logLevel=debug', ...kubeconfig]);
        try {
            await withLogs(() =>
                eventually(
                    '4 new Pods Ready, the old ones gone',
                    async () => {
                        const now = await pods();
                        return now.length === 4 && now.every((p) => !old.has(p.metadata!.name!) && isReady(p) && p.spec?.containers[0]?.args?.includes('--log-level=debug'));
                    },
                    240_000,
                ),
            );
        } finally {
            rolling = false;
            await watcher;
        }
        measured('helm upgrade -> 4 new Pods Ready', Date.now() - started);
        for (const component of ['external-workloads', 'service-mirror']) {
            const pdb = await local.admin.get<{ spec: { maxUnavailable: number } }>(`/apis/policy/v1/namespaces/${RELEASE_NS}/poddisruptionbudgets/mesh-endpoints-${component}`);
            assert.ok(seen.minReady[component]! >= 2 - pdb.spec.maxUnavailable, `${component}: at least ${2 - pdb.spec.maxUnavailable} Ready all along (saw ${seen.minReady[component]})`);
        }
        assert.ok(seen.samples > 10, 'watched through the rollout');
        assert.equal(seen.emptyMirror, 0, 'the mirror kept ready endpoints all along');
        assert.equal(await mirrorEndpoints(), '192.0.2.10 ready,192.0.2.12 ready');
    });

    it('mesh-endpoints check and status report the installed controllers healthy', async () => {
        const check = await runCli('check', ...kubeconfig, '--namespace', GATEWAY_NAMESPACE, '--controller-namespace', RELEASE_NS);
        assert.doesNotMatch(check.stdout, /\bFAIL\b/);
        assert.match(check.stdout, /east/);
        const status = await runCli('status', ...kubeconfig, '--workload-namespace', workloadNs);
        assert.match(status.stdout, /web/);
        assert.match(status.stdout, /192\.0\.2\.1\b/);
    });

    it('helm uninstall leaves no Pod, Lease or webhook configuration; the CRDs stay', async () => {
        await runHelm(['uninstall', RELEASE, '--namespace', RELEASE_NS, '--wait', ...kubeconfig]);
        await eventually('no Pod left', async () => (await pods()).length === 0, 120_000);
        const leases = [
            ...(await local.admin.get<{ items: { metadata: { name: string } }[] }>(collectionPath(Leases, RELEASE_NS))).items,
            ...(await local.admin.get<{ items: { metadata: { name: string } }[] }>(collectionPath(Leases, GATEWAY_NAMESPACE))).items,
        ].map((l) => l.metadata.name);
        assert.deepEqual(leases, [], 'no Lease left');
        const secrets = (await local.admin.get<{ items: { metadata: { name: string } }[] }>(collectionPath(Secrets, RELEASE_NS))).items.map((s) => s.metadata.name);
        assert.deepEqual(secrets.filter((n) => !n.startsWith('sh.helm.release.')), [], "no Secret left, the webhook's certificate neither");
        for (const kind of ['validatingwebhookconfigurations', 'mutatingwebhookconfigurations']) {
            const list = await local.admin.get<{ items: unknown[] }>(`/apis/admissionregistration.k8s.io/v1/${kind}`);
            assert.deepEqual(list.items, [], kind);
        }
        await local.admin.get(objectPath(Services, workloadNs, 'web'));
        for (const crd of ['externalworkloads.workload.linkerd.io', 'links.multicluster.linkerd.io']) {
            await local.admin.get(`/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${crd}`);
        }
    });
});
