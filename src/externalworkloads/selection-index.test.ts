import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1Service } from '@kubernetes/client-node';
import fc from 'fast-check';
import { ObjectStore, type KubeObject } from '../kube/store.js';
import { selectsWorkload, serviceIndexValues, servicesIndexLookups, workloadIndexValues, workloadsIndexLookups } from './selection.js';
import { makeService, makeWorkload } from './testkit.js';
import type { ExternalWorkload } from './types.js';

const labelsArb = fc.dictionary(fc.constantFrom('app', 'tier', 'zone'), fc.constantFrom('a', 'b'), { maxKeys: 3 });
const namespaceArb = fc.constantFrom('ns1', 'ns2');
const serviceArb = fc.record({
    namespace: namespaceArb,
    selector: fc.option(labelsArb, { nil: undefined }),
    type: fc.constantFrom('ClusterIP', 'ExternalName'),
});

/** What the controller does with the indexes: both directions, each candidate checked with selectsWorkload. */
function viaIndexes(services: V1Service[], workloads: ExternalWorkload[]) {
    const serviceStore = new ObjectStore<V1Service & KubeObject>();
    serviceStore.addIndex('selector', serviceIndexValues);
    services.forEach((s) => serviceStore.set(s as V1Service & KubeObject));
    const workloadStore = new ObjectStore<ExternalWorkload>();
    workloadStore.addIndex('label', workloadIndexValues);
    workloads.forEach((w) => workloadStore.set(w));

    const workloadsOf = (service: V1Service) => {
        const lookups = workloadsIndexLookups(service);
        const candidates = lookups === undefined
            ? workloadStore.list(service.metadata!.namespace)
            : lookups.map((l) => workloadStore.byIndex('label', l)).sort((a, b) => a.length - b.length)[0]!;
        return candidates.filter((w) => selectsWorkload(service, w)).map((w) => w.metadata.name).sort();
    };
    const servicesOf = (workload: ExternalWorkload) =>
        [...new Set(servicesIndexLookups(workload).flatMap((l) => serviceStore.byIndex('selector', l)))]
            .filter((s) => selectsWorkload(s, workload))
            .map((s) => s.metadata!.name!)
            .sort();
    return { workloadsOf, servicesOf };
}

describe('the selection indexes', () => {
    it('find exactly the pairs selectsWorkload finds by scanning, in both directions', () => {
        fc.assert(
            fc.property(fc.array(serviceArb, { maxLength: 6 }), fc.array(fc.record({ namespace: namespaceArb, labels: labelsArb }), { maxLength: 12 }), (specs, workloadSpecs) => {
                const services = specs.map((s, i) => makeService({ selector: s.selector, type: s.type }, { name: `svc-${i}`, namespace: s.namespace }));
                const workloads = workloadSpecs.map((w, i) => makeWorkload(`vm-${i}`, w));
                const { workloadsOf, servicesOf } = viaIndexes(services, workloads);
                for (const service of services) {
                    const scanned = workloads.filter((w) => selectsWorkload(service, w)).map((w) => w.metadata.name).sort();
                    assert.deepEqual(workloadsOf(service), scanned);
                }
                for (const workload of workloads) {
                    const scanned = services.filter((s) => selectsWorkload(s, workload)).map((s) => s.metadata!.name!).sort();
                    assert.deepEqual(servicesOf(workload), scanned);
                }
            }),
        );
    });
});
