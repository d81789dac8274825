import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { SharedValues } from '../kube/shared-values.js';
import { sameButResourceVersion } from '../kube/store.js';
import { cacheWorkload, compactWorkload } from './compact.js';
import { PERIOD_ANNOTATION, PROBE_ANNOTATION } from './health/probe-spec.js';
import { makeWorkload } from './testkit.js';

describe('the cached (compact) form of an ExternalWorkload', () => {
    it('keeps what the planner reads, decided once: readiness, usable addresses, named ports', () => {
        const raw = makeWorkload('a', { ips: ['192.0.2.1', '2001:DB8::1'], ports: [{ name: 'http', port: 8080 }, { port: 9090, protocol: 'UDP' }], deleting: true });
        const cached = cacheWorkload({ ...raw, metadata: { ...raw.metadata, resourceVersion: '7', managedFields: [{ manager: 'kubectl' }] } });
        assert.deepEqual(cached, {
            ok: true,
            metadata: { name: 'a', namespace: 'shop', uid: 'uid-a', resourceVersion: '7', labels: { app: 'web' } },
            ready: true,
            terminating: true,
            addresses: { IPv4: '192.0.2.1', IPv6: '2001:db8::1' },
            addressProblems: [],
            ports: [{ name: 'http', port: 8080, protocol: 'TCP' }],
        });
    });

    it('keeps the reasons an address is left out', () => {
        const cached = compactWorkload(makeWorkload('a', { ips: ['127.0.0.1', '192.0.2.1', '192.0.2.2'] }));
        assert.deepEqual(cached.addresses, { IPv4: '192.0.2.1' });
        assert.deepEqual(
            cached.addressProblems.map((p) => p.reason),
            ['UnusableIP', 'DuplicateIPFamily'],
        );
    });

    it('keeps of the annotations only the health checks settings, and the conditions only when asked', () => {
        const raw = makeWorkload('a');
        raw.metadata.annotations = { [PROBE_ANNOTATION]: 'tcp:8080', [PERIOD_ANNOTATION]: '5s', 'kubectl.kubernetes.io/last-applied-configuration': '{"big":1}' };
        const plain = compactWorkload(raw);
        assert.deepEqual(plain.probeAnnotations, { [PROBE_ANNOTATION]: 'tcp:8080', [PERIOD_ANNOTATION]: '5s' });
        assert.equal(plain.conditions, undefined);
        assert.deepEqual(compactWorkload(raw, { keepConditions: true }).conditions, [{ type: 'Ready', status: 'True' }]);
    });

    it('keeps of a malformed workload its problem and what selection and the cache need', () => {
        const raw = { metadata: { name: 'bad', namespace: 'shop', uid: 'u1', resourceVersion: '9', labels: { app: 'web' } }, spec: { ports: [{ port: 0 }] } };
        const cached = cacheWorkload(raw);
        assert.equal(cached.ok, false);
        assert.deepEqual(cached.metadata, { name: 'bad', namespace: 'shop', uid: 'u1', resourceVersion: '9', labels: { app: 'web' } });
        assert.equal(!cached.ok && cached.problem.reason, 'InvalidWorkload');
    });

    it('tells a new version that changes nothing read here from one that does', () => {
        const at = (rv: string, change: (w: ReturnType<typeof makeWorkload>) => void = () => {}) => {
            const w = makeWorkload('a');
            w.metadata.resourceVersion = rv;
            change(w);
            return cacheWorkload(w);
        };
        const base = at('1');
        assert.ok(sameButResourceVersion(base, at('2', (w) => (w.metadata.annotations = { note: 'x' }))));
        assert.ok(sameButResourceVersion(base, at('2', (w) => (w.status!.conditions![0]!.lastProbeTime = '2026-12-01T00:00:00Z'))));
        assert.ok(sameButResourceVersion(base, at('2', (w) => (w.spec.meshTLS = { identity: 'other' }))));
        assert.ok(!sameButResourceVersion(base, at('2', (w) => (w.status!.conditions![0]!.status = 'False'))));
        assert.ok(!sameButResourceVersion(base, at('2', (w) => (w.metadata.labels = { app: 'api' }))));
        assert.ok(!sameButResourceVersion(base, at('2', (w) => (w.spec.workloadIPs = [{ ip: '192.0.2.9' }]))));
        assert.ok(!sameButResourceVersion(base, at('2', (w) => (w.spec.ports = [{ name: 'admin', port: 1 }]))));
    });
});

describe('the workload cache with SharedValues', () => {
    it('holds equal label sets and port lists once, frozen', () => {
        const shared = new SharedValues();
        const a = compactWorkload(makeWorkload('a'), { shared });
        const b = compactWorkload(makeWorkload('b'), { shared });
        const c = compactWorkload(makeWorkload('c', { labels: { app: 'api' } }), { shared });
        assert.equal(a.metadata.labels, b.metadata.labels);
        assert.equal(a.ports, b.ports);
        assert.notEqual(a.metadata.labels, c.metadata.labels);
        assert.deepEqual(c.metadata.labels, { app: 'api' });
        assert.ok(Object.isFrozen(a.metadata.labels) && Object.isFrozen(a.ports) && Object.isFrozen(a.ports[0]));
        assert.throws(() => ((a.metadata.labels as Record<string, string>).app = 'x'), TypeError);
    });
});
