// VMs that register themselves, the controller's side, against a real apiserver (with
// kube-controller-manager, whose garbage collector follows the workloads' owner references).
// Here the test writes the registration Leases itself, as an agent would; the agent processes
// are workload-agent.test.ts's. Group durations are short: heartbeat 1s, lease 3s, grace 8s.
import assert from 'node:assert/strict';
import { createServer, type AddressInfo } from 'node:net';
import { after, describe, it } from 'node:test';
import { collectionPath, ExternalWorkloadGroups, objectPath } from '../../src/kube/resources.js';
import { installCrds } from '../../src/testing/crds.js';
import { eventually, setUp, startTestCluster } from '../../src/testing/harness.js';
import { createGroup, getWorkload, groupObject, groupStatusOf, leaseBody, leaseExists, readyOf, writeLease } from './group-support.js';
import { createService, eventsAbout, runExternalWorkloads, slicesOf, type RunningController } from './support.js';

const cluster = await startTestCluster('groups', { controllers: {} });
await setUp('the CRDs', () => installCrds(cluster.admin));
const ns = await setUp('a namespace', () => cluster.namespace('vms'));
const system = await setUp('a namespace', () => cluster.namespace('system'));
// What a template's probe reaches (every probe goes here, through the address override).
const probed = createServer((socket) => socket.end());
await setUp('a probe target', () => new Promise<void>((resolve) => probed.listen(0, '127.0.0.1', resolve)));
after(() => probed.close());
const healthChecks = () => ({ addressOverride: { host: '127.0.0.1', port: (probed.address() as AddressInfo).port } });
const start = () => runExternalWorkloads(cluster, { workloadGroups: true, leaseNamespace: system, identity: `replica-${Date.now()}`, healthChecks: healthChecks() });
let controller: RunningController = await setUp('the controller', start);
after(() => controller.stop());

const admin = cluster.admin;
const endpointOf = async (address: string) => (await slicesOf(cluster, ns, 'web')).flatMap((s) => s.endpoints ?? []).find((e) => e.addresses.includes(address));

describe('ExternalWorkloadGroup: the CRD’s own rules, refused by the apiserver', () => {
    const refused: Array<[string, Parameters<typeof groupObject>[1], RegExp]> = [
        ['a range with host bits', { addressRanges: ['10.20.0.1/16'] }, /no host bits/],
        ['a range that is no CIDR', { addressRanges: ['10.20.0.0'] }, /must be a CIDR/],
        ['a lease duration not longer than the heartbeat', { heartbeatPeriod: '10s', leaseDuration: '10s' }, /leaseDuration must be longer than heartbeatPeriod/],
        ['the group label in the template', { labels: { 'mesh-endpoints.io/workload-group': 'other' } }, /set by the controller/],
    ];
    for (const [what, spec, message] of refused) {
        it(`refuses ${what}`, async () => {
            await assert.rejects(admin.create(collectionPath(ExternalWorkloadGroups, ns), groupObject('bad', spec) as never), message);
        });
    }
    it('refuses an unknown meshTLS placeholder', async () => {
        const group = groupObject('bad');
        group.spec.template.spec.meshTLS.identity = '{hostname}.example';
        await assert.rejects(admin.create(collectionPath(ExternalWorkloadGroups, ns), group as never), /the only placeholders are/);
    });
});

describe('VMs that register themselves: the controller materialises, expires and cleans up', () => {
    let groupUid = '';
    it('three registrations become three workloads from the template, ready, in the Service’s slices', async () => {
        await createService(cluster, ns, { metadata: { name: 'web' }, spec: { selector: { app: 'web' }, ports: [{ port: 80, targetPort: 'http' as never }] } });
        groupUid = (await createGroup(admin, ns, 'web')).metadata.uid;
        for (const [vm, ip] of [['vm-1', '10.20.0.1'], ['vm-2', '10.20.0.2'], ['vm-3', '10.20.0.3']] as const) await writeLease(admin, ns, leaseBody(ns, 'web', vm, [ip]));
        await eventually('three ready endpoints', async () => (await slicesOf(cluster, ns, 'web')).flatMap((s) => s.endpoints ?? []).filter((e) => e.conditions?.ready).length === 3, 20_000);
        const w = (await getWorkload(admin, ns, 'web.vm-1'))!;
        assert.deepEqual(w.metadata.labels, { app: 'web', 'mesh-endpoints.io/workload-group': 'web' });
        assert.deepEqual(w.metadata.ownerReferences?.map((r) => [r.kind, r.uid]), [['ExternalWorkloadGroup', groupUid]]);
        assert.deepEqual(w.spec.meshTLS, { identity: `web.vm-1.${ns}.serviceaccount.identity.linkerd.cluster.local`, serverName: 'vm-1.web' });
        assert.equal((await readyOf(admin, ns, 'web.vm-1'))?.reason, 'HeartbeatRenewed');
        await eventually('the group’s status counts them', async () => {
            const s = await groupStatusOf(admin, ns, 'web');
            return s.registered === 3 && s.ready === 3 && s.current === 3 && s.expired === 0;
        });
    });

    it('an address outside the group’s ranges is refused: left out, a Warning Event on the group, counted in its status', async () => {
        await writeLease(admin, ns, leaseBody(ns, 'web', 'vm-1', ['203.0.113.50', '10.20.0.1']));
        await eventually('the refusal counted', async () => (await groupStatusOf(admin, ns, 'web')).refusedAddresses === 1);
        assert.deepEqual((await getWorkload(admin, ns, 'web.vm-1'))!.spec.workloadIPs, [{ ip: '10.20.0.1' }]);
        await eventually('the Warning Event', async () => (await eventsAbout(cluster, ns, 'web', 'AddressRefused')).some((e) => /203\.0\.113\.50 is outside the address ranges of group web/.test(e.message ?? '')));
        assert.equal(await endpointOf('203.0.113.50'), undefined);
    });

    it('a heartbeat that stops: not ready once the lease duration passes, then deleted with its Lease after the grace period', async () => {
        const lastRenew = Date.now();
        await writeLease(admin, ns, leaseBody(ns, 'web', 'vm-2', ['10.20.0.2'], { renewTime: new Date(lastRenew) }));
        await eventually('Ready=False (HeartbeatExpired)', async () => (await readyOf(admin, ns, 'web.vm-2'))?.reason === 'HeartbeatExpired', 10_000);
        const notReadyAfter = Date.now() - lastRenew;
        assert.ok(notReadyAfter < 3000 + 2000, `not ready ${notReadyAfter} ms after the last renewal (lease duration 3 s)`);
        await eventually('the endpoint not ready', async () => (await endpointOf('10.20.0.2'))?.conditions?.ready === false);
        await eventually('the HeartbeatExpired Event', async () => (await eventsAbout(cluster, ns, 'web.vm-2', 'HeartbeatExpired')).length > 0);
        await eventually('deleted after the grace period', async () => (await getWorkload(admin, ns, 'web.vm-2')) === undefined, 15_000);
        assert.ok(Date.now() - lastRenew >= 3000 + 8000 - 1000, 'not before the grace period');
        assert.equal(await leaseExists(admin, ns, 'web.vm-2'), false, 'the Lease is gone with it');
        await eventually('gone from the slices', async () => (await endpointOf('10.20.0.2')) === undefined);
    });

    it('a withdrawn registration is not ready at once; a heartbeat back within the grace period makes it ready again', async () => {
        await writeLease(admin, ns, leaseBody(ns, 'web', 'vm-3', ['10.20.0.3'], { withdrawn: true }));
        await eventually('Ready=False (Withdrawn)', async () => (await readyOf(admin, ns, 'web.vm-3'))?.reason === 'Withdrawn', 2000);
        await writeLease(admin, ns, leaseBody(ns, 'web', 'vm-3', ['10.20.0.3']));
        await eventually('ready again', async () => (await readyOf(admin, ns, 'web.vm-3'))?.status === 'True', 2000);
    });

    it('a template change rolls to every workload, and the status says when all are current', async () => {
        const renewing = setInterval(() => void writeLease(admin, ns, leaseBody(ns, 'web', 'vm-3', ['10.20.0.3'])).catch(() => undefined), 500);
        try {
            const path = objectPath(ExternalWorkloadGroups, ns, 'web');
            await admin.mergePatch(path, { spec: { template: { metadata: { labels: { app: 'web', track: 'v2' } } } } });
            await eventually('vm-3 relabelled', async () => (await getWorkload(admin, ns, 'web.vm-3'))?.metadata.labels?.track === 'v2');
            await eventually('all current', async () => {
                const s = await groupStatusOf(admin, ns, 'web');
                return s.observedGeneration === 2 && s.current === s.registered && s.conditions?.find((c) => c.type === 'TemplateRolledOut')?.status === 'True';
            });
        } finally {
            clearInterval(renewing);
        }
    });

    it('a failover while a heartbeat lapses changes nothing: the new leader computes expiry from renewTime', async () => {
        await controller.stop();
        const lastRenew = Date.now();
        await writeLease(admin, ns, leaseBody(ns, 'web', 'vm-4', ['10.20.0.4'], { renewTime: new Date(lastRenew) }));
        // No controller while it lapses: the next one marks it at once and keeps the grace period counted from renewTime.
        await new Promise((r) => setTimeout(r, 4000));
        controller = await start();
        await eventually('created and not ready', async () => (await readyOf(admin, ns, 'web.vm-4'))?.reason === 'HeartbeatExpired', 10_000);
        await eventually('deleted at renewTime + lease + grace', async () => (await getWorkload(admin, ns, 'web.vm-4')) === undefined, 15_000);
        const at = Date.now() - lastRenew;
        assert.ok(at >= 10_000 && at < 15_000, `deleted ${at} ms after the last renewal (3 s + 8 s)`);
    });

    it('with a probe in the template: a lapse is not undone by the probe, and once the heartbeat is back the probe makes it ready', async () => {
        await createGroup(admin, ns, 'probed', { labels: { app: 'probed' }, annotations: { 'mesh-endpoints.io/probe': 'tcp:8080', 'mesh-endpoints.io/probe-period': '1s' } });
        const renewing = setInterval(() => void writeLease(admin, ns, leaseBody(ns, 'probed', 'vm-1', ['10.20.1.1'])).catch(() => undefined), 500);
        try {
            await eventually('ready by its probe', async () => (await readyOf(admin, ns, 'probed.vm-1'))?.reason === 'ProbeSucceeded', 20_000);
        } finally {
            clearInterval(renewing);
        }
        await eventually('not ready: heartbeat expired', async () => (await readyOf(admin, ns, 'probed.vm-1'))?.reason === 'HeartbeatExpired', 10_000);
        assert.equal((await getWorkload(admin, ns, 'probed.vm-1'))?.metadata.annotations?.['mesh-endpoints.io/probe'], undefined, 'not probed while lapsed');
        await new Promise((r) => setTimeout(r, 2500)); // more than two probe periods: no probe marks it ready again
        assert.equal((await readyOf(admin, ns, 'probed.vm-1'))?.reason, 'HeartbeatExpired');
        await writeLease(admin, ns, leaseBody(ns, 'probed', 'vm-1', ['10.20.1.1']));
        await eventually('ready again by its probe', async () => (await readyOf(admin, ns, 'probed.vm-1'))?.reason === 'ProbeSucceeded', 10_000);
        await eventually('the HeartbeatRenewed Event', async () => (await eventsAbout(cluster, ns, 'probed.vm-1', 'HeartbeatRenewed')).length > 0);
    });

    it('deleting the group deletes its workloads (owner references, the garbage collector)', async () => {
        await writeLease(admin, ns, leaseBody(ns, 'web', 'vm-5', ['10.20.0.5']));
        await eventually('vm-5 registered', async () => (await getWorkload(admin, ns, 'web.vm-5')) !== undefined);
        await admin.delete(objectPath(ExternalWorkloadGroups, ns, 'web'));
        await eventually('its workload collected', async () => (await getWorkload(admin, ns, 'web.vm-5')) === undefined, 30_000);
        assert.equal(await leaseExists(admin, ns, 'web.vm-5'), true, 'the Lease is the agent’s: a group made again finds it');
    });
});
