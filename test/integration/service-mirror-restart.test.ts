// The service mirror's gateway state outlives a process: a restart or failover starts each
// gateway name from what the cluster records (the Link status), so a DNS outage that meets a
// rollout keeps the mirrors ready for the stale window counted from the last good answer, and
// a failover with unchanged DNS writes nothing. Processes are killed, not asked to stop.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { eventually } from '../../src/testing/harness.js';
import { collectionPath, EndpointSlices, Leases, Links, objectPath, Secrets } from '../../src/kube/resources.js';
import {
    apiserverWrites,
    createLink,
    createRemoteService,
    endpointsOf,
    EXPORTED,
    getLink,
    pairedNamespace,
    runServiceMirror,
    startMirrorEnv,
    mirrorHolds,
    startMirrorProcess,
} from './mirror-support.js';

const env = await startMirrorEnv('mirror-restart');
const MIRROR_WRITES = ['endpointslices', 'services', 'links'];
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('service mirror across process restarts', () => {
    it('keeps the mirrors ready through a restart during a DNS outage, until the stale window counted from the last good answer ends', async () => {
        const ctlNs = await env.local.namespace('mc-restart');
        env.dns.setRecords('restart.gw.test', { A: [{ address: '192.0.2.31', ttl: 1 }, { address: '192.0.2.32', ttl: 1 }] });
        const labels = { ...EXPORTED, link: 'restart' };
        await createLink(env, ctlNs, { name: 'restart', gatewayAddress: 'restart.gw.test', selector: { matchLabels: labels } });
        const ns = await pairedNamespace(env);
        await createRemoteService(env, ns, 'web', { labels });
        const window = ['--dns-stale-window', '30s'];
        const first = startMirrorProcess(env, ctlNs, 'first', window);
        const ready = ['IPv4 192.0.2.31 ready', 'IPv4 192.0.2.32 ready'];
        // Deadlines that count a process start allow for a loaded machine (half a minute and more).
        await eventually('the mirror', async () => (await endpointsOf(env, ns, 'web-restart')).join() === ready.join(), 90_000);
        await eventually('the recorded answer', async () => (await getLink(env, ctlNs, 'restart')).status?.gatewayResolution?.[0]?.resolvedAt !== undefined);

        env.dns.setBehaviour('restart.gw.test', 'servfail');
        const failedAt = Date.now();
        await sleep(3000);
        first.proc.kill('SIGKILL');
        await first.exit;
        const second = startMirrorProcess(env, ctlNs, 'second', window);
        await eventually('the second process leading', () => /admin endpoint listening/.test(second.stderr()), 30_000);

        // The last good answer came at most a second before the outage; the record of it may be
        // a quarter window (7.5 s) older. Until 20 s in, the new process must keep every address ready.
        const polls = await mirrorHolds(env, ns, 'web-restart', ready, failedAt + 20_000);
        assert.ok(polls > 4, `the mirror was checked ${polls} times while the new process ran`);
        await eventually(
            'not ready once the window has run out',
            async () => (await endpointsOf(env, ns, 'web-restart')).join() === 'IPv4 192.0.2.31 not-ready,IPv4 192.0.2.32 not-ready',
            45_000,
        );
        await eventually('the status saying so', async () => (await getLink(env, ctlNs, 'restart')).status?.gatewayResolution?.[0]?.notReadyAddresses?.length === 2);
        const status = (await getLink(env, ctlNs, 'restart')).status?.gatewayResolution?.[0];
        // Stale from when the last good answer (TTL 1 s) expired, not from the restart 3 s later.
        const staleSince = Date.parse(status?.staleSince?.IPv4 ?? '');
        assert.ok(staleSince <= failedAt + 1000, `stale since ${status?.staleSince?.IPv4}, outage at ${new Date(failedAt).toISOString()}`);

        env.dns.setBehaviour('restart.gw.test', 'normal');
        await eventually('ready again once DNS answers', async () => (await endpointsOf(env, ns, 'web-restart')).join() === ready.join(), 30_000);
        second.proc.kill('SIGKILL');
    });

    it('fails over by SIGKILL with unchanged DNS and writes nothing, as counted by the apiserver', async () => {
        const ctlNs = await env.local.namespace('mc-failover');
        env.dns.setRecords('failover.gw.test', { A: [{ address: '192.0.2.41', ttl: 1 }], AAAA: [{ address: '2001:db8::41', ttl: 1 }] });
        const labels = { ...EXPORTED, link: 'failover' };
        await createLink(env, ctlNs, { name: 'failover', gatewayAddress: 'failover.gw.test, 192.0.2.49', selector: { matchLabels: labels } });
        const ns = await pairedNamespace(env);
        await Promise.all(['api', 'web', 'db'].map((name) => createRemoteService(env, ns, name, { labels })));
        const first = startMirrorProcess(env, ctlNs, 'first');
        for (const name of ['api', 'web', 'db']) {
            await eventually(`the mirror of ${name}`, async () => (await endpointsOf(env, ns, `${name}-failover`)).length === 2, 90_000);
        }
        const mirrored = async () => (await getLink(env, ctlNs, 'failover')).status?.mirrorSummary?.mirrored === 3;
        await eventually('the Link status', mirrored);
        // Let the first process settle: the status write of its first answers is behind it.
        await sleep(2000);
        const before = await apiserverWrites(env.local, MIRROR_WRITES);
        first.proc.kill('SIGKILL');
        await first.exit;
        const second = startMirrorProcess(env, ctlNs, 'second');
        await eventually('the second process holding the Lease', async () => {
            const lease = await env.local.admin.get<{ spec: { holderIdentity?: string } }>(objectPath(Leases, ctlNs, 'mesh-endpoints-service-mirror'));
            return lease.spec.holderIdentity === 'second';
        }, 90_000);
        // Several TTLs and a full reconcile of every mirror by the new leader.
        await sleep(8000);
        assert.ok(/admin endpoint listening/.test(second.stderr()));
        assert.deepEqual(await apiserverWrites(env.local, MIRROR_WRITES), before, 'slices, mirror Services and the Link status were not written');
        for (const name of ['api', 'web', 'db']) {
            assert.deepEqual(await endpointsOf(env, ns, `${name}-failover`), ['IPv4 192.0.2.41 ready', 'IPv4 192.0.2.49 ready']);
        }
        second.proc.kill('SIGKILL');
    });

    it('keeps the mirrors as they are through a Link edit and a rotated credentials Secret while DNS fails', async () => {
        const ctlNs = await env.local.namespace('mc-edit');
        env.dns.setRecords('edit.gw.test', { A: [{ address: '192.0.2.51', ttl: 1 }] });
        const labels = { ...EXPORTED, link: 'edit' };
        await createLink(env, ctlNs, { name: 'edit', gatewayAddress: 'edit.gw.test', selector: { matchLabels: labels } });
        const ns = await pairedNamespace(env);
        await createRemoteService(env, ns, 'web', { labels });
        const running = await runServiceMirror(env, ctlNs, { dnsPolicy: { minTtlMs: 1000, maxTtlMs: 3000, staleWindowMs: 60_000 } });
        const ready = ['IPv4 192.0.2.51 ready'];
        await eventually('the mirror', async () => (await endpointsOf(env, ns, 'web-edit')).join() === ready.join());
        env.dns.setBehaviour('edit.gw.test', 'servfail');
        await eventually('the failure seen', () => running.controller.controllerOf('edit')?.nameStates.get('edit.gw.test')?.lastError !== undefined);
        const writesBefore = running.rest.writesMatching('/endpointslices', '/services/').length;

        const watch = running.controller.remoteWatchOf('edit');
        await env.local.admin.mergePatch(objectPath(Links, ctlNs, 'edit'), { spec: { gatewayPort: '4144' } });
        await eventually('a new watch for the edited Link', () => running.controller.remoteWatchOf('edit') !== watch && running.controller.controllerOf('edit')?.ready === true);
        const edited = running.controller.remoteWatchOf('edit');
        await env.local.admin.mergePatch(objectPath(Secrets, ctlNs, 'creds-edit'), { metadata: { annotations: { rotated: 'yes' } } });
        await eventually('a new watch for the rotated Secret', () => running.controller.remoteWatchOf('edit') !== edited && running.controller.controllerOf('edit')?.ready === true);
        await mirrorHolds(env, ns, 'web-edit', ready, Date.now() + 3000);
        const port = async () => (await env.local.admin.get<{ items: { ports?: { port?: number }[] }[] }>(collectionPath(EndpointSlices, ns), { labelSelector: 'kubernetes.io/service-name=web-edit' })).items[0]?.ports?.[0]?.port;
        // The edit changed the gateway port: the one slice write it calls for, and no other.
        await eventually('the new gateway port', async () => (await port()) === 4144);
        assert.deepEqual(await endpointsOf(env, ns, 'web-edit'), ready);
        const written = running.rest.writesMatching('/endpointslices', '/services/').slice(writesBefore);
        assert.ok(written.length <= 1, `only the port change was written: ${JSON.stringify(written)}`);
        await running.stop();
    });
});
