// `mesh-endpoints status` and `check` as a user runs them (child processes) against a local
// cluster where the external-workloads controller runs with its Lease. (Workloads the CRD's
// rules refuse, and how status shows them, are covered by src/ops/workloads-report.test.ts.)
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import type { V1Service } from '@kubernetes/client-node';
import type { CheckResult } from '../../src/ops/checks.js';
import type { WorkloadsReport } from '../../src/ops/workloads-report.js';
import { installCrds } from '../../src/testing/crds.js';
import { eventually, setUp, startTestCluster } from '../../src/testing/harness.js';
import { cli, kubeconfigFile } from './cli-support.js';
import { createService, createWorkload, runExternalWorkloads, slicesOf } from './support.js';

const cluster = await startTestCluster('ops-ew');
await setUp('the CRDs', () => installCrds(cluster.admin));
const kubeconfig = cluster.state.kubeconfig;
const controllerNs = await setUp('a namespace', () => cluster.namespace('system'));
const linkNs = await setUp('a namespace', () => cluster.namespace('mc'));
const running = await setUp('the external-workloads controller', () => runExternalWorkloads(cluster, { leaseNamespace: controllerNs, identity: 'replica-a' }));

const check = async (...args: string[]) => {
    const result = await cli('check', '--kubeconfig', kubeconfig, '--controller-namespace', controllerNs, '-n', linkNs, ...args);
    return { ...result, json: () => JSON.parse(result.stdout) as { ok: boolean; results: CheckResult[] } };
};

describe('status: external workloads', () => {
    it('shows each workload of a Service as ready, not ready or left out with the reason, and its slices', async () => {
        const ns = await cluster.namespace();
        const web: V1Service = { metadata: { name: 'web' }, spec: { selector: { app: 'web' }, ports: [{ name: 'http', port: 80, targetPort: 'http' as never }] } };
        await createService(cluster, ns, web);
        await createWorkload(cluster, ns, { name: 'vm-ready', ips: ['192.0.2.1'] });
        await createWorkload(cluster, ns, { name: 'vm-down', ips: ['192.0.2.2'], ready: false });
        await createWorkload(cluster, ns, { name: 'vm-v6', ips: ['2001:db8::6'] });
        await eventually('two endpoints published', async () => (await slicesOf(cluster, ns, 'web')).flatMap((s) => s.endpoints ?? []).length === 2);

        const json = await cli('status', '--kubeconfig', kubeconfig, '--workload-namespace', ns, '-n', linkNs, '-o', 'json');
        assert.equal(json.code, 0, json.stderr);
        const report = JSON.parse(json.stdout) as { externalWorkloads: WorkloadsReport; links: unknown[] };
        assert.deepEqual(report.links, []);
        const [service] = report.externalWorkloads.services;
        assert.equal(`${service!.namespace}/${service!.name}`, `${ns}/web`);
        assert.deepEqual(
            service!.workloads.map((w) => [w.name, w.state, w.addresses.join(','), w.problems.map((p) => p.split(':')[0]).join(',')]),
            [
                ['vm-down', 'not-ready', '192.0.2.2', ''],
                ['vm-ready', 'ready', '192.0.2.1', ''],
                ['vm-v6', 'left-out', '', 'NoAddressOfServiceFamily'],
            ],
        );
        assert.deepEqual(service!.slices.map((s) => [s.addressType, s.endpoints, s.ready]), [['IPv4', 2, 1]]);

        const table = await cli('status', '--kubeconfig', kubeconfig, '--workload-namespace', ns, '-n', linkNs);
        assert.equal(table.code, 0, table.stderr);
        assert.match(table.stdout, new RegExp(`Service ${ns}/web: 1 ready, 1 not-ready, 1 left-out`));
        assert.match(table.stdout, /vm-v6 +left-out +- +NoAddressOfServiceFamily: the Service serves IPv4/);
        assert.match(table.stdout, new RegExp(`No Link in namespace ${linkNs}\\.`));
    });

    it('exits 1 with one line when the apiserver cannot be reached or a flag is wrong', async () => {
        const unreachable = join(tmpdir(), `mesh-endpoints-${process.pid}-unreachable.kubeconfig`);
        writeFileSync(unreachable, ['apiVersion: v1', 'kind: Config', 'clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]', 'users: [{name: u, user: {token: t}}]', 'contexts: [{name: c, context: {cluster: c, user: u}}]', 'current-context: c', ''].join('\n'));
        const down = await cli('status', '--kubeconfig', unreachable);
        assert.equal(down.code, 1);
        assert.match(down.stderr, /^mesh-endpoints: .*ECONNREFUSED.*\n$/);
        assert.equal(down.stdout, '');
        const badFormat = await cli('status', '--kubeconfig', kubeconfig, '-o', 'yaml');
        assert.equal(badFormat.code, 1);
        assert.match(badFormat.stderr, /argument 'yaml' is invalid\. Allowed choices are table, json/);
    });
});

describe('check', () => {
    it('passes with the CRDs installed, a live external-workloads leader and an admin caller; no Link means no service mirror is needed, no MCS CRDs that MCS is not served', async () => {
        await eventually('the Lease held', async () => running.manager.isLeader());
        const result = await check();
        assert.equal(result.code, 0, result.stdout + result.stderr);
        assert.match(result.stdout, /✔ externalworkloads\.workload\.linkerd\.io is installed at the expected versions/);
        assert.match(result.stdout, /✔ links\.multicluster\.linkerd\.io is installed at the expected versions/);
        assert.match(result.stdout, new RegExp(`✔ external-workloads has exactly one live leader \\(Lease ${controllerNs}/mesh-endpoints-external-workloads\\): leader replica-a, renewed \\d+s ago`));
        assert.match(result.stdout, /‼ service-mirror has exactly one live leader .*: the Lease does not exist/);
        assert.match(result.stdout, /✔ you may read what status, gateways and check read/);
        assert.match(result.stdout, /‼ the ServiceExport and ServiceImport CRDs are installed: not installed: MCS is not served/);
        assert.match(result.stdout, /Status check results are ✔ \(2 warnings\)/);
    });

    it('fails, naming each missing right, for a caller without rights, and still runs every other check', async () => {
        const sa = await cluster.serviceAccountClient(controllerNs, 'nobody');
        const result = await check('--kubeconfig', kubeconfigFile(sa, 'nobody'), '-o', 'json');
        sa.close();
        assert.equal(result.code, 1);
        const { ok, results } = result.json();
        assert.equal(ok, false);
        const rbac = results.find((r) => r.description === 'you may read what status, gateways and check read');
        assert.equal(rbac?.status, 'fail');
        assert.match(rbac!.detail!, /list services cluster-wide \(status\)/);
        assert.match(rbac!.detail!, /get customresourcedefinitions\.apiextensions\.k8s\.io cluster-wide \(check\)/);
        assert.ok(results.some((r) => r.category === 'CRDs' && r.status === 'fail' && /forbidden/i.test(r.detail ?? '')));
    });

    it('fails when the controller has stopped and released its Lease', async () => {
        await running.stop();
        const result = await check();
        assert.equal(result.code, 1);
        assert.match(result.stdout, /✖ external-workloads has exactly one live leader .*: the Lease has no holder/);
        assert.match(result.stdout, /hint: start the external-workloads controller/);
        assert.match(result.stdout, /Status check results are ✖ \(1 failed, 2 warnings\)/);
    });
});
