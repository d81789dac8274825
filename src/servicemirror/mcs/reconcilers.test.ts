// The two MCS reconcilers against the runtime's real informers and an apiserver in memory
// (testing/memory-rest.ts: uids, resourceVersions, a ClusterIP, each write back in its informer): the
// order and number of writes of one import, each reconciler reacting to what the other wrote,
// and nothing written once converged. The apiserver itself is in test/integration/mcs*.test.ts.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1EndpointSlice, V1Service } from '@kubernetes/client-node';
import { LABEL_MANAGED_BY, LABEL_SERVICE_NAME } from '../../endpointslice/slice.js';
import { StaleCacheError } from '../../kube/errors.js';
import type { EventSink } from '../../kube/events.js';
import { Informer } from '../../kube/informer.js';
import { logFn, newLogger } from '../../kube/log.js';
import { EndpointSlices, ServiceExports, ServiceImports, Services } from '../../kube/resources.js';
import { SliceOwner } from '../../kube/slice-owner.js';
import type { KubeObject } from '../../kube/store.js';
import { kinds, MemoryRest } from '../../testing/memory-rest.js';
import { Published, SourceSet } from '../../kube/sources.js';
import { ClusterSet } from './clusterset.js';
import { DerivedReconciler } from './derived-reconciler.js';
import { ImportReconciler } from './import-reconciler.js';
import type { McsCaches } from './members.js';
import { derivedServiceName, MCS_MANAGED_BY, type ServiceExport, type ServiceImport } from './types.js';

const NS = 'shop';

function setUp() {
    const rest = new MemoryRest();
    const log = logFn(newLogger('error'));
    const caches: McsCaches = {
        exports: new Informer<ServiceExport>(rest, { resource: ServiceExports, log }),
        imports: new Informer<ServiceImport>(rest, { resource: ServiceImports, log }),
        services: new Informer<V1Service & KubeObject>(rest, { resource: Services, log }),
        // The upstream controller's slices, as the MCS controller watches them (mcs/controller.ts).
        sourceSlices: new Informer<V1EndpointSlice & KubeObject>(rest, { resource: EndpointSlices, labelSelector: `${LABEL_MANAGED_BY}=endpointslice-controller.k8s.io`, log }),
        clusterSet: new ClusterSet(() => [], new SourceSet(), new Published()),
    };
    caches.sourceSlices.store.indexLabel(LABEL_SERVICE_NAME);
    const slices = new SliceOwner({ rest, managedBy: MCS_MANAGED_BY, log });
    rest.serve('serviceexports', caches.exports);
    rest.serve('serviceimports', caches.imports);
    rest.serve('services', caches.services);
    rest.serve('endpointslices', caches.sourceSlices);
    rest.serve('endpointslices', slices.informer);
    const events: EventSink = { record: () => undefined };
    const deps = { rest, caches, serving: () => 'east', log: newLogger('error'), events };
    return { rest, caches, imports: new ImportReconciler(deps), derived: new DerivedReconciler(deps, slices, 100) };
}

describe('the MCS reconcilers', () => {
    it('write one import in 4 writes and the export once: the derived Service, the import with its ips, its status and the conditions, then the slice', async () => {
        const { rest, caches, imports, derived } = setUp();
        rest.add('services', { metadata: { name: 'hello', namespace: NS, uid: 's' }, spec: { clusterIP: '10.0.0.1', ports: [{ name: 'http', port: 80, protocol: 'TCP' }], ipFamilies: ['IPv4'] } });
        rest.add('endpointslices', {
            metadata: { name: 'hello-a', namespace: NS, labels: { [LABEL_SERVICE_NAME]: 'hello', [LABEL_MANAGED_BY]: 'endpointslice-controller.k8s.io' } },
            addressType: 'IPv4',
            ports: [{ name: 'http', port: 8080, protocol: 'TCP' }],
            endpoints: [{ addresses: ['10.1.0.1'], conditions: { ready: true } }],
        } as V1EndpointSlice & KubeObject);
        rest.add('serviceexports', { metadata: { name: 'hello', namespace: NS, uid: 'e', creationTimestamp: '2026-01-01T00:00:00Z', generation: 1 }, spec: {}, status: {} });

        // The import waits for the derived Service; the derived Service does not wait.
        await imports.reconcile(`${NS}/hello`);
        assert.deepEqual(rest.writes, []);
        await derived.reconcile(`${NS}/hello`);
        assert.deepEqual(kinds(rest.writes), ['POST services'], 'no slice before the import: its ports are the import\'s');

        // The derived Service is in the cache now: the import is created with its ips, then its status and the export's conditions.
        rest.writes.length = 0;
        await imports.reconcile(`${NS}/hello`);
        assert.deepEqual(kinds(rest.writes).slice(0, 1), ['POST serviceimports']);
        assert.deepEqual(kinds(rest.writes).slice(1).sort(), ['PUT serviceexports/status', 'PUT serviceimports/status']);
        const imported = caches.imports.store.get(NS, 'hello')!;
        assert.deepEqual(imported.spec?.ips, ['10.96.0.1'], 'the ClusterIP allocated to the derived Service, the first created');
        assert.deepEqual(imported.status?.clusters, [{ cluster: 'east' }]);
        assert.equal(caches.exports.store.get(NS, 'hello')!.status?.conditions?.find((c) => c.type === 'Ready')?.status, 'True');

        // The import in the cache: the slice, on its ports.
        rest.writes.length = 0;
        await derived.reconcile(`${NS}/hello`);
        assert.deepEqual(kinds(rest.writes), ['POST endpointslices']);

        // Converged: neither writes anything more.
        rest.writes.length = 0;
        await derived.reconcile(`${NS}/hello`);
        await imports.reconcile(`${NS}/hello`);
        assert.deepEqual(rest.writes, []);
    });

    it('creates no import from a derived Service the cache holds but the apiserver no longer has: its ClusterIP would not last', async () => {
        const { rest, caches, imports, derived } = setUp();
        rest.add('services', { metadata: { name: 'hello', namespace: NS, uid: 's' }, spec: { clusterIP: '10.0.0.1', ports: [{ name: 'http', port: 80, protocol: 'TCP' }], ipFamilies: ['IPv4'] } });
        rest.add('serviceexports', { metadata: { name: 'hello', namespace: NS, uid: 'e', creationTimestamp: '2026-01-01T00:00:00Z', generation: 1 }, spec: {}, status: {} });
        await derived.reconcile(`${NS}/hello`);
        const made = caches.services.store.get(NS, derivedServiceName('hello'))!;
        // Deleted at the apiserver; the cache has not heard yet.
        rest.remove('services', NS, made.metadata!.name!);
        caches.services.store.set(made);
        rest.writes.length = 0;
        await assert.rejects(imports.reconcile(`${NS}/hello`), StaleCacheError);
        assert.deepEqual(rest.writes, [], 'no import with the address of a Service that is gone');
    });
});
