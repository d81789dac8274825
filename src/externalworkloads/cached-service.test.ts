import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { buildService, buildWorkload, serviceShape, validWorkload } from '../../test/oracle/adversarial.js';
import { externalWorkloadsPlan } from '../../test/oracle/pipelines.js';
import { sameButResourceVersion, type KubeObject } from '../kube/store.js';
import { cacheService } from './cached-service.js';
import { makeService } from './testkit.js';

const NS = 'shop';

describe('the cached form of a Service', () => {
    it('plans what the whole Service plans', () => {
        fc.assert(
            fc.property(serviceShape(6), fc.array(validWorkload, { maxLength: 12 }), (svc, shapes) => {
                const service = buildService(svc, NS);
                service.metadata!.annotations = { 'kubectl.kubernetes.io/last-applied-configuration': JSON.stringify(service) };
                service.status = { loadBalancer: { ingress: [{ ip: '192.0.2.7' }] } };
                const workloads = shapes.map((w, i) => buildWorkload({ ...w, name: `w-${i}` }, NS, `uid-${i}`));
                const cached = cacheService(structuredClone(service) as KubeObject);
                assert.equal(cached.metadata?.annotations, undefined);
                assert.deepEqual(externalWorkloadsPlan(cached, workloads, [], 5), externalWorkloadsPlan(service, workloads, [], 5));
            }),
            { numRuns: 100, seed: 20261201 },
        );
    });

    it('keeps fields absent rather than undefined, and tells a change of what it keeps from one of what it drops', () => {
        const base = makeService({ publishNotReadyAddresses: true }, { labels: { team: 'a' }, resourceVersion: '1' });
        const cached = cacheService(base as KubeObject);
        assert.deepEqual(cached, { ...base, metadata: { name: 'web', namespace: 'shop', uid: 'svc-uid', resourceVersion: '1', labels: { team: 'a' } } });
        assert.ok(!Object.values(cached.spec!).includes(undefined));
        const next = (change: (s: typeof base) => void) => {
            const s = structuredClone(base);
            s.metadata!.resourceVersion = '2';
            change(s);
            return cacheService(s as KubeObject);
        };
        assert.ok(sameButResourceVersion(cached, next((s) => (s.status = { loadBalancer: {} }))));
        assert.ok(sameButResourceVersion(cached, next((s) => (s.spec!.sessionAffinity = 'ClientIP'))));
        assert.ok(!sameButResourceVersion(cached, next((s) => (s.spec!.selector = { app: 'api' }))));
        assert.ok(!sameButResourceVersion(cached, next((s) => (s.metadata!.labels = { team: 'b' }))));
    });
});
