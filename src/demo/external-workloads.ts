// The external-workloads part of `make demo`: applies examples/nginx.yaml to the local cluster,
// runs `mesh-endpoints external-workloads` and prints the EndpointSlices it writes.
import type { V1EndpointSlice } from '@kubernetes/client-node';
import { readFileSync } from 'node:fs';
import { parseAllDocuments } from 'yaml';
import type { KubeRest } from '../kube/rest.js';
import { collectionPath, EndpointSlices, ExternalWorkloads, objectPath, Services } from '../kube/resources.js';
import type { ClusterState } from '../testing/cluster.js';
import { eventually } from '../testing/harness.js';
import { startController } from './cli.js';
import { say, step } from './narrate.js';
import { slicesTable } from './table.js';

async function slices(rest: KubeRest): Promise<V1EndpointSlice[]> {
    const list = await rest.get<{ items: V1EndpointSlice[] }>(collectionPath(EndpointSlices, 'default'), {
        labelSelector: 'endpointslice.kubernetes.io/managed-by=external-workloads.mesh-endpoints.io',
    });
    return list.items;
}

/** Expects our CRDs installed on the cluster. */
export async function externalWorkloadsDemo(cluster: ClusterState, rest: KubeRest): Promise<void> {
    const controller = await startController('external-workloads', '--kubeconfig', cluster.kubeconfig, '--namespace', 'kube-system', '--admin-addr', '127.0.0.1:0', '--log-level', 'warn');
    try {
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

        step(`metrics from http://${controller.admin}/metrics`);
        const metrics = await (await fetch(`http://${controller.admin}/metrics`)).text();
        say(metrics.split('\n').filter((l) => /^mesh_endpoints_(leader|reconcile_total\{name="external-workloads"|external_workloads_(endpointslice_changes_total|num_endpoint_slices))/.test(l)).join('\n'));
    } finally {
        step('stopping mesh-endpoints external-workloads (SIGTERM)');
        say(`exit code ${await controller.stop()}`);
    }
}
