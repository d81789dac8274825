// The two MCS reconcilers against the runtime's real stores (caches filled by hand) and a client
// that answers writes in memory as an apiserver would (uids, resourceVersions, a ClusterIP): the
// order and number of writes of one import, each reconciler reacting to what the other wrote,
// and nothing written once converged. The apiserver itself is in test/integration/mcs*.test.ts.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1EndpointSlice, V1Service } from '@kubernetes/client-node';
import { LABEL_MANAGED_BY, LABEL_SERVICE_NAME } from '../../endpointslice/slice.js';
import type { EventSink } from '../../kube/events.js';
import { Informer } from '../../kube/informer.js';
import { KubeConfig } from '../../kube/kubeconfig.js';
import { logFn, newLogger } from '../../kube/log.js';
import { KubeRest, type RequestOpts } from '../../kube/rest.js';
import { EndpointSlices, ServiceExports, ServiceImports, Services } from '../../kube/resources.js';
import { SliceOwner } from '../../kube/slice-owner.js';
import type { KubeObject, ObjectStore } from '../../kube/store.js';
import { ClusterSet } from './clusterset.js';
import { DerivedReconciler } from './derived-reconciler.js';
import { ImportReconciler } from './import-reconciler.js';
import type { McsCaches } from './members.js';
import { MCS_MANAGED_BY, type ServiceExport, type ServiceImport } from './types.js';

const NS = 'shop';

/**
 * Writes answered in memory as an apiserver would, in the order they were sent, each also put
 * in the cache of its kind (what the watch would bring back).
 */
class MemoryRest extends KubeRest {
    readonly writes: string[] = [];
    readonly caches = new Map<string, ObjectStore<KubeObject>>();
    private version = 100;

    constructor() {
        const kc = new KubeConfig();
        kc.loadFromOptions({
            clusters: [{ name: 'none', server: 'https://127.0.0.1:1' }],
            users: [{ name: 'u' }],
            contexts: [{ name: 'c', cluster: 'none', user: 'u' }],
            currentContext: 'c',
        });
        super(kc);
    }

    override async request<T>(method: string, path: string, o: RequestOpts = {}): Promise<T> {
        const [plural, name, subresource] = path.split(`/namespaces/${NS}/`)[1]!.split('/') as [string, string?, string?];
        this.writes.push(`${method} ${[plural, subresource].filter(Boolean).join('/')}`);
        const store = this.caches.get(plural);
        const body = structuredClone(o.body) as KubeObject & { spec?: Record<string, unknown>; status?: unknown };
        const version = String(++this.version);
        if (subresource === 'status') {
            const stored = { ...store!.get(NS, name!)!, status: body.status, metadata: { ...store!.get(NS, name!)!.metadata, resourceVersion: version } };
            store!.set(stored);
            return stored as T;
        }
        const metadata = { ...body.metadata, namespace: NS, resourceVersion: version, uid: body.metadata?.uid ?? `uid-${version}` };
        metadata.name ??= `${(body.metadata as { generateName?: string }).generateName}${version}`;
        if (plural === 'services' && body.spec?.clusterIP !== 'None') Object.assign(body.spec!, { clusterIP: '10.96.0.7', clusterIPs: ['10.96.0.7'], ipFamilies: ['IPv4'] });
        const stored = { ...body, metadata };
        if (method === 'DELETE') store?.delete(stored);
        else store?.set(stored);
        return stored as T;
    }
}

function setUp() {
    const rest = new MemoryRest();
    const log = logFn(newLogger('error'));
    const caches: McsCaches = {
        exports: new Informer<ServiceExport>(rest, { resource: ServiceExports, log }),
        imports: new Informer<ServiceImport>(rest, { resource: ServiceImports, log }),
        services: new Informer<V1Service & KubeObject>(rest, { resource: Services, log }),
        sourceSlices: new Informer<V1EndpointSlice & KubeObject>(rest, { resource: EndpointSlices, log }),
        clusterSet: new ClusterSet(() => []),
    };
    caches.sourceSlices.store.indexLabel(LABEL_SERVICE_NAME);
    const slices = new SliceOwner({ rest, managedBy: MCS_MANAGED_BY, log });
    for (const [plural, informer] of [['serviceexports', caches.exports], ['serviceimports', caches.imports], ['services', caches.services], ['endpointslices', slices.informer]] as const) {
        rest.caches.set(plural, informer.store as ObjectStore<KubeObject>);
    }
    const events: EventSink = { record: () => undefined };
    const deps = { rest, caches, serving: () => 'east', log: newLogger('error'), events };
    return { rest, caches, imports: new ImportReconciler(deps), derived: new DerivedReconciler(deps, slices, 100) };
}

/** An object as its informer's cache would hold it. */
function cached<T extends KubeObject>(informer: Informer<T>, obj: T): void {
    informer.store.set(obj);
}

describe('the MCS reconcilers', () => {
    it('write one import in 4 writes and the export once: the derived Service, the import with its ips, its status and the conditions, then the slice', async () => {
        const { rest, caches, imports, derived } = setUp();
        cached(caches.services, { metadata: { name: 'hello', namespace: NS, uid: 's' }, spec: { clusterIP: '10.0.0.1', ports: [{ name: 'http', port: 80, protocol: 'TCP' }], ipFamilies: ['IPv4'] } });
        cached(caches.sourceSlices, {
            metadata: { name: 'hello-a', namespace: NS, labels: { [LABEL_SERVICE_NAME]: 'hello', [LABEL_MANAGED_BY]: 'endpointslice-controller.k8s.io' } },
            addressType: 'IPv4',
            ports: [{ name: 'http', port: 8080, protocol: 'TCP' }],
            endpoints: [{ addresses: ['10.1.0.1'], conditions: { ready: true } }],
        } as V1EndpointSlice & KubeObject);
        cached(caches.exports, { metadata: { name: 'hello', namespace: NS, uid: 'e', resourceVersion: '1', creationTimestamp: '2026-01-01T00:00:00Z', generation: 1 }, spec: {}, status: {} });

        // The import waits for the derived Service; the derived Service does not wait.
        await imports.reconcile(`${NS}/hello`);
        assert.deepEqual(rest.writes, []);
        await derived.reconcile(`${NS}/hello`);
        assert.deepEqual(rest.writes, ['POST services'], 'no slice before the import: its ports are the import\'s');

        // The derived Service is in the cache now: the import is created with its ips, then its status and the export's conditions.
        rest.writes.length = 0;
        await imports.reconcile(`${NS}/hello`);
        assert.deepEqual(rest.writes.slice(0, 1), ['POST serviceimports']);
        assert.deepEqual(rest.writes.slice(1).sort(), ['PUT serviceexports/status', 'PUT serviceimports/status']);
        const imported = caches.imports.store.get(NS, 'hello')!;
        assert.deepEqual(imported.spec?.ips, ['10.96.0.7']);
        assert.deepEqual(imported.status?.clusters, [{ cluster: 'east' }]);
        assert.equal(caches.exports.store.get(NS, 'hello')!.status?.conditions?.find((c) => c.type === 'Ready')?.status, 'True');

        // The import in the cache: the slice, on its ports.
        rest.writes.length = 0;
        await derived.reconcile(`${NS}/hello`);
        assert.deepEqual(rest.writes, ['POST endpointslices']);

        // Converged: neither writes anything more.
        rest.writes.length = 0;
        await derived.reconcile(`${NS}/hello`);
        await imports.reconcile(`${NS}/hello`);
        assert.deepEqual(rest.writes, []);
    });
});
