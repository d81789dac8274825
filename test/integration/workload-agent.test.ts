// VMs that register themselves, end to end against a real apiserver: three `mesh-endpoints
// workload-agent` processes, each with its own ServiceAccount token (bound to the chart's agent
// ClusterRole, under the chart's admission policies), register into one group; the
// external-workloads controller (in this process) puts them in the Service's slices. Then one
// agent is SIGKILLed, one SIGTERMed, and one loses the apiserver (a TCP proxy between them
// refuses and cuts) for less than the grace period. Group: heartbeat 1s, lease 3s, grace 10s.
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { objectPath, Leases } from '../../src/kube/resources.js';
import { installCrds } from '../../src/testing/crds.js';
import { eventually, setUp, startTestCluster } from '../../src/testing/harness.js';
import { TcpProxy } from '../../src/testing/tcp-proxy.js';
import { createGroup, getWorkload, installAgentPolicies, readyOf, requestToken, vmCredentials } from './group-support.js';
import { ControllerProcess } from './process-support.js';
import { createService, runExternalWorkloads, slicesOf } from './support.js';

const cluster = await startTestCluster('agents');
await setUp('the CRDs', () => installCrds(cluster.admin));
const role = await setUp('the chart’s agent rules', () => installAgentPolicies(cluster.admin));
const ns = await setUp('a namespace', () => cluster.namespace('vms'));
const system = await setUp('a namespace', () => cluster.namespace('system'));
await setUp('the group and its Service', async () => {
    await createGroup(cluster.admin, ns, 'web', { heartbeatPeriod: '1s', leaseDuration: '3s', gracePeriod: '10s' });
    await createService(cluster, ns, { metadata: { name: 'web' }, spec: { selector: { app: 'web' }, ports: [{ port: 80, targetPort: 'http' as never }] } });
});
// Two replicas: the leader is stopped while a heartbeat lapses, and the standby carries on.
const controller = await setUp('the controller', () => runExternalWorkloads(cluster, { workloadGroups: true, leaseNamespace: system, identity: 'leader' }));
const standby = await setUp('a standby', () => runExternalWorkloads(cluster, { workloadGroups: true, leaseNamespace: system, identity: 'standby' }));
after(() => Promise.all([controller.stop(), standby.stop()]));
const proxy = new TcpProxy('127.0.0.1', cluster.state.apiserverPort);
const proxyPort = await setUp('a proxy before the apiserver', () => proxy.start());
after(() => proxy.stop());

const dir = mkdtempSync(join(tmpdir(), 'agents-'));
const caFile = join(cluster.state.dir, 'pki', 'apiserver.crt');
const agents: ControllerProcess[] = [];
after(() => agents.forEach((a) => a.exitCode === undefined && a.proc.kill('SIGKILL')));

/** VM `vm`'s agent: its own ServiceAccount and token file; through the proxy when asked. */
async function startAgent(vm: string, ip: string, viaProxy = false): Promise<{ agent: ControllerProcess; tokenFile: string }> {
    const creds = await vmCredentials(cluster, ns, 'web', vm, role);
    const tokenFile = join(dir, `${vm}.token`);
    writeFileSync(tokenFile, creds.token);
    const server = viaProxy ? `https://127.0.0.1:${proxyPort}` : cluster.state.server;
    const agent = new ControllerProcess(['workload-agent', '--server', server, '--certificate-authority', caFile, '--token-file', tokenFile, '--group', 'web', '--addresses', ip]);
    agents.push(agent);
    return { agent, tokenFile };
}

const endpointOf = async (ip: string) => (await slicesOf(cluster, ns, 'web')).flatMap((s) => s.endpoints ?? []).find((e) => e.addresses.includes(ip));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('three workload agents, each with its own token', () => {
    let vm1: ControllerProcess;
    let vm2: ControllerProcess;
    let vm3: { agent: ControllerProcess; tokenFile: string };

    it('register; their workloads are ready endpoints of the Service', async (t) => {
        const started = Date.now();
        [{ agent: vm1 }, { agent: vm2 }, vm3] = await Promise.all([startAgent('vm-1', '10.20.0.1'), startAgent('vm-2', '10.20.0.2'), startAgent('vm-3', '10.20.0.3', true)]);
        for (const ip of ['10.20.0.1', '10.20.0.2', '10.20.0.3']) await eventually(`${ip} ready in the slice`, async () => (await endpointOf(ip))?.conditions?.ready === true, 30_000);
        t.diagnostic(`three agents started to three ready endpoints: ${Date.now() - started} ms (process start-up included)`);
        assert.equal((await getWorkload(cluster.admin, ns, 'web.vm-1'))?.spec.meshTLS?.identity, `web.vm-1.${ns}.serviceaccount.identity.linkerd.cluster.local`);
        assert.ok(vm1.logged('registered'), 'the agent says it registered');
    });

    it('SIGKILL: not ready within heartbeat period + lease duration, deleted after the grace period, across a failover', async (t) => {
        vm1.proc.kill('SIGKILL');
        const killed = Date.now();
        // The leader goes (its Lease released) while the heartbeat lapses: the standby computes the same expiry from renewTime.
        await controller.stop();
        await eventually('the standby leads', () => standby.manager.isLeader(), 10_000);
        await eventually('not ready', async () => (await endpointOf('10.20.0.1'))?.conditions?.ready === false, 10_000);
        const notReady = Date.now() - killed;
        t.diagnostic(`SIGKILL -> endpoint not ready: ${notReady} ms (heartbeat 1 s + lease 3 s)`);
        assert.ok(notReady <= 4000 + 1000, `${notReady} ms`);
        assert.equal((await readyOf(cluster.admin, ns, 'web.vm-1'))?.reason, 'HeartbeatExpired');
        await eventually('deleted', async () => (await getWorkload(cluster.admin, ns, 'web.vm-1')) === undefined, 20_000);
        const deleted = Date.now() - killed;
        t.diagnostic(`SIGKILL -> workload deleted: ${deleted} ms (lease 3 s + grace 10 s after the last renewal)`);
        assert.ok(deleted >= 3000 + 10_000 - 1000 - 1000, `${deleted} ms`);
        await eventually('gone from the slice', async () => (await endpointOf('10.20.0.1')) === undefined);
    });

    it('SIGTERM: withdrawn, not ready at once, and the agent exits 0', async (t) => {
        vm2.proc.kill('SIGTERM');
        const termed = Date.now();
        await eventually('not ready', async () => (await endpointOf('10.20.0.2'))?.conditions?.ready === false, 3000);
        t.diagnostic(`SIGTERM -> endpoint not ready: ${Date.now() - termed} ms`);
        assert.equal((await readyOf(cluster.admin, ns, 'web.vm-2'))?.reason, 'Withdrawn');
        assert.equal(await vm2.exit, 0);
        assert.ok(vm2.logged('registration withdrawn'));
    });

    it('the apiserver lost for less than the grace period: stays registered, ready again when it comes back', async () => {
        proxy.refuse(true);
        proxy.cutAll();
        let deleted = false;
        const watching = setInterval(() => void getWorkload(cluster.admin, ns, 'web.vm-3').then((w) => (deleted ||= w === undefined)), 200);
        try {
            await eventually('not ready while cut off', async () => (await endpointOf('10.20.0.3'))?.conditions?.ready === false, 10_000);
            await sleep(2000);
            proxy.refuse(false);
            await eventually('ready again', async () => (await endpointOf('10.20.0.3'))?.conditions?.ready === true, 10_000);
        } finally {
            clearInterval(watching);
        }
        assert.equal(deleted, false, 'never deregistered');
        assert.ok(vm3.agent.logged('heartbeat renewed again'), 'the agent says it recovered');
    });

    it('a rotated token file is read at the next heartbeat', async () => {
        writeFileSync(vm3.tokenFile, await requestToken(cluster.admin, ns, 'web.vm-3', 600));
        await eventually('the agent took the new token', () => vm3.agent.logged('token file changed: using the new token') !== undefined, 5000);
        const renewed = async () => (await cluster.admin.get<{ spec: { renewTime: string } }>(objectPath(Leases, ns, 'web.vm-3'))).spec.renewTime;
        const before = await renewed();
        await eventually('renewed with it', async () => (await renewed()) !== before, 5000);
        assert.equal(vm3.agent.exitCode, undefined);
    });

    it('workload-group list, status and check show the group, each VM’s heartbeat age and Ready', async () => {
        const cli = async (...args: string[]) => {
            const run = new ControllerProcess([...args, '--kubeconfig', cluster.state.kubeconfig]);
            await run.exit;
            return run.lines.map((l) => l.msg).join('\n');
        };
        const list = JSON.parse(await cli('workload-group', 'list', '-n', ns, '-o', 'json')) as Array<{ registrations: Array<{ vm: string; heartbeat: string; heartbeatAgeMs?: number; ready: string }> }>;
        const vm3 = list[0]!.registrations.find((r) => r.vm === 'vm-3')!;
        assert.equal(vm3.heartbeat, 'live');
        assert.ok(vm3.heartbeatAgeMs! < 3000, `renewed ${vm3.heartbeatAgeMs} ms ago`);
        assert.equal(vm3.ready, 'True');
        assert.equal(list[0]!.registrations.find((r) => r.vm === 'vm-2')?.heartbeat, 'withdrawn');
        assert.match(await cli('status', '--workload-namespace', ns), new RegExp(`Group ${ns}/web: \\d+ registered`));
        assert.match(await cli('check'), /✔ the workload agents’ admission policies are installed/);
        const bootstrap = await cli('workload-group', 'bootstrap', '-n', ns, '--group', 'web', '--vm', 'vm-9', '-o', 'manifests');
        assert.match(bootstrap, /name: web\.vm-9/);
    });
});
