// `make demo`: the external-workloads controller on the embedded local control plane.
// Starts a cluster, installs our CRDs, applies examples/, runs the controller through
// its CLI and prints the EndpointSlices it writes; then cleans everything up.
import type { V1EndpointSlice } from '@kubernetes/client-node';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { parseAllDocuments } from 'yaml';
import { KubeRest } from '../kube/rest.js';
import { collectionPath, EndpointSlices, ExternalWorkloads, objectPath, Services } from '../kube/resources.js';
import { down, up } from '../testing/cluster.js';
import { installCrds } from '../testing/crds.js';
import { eventually, kubeConfigFor } from '../testing/harness.js';
import { slicesTable } from './table.js';

const say = (text: string) => process.stdout.write(`${text}\n`);
const step = (text: string) => say(`\n==> ${text}`);

async function slices(rest: KubeRest): Promise<V1EndpointSlice[]> {
    const list = await rest.get<{ items: V1EndpointSlice[] }>(collectionPath(EndpointSlices, 'default'), {
        labelSelector: 'endpointslice.kubernetes.io/managed-by=external-workloads.mesh-endpoints.io',
    });
    return list.items;
}

async function main(): Promise<void> {
    step('starting the local control plane (etcd + kube-apiserver built from their Go modules)');
    const state = await up('demo');
    say(`kube-apiserver ${state.server}, kubeconfig ${state.kubeconfig}`);
    const rest = new KubeRest(kubeConfigFor(state));
    const controller = spawn(
        process.execPath,
        ['--import', 'tsx', 'src/cli/main.ts', 'external-workloads', '--kubeconfig', state.kubeconfig, '--namespace', 'kube-system', '--admin-addr', '127.0.0.1:0', '--log-level', 'warn'],
        { stdio: ['ignore', 'inherit', 'pipe'] },
    );
    let admin = '';
    controller.stderr!.on('data', (d: Buffer) => {
        const text = d.toString();
        admin ||= /admin endpoint listening on (\S+)/.exec(text)?.[1] ?? '';
        if (!text.startsWith('admin endpoint')) process.stderr.write(text);
    });
    try {
        step('installing the CRDs from charts/mesh-endpoints/crds/');
        await installCrds(rest);

        step('applying examples/nginx.yaml (Service nginx-svc + ExternalWorkload "test", v1alpha1 as in Linkerd docs)');
        for (const doc of parseAllDocuments(readFileSync('examples/nginx.yaml', 'utf8'))) {
            const obj = doc.toJS() as { apiVersion: string; kind: string; metadata: { name: string } };
            const path = obj.kind === 'Service' ? collectionPath(Services, 'default') : `/apis/${obj.apiVersion}/namespaces/default/externalworkloads`;
            await rest.create(path, obj);
            say(`${obj.kind.toLowerCase()}/${obj.metadata.name} created`);
        }

        step('mesh-endpoints external-workloads is running; its EndpointSlices:');
        await eventually('the slice for nginx-svc', async () => (await slices(rest)).length > 0);
        say(slicesTable(await slices(rest)));

        step('the workload reports Ready=True (kubectl patch externalworkload test --subresource=status ...)');
        await rest.mergePatch(objectPath(ExternalWorkloads, 'default', 'test', 'status'), {
            status: { conditions: [{ type: 'Ready', status: 'True' }] },
        });
        await eventually('the endpoint to turn ready', async () => (await slices(rest))[0]?.endpoints?.[0]?.conditions?.ready === true);
        say(slicesTable(await slices(rest)));

        step(`metrics from http://${admin}/metrics`);
        const metrics = await (await fetch(`http://${admin}/metrics`)).text();
        say(metrics.split('\n').filter((l) => /^mesh_endpoints_(leader|external_workloads_(endpointslice_changes_total|syncs_total|num_endpoint_slices))/.test(l)).join('\n'));
    } finally {
        controller.kill('SIGTERM');
        await new Promise((r) => controller.once('exit', r));
        rest.close();
        if (process.env.KEEP_CLUSTER) say(`\ncluster kept running: KUBECONFIG=${state.kubeconfig}`);
        else {
            step('stopping the local control plane');
            await down('demo');
        }
    }
}

main().catch((err: Error) => {
    process.stderr.write(`demo failed: ${err.message}\n`);
    process.exit(1);
});
