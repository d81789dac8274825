// Probes are not a network scanner (issue 22), on real apiservers: a workload's or a gateway's
// loopback, link-local or cloud metadata address is never connected to unless
// --probe-allow-cidrs lists it (a loopback listener hears nothing until then), a refusal is a
// Warning Event and leaves the workload's Ready condition as it was, and a probe follows no
// redirect and copies nothing of a body into a condition or an Event. No probe here uses the
// address override: the targets are the objects' own addresses (the workloads are stored
// through a CRD without CEL rules, as Linkerd's is: ours refuses such addresses already). Every connection goes to
// 127.0.0.1; 169.254.169.254 and fd00:ec2::254 appear only inside objects, and the metrics
// show no probe was sent to them.
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, describe, it } from 'node:test';
import type { Registry } from 'prom-client';
import { parseProbeAllowCidrs } from '../../src/ip/probe-target.js';
import { collectionPath, ExternalWorkloads, objectPath } from '../../src/kube/resources.js';
import type { WorkloadCondition } from '../../src/externalworkloads/types.js';
import { installCrds } from '../../src/testing/crds.js';
import { eventually, setUp, startTestCluster } from '../../src/testing/harness.js';
import { createLink, runServiceMirror, startMirrorEnv, type MirrorEnv } from './mirror-support.js';
import { eventsAbout, metricValue, runExternalWorkloads, withoutCelRules, type RunningController } from './support.js';

/** An HTTP server on 127.0.0.1 that counts every connection made to it, request or not. */
class Listener {
    connections = 0;
    readonly requests: string[] = [];
    private constructor(private readonly server: Server) {}

    static async start(handle: (req: IncomingMessage, res: import('node:http').ServerResponse) => void = (_, res) => void res.end('ok')): Promise<Listener> {
        const server = createServer();
        const listener = new Listener(server);
        server.on('connection', () => listener.connections++);
        server.on('request', (req, res) => {
            listener.requests.push(req.url ?? '');
            handle(req, res);
        });
        await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
        after(() => {
            server.closeAllConnections();
            server.close();
        });
        return listener;
    }

    get port(): number {
        return (this.server.address() as AddressInfo).port;
    }
}

const allowLoopback = (() => {
    const parsed = parseProbeAllowCidrs('127.0.0.0/8');
    assert.ok(parsed.ok);
    return parsed.cidrs;
})();

/** Probes every 200 ms: a few periods pass in a second. */
const fast = { 'mesh-endpoints.io/probe-period': '200ms', 'mesh-endpoints.io/probe-timeout': '1s', 'mesh-endpoints.io/probe-failure-threshold': '1' };
const afewPeriods = () => new Promise((resolve) => setTimeout(resolve, 1_000));

const cluster = await startTestCluster('probe-targets');
// Linkerd's own CRD has no CEL rules: it stores a workload at 127.0.0.1, which ours refuses.
await setUp('the CRDs, without their CEL rules', () => installCrds(cluster.admin, withoutCelRules));
const ns = await setUp('a namespace', () => cluster.namespace());

interface Workload {
    metadata: { resourceVersion: string };
    status?: { conditions?: WorkloadCondition[] };
}
const getWorkload = (name: string) => cluster.admin.get<Workload>(objectPath(ExternalWorkloads, ns, name));
const readyOf = async (name: string) => (await getWorkload(name)).status?.conditions?.find((c) => c.type === 'Ready');

async function createWorkload(name: string, ips: string[], probe: string): Promise<void> {
    await cluster.admin.create(collectionPath(ExternalWorkloads, ns), {
        apiVersion: 'workload.linkerd.io/v1beta1',
        kind: 'ExternalWorkload',
        metadata: { name, labels: { app: 'vm' }, annotations: { 'mesh-endpoints.io/probe': probe, ...fast } },
        spec: {
            meshTLS: { identity: `${name}.${ns}.serviceaccount.identity.linkerd.cluster.local`, serverName: name },
            workloadIPs: ips.map((ip) => ({ ip })),
            ports: [{ name: 'http', port: 8080 }],
        },
    } as never);
}

const series = (registry: Registry, name: string, labels: Record<string, string> = {}) => metricValue(registry, name, labels);

describe('workload probes go only to addresses they may', () => {
    it('never probes a workload at 127.0.0.1: the listener hears nothing, a Warning Event says why, Ready is left as it is', async () => {
        const listener = await Listener.start();
        await createWorkload('vm-loopback', ['127.0.0.1'], `http:${listener.port}/ready`);
        await createWorkload('vm-metadata', ['169.254.169.254', 'fd00:ec2::254'], 'http:80/latest/meta-data/');
        const theirs: WorkloadCondition[] = [{ type: 'Ready', status: 'False', reason: 'Manual', message: 'set by its operator', lastTransitionTime: '2026-01-01T00:00:00Z' }];
        await cluster.admin.mergePatch(objectPath(ExternalWorkloads, ns, 'vm-loopback', 'status'), { status: { conditions: theirs } });
        const before = await getWorkload('vm-loopback');

        const running: RunningController = await runExternalWorkloads(cluster, { healthChecks: {} });
        try {
            await eventually('the ProbeRefused Events', async () =>
                (await eventsAbout(cluster, ns, 'vm-loopback', 'ProbeRefused')).length === 1 && (await eventsAbout(cluster, ns, 'vm-metadata', 'ProbeRefused')).length === 1);
            const [loopback] = await eventsAbout(cluster, ns, 'vm-loopback', 'ProbeRefused');
            assert.equal(loopback!.type, 'Warning');
            assert.match(loopback!.message!, /^not probed, its Ready condition is left as it is: 127\.0\.0\.1 is a loopback address: probes never go to .* unless --probe-allow-cidrs lists them$/);
            const [metadata] = await eventsAbout(cluster, ns, 'vm-metadata', 'ProbeRefused');
            assert.match(metadata!.message!, /: fd00:ec2::254 is a cloud metadata address, 169\.254\.169\.254 is a link-local address: /);
            await afewPeriods();
            assert.equal(listener.connections, 0, 'no connection to the loopback listener');
            assert.equal(await series(running.registry, 'mesh_endpoints_external_workloads_refused_probe_workloads'), 2);
            assert.equal(await series(running.registry, 'mesh_endpoints_external_workloads_probed_workloads'), 0);
            assert.equal(await series(running.registry, 'mesh_endpoints_external_workloads_probes_total', { result: 'success' }), 0, 'no probe sent anywhere');
            assert.equal(await series(running.registry, 'mesh_endpoints_external_workloads_probes_total', { result: 'failure' }), 0, 'no probe sent anywhere');
            const now = await getWorkload('vm-loopback');
            assert.deepEqual([now.metadata.resourceVersion, now.status?.conditions], [before.metadata.resourceVersion, theirs], 'Ready untouched');
            assert.equal((await getWorkload('vm-metadata')).status?.conditions, undefined);
        } finally {
            await running.stop();
        }

        const allowed = await runExternalWorkloads(cluster, { healthChecks: { allowCidrs: allowLoopback } });
        try {
            await eventually('vm-loopback probed once 127.0.0.0/8 is allowed', async () => (await readyOf('vm-loopback'))?.reason === 'ProbeSucceeded');
            assert.ok(listener.requests.includes('/ready'));
            assert.equal((await readyOf('vm-loopback'))?.status, 'True');
            assert.equal((await getWorkload('vm-metadata')).status?.conditions, undefined, 'the metadata addresses stay refused');
            assert.equal(await series(allowed.registry, 'mesh_endpoints_external_workloads_refused_probe_workloads'), 1);
        } finally {
            await allowed.stop();
        }
    });

    it('follows no redirect, reads no body, and copies nothing of either into the condition or an Event', async () => {
        const target = await Listener.start();
        const redirecting = await Listener.start((_, res) => void res.writeHead(302, { Location: `http://127.0.0.1:${target.port}/stolen` }).end());
        const leakyReason = `Service Unavailable ${'REASON-LEAK-'.repeat(10)}`;
        let bodyBytes = 0;
        const endless = await Listener.start((_, res) => {
            res.writeHead(503, leakyReason, { 'Content-Type': 'text/plain' });
            const chunk = Buffer.from('BODY-LEAK '.repeat(6_554)); // 64 KiB
            const pump = () => {
                while (!res.destroyed && res.write(chunk)) bodyBytes += chunk.length;
                if (!res.destroyed) res.once('drain', pump);
            };
            pump();
        });
        await createWorkload('vm-redirect', ['127.0.0.1'], `http:${redirecting.port}/ready`);
        await createWorkload('vm-endless', ['127.0.0.1'], `http:${endless.port}/ready`);

        const running = await runExternalWorkloads(cluster, { healthChecks: { allowCidrs: allowLoopback } });
        try {
            await eventually('both probed', async () => (await readyOf('vm-redirect'))?.status === 'True' && (await readyOf('vm-endless'))?.status === 'False');
            await afewPeriods();
            assert.ok(redirecting.requests.length >= 2, 'probed every period');
            assert.equal(target.connections, 0, 'the redirect target heard nothing');
            assert.match((await readyOf('vm-redirect'))!.message!, new RegExp(`passed: 302 Found from 127\\.0\\.0\\.1:${redirecting.port}$`));

            const failed = (await readyOf('vm-endless'))!;
            assert.match(failed.message!, new RegExp(`failed 1 times in a row: 503 Service Unavailable REASON-LEAK-REASON-L… from 127\\.0\\.0\\.1:${endless.port}$`));
            const events = await eventsAbout(cluster, ns, 'vm-endless');
            const everything = JSON.stringify([await getWorkload('vm-endless'), events]);
            assert.ok(!everything.includes('BODY-LEAK'), 'no body in the condition or the Events');
            assert.ok(!everything.includes('REASON-LEAK-REASON-LEAK'), 'the reason phrase cut to 40 characters everywhere');
            assert.ok(bodyBytes < 64 << 20, `the server wrote only ${bodyBytes} bytes over ${endless.requests.length} probes`);
        } finally {
            await running.stop();
        }
    });
});

describe('gateway probes go only to addresses they may', () => {
    let env: MirrorEnv;
    it('never probes a gateway at 127.0.0.1, 169.254.169.254 or fd00:ec2::254: a Warning Event, not probed, alive; 127.0.0.0/8 allowed, it is probed', async () => {
        env = await startMirrorEnv('probe-gw');
        const linkNs = await env.local.namespace('linkerd-multicluster');
        const listener = await Listener.start();
        const probe = { path: '/ready', port: listener.port, period: '200ms', timeout: '1s', failureThreshold: '1' };
        await createLink(env, linkNs, { name: 'loop', gatewayAddress: '127.0.0.1', probe });
        await createLink(env, linkNs, { name: 'meta', gatewayAddress: '169.254.169.254,fd00:ec2::254', probe: { ...probe, port: 80 } });

        const mirror = await runServiceMirror(env, linkNs, { probeAddressOverride: undefined });
        try {
            const refused = async (link: string) => (await eventsAbout(env.local, linkNs, link, 'GatewayProbeRefused')).length === 1;
            await eventually('the GatewayProbeRefused Events', async () => (await refused('loop')) && (await refused('meta')));
            const [loop] = await eventsAbout(env.local, linkNs, 'loop', 'GatewayProbeRefused');
            assert.equal(loop!.type, 'Warning');
            assert.match(loop!.message!, /^gateway probe not sent, the gateway is not probed and its mirror endpoints stay ready: 127\.0\.0\.1 is a loopback address: probes never go to /);
            const [meta] = await eventsAbout(env.local, linkNs, 'meta', 'GatewayProbeRefused');
            assert.match(meta!.message!, /: fd00:ec2::254 is a cloud metadata address, 169\.254\.169\.254 is a link-local address: /);
            await afewPeriods();
            assert.equal(listener.connections, 0, 'no connection to the loopback listener');
            for (const link of ['loop', 'meta']) {
                const labels = { link, target_cluster_name: link };
                assert.ok((await series(mirror.registry, 'mesh_endpoints_service_mirror_gateway_probes_total', { ...labels, result: 'refused' })) >= 2, `${link}: every round refused`);
                for (const result of ['success', 'failure']) {
                    assert.equal(await series(mirror.registry, 'mesh_endpoints_service_mirror_gateway_probes_total', { ...labels, result }), 0, `${link}: no probe sent (${result})`);
                }
                assert.equal(await series(mirror.registry, 'mesh_endpoints_service_mirror_gateway_alive', labels), 1, `${link}: not probed counts as alive`);
            }
        } finally {
            await mirror.stop();
        }

        const allowed = await runServiceMirror(env, linkNs, { probeAddressOverride: undefined, probeAllowCidrs: allowLoopback });
        try {
            await eventually('the loopback gateway probed once 127.0.0.0/8 is allowed', () => listener.requests.includes('/ready'));
            await eventually('the GatewayProbeTarget Event', async () => (await eventsAbout(env.local, linkNs, 'loop', 'GatewayProbeTarget')).length === 1);
            const labels = { link: 'meta', target_cluster_name: 'meta' };
            assert.equal(await series(allowed.registry, 'mesh_endpoints_service_mirror_gateway_probes_total', { ...labels, result: 'success' }), 0, 'meta: still no probe');
            assert.equal(await series(allowed.registry, 'mesh_endpoints_service_mirror_gateway_probes_total', { ...labels, result: 'failure' }), 0, 'meta: still no probe');
        } finally {
            await allowed.stop();
        }
    });
});
