import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { deepFreeze, FakeApiserver } from '../endpointslice/testkit.js';
import { cacheWorkload, compactWorkload } from './compact.js';
import { DEFAULT_MANAGED_BY, planService } from './plan.js';
import { ipv4, makeService, makeWorkload } from './testkit.js';

const writes = (plan: { creates: unknown[]; updates: unknown[]; deletes: unknown[] }) => [plan.creates.length, plan.updates.length, plan.deletes.length];

describe('planService: one Service, its workloads and slices in; writes and problems out', () => {
    const service = deepFreeze(makeService());
    const workloads = deepFreeze([compactWorkload(makeWorkload('a', { ips: [ipv4(1)] })), compactWorkload(makeWorkload('b', { ips: [ipv4(2)] }))]);

    it('creates the slices of the selected workloads, and writes nothing once they are stored', () => {
        const plan = planService(service, workloads, []);
        assert.deepEqual(writes(plan), [1, 0, 0]);
        assert.equal(plan.endpoints, 2);
        assert.equal(plan.creates[0]!.metadata?.labels?.['endpointslice.kubernetes.io/managed-by'], DEFAULT_MANAGED_BY);
        const stored = new FakeApiserver().apply(plan);
        assert.deepEqual(writes(planService(service, workloads, stored)), [0, 0, 0]);
    });

    it('deletes every slice of a Service it no longer serves (its selector gone)', () => {
        const stored = new FakeApiserver().apply(planService(service, workloads, []));
        const plan = planService(makeService({ selector: undefined }), workloads, stored);
        assert.deepEqual(writes(plan), [0, 0, 1]);
        assert.equal(plan.endpoints, 0);
    });

    it('reports a malformed selected workload and plans the others', () => {
        const malformed = cacheWorkload({ metadata: { name: 'bad', namespace: 'shop', uid: 'u1', labels: { app: 'web' } }, spec: { ports: [{ port: 0 }] } });
        assert.equal(malformed.ok, false);
        const plan = planService(service, [malformed, ...workloads], []);
        assert.deepEqual(plan.problems.map((p) => [p.workload.name, p.reason]), [['bad', 'InvalidWorkload']]);
        assert.equal(plan.endpoints, 2);
    });
});
