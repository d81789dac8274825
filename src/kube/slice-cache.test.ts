// The slice cache's compact form against the slices as served: equal in every field, so
// planning against it decides what planning against the served slices decides.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { buildService, buildWorkload, serviceShape, validWorkload } from '../../test/oracle/adversarial.js';
import { externalWorkloadsPlan } from '../../test/oracle/pipelines.js';
import { FakeApiserver } from '../endpointslice/testkit.js';
import { SharedValues } from './shared-values.js';
import { compactSlice } from './slice-cache.js';
import type { OwnedSlice } from './slice-cache.js';

const NS = 'shop';

describe('the slice cache', () => {
    it('keeps every field of a slice, holds repeated values once, and plans as the served slices do', () => {
        let shared = 0;
        fc.assert(
            fc.property(serviceShape(4), fc.array(validWorkload, { maxLength: 30 }), fc.array(validWorkload, { maxLength: 30 }), (svc, before, after) => {
                const service = buildService(svc, NS);
                const raw = (shapes: typeof before) => shapes.map((w, i) => buildWorkload({ ...w, name: `w-${i}` }, NS, `uid-${i}`));
                const served = new FakeApiserver().apply(externalWorkloadsPlan(service, raw(before), [], 7));
                const cache = new SharedValues();
                const cached = served.map((slice) => compactSlice(structuredClone(slice) as OwnedSlice, cache));
                assert.deepEqual(cached, served);
                assert.deepEqual(externalWorkloadsPlan(service, raw(after), cached, 7), externalWorkloadsPlan(service, raw(after), served, 7));
                const endpoints = cached.flatMap((s) => s.endpoints);
                for (let i = 1; i < endpoints.length; i++) {
                    const [a, b] = [endpoints[i - 1]!, endpoints[i]!];
                    if (JSON.stringify(a.conditions) === JSON.stringify(b.conditions)) {
                        assert.equal(a.conditions, b.conditions, 'equal conditions held once');
                        shared++;
                    }
                }
            }),
            { numRuns: 100, seed: 20261201 },
        );
        assert.ok(shared > 100, `only ${shared} shared condition triples`);
    });
});
