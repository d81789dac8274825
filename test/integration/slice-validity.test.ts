// The validation oracle and the controllers' pure paths against the real kube-apiserver:
// hostile slices are sent as dry-run creates and the apiserver's verdict must be the
// oracle's; and plans made from hostile ExternalWorkloads and gateway answers are really
// written through the SliceWriter, creates then updates and deletes, with 0 writes rejected.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1EndpointSlice, V1EndpointSliceList } from '@kubernetes/client-node';
import fc from 'fast-check';
import { SliceTracker } from '../../src/endpointslice/tracker.js';
import { sliceProblems } from '../../src/endpointslice/validate.js';
import { ApiError } from '../../src/kube/errors.js';
import { collectionPath, EndpointSlices, Namespaces } from '../../src/kube/resources.js';
import { SliceWriter } from '../../src/kube/slice-writer.js';
import { buildMirrorService } from '../../src/servicemirror/plan/mirror.js';
import { testLink } from '../../src/servicemirror/api/testkit.js';
import { startTestCluster } from '../../src/testing/harness.js';
import {
    anySlice,
    awkwardText,
    buildService,
    buildWorkload,
    dnsLabel,
    invalidIP,
    servicePorts,
    serviceShape,
    validIP,
    validWorkload,
} from '../oracle/adversarial.js';
import { validateEndpointSlice } from '../oracle/endpointslice-validation.js';
import { externalWorkloadsPlan, mirrorPlan } from '../oracle/pipelines.js';
import { CountingRest } from './support.js';

const NS = 'hostile';

const validSlice = (): V1EndpointSlice => ({
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: { generateName: 'web-', namespace: NS, labels: { app: 'web' } },
    addressType: 'IPv4',
    endpoints: [{ addresses: ['192.0.2.1'], hostname: 'vm-1', conditions: { ready: true } }],
    ports: [{ name: 'http', port: 80, protocol: 'TCP' }],
});

/** A valid slice with one field made awkward, or any slice at all. */
const candidate: fc.Arbitrary<V1EndpointSlice> = fc.oneof(
    fc.tuple(fc.oneof(validIP, invalidIP), fc.constantFrom('IPv4', 'IPv6')).map(([address, addressType]) => ({ ...validSlice(), addressType, endpoints: [{ addresses: [address] }] })),
    awkwardText.map((hostname) => ({ ...validSlice(), endpoints: [{ addresses: ['192.0.2.1'], hostname }] })),
    awkwardText.map((nodeName) => ({ ...validSlice(), endpoints: [{ addresses: ['192.0.2.1'], nodeName }] })),
    fc.oneof(dnsLabel, awkwardText).map((name) => ({ ...validSlice(), ports: [{ name, port: 80 }] })),
    fc.oneof(awkwardText, fc.constantFrom('kubernetes.io/h2c', 'a/b/c', 'HTTP')).map((appProtocol) => ({ ...validSlice(), ports: [{ name: 'a', port: 80, appProtocol }] })),
    fc.constantFrom('TCP', 'UDP', 'SCTP', 'HTTP', 'tcp').map((protocol) => ({ ...validSlice(), ports: [{ name: 'a', port: 80, protocol }] })),
    fc.tuple(awkwardText, awkwardText).map(([k, v]) => {
        const s = validSlice();
        s.metadata!.labels = { [k]: v };
        s.metadata!.annotations = { [k]: v };
        return s;
    }),
    awkwardText.map((generateName) => ({ ...validSlice(), metadata: { generateName, namespace: NS } })),
    awkwardText.map((name) => ({ ...validSlice(), metadata: { name, namespace: NS } })),
    anySlice.map((s) => ({ ...s, apiVersion: 'discovery.k8s.io/v1', kind: 'EndpointSlice', metadata: { ...s.metadata, namespace: NS } })),
);

const cluster = await startTestCluster('slicevalid');

describe('EndpointSlice validity against the real apiserver', async () => {
    const rest = new CountingRest(cluster.kubeConfig());
    await rest.create(collectionPath(Namespaces), { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } });

    it('the oracle gives the apiserver’s verdict on hostile slices (dry-run creates)', async (t) => {
        const samples = fc.sample(candidate, { numRuns: 1500, seed: 1201 });
        const disagreements: string[] = [];
        let accepted = 0;
        for (const slice of samples) {
            // The local apiserver runs v1.35's defaults: StrictIPCIDRValidation is off.
            const oracle = validateEndpointSlice(slice, { strictIP: false });
            let verdict = 'accepted';
            try {
                await rest.create(collectionPath(EndpointSlices, NS), slice, { dryRun: 'All' });
                accepted++;
            } catch (err) {
                if (!(err instanceof ApiError) || (err.code !== 422 && err.code !== 400)) throw err;
                verdict = `${err.code} ${err.message}`;
            }
            if ((verdict === 'accepted') !== (oracle.length === 0)) disagreements.push(`${JSON.stringify(slice)}\n  apiserver: ${verdict}\n  oracle: ${oracle.join('; ') || 'accepted'}`);
        }
        t.diagnostic(`${samples.length} hostile slices, ${accepted} accepted, ${disagreements.length} disagreements`);
        assert.deepEqual(disagreements, []);
        assert.ok(accepted > 50 && accepted < samples.length - 50, `${accepted} of ${samples.length} accepted: both verdicts must be well represented`);
    });

    it('accepts leading zeros and IPv4-mapped IPv6 in IPv4 slices (StrictIPCIDRValidation is off in v1.35), which our check still refuses', async () => {
        for (const address of ['010.1.2.3', '::ffff:192.0.2.1']) {
            const slice = { ...validSlice(), endpoints: [{ addresses: [address] }] };
            await rest.create(collectionPath(EndpointSlices, NS), slice, { dryRun: 'All' });
            assert.deepEqual(validateEndpointSlice(slice, { strictIP: false }), []);
            assert.notDeepEqual(validateEndpointSlice(slice, { strictIP: true }), []);
            assert.notDeepEqual(sliceProblems(slice), []);
        }
    });

    it('plans from hostile ExternalWorkloads are written, created then updated and deleted, with 0 writes rejected', async (t) => {
        const rest = new CountingRest(cluster.kubeConfig()); // its own record of rejections
        const writer = new SliceWriter({ rest, tracker: new SliceTracker(), fieldManager: 'slice-validity-test' });
        const rounds = fc.sample(
            fc.record({ service: serviceShape(30), steps: fc.array(fc.array(validWorkload, { maxLength: 20 }), { minLength: 2, maxLength: 3 }), bad: fc.array(invalidIP, { maxLength: 5 }), max: fc.integer({ min: 1, max: 8 }) }),
            { numRuns: 25, seed: 1202 },
        );
        let writes = 0;
        for (const [r, round] of rounds.entries()) {
            const service = buildService({ ...round.service, name: `svc-${r}` }, NS);
            for (const step of [...round.steps, []]) {
                const raw = step.map((w, i) => buildWorkload({ ...w, name: `${w.name}-${i}`.slice(-253).replace(/^[.-]+/, ''), ips: [...round.bad, ...w.ips] }, NS, `u${i}`));
                const list = await rest.get<V1EndpointSliceList>(collectionPath(EndpointSlices, NS), { labelSelector: `kubernetes.io/service-name=svc-${r}` });
                writes += await writer.apply(externalWorkloadsPlan(service, raw, list.items, round.max));
            }
        }
        t.diagnostic(`${rounds.length} Services, ${writes} slice writes, ${rest.rejected.length} rejected`);
        assert.deepEqual(rest.rejected, []);
        assert.ok(writes > 50, `only ${writes} writes made`);
    });

    it('plans from hostile gateway answers are written with 0 writes rejected', async (t) => {
        const rest = new CountingRest(cluster.kubeConfig());
        const writer = new SliceWriter({ rest, tracker: new SliceTracker(), fieldManager: 'slice-validity-test' });
        const link = testLink();
        const gateway = fc.tuple(fc.oneof(validIP, invalidIP), fc.constantFrom<'IPv4' | 'IPv6'>('IPv4', 'IPv6'), fc.boolean()).map(([address, family, ready]) => ({ address, family, ready }));
        const rounds = fc.sample(fc.record({ ports: servicePorts(30, 1), steps: fc.array(fc.array(gateway, { maxLength: 10 }), { minLength: 2, maxLength: 3 }) }), { numRuns: 20, seed: 1203 });
        let writes = 0;
        for (const [r, round] of rounds.entries()) {
            const mirror = buildMirrorService({ metadata: { name: `gw${r}`, namespace: NS, labels: { 'mirror.linkerd.io/exported': 'true' } }, spec: { ports: round.ports, ipFamilies: ['IPv4', 'IPv6'] } }, link);
            mirror.metadata!.uid = `mirror-${r}`;
            for (const gatewayAddresses of round.steps) {
                const list = await rest.get<V1EndpointSliceList>(collectionPath(EndpointSlices, NS), { labelSelector: `kubernetes.io/service-name=${mirror.metadata!.name}` });
                writes += await writer.apply(mirrorPlan({ mirror, link, gatewayAddresses, remoteHasReadyEndpoints: true, gatewayAlive: true }, list.items));
            }
        }
        t.diagnostic(`${rounds.length} mirrors, ${writes} slice writes, ${rest.rejected.length} rejected`);
        assert.deepEqual(rest.rejected, []);
        assert.ok(writes > 20, `only ${writes} writes made`);
    });
});
