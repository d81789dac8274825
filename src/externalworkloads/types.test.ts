import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isWorkloadReady, meshTLSOf, parseExternalWorkload, parseExternalWorkloads, type ExternalWorkload } from './types.js';
import { makeWorkload } from './testkit.js';

const v1alpha1 = {
    apiVersion: 'workload.linkerd.io/v1alpha1',
    kind: 'ExternalWorkload',
    metadata: { name: 'old', namespace: 'shop', uid: 'uid-old', labels: { app: 'web' } },
    spec: { meshTls: { identity: 'id', serverName: 'sn' }, workloadIPs: [{ ip: '192.0.2.1' }], ports: [{ port: 80, protocol: 'TCP' }] },
};

function parsedOrFail(object: unknown): ExternalWorkload {
    const parsed = parseExternalWorkload(object);
    assert.ok(parsed.ok, parsed.ok ? '' : parsed.problem.message);
    return parsed.workload;
}

describe('parsing ExternalWorkloads from the apiserver', () => {
    it('reads a v1beta1 object unchanged', () => {
        const workload = makeWorkload('a', { ips: ['192.0.2.1', '2001:db8::1'] });
        assert.deepEqual(parsedOrFail(structuredClone(workload)), workload);
    });

    it('reads a v1alpha1 object, whose TLS block is spelt meshTls', () => {
        const workload = parsedOrFail(v1alpha1);
        assert.deepEqual(meshTLSOf(workload), { identity: 'id', serverName: 'sn' });
    });

    it('reads an object created as v1alpha1 and served as v1beta1, which has lost its TLS block', () => {
        const workload = parsedOrFail({ ...v1alpha1, apiVersion: 'workload.linkerd.io/v1beta1', spec: { workloadIPs: [{ ip: '192.0.2.1' }] } });
        assert.equal(meshTLSOf(workload), undefined);
    });

    it('keeps fields it does not know instead of rejecting the object', () => {
        const workload = parsedOrFail({ ...v1alpha1, spec: { ...v1alpha1.spec, futureField: { x: 1 } }, extra: true });
        assert.deepEqual((workload.spec as Record<string, unknown>).futureField, { x: 1 });
    });

    it('treats explicit nulls as absent fields', () => {
        const workload = parsedOrFail({ ...v1alpha1, metadata: { ...v1alpha1.metadata, labels: null }, spec: { ...v1alpha1.spec, ports: null }, status: null });
        assert.equal(workload.metadata.labels, undefined);
        assert.equal(workload.spec.ports, undefined);
        assert.equal(workload.status, undefined);
    });

    it('accepts timestamps as strings from raw JSON or as Dates from client-node', () => {
        const when = new Date('2026-01-01T00:00:00Z');
        const workload = parsedOrFail({
            ...v1alpha1,
            metadata: { ...v1alpha1.metadata, creationTimestamp: '2026-01-01T00:00:00Z', deletionTimestamp: when },
            status: { conditions: [{ type: 'Ready', status: 'True', lastTransitionTime: when }] },
        });
        assert.equal(workload.metadata.deletionTimestamp, when);
    });

    it('keeps an entry without ip, for the address check to report', () => {
        assert.deepEqual(parsedOrFail({ ...v1alpha1, spec: { workloadIPs: [{}] } }).spec.workloadIPs, [{}]);
    });

    const malformed: Array<[string, unknown, RegExp, { namespace: string; name: string; uid: string }]> = [
        ['a port number that is a string', { ...v1alpha1, spec: { ports: [{ port: '80' }] } }, /spec\.ports\[0\]\.port/, { namespace: 'shop', name: 'old', uid: 'uid-old' }],
        ['a port number out of range', { ...v1alpha1, spec: { ports: [{ port: 70000 }] } }, /spec\.ports\[0\]\.port/, { namespace: 'shop', name: 'old', uid: 'uid-old' }],
        ['workloadIPs that is not a list', { ...v1alpha1, spec: { workloadIPs: '192.0.2.1' } }, /spec\.workloadIPs/, { namespace: 'shop', name: 'old', uid: 'uid-old' }],
        ['no spec', { ...v1alpha1, spec: undefined }, /spec/, { namespace: 'shop', name: 'old', uid: 'uid-old' }],
        ['no name', { ...v1alpha1, metadata: { namespace: 'shop' } }, /metadata\.name/, { namespace: 'shop', name: '', uid: '' }],
        ['not an object at all', 'garbage', /\(object\)/, { namespace: '', name: '', uid: '' }],
    ];
    for (const [what, object, path, ref] of malformed) {
        it(`turns an object with ${what} into an InvalidWorkload problem instead of throwing`, () => {
            const parsed = parseExternalWorkload(object);
            assert.equal(parsed.ok, false);
            if (parsed.ok) return;
            assert.deepEqual(parsed.problem.workload, ref);
            assert.equal(parsed.problem.reason, 'InvalidWorkload');
            assert.match(parsed.problem.message, path);
            assert.deepEqual(parseExternalWorkload(object), parsed, 'the message is deterministic');
        });
    }

    it('parses a list into its good workloads and one problem per malformed object', () => {
        const { workloads, problems } = parseExternalWorkloads([v1alpha1, { metadata: {} }, makeWorkload('b')]);
        assert.deepEqual(workloads.map((w) => w.metadata.name), ['old', 'b']);
        assert.deepEqual(problems.map((p) => p.reason), ['InvalidWorkload']);
    });
});

describe('workload readiness', () => {
    const cases: Array<[string, Array<{ type: string; status: string }> | undefined, boolean]> = [
        ['Ready=True', [{ type: 'Ready', status: 'True' }], true],
        ['Ready=False', [{ type: 'Ready', status: 'False' }], false],
        ['Ready=Unknown', [{ type: 'Ready', status: 'Unknown' }], false],
        ['no conditions', [], false],
        ['no status', undefined, false],
        ['Ready=True among other conditions', [{ type: 'Probed', status: 'False' }, { type: 'Ready', status: 'True' }], true],
    ];
    for (const [what, conditions, ready] of cases) {
        it(`is ${ready ? 'ready' : 'not ready'} with ${what}`, () => {
            const workload = makeWorkload('a');
            workload.status = conditions === undefined ? undefined : { conditions };
            assert.equal(isWorkloadReady(workload), ready);
        });
    }
});
