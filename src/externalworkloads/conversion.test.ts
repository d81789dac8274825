import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { convertWorkload, SAVED_WORKLOAD_IPS } from './conversion.js';

const ALPHA = 'workload.linkerd.io/v1alpha1';
const BETA = 'workload.linkerd.io/v1beta1';
const tls = { identity: 'vm.ns.serviceaccount.identity.linkerd.cluster.local', serverName: 'vm.ns.svc' };
const metadata = { name: 'vm', namespace: 'shop', uid: 'u1', resourceVersion: '7', labels: { app: 'web' } };
const status = { conditions: [{ type: 'Ready', status: 'True', lastTransitionTime: '2026-01-01T00:00:00Z' }] };
const ports = [{ name: 'http', port: 8080, protocol: 'TCP' }];

function converted(object: unknown, to: string): Record<string, unknown> {
    const result = convertWorkload(object, to);
    assert.ok(result.ok, result.ok ? '' : result.message);
    return result.object;
}

describe('ExternalWorkload conversion (v1alpha1 ↔ v1beta1)', () => {
    const cases: { name: string; from: unknown; to: string; want: unknown }[] = [
        {
            name: 'v1alpha1 → v1beta1 renames meshTls to meshTLS and copies the rest',
            from: { apiVersion: ALPHA, kind: 'ExternalWorkload', metadata, spec: { meshTls: tls, workloadIPs: [{ ip: '192.0.2.1' }], ports }, status },
            to: BETA,
            want: { apiVersion: BETA, kind: 'ExternalWorkload', metadata, spec: { meshTLS: tls, workloadIPs: [{ ip: '192.0.2.1' }], ports }, status },
        },
        {
            name: 'v1beta1 → v1alpha1 renames meshTLS to meshTls',
            from: { apiVersion: BETA, kind: 'ExternalWorkload', metadata, spec: { meshTLS: tls, workloadIPs: [{ ip: '2001:db8::1' }] } },
            to: ALPHA,
            want: { apiVersion: ALPHA, kind: 'ExternalWorkload', metadata, spec: { meshTls: tls, workloadIPs: [{ ip: '2001:db8::1' }] } },
        },
        {
            name: 'v1beta1 with two IPs → v1alpha1 shows the first and saves the list in an annotation',
            from: { apiVersion: BETA, metadata, spec: { meshTLS: tls, workloadIPs: [{ ip: '192.0.2.1' }, { ip: '2001:db8::1' }] } },
            to: ALPHA,
            want: {
                apiVersion: ALPHA,
                metadata: { ...metadata, annotations: { [SAVED_WORKLOAD_IPS]: '[{"ip":"192.0.2.1"},{"ip":"2001:db8::1"}]' } },
                spec: { meshTls: tls, workloadIPs: [{ ip: '192.0.2.1' }] },
            },
        },
        {
            name: 'v1alpha1 with the saved list and its first IP unchanged → v1beta1 gets both IPs back, the annotation goes',
            from: {
                apiVersion: ALPHA,
                metadata: { ...metadata, annotations: { team: 'a', [SAVED_WORKLOAD_IPS]: '[{"ip":"192.0.2.1"},{"ip":"2001:db8::1"}]' } },
                spec: { meshTls: tls, workloadIPs: [{ ip: '192.0.2.1' }] },
            },
            to: BETA,
            want: {
                apiVersion: BETA,
                metadata: { ...metadata, annotations: { team: 'a' } },
                spec: { meshTLS: tls, workloadIPs: [{ ip: '192.0.2.1' }, { ip: '2001:db8::1' }] },
            },
        },
        {
            name: 'v1alpha1 whose IP a v1alpha1 client changed → v1beta1 takes the new IP, not the saved list',
            from: {
                apiVersion: ALPHA,
                metadata: { ...metadata, annotations: { [SAVED_WORKLOAD_IPS]: '[{"ip":"192.0.2.1"},{"ip":"2001:db8::1"}]' } },
                spec: { meshTls: tls, workloadIPs: [{ ip: '192.0.2.9' }] },
            },
            to: BETA,
            want: { apiVersion: BETA, metadata, spec: { meshTLS: tls, workloadIPs: [{ ip: '192.0.2.9' }] } },
        },
        {
            name: 'v1alpha1 whose IP a v1alpha1 client removed → v1beta1 has none',
            from: { apiVersion: ALPHA, metadata: { ...metadata, annotations: { [SAVED_WORKLOAD_IPS]: '[{"ip":"192.0.2.1"},{"ip":"2001:db8::1"}]' } }, spec: { meshTls: tls } },
            to: BETA,
            want: { apiVersion: BETA, metadata, spec: { meshTLS: tls } },
        },
        {
            name: 'a saved list that is not JSON is dropped',
            from: { apiVersion: ALPHA, metadata: { ...metadata, annotations: { [SAVED_WORKLOAD_IPS]: 'oops' } }, spec: { meshTls: tls, workloadIPs: [{ ip: '192.0.2.1' }] } },
            to: BETA,
            want: { apiVersion: BETA, metadata, spec: { meshTLS: tls, workloadIPs: [{ ip: '192.0.2.1' }] } },
        },
        {
            name: 'a stray saved list on a v1beta1 object is not carried into v1alpha1',
            from: { apiVersion: BETA, metadata: { ...metadata, annotations: { [SAVED_WORKLOAD_IPS]: '[]' } }, spec: { meshTLS: tls } },
            to: ALPHA,
            want: { apiVersion: ALPHA, metadata, spec: { meshTls: tls } },
        },
        {
            name: 'unknown fields and key order are kept',
            from: { apiVersion: ALPHA, metadata, spec: { ports, meshTls: tls, future: { x: 1 } }, extra: true },
            to: BETA,
            want: { apiVersion: BETA, metadata, spec: { ports, meshTLS: tls, future: { x: 1 } }, extra: true },
        },
        {
            name: 'an object without a TLS block (pruned before the webhook existed) converts without one',
            from: { apiVersion: BETA, metadata, spec: { workloadIPs: [{ ip: '192.0.2.1' }] } },
            to: ALPHA,
            want: { apiVersion: ALPHA, metadata, spec: { workloadIPs: [{ ip: '192.0.2.1' }] } },
        },
        {
            name: 'the same version is returned as it is',
            from: { apiVersion: BETA, metadata, spec: { meshTLS: tls, workloadIPs: [{ ip: '192.0.2.1' }, { ip: '2001:db8::1' }] } },
            to: BETA,
            want: { apiVersion: BETA, metadata, spec: { meshTLS: tls, workloadIPs: [{ ip: '192.0.2.1' }, { ip: '2001:db8::1' }] } },
        },
    ];
    for (const c of cases) {
        it(c.name, () => {
            const before = structuredClone(c.from);
            const got = converted(c.from, c.to);
            assert.deepEqual(got, c.want);
            assert.deepEqual(Object.keys(got.spec as object), Object.keys((c.want as { spec: object }).spec));
            assert.deepEqual(c.from, before, 'the input is not changed');
        });
    }

    const refusals: { name: string; from: unknown; to: string; message: RegExp }[] = [
        { name: 'an unknown desired version', from: { apiVersion: BETA, spec: {} }, to: 'workload.linkerd.io/v2', message: /cannot convert to "workload.linkerd.io\/v2"/ },
        { name: 'another group', from: { apiVersion: BETA, spec: {} }, to: 'apps/v1', message: /not a served ExternalWorkload version/ },
        { name: 'an object of another kind of apiVersion', from: { apiVersion: 'v1', spec: {} }, to: BETA, message: /cannot convert from apiVersion "v1"/ },
        { name: 'not an object', from: [1], to: BETA, message: /must be a JSON object/ },
        { name: 'a spec that is not an object', from: { apiVersion: ALPHA, spec: 'x' }, to: BETA, message: /spec must be an object/ },
    ];
    for (const r of refusals) {
        it(`refuses ${r.name} with a clear message`, () => {
            const result = convertWorkload(r.from, r.to);
            assert.equal(result.ok, false);
            assert.match(result.ok ? '' : result.message, r.message);
        });
    }
});

// Any v1beta1 object the CRD accepts (at most one IP per family, hence at most two).
const arbIP = fc.oneof(
    fc.ipV4().map((ip) => ({ ip })),
    fc.ipV6().map((ip) => ({ ip })),
);
const arbBeta = fc.record(
    {
        apiVersion: fc.constant(BETA),
        kind: fc.constant('ExternalWorkload'),
        metadata: fc.record(
            {
                name: fc.string({ minLength: 1, maxLength: 8 }),
                namespace: fc.constant('shop'),
                labels: fc.dictionary(fc.string({ minLength: 1, maxLength: 5 }), fc.string({ maxLength: 5 }), { maxKeys: 3 }),
                annotations: fc.dictionary(fc.string({ minLength: 1, maxLength: 5 }), fc.string({ maxLength: 5 }), { minKeys: 1, maxKeys: 3 }),
            },
            { requiredKeys: ['name', 'namespace'] },
        ),
        spec: fc.record(
            {
                meshTLS: fc.record({ identity: fc.string({ minLength: 1 }), serverName: fc.string({ minLength: 1 }) }),
                ports: fc.array(fc.record({ name: fc.string({ maxLength: 5 }), port: fc.integer({ min: 1, max: 65535 }), protocol: fc.constantFrom('TCP', 'UDP', 'SCTP') }), { maxLength: 3 }),
                workloadIPs: fc.array(arbIP, { maxLength: 2 }),
            },
            { requiredKeys: ['meshTLS'] },
        ),
        status: fc.record({ conditions: fc.array(fc.record({ type: fc.constant('Ready'), status: fc.constantFrom('True', 'False', 'Unknown') }), { maxLength: 1 }) }),
    },
    { requiredKeys: ['apiVersion', 'metadata', 'spec'] },
).map((object) => JSON.parse(JSON.stringify(object)) as Record<string, unknown>); // as JSON from the apiserver

describe('ExternalWorkload conversion round trips (property)', () => {
    it('v1beta1 → v1alpha1 → v1beta1 gives back the same object', () => {
        fc.assert(
            fc.property(arbBeta, (beta) => {
                const alpha = converted(beta, ALPHA);
                assert.ok(((alpha.spec as { workloadIPs?: unknown[] }).workloadIPs?.length ?? 0) <= 1, 'v1alpha1 holds at most one IP');
                assert.deepEqual(converted(alpha, BETA), beta);
            }),
        );
    });

    it('v1alpha1 → v1beta1 → v1alpha1 gives back the same object (v1alpha1 as a client reads it)', () => {
        fc.assert(
            fc.property(arbBeta, (beta) => {
                const alpha = converted(beta, ALPHA);
                assert.deepEqual(converted(converted(alpha, BETA), ALPHA), alpha);
            }),
        );
    });
});
