// Traffic to ExternalWorkloads: real requests from a Pod on a real node reach "VMs" through the
// Services that select the workloads describing them. The node (node.ts) runs the data plane a
// real cluster has: kube-proxy (iptables) leading Service addresses to the EndpointSlices'
// endpoints and CoreDNS answering cluster.local, the Pods' nameserver. A VM (vm.ts) is an HTTP
// server in a network namespace of its own, routed from the node's (not a Pod, not on the Pods'
// bridge), answering with its name. The external-workloads controller runs as the product's own
// command (`mesh-endpoints external-workloads`, a process beside the node, no Helm, no webhook)
// and writes the slices. The Pod runs the netshoot stand-in built from Debian packages
// (suite-images.ts): its requests are curl's when the image has curl, else busybox wget's.
// Everything runs inside a network namespace this file makes (it runs itself again in it).
// Timings it prints (`# ...`) are measurements, never assertions.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { after, describe, it } from 'node:test';
import type { V1Service } from '@kubernetes/client-node';
import { collectionPath, ExternalWorkloads, Namespaces, objectPath } from '../../src/kube/resources.js';
import type { WorkloadCondition } from '../../src/externalworkloads/types.js';
import { installCrds, installMcsCrds } from '../../src/testing/crds.js';
import { eventually, setUp, startLocalCluster } from '../../src/testing/harness.js';
import { cannotRunContainers } from '../../src/testing/image.js';
import { inNodeNamespace, NODE_IP, reexecInNodeNamespace } from '../../src/testing/node-namespace.js';
import { NODE_APISERVER_ARGS, startNode } from '../../src/testing/node.js';
import { suiteImages } from '../../src/testing/suite-images.js';
import { CLIENT_IMAGE, PodClient, type Answer, type RequestLoop } from '../../src/testing/traffic.js';
import { startVm, type Vm } from '../../src/testing/vm.js';
import { ControllerProcess } from './process-support.js';
import { createService, createWorkload, setReady, slicesOf } from './support.js';

// Before anything starts: from here on this process runs inside the node's namespace.
const unsupported = await cannotRunContainers();
if (!unsupported && !inNodeNamespace()) await reexecInNodeNamespace();

const run = promisify(execFile);
const VM_PORT = 8080;
/** Fast enough to watch: a probe a second, out after 2 failures, in after 1 pass. */
const PROBE = {
    'mesh-endpoints.io/probe': `http:${VM_PORT}/`,
    'mesh-endpoints.io/probe-period': '1s',
    'mesh-endpoints.io/probe-timeout': '1s',
    'mesh-endpoints.io/probe-failure-threshold': '2',
};

function measured(what: string, ms: number): void {
    process.stderr.write(`# ${what}: ${(ms / 1000).toFixed(1)} s\n`);
}

/** A Service `name` selecting app=`app`, port 80 to the workloads' port named http. */
function service(name: string, app: string, headless = false): V1Service {
    return { metadata: { name }, spec: { selector: { app }, ...(headless ? { clusterIP: 'None' } : {}), ports: [{ name: 'http', port: 80, targetPort: 'http' as never }] } };
}

/**
 * After `t`: waits until the last `min` answers are all `answer` (10 in a row: by chance, with two
 * endpoints, once in a thousand) and returns the last answer before that run, the last request
 * that still went elsewhere; undefined when none did after `t`.
 */
async function lastOther(loop: RequestLoop, t: number, answer: string, what: string, min = 10): Promise<Answer | undefined> {
    let start = -1;
    await eventually(what, () => {
        const answers = loop.since(t);
        start = answers.length;
        while (start > 0 && answers[start - 1]!.answer === answer) start--;
        return answers.length - start >= min;
    }, 60_000);
    return loop.since(t)[start - 1];
}

/** After `t`: waits for an answer `answer`; returns it. */
async function firstAnswer(loop: RequestLoop, t: number, answer: string, what: string): Promise<Answer> {
    let first: Answer | undefined;
    await eventually(what, () => (first = loop.since(t).find((a) => a.answer === answer)) !== undefined, 60_000);
    return first!;
}

/** From `t`: how long each check took to hold (ms), as of the start of the poll that saw it; all polled together, every 100 ms, 30 s at most. */
async function milestones(t: number, checks: Record<string, () => Promise<boolean>>): Promise<Record<string, number>> {
    const seen = async (what: string, check: () => Promise<boolean>): Promise<readonly [string, number]> => {
        while (Date.now() < t + 30_000) {
            const polled = Date.now();
            if (await check().catch(() => false)) return [what, polled - t];
            await new Promise((r) => setTimeout(r, 100));
        }
        throw new Error(`timed out waiting for ${what}`);
    };
    return Object.fromEntries(await Promise.all(Object.entries(checks).map(([what, check]) => seen(what, check))));
}

/** Prints each milestone (`# <event> -> <milestone>: x s`) and the request that marks the traffic's change. */
function report(event: string, steps: Record<string, number>, traffic: string, answer: Answer | undefined, t: number): void {
    for (const [what, ms] of Object.entries(steps)) measured(`${event} -> ${what}`, ms);
    if (answer) measured(`${event} -> ${traffic}`, answer.at - t);
    else process.stderr.write(`# ${event} -> ${traffic}: none after it\n`);
}

const tally = (answers: Answer[]) => answers.reduce<Record<string, number>>((counts, a) => ({ ...counts, [a.answer]: (counts[a.answer] ?? 0) + 1 }), {});

describe('traffic to ExternalWorkloads from a Pod on a real node', { skip: unsupported && `cannot run containers here: ${unsupported}` }, async () => {
    if (unsupported) return;
    const cluster = await setUp('cluster', () => startLocalCluster('t-ew-traffic', NODE_APISERVER_ARGS, { address: NODE_IP, controllers: {} }));
    const vms: Vm[] = [];
    let controller: ControllerProcess | undefined;
    let node: Awaited<ReturnType<typeof startNode>> | undefined;
    after(async () => {
        await controller?.terminate();
        await node?.stop();
        for (const vm of vms) await vm.stop();
        await cluster.stop();
    });
    // CoreDNS's kubernetes plugin reads ServiceImports too: the MCS CRDs before the node.
    await setUp('CRDs', async () => {
        await installMcsCrds(cluster.admin);
        await installCrds(cluster.admin);
    });
    const images = await setUp('the client image', async () => (await suiteImages()).filter((i) => CLIENT_IMAGE.startsWith(`${i.baseName}:`)));
    node = await setUp('node', () => startNode(cluster.state, 'node-0', images, { dataPlane: true }));
    await setUp('VMs', async () => {
        for (const [name, ip] of [['vm-1', '10.215.0.1'], ['vm-2', '10.215.0.2'], ['vm-3', '10.215.0.3']] as const) vms.push(await startVm(name, ip, VM_PORT));
    });
    const [vm1, vm2, vm3] = vms as [Vm, Vm, Vm];

    const controllerNs = 'mesh-endpoints';
    await setUp('the controller', async () => {
        await cluster.admin.create(collectionPath(Namespaces), { metadata: { name: controllerNs } });
        controller = ControllerProcess.externalWorkloads(cluster.state.kubeconfig, controllerNs, 'ew-0', ['--batch-period', '100ms', '--log-level', 'info']);
        await eventually('the controller leading', async () => (await controller!.metric('mesh_endpoints_leader')) === 1, 60_000);
    });
    const clientNs = await setUp('a namespace', () => cluster.namespace('client'));
    const client = await setUp('the client Pod', () => PodClient.start(cluster.admin, cluster.kubeConfig(), clientNs, 'client'));

    const workload = (ns: string, name: string, vm: Vm, app: string, extra: { ready?: boolean; annotations?: Record<string, string> } = {}) =>
        createWorkload(cluster, ns, { name, ips: [vm.ip], labels: { app }, ports: [{ name: 'http', port: vm.port }], ...extra });
    /** Whether the endpoint at `ip` of Service `ns`/web is ready in our slices. */
    const readyInSlices = async (ns: string, ip: string) =>
        (await slicesOf(cluster, ns, 'web')).flatMap((s) => s.endpoints ?? []).find((e) => e.addresses.includes(ip))?.conditions?.ready === true;
    /**
     * Whether kube-proxy's rules (the node namespace's, ours) send Service `ns`/web to `ip`: its
     * KUBE-SVC chain jumps to the endpoint's chain (`-m comment --comment "ns/web:http -> ip:port"`).
     */
    const kubeProxySendsTo = async (ns: string, ip: string) =>
        (await run('iptables-save', ['-t', 'nat'])).stdout.split('\n').some((l) => l.startsWith('-A KUBE-SVC-') && l.includes(`${ns}/web:http -> ${ip}:`));

    it('curl <svc>.<ns>.svc.cluster.local answers from the VM: the name through CoreDNS, the Service address through kube-proxy', async () => {
        const ns = await cluster.namespace('one');
        const started = Date.now();
        const svc = await createService(cluster, ns, service('web', 'web'));
        await workload(ns, 'vm-1', vm1, 'web');
        const name = `web.${ns}.svc.cluster.local`;
        let answer = '';
        await eventually('an answer from vm-1', async () => (answer = await client.get(`http://${name}/`)) === 'vm-1', 60_000);
        measured('Service and workload created -> first answer from the VM', Date.now() - started);
        assert.deepEqual(await client.lookup(`${name}.`), [svc.spec!.clusterIP], 'the name is the Service address');
        assert.equal(answer, 'vm-1');
    });

    it('a workload reported not ready stops getting requests, which go to the ready VM, and gets them again once ready', async () => {
        const ns = await cluster.namespace('ready');
        await createService(cluster, ns, service('web', 'web'));
        await workload(ns, 'vm-1', vm1, 'web');
        await workload(ns, 'vm-2', vm2, 'web');
        const loop = client.loop(`http://web.${ns}.svc.cluster.local/`, 150);
        try {
            await firstAnswer(loop, 0, 'vm-1', 'an answer from vm-1');
            await firstAnswer(loop, 0, 'vm-2', 'an answer from vm-2');

            const notReady = Date.now();
            await setReady(cluster, ns, 'vm-2', false);
            const out = await milestones(notReady, {
                'not ready in the slice': async () => !(await readyInSlices(ns, vm2.ip)),
                "out of kube-proxy's rules": async () => !(await kubeProxySendsTo(ns, vm2.ip)),
            });
            const last = await lastOther(loop, notReady, 'vm-1', 'requests only to vm-1');
            report('Ready=False written', out, 'last request reaching vm-2', last, notReady);
            assert.equal(tally(loop.since(notReady)).fail, undefined, `no request failed while vm-2 left: ${JSON.stringify(tally(loop.since(notReady)))}`);

            const ready = Date.now();
            await setReady(cluster, ns, 'vm-2', true);
            const back = await milestones(ready, {
                'ready in the slice': () => readyInSlices(ns, vm2.ip),
                "in kube-proxy's rules": () => kubeProxySendsTo(ns, vm2.ip),
            });
            report('Ready=True written', back, 'first request reaching vm-2 again', await firstAnswer(loop, ready, 'vm-2', 'vm-2 answering again'), ready);
        } finally {
            await loop.stop();
        }
        assert.equal(tally(loop.answers).fail, undefined, `no request failed: ${JSON.stringify(tally(loop.answers))}`);
    });

    it("with the controller's health checks, a VM whose server stops leaves the rotation and comes back when it starts", async () => {
        const ns = await cluster.namespace('probe');
        await createService(cluster, ns, service('web', 'web'));
        await workload(ns, 'vm-1', vm1, 'web');
        // No Ready condition of its own: the controller's probes write it.
        await workload(ns, 'vm-3', vm3, 'web', { ready: false, annotations: PROBE });
        const readyOf = async () =>
            (await cluster.admin.get<{ status?: { conditions?: WorkloadCondition[] } }>(objectPath(ExternalWorkloads, ns, 'vm-3'))).status?.conditions?.find((c) => c.type === 'Ready');
        await eventually('vm-3 probed ready', async () => (await readyOf())?.status === 'True', 30_000);
        const loop = client.loop(`http://web.${ns}.svc.cluster.local/`, 150);
        try {
            await firstAnswer(loop, 0, 'vm-3', 'an answer from vm-3');

            const stopped = Date.now();
            await vm3.stopServer();
            const out = await milestones(stopped, {
                'Ready=False (probes)': async () => (await readyOf())?.status === 'False',
                'not ready in the slice': async () => !(await readyInSlices(ns, vm3.ip)),
                "out of kube-proxy's rules": async () => !(await kubeProxySendsTo(ns, vm3.ip)),
            });
            const last = await lastOther(loop, stopped, 'vm-1', 'requests only to vm-1');
            const condition = (await readyOf())!;
            assert.equal(condition.reason, 'ProbeFailed');
            assert.match(condition.message ?? '', /failed 2 times in a row/);
            report('server stopped', out, 'last request sent to vm-3 (failed)', last, stopped);
            const during = tally(loop.since(stopped).filter((a) => a.at <= (last?.at ?? stopped)));
            process.stderr.write(`# answers until vm-3 left the rotation: ${JSON.stringify(during)}\n`);

            await vm3.start();
            const started = Date.now();
            const back = await milestones(started, {
                'Ready=True (probes)': async () => (await readyOf())?.status === 'True',
                'ready in the slice': () => readyInSlices(ns, vm3.ip),
                "in kube-proxy's rules": () => kubeProxySendsTo(ns, vm3.ip),
            });
            assert.equal((await readyOf())!.reason, 'ProbeSucceeded');
            report('server started', back, 'first request reaching vm-3 again', await firstAnswer(loop, started, 'vm-3', 'vm-3 answering again'), started);
        } finally {
            await loop.stop();
        }
    });

    it('nslookup of a headless Service selecting two VMs returns both VM addresses, and each answers at its own', async () => {
        const ns = await cluster.namespace('headless');
        await createService(cluster, ns, service('vms', 'vms', true));
        await workload(ns, 'vm-1', vm1, 'vms');
        await workload(ns, 'vm-2', vm2, 'vms');
        const name = `vms.${ns}.svc.cluster.local.`;
        let addresses: string[] = [];
        await eventually('both VM addresses', async () => (addresses = await client.lookup(name)).length === 2, 30_000);
        assert.deepEqual(addresses, [vm1.ip, vm2.ip]);
        // Straight to the VMs, no Service address in between: the Pod routes to them through the node.
        assert.deepEqual(await Promise.all([vm1, vm2].map((vm) => client.get(`http://${vm.ip}:${vm.port}/`))), ['vm-1', 'vm-2']);
    });
});
