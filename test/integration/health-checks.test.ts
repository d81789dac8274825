// Health checks of ExternalWorkloads on a real apiserver, run by `mesh-endpoints
// external-workloads` replicas as separate processes (the leader killed for real). Probes go,
// through --probe-address-override, to loopback servers; the workloads' own addresses are
// documentation addresses that are never connected to.
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer as createHttpServer } from 'node:http';
import { createServer as createTcpServer, type AddressInfo, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import type { V1EndpointSlice } from '@kubernetes/client-node';
import { collectionPath, ExternalWorkloads, objectPath } from '../../src/kube/resources.js';
import type { WorkloadCondition } from '../../src/externalworkloads/types.js';
import { installCrds } from '../../src/testing/crds.js';
import { eventually, setUp, startTestCluster } from '../../src/testing/harness.js';
import { TcpProxy } from '../../src/testing/tcp-proxy.js';
import { ControllerProcess, FAST_ELECTION } from './process-support.js';
import { createService, eventsAbout, slicesOf } from './support.js';

const cluster = await startTestCluster('health');
await setUp('the CRDs', () => installCrds(cluster.admin));
const ns = await setUp('a namespace', () => cluster.namespace());
const leaseNs = await setUp('a namespace', () => cluster.namespace('system'));

let httpStatus = 200;
const httpServer = createHttpServer((req, res) => void res.writeHead(req.url === '/ready' ? httpStatus : 404).end());
const tcpServer = createTcpServer((socket) => socket.end());
const listen = async (server: Server) => {
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return (server.address() as AddressInfo).port;
};
const httpPort = await setUp('a probe target', () => listen(httpServer));
const tcpPort = await setUp('a probe target', () => listen(tcpServer));

const replicas: ControllerProcess[] = [];
after(async () => {
    for (const r of replicas) if (r.exitCode === undefined) r.proc.kill('SIGKILL');
    httpServer.close();
    tcpServer.close();
});

function startReplica(identity: string, kubeconfig = cluster.state.kubeconfig): ControllerProcess {
    const replica = ControllerProcess.externalWorkloads(kubeconfig, leaseNs, identity, [
        ...FAST_ELECTION,
        '--batch-period', '100ms',
        '--probe-address-override', '127.0.0.1',
        '--log-level', 'info',
    ]);
    replicas.push(replica);
    return replica;
}

interface Workload {
    metadata: { resourceVersion: string };
    status?: { conditions?: WorkloadCondition[] };
}
const getWorkload = (name: string) => cluster.admin.get<Workload>(objectPath(ExternalWorkloads, ns, name));
const readyOf = async (name: string) => (await getWorkload(name)).status?.conditions?.find((c) => c.type === 'Ready');

async function createWorkload(name: string, ip: string, annotations: Record<string, string>): Promise<void> {
    await cluster.admin.create(collectionPath(ExternalWorkloads, ns), {
        apiVersion: 'workload.linkerd.io/v1beta1',
        kind: 'ExternalWorkload',
        metadata: { name, labels: { app: 'web' }, annotations },
        spec: { meshTLS: { identity: `${name}.${ns}.serviceaccount.identity.linkerd.cluster.local`, serverName: name }, workloadIPs: [{ ip }], ports: [{ name: 'http', port: 8080 }] },
    } as never);
}

const fast = { 'mesh-endpoints.io/probe-period': '300ms', 'mesh-endpoints.io/probe-timeout': '500ms', 'mesh-endpoints.io/probe-failure-threshold': '2' };
const readyInSlices = async (address: string) => {
    const slices: V1EndpointSlice[] = await slicesOf(cluster, ns, 'web');
    return slices.flatMap((s) => s.endpoints ?? []).find((e) => e.addresses.includes(address))?.conditions?.ready;
};

describe('health checks of ExternalWorkloads', () => {
    let leader: ControllerProcess;
    let standby: ControllerProcess;

    it('the leader probes annotated workloads and writes Ready on transitions; the slices follow', async () => {
        await createService(cluster, ns, { metadata: { name: 'web' }, spec: { selector: { app: 'web' }, ports: [{ name: 'http', port: 80, targetPort: 'http' as never }] } });
        await createWorkload('vm-http', '192.0.2.10', { 'mesh-endpoints.io/probe': `http:${httpPort}/ready`, ...fast });
        await createWorkload('vm-tcp', '192.0.2.11', { 'mesh-endpoints.io/probe': `tcp:${tcpPort}`, ...fast });
        await createWorkload('vm-bad', '192.0.2.12', { 'mesh-endpoints.io/probe': `http:${httpPort}/ready`, 'mesh-endpoints.io/probe-period': 'often' });
        // Someone else's condition on a workload that does not ask to be probed.
        await createWorkload('vm-plain', '192.0.2.13', {});
        const theirs: WorkloadCondition[] = [{ type: 'Ready', status: 'False', reason: 'Manual', message: 'kept by its operator', lastTransitionTime: '2026-01-01T00:00:00Z' }];
        await cluster.admin.mergePatch(objectPath(ExternalWorkloads, ns, 'vm-plain', 'status'), { status: { conditions: theirs } });
        const plainVersion = (await getWorkload('vm-plain')).metadata.resourceVersion;

        const a = startReplica('replica-a');
        const b = startReplica('replica-b');
        await eventually('a leader', async () => (await a.metric('mesh_endpoints_leader')) + (await b.metric('mesh_endpoints_leader')) === 1, 60_000);
        [leader, standby] = (await a.metric('mesh_endpoints_leader')) === 1 ? [a, b] : [b, a];

        await eventually('vm-http and vm-tcp ready', async () => (await readyOf('vm-http'))?.status === 'True' && (await readyOf('vm-tcp'))?.status === 'True');
        const passed = (await readyOf('vm-http'))!;
        assert.equal(passed.reason, 'ProbeSucceeded');
        assert.match(passed.message!, new RegExp(`^http://127\\.0\\.0\\.1:${httpPort}/ready passed: 200 OK`));
        await eventually('vm-http ready in the slices', async () => (await readyInSlices('192.0.2.10')) === true);

        httpStatus = 503;
        await eventually('vm-http not ready', async () => (await readyOf('vm-http'))?.status === 'False');
        const failed = (await readyOf('vm-http'))!;
        assert.equal(failed.reason, 'ProbeFailed');
        assert.match(failed.message!, /failed 2 times in a row: 503 Service Unavailable/);
        await eventually('vm-http not ready in the slices', async () => (await readyInSlices('192.0.2.10')) === false);
        await eventually('a ProbeFailed Event', async () => (await eventsAbout(cluster, ns, 'vm-http', 'ProbeFailed')).some((e) => e.type === 'Warning'));

        tcpServer.close();
        await eventually('vm-tcp not ready once nothing listens', async () => (await readyOf('vm-tcp'))?.status === 'False');
        assert.match((await readyOf('vm-tcp'))!.message!, /ECONNREFUSED/);

        httpStatus = 200;
        await eventually('vm-http ready again', async () => (await readyOf('vm-http'))?.status === 'True');

        const [bad] = await eventsAbout(cluster, ns, 'vm-bad', 'InvalidProbe');
        assert.match(bad?.message ?? '', /mesh-endpoints.io\/probe-period: "often" is not a duration.*not probed/);
        assert.equal((await getWorkload('vm-bad')).status?.conditions, undefined, 'a workload with a bad probe is not probed');
        const plain = await getWorkload('vm-plain');
        assert.deepEqual([plain.metadata.resourceVersion, plain.status?.conditions], [plainVersion, theirs], 'an un-annotated workload is untouched');
        assert.equal(await leader.metric('mesh_endpoints_external_workloads_probed_workloads'), 2);
        assert.equal(await standby.metric('mesh_endpoints_external_workloads_probes_total{result="success"}'), 0, 'the standby does not probe');
    });

    it('a new leader carries on from the stored condition: a ready workload does not flap when the leader is killed', async () => {
        const before = (await readyOf('vm-http'))!;
        // Both of the old leader's ProbeSucceeded Events are in (the second raises the count of the first).
        const eventCount = async () => (await eventsAbout(cluster, ns, 'vm-http')).reduce((n, e) => n + (e.count ?? 1), 0);
        await eventually('the old leader’s Events', async () => (await eventsAbout(cluster, ns, 'vm-http', 'ProbeSucceeded')).reduce((n, e) => n + (e.count ?? 1), 0) === 2);
        const eventsBefore = await eventCount();
        leader.proc.kill('SIGKILL');
        await eventually('the standby to lead', async () => (await standby.metric('mesh_endpoints_leader')) === 1, 20_000);
        await eventually('the new leader probing', async () => (await standby.metric('mesh_endpoints_external_workloads_probes_total{result="success"}')) >= 5);
        assert.deepEqual(await readyOf('vm-http'), before, 'the Ready condition as the old leader left it');
        assert.equal(await standby.metric('mesh_endpoints_external_workloads_ready_transitions_total{status="True"}'), 0);
        assert.equal(await standby.metric('mesh_endpoints_external_workloads_ready_transitions_total{status="False"}'), 0, 'vm-tcp stays not ready without a write');
        assert.equal(await eventCount(), eventsBefore, 'no new Event');

        httpStatus = 503;
        await eventually('the new leader to see vm-http fail', async () => (await readyOf('vm-http'))?.status === 'False');
        await standby.terminate();
    });
    it('a Ready write refused with 409 restarts the workloads watch that went silently dead', async () => {
        // A replica that reaches the apiserver through a proxy that forgets idle connections.
        const proxy = new TcpProxy('127.0.0.1', cluster.state.apiserverPort);
        const port = await proxy.start();
        const kubeconfig = join(mkdtempSync(join(tmpdir(), 'mesh-endpoints-health-')), 'kubeconfig');
        writeFileSync(kubeconfig, cluster.kubeConfig(`https://127.0.0.1:${port}`).exportConfig(), { mode: 0o600 });
        let status = 200;
        const target = createHttpServer((_req, res) => void res.writeHead(status).end());
        const targetPort = await listen(target);
        try {
            const replica = startReplica('replica-c', kubeconfig);
            await eventually('it leads', async () => (await replica.metric('mesh_endpoints_leader')) === 1, 60_000);
            await createWorkload('vm-stale', '192.0.2.14', { 'mesh-endpoints.io/probe': `http:${targetPort}/ready`, ...fast });
            await eventually('vm-stale ready', async () => (await readyOf('vm-stale'))?.status === 'True');

            // Its watches go dead without a sound (the lease, renewed every 500 ms, stays up); the
            // workloads watch then misses someone's change, so the next Ready write is refused.
            await new Promise((resolve) => setTimeout(resolve, 1_500));
            assert.ok(proxy.forgetIdle(1_000) >= 3, 'the watches are forgotten');
            await cluster.admin.mergePatch(objectPath(ExternalWorkloads, ns, 'vm-stale'), { metadata: { annotations: { note: 'changed by someone' } } });
            status = 503;
            // Within the deadline only if the conflict restarts the watch (the inactivity limit is minutes).
            await eventually('vm-stale not ready', async () => (await readyOf('vm-stale'))?.status === 'False', 30_000);
            assert.ok(replica.logged('watch silent while an answer showed the server ahead: restarting it'), 'the conflict restarted the watch');
            await replica.terminate();
        } finally {
            target.close();
            await proxy.stop();
        }
    });
});
