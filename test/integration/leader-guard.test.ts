// Work is never silently dropped at the edges of leadership, against a real kube-apiserver:
// a renewal that hangs ends the term on time, a write refused by the leader guard comes
// back, and a key given up on after its retries comes back at the next resync.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { LeaderElector } from '../../src/kube/leaderelection.js';
import { KubeRest } from '../../src/kube/rest.js';
import { eventually, startTestCluster } from '../../src/testing/harness.js';
import { installCrds } from '../../src/testing/crds.js';
import { TcpProxy } from '../../src/testing/tcp-proxy.js';
import { addressesOf, CountingRest, createService, createWorkload, metricValue, runExternalWorkloads, slicesOf } from './support.js';

const cluster = await startTestCluster('guard');
await installCrds(cluster.admin);

const web = { metadata: { name: 'web' }, spec: { selector: { app: 'web' }, ports: [{ name: 'http', port: 80, targetPort: 'http' as never }] } };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('leadership edges', () => {
    it('steps down at the renew deadline while a renewal hangs, and a new term starts once the apiserver answers', async () => {
        const ns = await cluster.namespace();
        const proxy = new TcpProxy('127.0.0.1', cluster.state.apiserverPort);
        const port = await proxy.start();
        const rest = new KubeRest(cluster.kubeConfig(`https://127.0.0.1:${port}`));
        const terms: { startedAt: number; stoppedAt?: number }[] = [];
        const renewDeadlineMs = 2500;
        const elector = new LeaderElector(rest, {
            namespace: ns,
            name: 'slow',
            identity: 'slow',
            leaseDurationMs: 4000,
            renewDeadlineMs,
            retryPeriodMs: 500,
            onStartedLeading: () => terms.push({ startedAt: Date.now() }),
            onStoppedLeading: () => (terms.at(-1)!.stoppedAt = Date.now()),
        });
        elector.start();
        await eventually('leading', () => elector.isLeader());
        await sleep(700); // at least one renewal done
        const frozenAt = Date.now();
        proxy.freeze(true); // requests go out, no answer comes back: a slow renew
        await eventually('stepping down while the renewal still hangs', () => terms[0]?.stoppedAt !== undefined, 10_000);
        const tookMs = terms[0]!.stoppedAt! - frozenAt;
        // The last renew started before the freeze, so the deadline falls within renewDeadline of it;
        // before this was fixed the hung request held the elector for its 30 s timeout.
        assert.ok(tookMs <= renewDeadlineMs + 500, `stepped down ${tookMs} ms after the freeze`);
        assert.equal(elector.isLeader(), false);
        proxy.freeze(false);
        proxy.cutAll(); // the frozen connections carry bytes that would now arrive out of turn
        await eventually('a new term', () => terms.length === 2 && elector.isLeader(), 15_000);
        await elector.stop();
        rest.close();
        await proxy.stop();
    });

    it('re-queues a sync whose write the leader guard refused, and writes once the guard opens', async () => {
        const ns = await cluster.namespace();
        let guardOpen = false;
        const running = await runExternalWorkloads(cluster, { namespace: ns, isLeader: () => guardOpen });
        try {
            await createService(cluster, ns, web);
            await createWorkload(cluster, ns, { name: 'vm-1', ips: ['192.0.2.1'] });
            const refused = () => metricValue(running.registry, 'mesh_endpoints_external_workloads_syncs_total', { result: 'not_leader' });
            await eventually('a sync refused by the guard', async () => (await refused()) > 0);
            assert.deepEqual(await slicesOf(cluster, ns, 'web'), []);
            guardOpen = true; // nothing else changes: only a retry can write the slice now
            await eventually('the slice written by the retry', async () => addressesOf(await slicesOf(cluster, ns, 'web')).includes('192.0.2.1'), 30_000);
        } finally {
            await running.stop();
        }
    });

    it('brings a Service given up on after its retries back at the next resync, and counts the drop', async () => {
        const ns = await cluster.namespace();
        // A ServiceAccount that may read everything the controller watches but not write slices:
        // every sync of web is refused by the apiserver until the Role is widened.
        const rules = (writeSlices: boolean) => [
            { apiGroups: [''], resources: ['services'], verbs: ['get', 'list', 'watch'] },
            { apiGroups: ['workload.linkerd.io'], resources: ['externalworkloads'], verbs: ['get', 'list', 'watch'] },
            {
                apiGroups: ['discovery.k8s.io'],
                resources: ['endpointslices'],
                verbs: writeSlices ? ['get', 'list', 'watch', 'create', 'update', 'delete'] : ['get', 'list', 'watch'],
            },
            { apiGroups: [''], resources: ['events'], verbs: ['create', 'patch'] },
            // Slices are owned by their Service (blockOwnerDeletion): OwnerReferencesPermissionEnforcement.
            { apiGroups: [''], resources: ['services/finalizers'], verbs: ['update'] },
        ];
        const rbac = `/apis/rbac.authorization.k8s.io/v1/namespaces/${ns}`;
        const role = await cluster.admin.create<{ metadata: { resourceVersion: string } }>(`${rbac}/roles`, { metadata: { name: 'ew' }, rules: rules(false) } as never);
        await cluster.admin.create(`${rbac}/rolebindings`, {
            metadata: { name: 'ew' },
            roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'ew' },
            subjects: [{ kind: 'ServiceAccount', name: 'ew', namespace: ns }],
        });
        const rest = new CountingRest((await cluster.serviceAccountClient(ns, 'ew')).kubeConfig);
        await createService(cluster, ns, web);
        await createWorkload(cluster, ns, { name: 'vm-1', ips: ['192.0.2.1'] });
        const resyncMs = 6000;
        const running = await runExternalWorkloads(cluster, { rest, namespace: ns, maxRetries: 2, resyncMs });
        try {
            const drops = () => metricValue(running.registry, 'mesh_endpoints_workqueue_drops_total', { name: 'external-workloads' });
            await eventually('web given up on after two retries', async () => (await drops()) >= 1, 30_000);
            assert.ok(rest.rejected.some((r) => r.code === 403 && r.path.includes('endpointslices')), 'the slice write was refused');
            assert.deepEqual(await slicesOf(cluster, ns, 'web'), []);
            await cluster.admin.replace(`${rbac}/roles/ew`, { metadata: { name: 'ew', resourceVersion: role.metadata.resourceVersion }, rules: rules(true) } as never);
            // Nothing changes on web or its workload: only the resync can bring the key back.
            await eventually('the slice written after the resync', async () => addressesOf(await slicesOf(cluster, ns, 'web')).includes('192.0.2.1'), 3 * resyncMs);
        } finally {
            await running.stop();
        }
    });
});
