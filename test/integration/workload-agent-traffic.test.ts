// Traffic to a VM that registered itself: a Pod on a real node (kube-proxy, CoreDNS; node.ts)
// reaches a "VM" (vm.ts: an HTTP server in a network namespace of its own) through a Service
// that selects the workload the controller materialised from an ExternalWorkloadGroup and the
// VM's own Lease, written by a `mesh-endpoints workload-agent` process with the VM's own token,
// under the chart's agent ClusterRole and admission policies. SIGTERM to the agent takes the
// VM out of the rotation. The setting is external-workload-traffic.test.ts's (its helpers),
// in a file of its own; it needs root and runs itself inside a network namespace it makes.
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { collectionPath, Namespaces } from '../../src/kube/resources.js';
import { installCrds, installMcsCrds } from '../../src/testing/crds.js';
import { eventually, setUp, startLocalCluster } from '../../src/testing/harness.js';
import { cannotRunContainers } from '../../src/testing/image.js';
import { inNodeNamespace, NODE_IP, reexecInNodeNamespace } from '../../src/testing/node-namespace.js';
import { NODE_APISERVER_ARGS, startNode } from '../../src/testing/node.js';
import { suiteImages } from '../../src/testing/suite-images.js';
import { CLIENT_IMAGE, PodClient } from '../../src/testing/traffic.js';
import { startVm, VM_CIDR, type Vm } from '../../src/testing/vm.js';
import { createGroup, installAgentPolicies, vmCredentials } from './group-support.js';
import { ControllerProcess } from './process-support.js';
import { createService } from './support.js';

const unsupported = await cannotRunContainers();
if (!unsupported && !inNodeNamespace()) await reexecInNodeNamespace();

describe('traffic from a Pod to a VM that registered itself', { skip: unsupported && `cannot run containers here: ${unsupported}` }, async () => {
    if (unsupported) return;
    const cluster = await setUp('cluster', () => startLocalCluster('t-agent-traffic', NODE_APISERVER_ARGS, { address: NODE_IP, controllers: {} }));
    const processes: ControllerProcess[] = [];
    let vm: Vm | undefined;
    let node: Awaited<ReturnType<typeof startNode>> | undefined;
    after(async () => {
        for (const p of processes) await p.terminate();
        await node?.stop();
        await vm?.stop();
        await cluster.stop();
    });
    await setUp('CRDs', async () => {
        await installMcsCrds(cluster.admin);
        await installCrds(cluster.admin);
    });
    const role = await setUp('the chart’s agent rules', () => installAgentPolicies(cluster.admin));
    const images = await setUp('the client image', async () => (await suiteImages()).filter((i) => CLIENT_IMAGE.startsWith(`${i.baseName}:`)));
    node = await setUp('node', () => startNode(cluster.state, 'node-0', images, { dataPlane: true }));
    vm = await setUp('a VM', () => startVm('vm-a', '10.215.0.9', 8080));
    await setUp('the controller', async () => {
        await cluster.admin.create(collectionPath(Namespaces), { metadata: { name: 'mesh-endpoints' } });
        const controller = ControllerProcess.externalWorkloads(cluster.state.kubeconfig, 'mesh-endpoints', 'ew-0', ['--batch-period', '100ms']);
        processes.push(controller);
        await eventually('the controller leading', async () => (await controller.metric('mesh_endpoints_leader')) === 1, 60_000);
    });
    const ns = await setUp('a namespace', () => cluster.namespace('vms'));
    const client = await setUp('the client Pod', () => PodClient.start(cluster.admin, cluster.kubeConfig(), ns, 'client'));

    it('the VM registers with its own token; curl <svc>.<ns>.svc.cluster.local answers from it; SIGTERM takes it out', async () => {
        await createGroup(cluster.admin, ns, 'web', { addressRanges: [VM_CIDR], heartbeatPeriod: '1s', leaseDuration: '3s', gracePeriod: '1m' });
        await createService(cluster, ns, { metadata: { name: 'web' }, spec: { selector: { app: 'web' }, ports: [{ name: 'http', port: 80, targetPort: 'http' as never }] } });
        const creds = await vmCredentials(cluster, ns, 'web', vm!.name, role);
        const tokenFile = join(mkdtempSync(join(tmpdir(), 'agent-')), 'token');
        writeFileSync(tokenFile, creds.token);
        const caFile = join(cluster.state.dir, 'pki', 'apiserver.crt');
        const started = Date.now();
        const agent = new ControllerProcess(['workload-agent', '--server', cluster.state.server, '--certificate-authority', caFile, '--token-file', tokenFile, '--addresses', vm!.ip]);
        processes.push(agent);
        const url = `http://web.${ns}.svc.cluster.local/`;
        await eventually('an answer from the VM', async () => (await client.get(url)) === vm!.name, 60_000);
        process.stderr.write(`# agent started -> first answer from the VM through its Service: ${((Date.now() - started) / 1000).toFixed(1)} s\n`);

        agent.proc.kill('SIGTERM');
        assert.equal(await agent.exit, 0);
        await eventually('no answer from the VM', async () => (await client.get(url)) === 'fail', 30_000);
    });
});
