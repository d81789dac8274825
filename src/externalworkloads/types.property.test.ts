// The fast path of parseExternalWorkload (hand-written predicates) against zod's parse of the
// same schema, on well-formed workloads as the apiserver serves them and on the same with one to
// three fields anywhere replaced by odd values or removed: whatever the fast path accepts, zod
// accepts and it caches the same way; every well-formed JSON workload without nulls is taken by
// the fast path (else it would save nothing); everything else gets zod's verdict and message.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { buildWorkload, validWorkload } from '../../test/oracle/adversarial.js';
import { SharedValues } from '../kube/shared-values.js';
import { cacheWorkload, compactWorkload } from './compact.js';
import { parseExternalWorkload, parseWithZod } from './types.js';

type Json = Record<string, unknown>;

/** A workload as a list or watch delivers it: server-set metadata, unknown fields, timestamps. */
const served = fc
    .record({
        shape: validWorkload,
        generation: fc.integer({ min: 1, max: 1000 }),
        annotations: fc.option(fc.dictionary(fc.constantFrom('note', 'mesh-endpoints.io/probe', 'mesh-endpoints.io/probe-period', 'example.com/x'), fc.string({ maxLength: 20 })), { nil: undefined }),
        deleting: fc.boolean(),
        reason: fc.option(fc.string({ maxLength: 10 }), { nil: undefined }),
        extra: fc.option(fc.jsonValue({ maxDepth: 2 }), { nil: undefined }),
    })
    .map(({ shape, generation, annotations, deleting, reason, extra }) => {
        const w = buildWorkload(shape, 'shop', 'uid-1') as Json & { metadata: Json; spec: Json; status: { conditions: Json[] } };
        Object.assign(w.metadata, { resourceVersion: '42', generation, creationTimestamp: '2026-12-01T07:00:00Z', annotations });
        if (deleting) w.metadata.deletionTimestamp = '2026-12-01T08:00:00Z';
        w.status.conditions = w.status.conditions.map((c) => ({ ...c, reason, lastTransitionTime: '2026-12-01T07:00:01Z' }));
        if (extra !== undefined) w.spec.futureField = extra;
        return JSON.parse(JSON.stringify(w)) as Json;
    });

/** Values a field may be replaced with: wrong types, edge numbers, empty things, non-JSON objects. */
const ODD_VALUES: (() => unknown)[] = [
    ...[null, '', 'x', 0, 1, 1.5, -1, 65535, 65536, 8080, 2 ** 53, NaN, Infinity, true, [], {}, ['a'], [{}], { a: 'b' }, { a: 1 }, { port: 80 }, { ip: '192.0.2.9' }].map((v) => () => structuredClone(v)),
    () => new Date(0),
    () => new Date(NaN),
    () => Object.assign(Object.create(null) as object, { a: 'b' }),
    () => JSON.parse('{"__proto__":"x"}'),
    () => ({ [Symbol('s')]: 'x' }),
    () => new Map(),
];
const odd = fc.oneof({ weight: 4, arbitrary: fc.constantFrom(...ODD_VALUES).map((make) => make()) }, { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 2 }) });

/** Every path into a JSON tree (objects and arrays), the root's children first. */
function paths(value: unknown, at: (string | number)[] = []): (string | number)[][] {
    if (typeof value !== 'object' || value === null) return [];
    const keys: (string | number)[] = Array.isArray(value) ? value.map((_, i) => i) : Object.keys(value);
    return keys.flatMap((key) => [[...at, key], ...paths((value as Json)[key as string], [...at, key])]);
}

/** Replaces (or with `remove`, deletes) what is at `path`. */
function mutate(root: Json, path: (string | number)[], value: unknown, remove: boolean): void {
    let parent = root as Record<string | number, unknown>;
    for (const key of path.slice(0, -1)) parent = parent[key] as Record<string | number, unknown>;
    const last = path[path.length - 1]!;
    if (remove && !Array.isArray(parent)) delete parent[last];
    else parent[last] = value;
}

/** Only arrays, primitives other than null, and objects as JSON.parse makes them. */
function isNullFreeJson(value: unknown): boolean {
    if (value === null) return false;
    if (typeof value !== 'object') return true;
    if (Array.isArray(value)) return value.every(isNullFreeJson);
    return Object.getPrototypeOf(value) === Object.prototype && !Object.hasOwn(value, '__proto__') && Object.values(value).every(isNullFreeJson);
}

const edits = fc.array(fc.tuple(fc.nat(), odd, fc.boolean()), { minLength: 1, maxLength: 3 });

describe('the fast path of parsing a workload', () => {
    it('takes every well-formed workload as it is served, and caches it as zod parse does', () => {
        fc.assert(
            fc.property(served, (raw) => {
                const parsed = parseExternalWorkload(raw);
                assert.ok(parsed.ok && (parsed.workload as unknown) === raw, 'the fast path refused a well-formed workload');
                const viaZod = parseWithZod(raw);
                assert.ok(viaZod.ok);
                assert.deepEqual(cacheWorkload(raw, { keepConditions: true }), compactWorkload(viaZod.workload, { keepConditions: true }));
            }),
            { numRuns: 300, seed: 20261201 },
        );
    });

    it('agrees with zod on every field of a workload replaced by each odd value or removed', () => {
        const base = fc.sample(served, { numRuns: 1, seed: 20261201 })[0]!;
        base.spec = { ...(base.spec as Json), meshTls: { identity: 'id' } };
        for (const path of paths(base)) {
            for (const [i, make] of [...ODD_VALUES, () => undefined].entries()) {
                const raw = structuredClone(base);
                mutate(raw, path, make(), i === ODD_VALUES.length);
                agree(raw, `${path.join('.')}: odd value #${i}`);
            }
        }
    });

    it('agrees with zod on any workload with a few fields edited anywhere', () => {
        let fast = 0;
        let refused = 0;
        fc.assert(
            fc.property(served, edits, (raw, changes) => {
                for (const [pick, value, remove] of changes) {
                    const all = paths(raw);
                    if (all.length > 0) mutate(raw, all[pick % all.length]!, value, remove);
                }
                const verdict = agree(raw, JSON.stringify(raw));
                if (verdict === 'fast') fast++;
                if (verdict === 'refused') refused++;
            }),
            { numRuns: 1000, seed: 20261201 },
        );
        // Both sides were reached: the edits make malformed workloads and odd well-formed ones.
        assert.ok(fast > 50 && refused > 50, `fast ${fast}, refused ${refused}`);
    });
});

/**
 * The same verdict as zod's; for a workload zod accepts, the same cached form, and the fast path
 * taken whenever the object is plain JSON without nulls; for one it refuses, the same problem.
 */
function agree(raw: Json, what: string): 'fast' | 'zod' | 'refused' {
    const parsed = parseExternalWorkload(raw);
    const viaZod = parseWithZod(raw);
    assert.equal(parsed.ok, viaZod.ok, what);
    if (!parsed.ok || !viaZod.ok) {
        assert.deepEqual(parsed, viaZod, what);
        return 'refused';
    }
    const taken = (parsed.workload as unknown) === raw;
    if (!taken) assert.ok(!isNullFreeJson(raw), `the fast path refused a well-formed workload: ${what}`);
    const opts = () => ({ keepConditions: true, shared: new SharedValues() });
    assert.deepEqual(cacheWorkload(raw, opts()), compactWorkload(viaZod.workload, opts()), what);
    return taken ? 'fast' : 'zod';
}
