// The cached form of a workload against the whole object it came from: what the planner reads
// of the compact form says what the object says, and fields the controller does not read
// change neither the compact form nor any plan.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { buildService, buildWorkload, invalidIP, serviceShape, validWorkload, withNoise } from '../../test/oracle/adversarial.js';
import { externalWorkloadsPlan } from '../../test/oracle/pipelines.js';
import { workloadAddresses } from './addresses.js';
import { sameButResourceVersion } from '../kube/store.js';
import { cacheWorkload } from './compact.js';
import { resolvePorts } from './ports.js';
import { isWorkloadReady, parseExternalWorkload, type ExternalWorkload } from './types.js';

const NS = 'shop';

/** What no decision of the controller reads: it may be anything. */
const unread = fc.record({
    annotations: fc.dictionary(fc.constantFrom('note', 'kubectl.kubernetes.io/last-applied-configuration', 'example.com/x'), fc.string({ maxLength: 40 })),
    managedFields: fc.array(fc.record({ manager: fc.string({ maxLength: 10 }), operation: fc.constantFrom('Update', 'Apply') }), { maxLength: 3 }),
    identity: fc.string({ maxLength: 40 }),
    lastProbeTime: fc.constantFrom(undefined, '2026-12-01T00:00:00Z', '2026-12-01T09:00:00Z'),
    otherCondition: fc.constantFrom(undefined, 'Healthy', 'Synced'),
    unnamedPorts: fc.array(fc.integer({ min: 1, max: 65535 }), { maxLength: 3 }),
});

type Unread = typeof unread extends fc.Arbitrary<infer U> ? U : never;

function withUnread(raw: Record<string, unknown>, u: Unread): Record<string, unknown> {
    const w = structuredClone(raw) as unknown as ExternalWorkload & { metadata: { managedFields?: unknown } };
    w.metadata.annotations = u.annotations;
    w.metadata.managedFields = u.managedFields;
    w.spec.meshTLS = { identity: u.identity };
    w.spec.ports = [...(w.spec.ports ?? []), ...u.unnamedPorts.map((port) => ({ port }))];
    const conditions = w.status!.conditions!.map((c) => (u.lastProbeTime ? { ...c, lastProbeTime: u.lastProbeTime } : c));
    if (u.otherCondition) conditions.push({ type: u.otherCondition, status: 'True' });
    w.status = { conditions };
    return w as unknown as Record<string, unknown>;
}

describe('the cached form of a workload', () => {
    it('says what the whole object says, for everything the planner reads', () => {
        fc.assert(
            fc.property(validWorkload, fc.array(fc.tuple(fc.nat(), invalidIP), { maxLength: 3 }), serviceShape(6), (shape, noise, svc) => {
                const raw = buildWorkload({ ...shape, ips: withNoise(shape.ips, noise) }, NS, 'uid-1');
                const parsed = parseExternalWorkload(raw);
                const cached = cacheWorkload(raw);
                if (!parsed.ok || !cached.ok) return assert.equal(cached.ok, parsed.ok);
                const full = parsed.workload;
                assert.equal(cached.ready, isWorkloadReady(full));
                assert.equal(cached.terminating, full.metadata.deletionTimestamp != null);
                const addresses = workloadAddresses(full);
                assert.deepEqual(cached.addresses, addresses.byFamily);
                assert.deepEqual(cached.addressProblems, addresses.problems);
                assert.deepEqual(cached.metadata.labels, full.metadata.labels);
                // Named targetPorts resolve against the kept ports as against all of them.
                const service = buildService(svc, NS);
                const lookup = (name: string, protocol: string) => (full.spec.ports ?? []).find((p) => p.name === name && (p.protocol ?? 'TCP') === protocol)?.port;
                for (const port of resolvePorts(service, cached).ports) {
                    const sp = service.spec!.ports!.find((p) => (p.name ?? '') === port.name)!;
                    if (typeof sp.targetPort === 'string' && sp.targetPort !== '') assert.equal(port.port, lookup(sp.targetPort, port.protocol!));
                }
            }),
            { numRuns: 200, seed: 20261201 },
        );
    });

    it('is the same, and so is every plan, whatever the fields nobody reads hold', () => {
        fc.assert(
            fc.property(serviceShape(6), fc.array(fc.tuple(validWorkload, unread), { maxLength: 12 }), (svc, workloads) => {
                const service = buildService(svc, NS);
                const clean = workloads.map(([w], i) => buildWorkload({ ...w, name: `${w.name}-${i}`.slice(-253).replace(/^[.-]+/, '') }, NS, `uid-${i}`));
                const noisy = clean.map((raw, i) => withUnread(raw, workloads[i]![1]));
                clean.forEach((raw, i) => assert.ok(sameButResourceVersion(cacheWorkload(raw), cacheWorkload(noisy[i]))));
                assert.deepEqual(externalWorkloadsPlan(service, noisy, [], 100), externalWorkloadsPlan(service, clean, [], 100));
            }),
            { numRuns: 100, seed: 20261201 },
        );
    });
});
