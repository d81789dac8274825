// Hostile ExternalWorkloads and Services through the whole pure path (parse → desired
// groups → plan): every slice planned is one the apiserver accepts (an independent oracle,
// test/oracle/), and invalid input added to valid input changes nothing that is published.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1EndpointSlice } from '@kubernetes/client-node';
import fc from 'fast-check';
import { buildService, buildWorkload, invalidIP, noise, serviceShape, validIPv4, validWorkload, withNoise, type WorkloadShape } from '../../test/oracle/adversarial.js';
import { validateEndpointSlice } from '../../test/oracle/endpointslice-validation.js';
import { externalWorkloadsPlan } from '../../test/oracle/pipelines.js';
import { FakeApiserver } from '../endpointslice/testkit.js';
import { sliceProblems } from '../endpointslice/validate.js';
import type { SlicePlan } from '../endpointslice/types.js';

const NS = 'shop';

function assertAllAccepted(plan: SlicePlan): void {
    for (const slice of [...plan.creates, ...plan.updates]) {
        assert.deepEqual(validateEndpointSlice(slice), [], `the apiserver would refuse ${JSON.stringify(slice).slice(0, 400)}`);
        assert.deepEqual(sliceProblems(slice), []);
    }
}

/** Distinct names: an endpoint's identity in a slice is its workload's name. */
function workloads(shapes: WorkloadShape[], prefix = ''): Record<string, unknown>[] {
    return shapes.map((w, i) => buildWorkload({ ...w, name: `${prefix}${w.name}-${i}`.slice(-253).replace(/^[.-]+/, '') }, NS, `uid-${prefix}${i}`));
}

const noisyWorkload = fc.record({
    ips: fc.array(invalidIP, { minLength: 1, maxLength: 3 }),
    name: fc.constantFrom('bad', 'bad.dotted', 'x'.repeat(70)),
});

const input = fc.record({
    service: serviceShape(12),
    valid: fc.array(validWorkload, { maxLength: 25 }),
    noiseByWorkload: fc.array(noise, { maxLength: 25 }),
    noisy: fc.array(noisyWorkload, { maxLength: 6 }),
    elsewhere: fc.array(validWorkload, { maxLength: 3 }),
    max: fc.oneof(fc.integer({ min: 1, max: 5 }), fc.constantFrom(100, 1000)),
});

describe('external workloads under hostile input', () => {
    it('plans only slices the apiserver accepts, and invalid additions change no write', () => {
        let published = 0;
        fc.assert(
            fc.property(input, (g) => {
                const service = buildService(g.service, NS);
                const clean = workloads(g.valid);
                const plan = externalWorkloadsPlan(service, clean, [], g.max);
                assertAllAccepted(plan);
                published += plan.creates.reduce((n, s) => n + s.endpoints.length, 0);

                // The same workloads with bad addresses mixed in, workloads with only bad
                // addresses, workloads of another namespace, and duplicates.
                const noisy = workloads(g.valid.map((w, i) => ({ ...w, ips: withNoise(w.ips, g.noiseByWorkload[i] ?? []) })));
                const bad = g.noisy.map((n, i) => buildWorkload({ ...g.valid[0]!, ...n, name: `${n.name}-n${i}`, labels: { app: 'web' } } as WorkloadShape, NS, `uid-n${i}`));
                const other = g.elsewhere.map((w, i) => buildWorkload({ ...w, name: `${w.name}-o${i}` }, 'elsewhere', `uid-o${i}`));
                // A second object of a valid workload's name comes after it: the first one counts.
                const duplicates = noisy.map((w) => ({ ...w, spec: { ...(w.spec as object), workloadIPs: [{ ip: '198.18.0.1' }] } }));
                const all = [...(g.valid.length > 0 ? bad : []), ...other, ...noisy, ...duplicates];
                // The same writes; the noise is only reported (problems).
                const { problems: _noisy, ...noisyWrites } = externalWorkloadsPlan(service, all, [], g.max);
                const { problems: _clean, ...writes } = plan;
                assert.deepEqual(noisyWrites, writes);

                // Against what the first plan stored: nothing to write.
                const stored = new FakeApiserver().apply(plan);
                const again = externalWorkloadsPlan(service, all, stored, g.max);
                assert.deepEqual([again.creates.length, again.updates.length, again.deletes.length], [0, 0, 0]);
            }),
            { numRuns: 150, seed: 20261201 },
        );
        assert.ok(published > 500, `only ${published} endpoints published in all runs`);
    });

    it('updates an existing set of slices only with slices the apiserver accepts', () => {
        fc.assert(
            fc.property(input, fc.array(validWorkload, { maxLength: 25 }), (g, next) => {
                const service = buildService(g.service, NS);
                const stored: V1EndpointSlice[] = new FakeApiserver().apply(externalWorkloadsPlan(service, workloads(g.valid), [], g.max));
                const plan = externalWorkloadsPlan(service, workloads(next), stored, g.max);
                assertAllAccepted(plan);
            }),
            { numRuns: 100, seed: 99 },
        );
    });

    it('handles thousands of ports and a selector that matches every workload', () => {
        fc.assert(
            fc.property(serviceShape(0), fc.integer({ min: 2000, max: 5000 }), fc.array(validIPv4, { minLength: 1, maxLength: 5 }), (shape, count, ips) => {
                const ports = Array.from({ length: count }, (_, i) => ({ name: `p${i}`, port: 1 + i, protocol: 'TCP', targetPort: 10000 + i }));
                const service = buildService({ ...shape, selectAll: true, ports }, NS);
                const raw = ips.map((ip, i) => buildWorkload({ name: `vm-${i}`, ips: [ip], ready: true, zone: undefined, labels: { other: 'x' }, ports: [] }, NS, `u${i}`));
                const plan = externalWorkloadsPlan(service, raw, [], 100);
                assert.equal(plan.creates.reduce((n, s) => n + s.endpoints.length, 0), shape.families.includes('IPv4') ? ips.length : 0);
                assertAllAccepted(plan);
            }),
            { numRuns: 4, seed: 5 },
        );
    });
});
