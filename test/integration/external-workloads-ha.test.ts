// Two replicas of `mesh-endpoints external-workloads`, as separate processes started
// through the CLI: only the Lease holder writes, and the standby takes over.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { describe, it } from 'node:test';
import type { V1Service } from '@kubernetes/client-node';
import { objectPath, Services } from '../../src/kube/resources.js';
import { installCrds } from '../../src/testing/crds.js';
import { eventually, startTestCluster } from '../../src/testing/harness.js';
import { addressesOf, createService, createWorkload, slicesOf } from './support.js';

const cluster = await startTestCluster('ew-ha');
await installCrds(cluster.admin);

interface Replica {
    proc: ChildProcess;
    admin?: string;
    exit: Promise<number | null>;
}

function startReplica(identity: string, leaseNamespace: string): Replica {
    const proc = spawn(
        process.execPath,
        [
            '--import', 'tsx', 'src/cli/main.ts', 'external-workloads',
            '--kubeconfig', cluster.state.kubeconfig,
            '--namespace', leaseNamespace,
            '--identity', identity,
            '--admin-addr', '127.0.0.1:0',
            '--lease-duration', '4s', '--renew-deadline', '2500ms', '--retry-period', '500ms',
            '--batch-period', '100ms',
            '--log-level', 'warn',
        ],
        { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    const replica: Replica = { proc, exit: new Promise((r) => proc.once('exit', (code) => r(code))) };
    proc.stderr!.on('data', (d: Buffer) => {
        const match = /admin endpoint listening on (\S+)/.exec(d.toString());
        if (match) replica.admin = match[1];
    });
    return replica;
}

async function scrape(replica: Replica, metric: string, labels = ''): Promise<number> {
    const text = await (await fetch(`http://${replica.admin}/metrics`)).text();
    const line = text.split('\n').find((l) => l.startsWith(`${metric}${labels ? `{${labels}}` : ''} `));
    return line ? Number(line.split(' ').pop()) : NaN;
}

const writes = async (r: Replica) =>
    (await scrape(r, 'mesh_endpoints_external_workloads_endpointslice_changes_total', 'operation="create"')) +
    (await scrape(r, 'mesh_endpoints_external_workloads_endpointslice_changes_total', 'operation="update"')) +
    (await scrape(r, 'mesh_endpoints_external_workloads_endpointslice_changes_total', 'operation="delete"'));

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
        await eventually('both ready', async () => (await fetch(`http://${a.admin}/readyz`)).ok && (await fetch(`http://${b.admin}/readyz`)).ok);
        await eventually('vm-1 published', async () => addressesOf(await slicesOf(cluster, ns, 'web')).join() === '192.0.2.1');
        await createWorkload(cluster, ns, { name: 'vm-2', ips: ['192.0.2.2'] });
        await eventually('vm-2 published', async () => addressesOf(await slicesOf(cluster, ns, 'web')).join() === '192.0.2.1,192.0.2.2');

        const leaders = [await scrape(a, 'mesh_endpoints_leader'), await scrape(b, 'mesh_endpoints_leader')];
        assert.deepEqual([...leaders].sort(), [0, 1], 'exactly one leader');
        const [leader, standby] = leaders[0] === 1 ? [a, b] : [b, a];
        assert.ok((await writes(leader)) >= 2, 'the leader wrote the slices');
        assert.equal(await writes(standby), 0, 'the standby wrote nothing');

        leader.proc.kill('SIGTERM');
        assert.equal(await leader.exit, 0, 'graceful shutdown exits 0');
        await eventually('the standby to lead', async () => (await scrape(standby, 'mesh_endpoints_leader')) === 1, 10_000);
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
