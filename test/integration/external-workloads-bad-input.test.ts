// Bad input never blocks, end to end. The CRD's CEL rules refuse bad addresses at apply
// time, but objects stored before a rule existed are never re-validated, so the controller
// must cope on its own: the workloads here are created under the CRD without its rules (and
// without the port range), then the real CRD is put back before the controller starts.
import assert from 'node:assert/strict';
import type { V1EndpointSlice } from '@kubernetes/client-node';
import { after, describe, it } from 'node:test';
import type { ProblemReason } from '../../src/externalworkloads/types.js';
import { ApiError } from '../../src/kube/errors.js';
import { ExternalWorkloads, objectPath } from '../../src/kube/resources.js';
import { installCrds } from '../../src/testing/crds.js';
import { eventually, setUp, startTestCluster } from '../../src/testing/harness.js';
import {
    addressesOf,
    createService,
    createWorkload,
    endpointsByWorkload,
    eventsAbout,
    metricValue,
    runExternalWorkloads,
    slicesOf,
    SyncLog,
    withoutCelRules,
    type WorkloadSpec,
} from './support.js';

interface Case {
    workload: WorkloadSpec;
    /** The one problem the workload has, or none. */
    reason?: ProblemReason;
    /** What the Service `web` (dual-stack) or `dns` (headless) publishes of it. */
    published: string[];
}

const web: Case[] = [
    { workload: { name: 'good-1', ips: ['192.0.2.1', '2001:db8::1'] }, published: ['192.0.2.1', '2001:db8::1'] },
    { workload: { name: 'good-2', ips: ['192.0.2.2'] }, published: ['192.0.2.2'] },
    { workload: { name: 'not-an-ip', ips: ['192.0.2.300'] }, reason: 'InvalidIP', published: [] },
    { workload: { name: 'loopback', ips: ['127.0.0.1'] }, reason: 'UnusableIP', published: [] },
    { workload: { name: 'link-local', ips: ['fe80::1'] }, reason: 'UnusableIP', published: [] },
    { workload: { name: 'multicast', ips: ['224.0.0.251'] }, reason: 'UnusableIP', published: [] },
    { workload: { name: 'unspecified', ips: ['0.0.0.0'] }, reason: 'UnusableIP', published: [] },
    { workload: { name: 'two-ipv4', ips: ['192.0.2.10', '192.0.2.11'] }, reason: 'DuplicateIPFamily', published: ['192.0.2.10'] },
    { workload: { name: 'loopback-and-v6', ips: ['::1', '2001:db8::12'] }, reason: 'UnusableIP', published: ['2001:db8::12'] },
    { workload: { name: 'port-zero', ips: ['192.0.2.13'], ports: [{ name: 'http', port: 0 }] }, reason: 'InvalidWorkload', published: [] },
];
const dns: Case[] = [
    { workload: { name: 'plain', ips: ['192.0.2.21'], labels: { app: 'dns' } }, published: ['192.0.2.21'] },
    { workload: { name: 'vm.dotted', ips: ['192.0.2.20'], labels: { app: 'dns' } }, reason: 'InvalidHostname', published: ['192.0.2.20'] },
];
const everyCase = [...web, ...dns];
const badCases = everyCase.filter((c) => c.reason);

/** The schema before the rules: no CEL, and no port range either (a malformed workload). */
function beforeTheRules<T>(crd: T): T {
    return JSON.parse(JSON.stringify(withoutCelRules(crd)), (key, value) => (key === 'minimum' || key === 'maximum' ? undefined : value)) as T;
}

const cluster = await startTestCluster('ewbad');
await setUp('the CRDs', () => installCrds(cluster.admin, beforeTheRules));
const ns = await setUp('a namespace', () => cluster.namespace());
for (const c of everyCase) await createWorkload(cluster, ns, c.workload);
await setUp('the CRDs', () => installCrds(cluster.admin));
await setUp('a Service', () => createService(cluster, ns, { metadata: { name: 'web' }, spec: { selector: { app: 'web' }, ipFamilyPolicy: 'RequireDualStack', ports: [{ name: 'http', port: 80, targetPort: 'http' as never }] } }));
await setUp('a Service', () => createService(cluster, ns, { metadata: { name: 'dns' }, spec: { clusterIP: 'None', selector: { app: 'dns' }, ports: [{ name: 'http', port: 80, targetPort: 'http' as never }] } }));
// A short resync: every Service syncs again and again, and a problem must still be reported once.
const running = await setUp('the external-workloads controller', () => runExternalWorkloads(cluster, { resyncMs: 300 }));
const syncs = new SyncLog(running.controller);
after(() => running.stop());

const expected = (cases: Case[]) => cases.flatMap((c) => c.published).sort();

async function slicesWhen(service: string, want: string[]): Promise<V1EndpointSlice[]> {
    let last: V1EndpointSlice[] = [];
    await eventually(`${service} publishes ${want.join(', ')} (last: ${addressesOf(last).join(', ')})`, async () => addressesOf((last = await slicesOf(cluster, ns, service))).join() === want.join());
    return last;
}

describe('bad input stored before the CRD rules existed', () => {
    it('the rules now in force would refuse such workloads', async () => {
        await assert.rejects(createWorkload(cluster, ns, { name: 'loopback-now', ips: ['127.0.0.1'] }), (err: ApiError) => err.code === 422);
        await assert.rejects(createWorkload(cluster, ns, { name: 'two-ipv4-now', ips: ['192.0.2.30', '192.0.2.31'] }), (err: ApiError) => err.code === 422);
    });

    it('every good endpoint of the Service is written, and each bad address or workload is left out', async () => {
        const slices = await slicesWhen('web', expected(web));
        const byWorkload = endpointsByWorkload(slices);
        for (const c of web) {
            const addresses = (byWorkload.get(c.workload.name) ?? []).flatMap((e) => e.addresses).sort();
            assert.deepEqual(addresses, c.published, c.workload.name);
        }
    });

    it('a workload name that is not a DNS label is published on a headless Service without a hostname', async () => {
        const slices = await slicesWhen('dns', expected(dns));
        const byWorkload = endpointsByWorkload(slices);
        assert.equal(byWorkload.get('plain')?.[0]?.hostname, 'plain');
        assert.equal(byWorkload.get('vm.dotted')?.[0]?.hostname, undefined);
        assert.equal(slices[0]!.metadata?.labels?.['service.kubernetes.io/headless'], '');
    });

    it('each problem is recorded as a Warning Event on its workload once, however often the Services sync', async () => {
        for (const c of badCases) {
            await eventually(`a ${c.reason} Event on ${c.workload.name}`, async () => (await eventsAbout(cluster, ns, c.workload.name, c.reason)).length > 0);
        }
        // Several resyncs later (every Service syncs at each), still one Event each.
        const before = { web: syncs.count(`${ns}/web`), dns: syncs.count(`${ns}/dns`) };
        await eventually('three more syncs of each Service', () => syncs.count(`${ns}/web`) >= before.web + 3 && syncs.count(`${ns}/dns`) >= before.dns + 3);
        for (const c of badCases) {
            const events = await eventsAbout(cluster, ns, c.workload.name);
            assert.equal(events.length, 1, `${c.workload.name}: ${JSON.stringify(events.map((e) => e.reason))}`);
            const [event] = events;
            assert.equal(event!.type, 'Warning');
            assert.equal(event!.reason, c.reason);
            assert.equal(event!.count, 1);
            assert.equal(event!.involvedObject.kind, 'ExternalWorkload');
            const workload = await cluster.admin.get<{ metadata: { uid: string } }>(objectPath(ExternalWorkloads, ns, c.workload.name));
            assert.equal(event!.involvedObject.uid, workload.metadata.uid);
        }
        for (const c of everyCase.filter((c) => !c.reason)) assert.deepEqual(await eventsAbout(cluster, ns, c.workload.name), [], c.workload.name);
    });

    it('the invalid-inputs metric counts each problem once, by reason', async () => {
        const reasons: ProblemReason[] = ['InvalidWorkload', 'InvalidIP', 'UnusableIP', 'DuplicateIPFamily', 'MissingNamedPort', 'InvalidHostname'];
        await slicesWhen('web', expected(web));
        for (const reason of reasons) {
            const want = badCases.filter((c) => c.reason === reason).length;
            assert.equal(await metricValue(running.registry, 'mesh_endpoints_external_workloads_invalid_inputs_total', { reason }), want, reason);
        }
    });

    it('a bad workload corrected later is published', async () => {
        await cluster.admin.mergePatch(objectPath(ExternalWorkloads, ns, 'loopback'), { spec: { workloadIPs: [{ ip: '192.0.2.40' }] } });
        await slicesWhen('web', [...expected(web), '192.0.2.40'].sort());
    });

    it('the controller never sends a request the apiserver rejects', () => {
        assert.ok(running.rest.writes() > 0);
        assert.deepEqual(running.rest.rejected, []);
    });
});

