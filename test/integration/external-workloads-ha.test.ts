// Two replicas of `mesh-endpoints external-workloads`, as separate processes started
// through the CLI: only the Lease holder writes, and the standby takes over.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1Service } from '@kubernetes/client-node';
import { objectPath, Services } from '../../src/kube/resources.js';
import { installCrds } from '../../src/testing/crds.js';
import { eventually, setUp, startTestCluster } from '../../src/testing/harness.js';
import { ControllerProcess, FAST_ELECTION } from './process-support.js';
import { addressesOf, createService, createWorkload, slicesOf } from './support.js';

const cluster = await startTestCluster('ew-ha');
await setUp('the CRDs', () => installCrds(cluster.admin));

function startReplica(identity: string, leaseNamespace: string): ControllerProcess {
    return ControllerProcess.externalWorkloads(cluster.state.kubeconfig, leaseNamespace, identity, [
        ...FAST_ELECTION,
        '--batch-period', '100ms',
        '--log-level', 'warn',
    ]);
}

const writes = async (r: ControllerProcess) =>
    (await r.metric('mesh_endpoints_external_workloads_endpointslice_changes_total{operation="create"}')) +
    (await r.metric('mesh_endpoints_external_workloads_endpointslice_changes_total{operation="update"}')) +
    (await r.metric('mesh_endpoints_external_workloads_endpointslice_changes_total{operation="delete"}'));

describe('external workloads in HA', () => {
    it('only the leader writes; after it stops the standby takes over and converges', async () => {
        const ns = await cluster.namespace();
        const leaseNs = await cluster.namespace('system');
        const web: V1Service = { metadata: { name: 'web' }, spec: { selector: { app: 'web' }, ports: [{ name: 'http', port: 80, targetPort: 'http' as never }] } };
        await createService(cluster, ns, web);
        await createWorkload(cluster, ns, { name: 'vm-1', ips: ['192.0.2.1'] });

        const a = startReplica('replica-a', leaseNs);
        const b = startReplica('replica-b', leaseNs);
        // Two processes starting at once take half a minute and more on a loaded two-core machine.
        await eventually('both admin endpoints', () => Boolean(a.admin && b.admin), 90_000);
        await eventually('both ready', async () => (await a.ready()) && (await b.ready()));
        await eventually('vm-1 published', async () => addressesOf(await slicesOf(cluster, ns, 'web')).join() === '192.0.2.1');
        await createWorkload(cluster, ns, { name: 'vm-2', ips: ['192.0.2.2'] });
        await eventually('vm-2 published', async () => addressesOf(await slicesOf(cluster, ns, 'web')).join() === '192.0.2.1,192.0.2.2');

        const leaders = [await a.metric('mesh_endpoints_leader'), await b.metric('mesh_endpoints_leader')];
        assert.deepEqual([...leaders].sort(), [0, 1], 'exactly one leader');
        const [leader, standby] = leaders[0] === 1 ? [a, b] : [b, a];
        assert.ok((await writes(leader)) >= 2, 'the leader wrote the slices');
        assert.equal(await writes(standby), 0, 'the standby wrote nothing');

        leader.proc.kill('SIGTERM');
        assert.equal(await leader.exit, 0, 'graceful shutdown exits 0');
        await eventually('the standby to lead', async () => (await standby.metric('mesh_endpoints_leader')) === 1, 10_000);
        await createWorkload(cluster, ns, { name: 'vm-3', ips: ['192.0.2.3'] });
        await eventually('vm-3 published by the new leader', async () =>
            addressesOf(await slicesOf(cluster, ns, 'web')).join() === '192.0.2.1,192.0.2.2,192.0.2.3',
        );
        assert.ok((await writes(standby)) >= 1, 'the new leader wrote');
        standby.proc.kill('SIGTERM');
        assert.equal(await standby.exit, 0);

        // The Service goes while no replica leads: the next leader's first term deletes its slices
        // (found by the chaos soak: they waited for the resync, 10 minutes by default).
        await cluster.admin.delete(objectPath(Services, ns, 'web'));
        const next = startReplica('replica-c', leaseNs);
        try {
            await eventually('the slices of the deleted Service gone', async () => (await slicesOf(cluster, ns, 'web')).length === 0, 90_000);
        } finally {
            next.proc.kill('SIGKILL');
        }
    });
});
