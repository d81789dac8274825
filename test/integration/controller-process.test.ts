// The controller as users run it: the CLI in a process of its own, at debug log level,
// against a real kube-apiserver reached through a proxy the test controls. A missing CRD is
// named with how to install it and the process serves once it appears; SIGTERM ends the
// process within its bound while the apiserver hangs; no log line carries the token.
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { installCrds } from '../../src/testing/crds.js';
import { eventually, setUp, startTestCluster } from '../../src/testing/harness.js';
import { TcpProxy } from '../../src/testing/tcp-proxy.js';
import { ControllerProcess } from './process-support.js';
import { addressesOf, createService, createWorkload, slicesOf } from './support.js';

const cluster = await startTestCluster('process');
const proxy = new TcpProxy('127.0.0.1', cluster.state.apiserverPort);
const proxyPort = await setUp('the TCP proxy', () => proxy.start());
after(() => proxy.stop());

// The controller reaches the apiserver only through the proxy.
const dir = mkdtempSync(join(tmpdir(), 'mesh-endpoints-process-'));
const kubeconfig = join(dir, 'kubeconfig');
writeFileSync(kubeconfig, cluster.kubeConfig(`https://127.0.0.1:${proxyPort}`).exportConfig(), { mode: 0o600 });

/** Every line any controller process of this file printed, for the token check at the end. */
const allOutput: string[] = [];

const externalWorkloads = (namespace: string) =>
    new ControllerProcess(
        ['external-workloads', '--kubeconfig', kubeconfig, '--namespace', namespace, '--admin-addr', '127.0.0.1:0', '--log-level', 'debug',
            '--lease-duration', '4s', '--renew-deadline', '2500ms', '--retry-period', '500ms'],
        allOutput,
    );

const web = { metadata: { name: 'web' }, spec: { selector: { app: 'web' }, ports: [{ name: 'http', port: 80, targetPort: 'http' as never }] } };

describe('the external-workloads process', () => {
    it('names a missing CRD and how to install it, stays not ready, and serves once the CRD appears', async () => {
        const controllerNs = await cluster.namespace('mesh-endpoints');
        const controller = externalWorkloads(controllerNs);
        try {
            // Each missing CRD has its own report (the groups' CRD is missing too); this one is the workloads'.
            const missingWorkloads = /externalworkloads\.workload\.linkerd\.io is not installed/;
            await eventually('the missing CRD reported', () => controller.logged(missingWorkloads) !== undefined, 60_000);
            const report = controller.logged(missingWorkloads)!;
            assert.match(report.msg, /kubectl apply -f charts\/mesh-endpoints\/crds\/externalworkloads\.yaml/);
            const notReady = await controller.readyz();
            assert.equal(notReady.status, 503);
            assert.match(notReady.body, /CustomResourceDefinition externalworkloads\.workload\.linkerd\.io is not installed/);

            await installCrds(cluster.admin);
            await eventually('ready without a restart', async () => (await controller.readyz()).status === 200, 60_000);
            const ns = await cluster.namespace();
            await createService(cluster, ns, web);
            await createWorkload(cluster, ns, { name: 'vm-1', ips: ['192.0.2.1'] });
            await eventually('the workload published', async () => addressesOf(await slicesOf(cluster, ns, 'web')).includes('192.0.2.1'), 60_000);
        } finally {
            await controller.terminate();
        }
        assert.equal(controller.exitCode, 0);
    });

    it('exits within 10 s of SIGTERM while its apiserver connection hangs', async () => {
        const controllerNs = await cluster.namespace('mesh-endpoints');
        const ns = await cluster.namespace();
        await createService(cluster, ns, web);
        await createWorkload(cluster, ns, { name: 'vm-2', ips: ['192.0.2.2'] });
        const controller = externalWorkloads(controllerNs);
        try {
            await eventually('leading', () => controller.logged('became leader') !== undefined, 60_000);
            await eventually('the workload published', async () => addressesOf(await slicesOf(cluster, ns, 'web')).includes('192.0.2.2'), 60_000);
            proxy.freeze(true); // every open connection stays open and carries nothing: lists, watches, lease calls hang
            await createWorkload(cluster, ns, { name: 'vm-3', ips: ['192.0.2.3'] }); // work that cannot reach the apiserver
            await new Promise((r) => setTimeout(r, 1000));
            const tookMs = await controller.terminate();
            assert.notEqual(controller.exitCode, undefined, 'the process exited');
            assert.ok(tookMs < 10_000, `exited ${tookMs} ms after SIGTERM`);
            console.log(`# exited ${tookMs} ms after SIGTERM with a frozen apiserver connection (code ${controller.exitCode})`);
        } finally {
            proxy.freeze(false);
            proxy.cutAll();
        }
    });

    it('never logs the token it authenticates with, even at debug level', () => {
        const token = cluster.state.adminToken;
        assert.ok(token.length >= 16, 'a real token');
        assert.ok(allOutput.length > 10, `the processes logged (${allOutput.length} lines)`);
        const leaks = allOutput.filter((line) => line.includes(token) || line.includes(token.slice(0, 12)));
        assert.deepEqual(leaks, []);
        assert.ok(!allOutput.some((line) => /authorization|bearer/i.test(line)), 'no credential header in the logs');
    });
});
