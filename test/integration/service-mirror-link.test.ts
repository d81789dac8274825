// The service mirror as a user meets it: `mesh-endpoints link` against a remote gateway that
// only has a LoadBalancer hostname (EKS), its output applied to the local cluster; the gateway
// probe failing and recovering; stale mirrors removed when the controller starts; and the
// `mesh-endpoints service-mirror` process itself with its flags, metrics and Lease.
// Probes go to HTTP servers on 127.0.0.1 only (the probe address override).
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { dirname, resolve } from 'node:path';
import { after, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { KubeConfig, type V1Service } from '@kubernetes/client-node';
import { parseAllDocuments } from 'yaml';
import { KubeRest } from '../../src/kube/rest.js';
import { collectionPath, EndpointSlices, Leases, Links, Namespaces, objectPath, Secrets, Services } from '../../src/kube/resources.js';
import { eventually, setUp } from '../../src/testing/harness.js';
import { cli, ProbeServer } from './cli-support.js';
import {
    createLink,
    createRemoteService,
    endpointsOf,
    EXPORTED,
    hasEvent,
    mirrorService,
    mirrorSlices,
    pairedNamespace,
    patchRemoteService,
    runServiceMirror,
    startMirrorEnv,
    type MirrorEnv,
} from './mirror-support.js';

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const env = await startMirrorEnv('sml');
const linkNs = await setUp('a namespace', () => env.local.namespace('mc'));
const running = await setUp('the service mirror', () => runServiceMirror(env, linkNs));

/** `kubectl apply -f -` for what `link` prints (the Secrets, each in its namespace, and a Link). */
async function applyLinkOutput(yaml: string): Promise<void> {
    for (const doc of parseAllDocuments(yaml)) {
        const obj = doc.toJS() as { kind: string; metadata: { namespace: string } };
        await env.local.admin.create(collectionPath(Namespaces), { metadata: { name: obj.metadata.namespace } }).catch(() => undefined);
        const path = obj.kind === 'Secret' ? collectionPath(Secrets, obj.metadata.namespace) : collectionPath(Links, obj.metadata.namespace);
        await env.local.admin.create(path, obj);
    }
}

async function createGateway(remote: MirrorEnv['remote'], name: string, ports: { name: string; port: number }[], probePath = '/ready') {
    await remote.admin.create(collectionPath(Namespaces), { metadata: { name: 'linkerd-multicluster' } }).catch(() => undefined);
    await remote.admin.create(collectionPath(Services, 'linkerd-multicluster'), {
        metadata: {
            name,
            annotations: {
                'mirror.linkerd.io/gateway-identity': 'linkerd-gateway.linkerd-multicluster.serviceaccount.identity.linkerd.cluster.local',
                'mirror.linkerd.io/probe-path': probePath,
                'mirror.linkerd.io/probe-period': '1',
            },
        },
        spec: { type: 'LoadBalancer', selector: { app: 'linkerd-gateway' }, ports },
    });
}

async function setIngress(name: string, ingress: object[]): Promise<void> {
    await env.remote.admin.mergePatch(objectPath(Services, 'linkerd-multicluster', name, 'status'), { status: { loadBalancer: { ingress } } });
}

describe('linking and running the service mirror', () => {
    const elb = 'a1b2c3d4e5f6-1234567890.elb.us-east-1.amazonaws.com';

    it('refuses, with a clear error, a gateway without LoadBalancer ingress yet or without the named ports', async () => {
        await createGateway(env.remote, 'pending-gateway', [{ name: 'mc-gateway', port: 4143 }, { name: 'mc-probe', port: 4191 }]);
        const pending = await cli('link', '--remote-kubeconfig', env.remote.state.kubeconfig, '--cluster-name', 'pending', '--gateway-service', 'linkerd-multicluster/pending-gateway', '--namespace', linkNs);
        assert.equal(pending.code, 1);
        assert.match(pending.stderr, /pending-gateway has no LoadBalancer ingress yet/);
        assert.equal(pending.stdout, '');

        await createGateway(env.remote, 'portless-gateway', [{ name: 'http', port: 80 }]);
        await setIngress('portless-gateway', [{ hostname: elb }]);
        const portless = await cli('link', '--remote-kubeconfig', env.remote.state.kubeconfig, '--cluster-name', 'portless', '--gateway-service', 'linkerd-multicluster/portless-gateway', '--namespace', linkNs);
        assert.equal(portless.code, 1);
        assert.match(portless.stderr, /lacks the ports named mc-gateway and mc-probe \(its ports: http\)/);
    });

    it('links a cluster whose gateway has only a LoadBalancer hostname (EKS): mirrors get slices with the resolved IPs', async () => {
        const probe = await ProbeServer.start();
        await createGateway(env.remote, 'linkerd-gateway', [{ name: 'mc-gateway', port: 4143 }, { name: 'mc-probe', port: probe.port }]);
        await setIngress('linkerd-gateway', [{ hostname: elb }]);
        env.dns.setRecords(elb, { A: [{ address: '192.0.2.202', ttl: 60 }, { address: '192.0.2.201', ttl: 60 }] });

        const linked = await cli('link', '--remote-kubeconfig', env.remote.state.kubeconfig, '--cluster-name', 'eks', '--namespace', linkNs);
        assert.equal(linked.code, 0, linked.stderr);
        const docs = parseAllDocuments(linked.stdout).map((d) => d.toJS() as { kind: string; spec?: Record<string, unknown>; type?: string });
        // The service mirror's Secret, Linkerd destination's (remote discovery and federation are on by default), the Link.
        assert.deepEqual(docs.map((d) => d.kind), ['Secret', 'Secret', 'Link']);
        assert.equal(docs[0]!.type, 'mirror.linkerd.io/remote-kubeconfig');
        assert.equal(docs[2]!.spec!.gatewayAddress, elb);
        assert.equal(docs[2]!.spec!.gatewayPort, '4143');
        assert.deepEqual(docs[2]!.spec!.selector, { matchLabels: EXPORTED });
        await applyLinkOutput(linked.stdout);

        const ns = await pairedNamespace(env);
        await createRemoteService(env, ns, 'web', { ports: [{ name: 'http', port: 80 }] });
        await eventually('mirror slices with the resolved IPs', async () => (await endpointsOf(env, ns, 'web-eks')).length === 2);
        assert.deepEqual(await endpointsOf(env, ns, 'web-eks'), ['IPv4 192.0.2.201 ready', 'IPv4 192.0.2.202 ready']);
        const [slice] = await mirrorSlices(env, ns, 'web-eks');
        assert.equal(slice!.ports?.[0]?.port, 4143);
        assert.equal(slice!.metadata?.annotations?.['mirror.linkerd.io/remote-gateway-identity'], 'linkerd-gateway.linkerd-multicluster.serviceaccount.identity.linkerd.cluster.local');
        assert.ok(JSON.stringify(slice).includes(elb) === false, 'the ELB name appears nowhere in the slice');
        await eventually('the gateway probed on loopback', () => probe.paths.includes('/ready'));

        // The credentials `link` made can read what the mirror needs and nothing else.
        const kc = new KubeConfig();
        const secret = await env.local.admin.get<{ data: { kubeconfig: string } }>(objectPath(Secrets, linkNs, 'cluster-credentials-eks'));
        kc.loadFromString(Buffer.from(secret.data.kubeconfig, 'base64').toString('utf8'));
        const readOnly = new KubeRest(kc);
        try {
            await readOnly.get(collectionPath(EndpointSlices));
            await assert.rejects(readOnly.get(collectionPath(Secrets)), /forbidden/i);
            await assert.rejects(readOnly.create(collectionPath(Services, ns), { metadata: { name: 'nope' }, spec: { ports: [{ port: 1 }] } }), /forbidden/i);
        } finally {
            readOnly.close();
        }
    });

    it('makes every endpoint of a Link not ready after failureThreshold failed probes, and ready again at the first success', async () => {
        const probe = await ProbeServer.start();
        await createLink(env, linkNs, {
            name: 'probed',
            gatewayAddress: '192.0.2.210',
            probe: { path: '/health', port: probe.port, period: '200ms', timeout: '500ms', failureThreshold: '2' },
            selector: { matchLabels: { ...EXPORTED, probed: 'yes' } },
        });
        const ns = await pairedNamespace(env);
        await createRemoteService(env, ns, 'web', { labels: { ...EXPORTED, probed: 'yes' } });
        await createRemoteService(env, ns, 'api', { labels: { ...EXPORTED, probed: 'yes' } });
        await eventually('ready endpoints', async () => (await endpointsOf(env, ns, 'web-probed')).join() === 'IPv4 192.0.2.210 ready');

        probe.healthy = false;
        await eventually('not ready after failed probes', async () => {
            const lines = [...(await endpointsOf(env, ns, 'web-probed')), ...(await endpointsOf(env, ns, 'api-probed'))];
            return lines.join() === 'IPv4 192.0.2.210 not-ready,IPv4 192.0.2.210 not-ready';
        });
        await eventually('the GatewayDown Event', () => hasEvent(env, linkNs, 'probed', 'GatewayDown', '503'));
        const alive = async () => (await running.registry.getSingleMetric('mesh_endpoints_service_mirror_gateway_alive')?.get())?.values.find((v) => v.labels.link === 'probed')?.value;
        assert.equal(await alive(), 0);

        probe.healthy = true;
        await eventually('ready again', async () => (await endpointsOf(env, ns, 'web-probed')).join() === 'IPv4 192.0.2.210 ready');
        await eventually('the GatewayAlive Event', () => hasEvent(env, linkNs, 'probed', 'GatewayAlive'));
        assert.equal(await alive(), 1);
        assert.ok(probe.paths.length >= 3 && probe.paths.every((p) => p === '/health'));
    });

    it('deletes on start the mirrors whose remote Service is gone or no longer exported, and keeps the others', async () => {
        const ctlNs = await env.local.namespace('mc-restart');
        const selector = { matchLabels: { ...EXPORTED, restart: 'yes' } };
        const labels = { ...EXPORTED, restart: 'yes' };
        let controller = await runServiceMirror(env, ctlNs);
        await createLink(env, ctlNs, { name: 'restart', gatewayAddress: '192.0.2.230', selector });
        const ns = await pairedNamespace(env);
        for (const name of ['keep', 'gone', 'unexported']) await createRemoteService(env, ns, name, { labels });
        await eventually('three mirrors', async () => (await Promise.all(['keep', 'gone', 'unexported'].map((n) => endpointsOf(env, ns, `${n}-restart`)))).every((l) => l.length === 1));
        await controller.stop();

        await env.remote.admin.delete(objectPath(Services, ns, 'gone'));
        await patchRemoteService(env, ns, 'unexported', { metadata: { labels: { restart: null } } });
        // A mirror left behind with no remote Service at all, with its slice.
        const ghost = await env.local.admin.create<V1Service>(collectionPath(Services, ns), {
            metadata: { name: 'ghost-restart', labels: { 'mirror.linkerd.io/mirrored-service': 'true', 'mirror.linkerd.io/cluster-name': 'restart' } },
            spec: { ports: [{ name: 'http', port: 80 }] },
        });
        await env.local.admin.create(collectionPath(EndpointSlices, ns), {
            metadata: {
                name: 'ghost-restart-abcde',
                labels: {
                    'kubernetes.io/service-name': 'ghost-restart',
                    'endpointslice.kubernetes.io/managed-by': 'service-mirror.mesh-endpoints.io',
                    'mirror.linkerd.io/cluster-name': 'restart',
                },
                ownerReferences: [{ apiVersion: 'v1', kind: 'Service', name: 'ghost-restart', uid: ghost.metadata!.uid!, controller: true }],
            },
            addressType: 'IPv4',
            endpoints: [{ addresses: ['192.0.2.230'] }],
            ports: [{ name: 'http', port: 4143, protocol: 'TCP' }],
        });
        const keptSlice = (await mirrorSlices(env, ns, 'keep-restart'))[0]!;

        controller = await runServiceMirror(env, ctlNs);
        await eventually('the stale mirrors and their slices gone', async () => {
            const left = await Promise.all(['gone', 'unexported', 'ghost'].map(async (n) => Boolean(await mirrorService(env, ns, `${n}-restart`)) || (await mirrorSlices(env, ns, `${n}-restart`)).length > 0));
            return left.every((l) => !l);
        });
        const [slice] = await mirrorSlices(env, ns, 'keep-restart');
        assert.equal(slice?.metadata?.resourceVersion, keptSlice.metadata?.resourceVersion, 'the live mirror was left as it was');
        await controller.stop();
    });

    it('runs as `mesh-endpoints service-mirror` with its flags: mirrors through a hostname gateway, serves metrics, holds its Lease', async () => {
        const ctlNs = await env.local.namespace('mc-cli');
        env.dns.setRecords('cli.gw.test', { A: [{ address: '192.0.2.240', ttl: 1 }] });
        await createLink(env, ctlNs, { name: 'cli', gatewayAddress: 'cli.gw.test', selector: { matchLabels: { ...EXPORTED, cli: 'yes' } } });
        const ns = await pairedNamespace(env);
        await createRemoteService(env, ns, 'web', { labels: { ...EXPORTED, cli: 'yes' } });
        const child: ChildProcess = spawn(
            'node',
            [
                '--import', 'tsx', 'src/cli/main.ts', 'service-mirror',
                '--kubeconfig', env.local.state.kubeconfig,
                '--namespace', ctlNs,
                '--admin-addr', '127.0.0.1:0',
                '--dns-servers', env.dns.address,
                '--dns-min-ttl', '1s', '--dns-max-ttl', '3s', '--dns-stale-window', '2s', '--dns-timeout', '300ms',
                '--probe-address-override', '127.0.0.1',
                '--lease-duration', '4s', '--renew-deadline', '3s', '--retry-period', '500ms',
                '--log-level', 'warn',
            ],
            { cwd: repoRoot, stdio: ['ignore', 'ignore', 'pipe'] },
        );
        after(() => child.kill('SIGKILL'));
        let stderr = '';
        child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
        await eventually('the admin endpoint', () => /admin endpoint listening on (\S+)/.test(stderr), 60_000);
        const admin = /admin endpoint listening on (\S+)/.exec(stderr)![1]!;

        await eventually('the mirror', async () => (await endpointsOf(env, ns, 'web-cli')).join() === 'IPv4 192.0.2.240 ready');
        const ready = await fetch(`http://${admin}/readyz`);
        assert.equal(ready.status, 200);
        const metrics = await (await fetch(`http://${admin}/metrics`)).text();
        assert.match(metrics, /mesh_endpoints_service_mirror_dns_resolutions_total\{link="cli",target_cluster_name="cli",result="success"\} [1-9]/);
        assert.match(metrics, /mesh_endpoints_service_mirror_slice_writes_total\{operation="create"\} [1-9]/);
        assert.match(metrics, /mesh_endpoints_service_mirror_dns_seconds_until_refresh\{link="cli",target_cluster_name="cli",name="cli.gw.test"\}/);
        assert.match(metrics, /mesh_endpoints_service_mirror_mirrored_services\{link="cli",target_cluster_name="cli"\} 1/);
        const lease = await env.local.admin.get<{ spec: { holderIdentity?: string } }>(objectPath(Leases, ctlNs, 'mesh-endpoints-service-mirror'));
        assert.ok(lease.spec.holderIdentity);

        const exited = new Promise<number | null>((done) => child.once('exit', (code) => done(code)));
        child.kill('SIGTERM');
        assert.equal(await exited, 0);
    });
});
