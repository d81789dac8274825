// Heap retained per cached object, in one process without a cluster: N objects as the apiserver
// serves them (list pages through JSON.parse, laid out as bench memory-curve's) through the
// informer's path (managedFields dropped, then the transform) into an ObjectStore with the
// controller's index. `parsed` and `whole` are the cache forms before compaction, for comparison.
//   node --expose-gc --import tsx hack/cache-cost.ts workload parsed|compact [N]
//   node --expose-gc --import tsx hack/cache-cost.ts slice whole|compact [N endpoints, slices of 100]
//   node --expose-gc --import tsx hack/cache-cost.ts remote-service|mirror-service|remote-slice whole|compact [N]
// The service mirror's objects are laid out as bench service-mirror-scale's (one port, one endpoint).
import { randomUUID } from 'node:crypto';
import { ObjectStore, type KubeObject } from '../src/kube/store.js';
import { workloadIndexValues } from '../src/externalworkloads/selection.js';
import { cacheWorkload } from '../src/externalworkloads/compact.js';
import { parseExternalWorkload } from '../src/externalworkloads/types.js';
import { SharedValues } from '../src/kube/shared-values.js';
import { compactSlice } from '../src/kube/slice-cache.js';
import { compactRemoteSlice, compactService } from '../src/servicemirror/compact.js';
import type { OwnedSlice } from '../src/kube/slice-owner.js';

const [what, mode, n] = [process.argv[2], process.argv[3], Number(process.argv[4] ?? 20000)];
const ipOf = (k: number) => `10.${(k >> 16) & 255}.${(k >> 8) & 255}.${(k & 255) || 1}`;
const svcOf = (k: number) => `svc-${String(Math.floor(k / 100)).padStart(5, '0')}`;
const nameOf = (k: number) => `${svcOf(k)}-vm-${String(k % 100).padStart(3, '0')}`;
const managedFields = [{ manager: 'bench', operation: 'Update', apiVersion: 'v1', time: '2026-12-01T07:00:00Z', fieldsType: 'FieldsV1', fieldsV1: { 'f:metadata': { 'f:labels': {} } } }];
function workload(k: number) {
    const name = nameOf(k);
    return { metadata: { name, namespace: 'bench', uid: randomUUID(), resourceVersion: String(100000 + k), generation: 1, creationTimestamp: '2026-12-01T07:00:00Z', labels: { app: svcOf(k) }, managedFields },
        spec: { meshTLS: { identity: `${name}.bench.serviceaccount.identity.linkerd.cluster.local`, serverName: name }, workloadIPs: [{ ip: ipOf(k + 1) }], ports: [{ name: 'http', port: 8080, protocol: 'TCP' }] } };
}
function slice(s: number) {
    const svc = svcOf(s * 100);
    return { metadata: { name: `${svc}-abc${s}`, generateName: `${svc}-`, namespace: 'bench', uid: randomUUID(), resourceVersion: String(200000 + s), generation: 1, creationTimestamp: '2026-12-01T07:00:00Z',
            labels: { 'endpointslice.kubernetes.io/managed-by': 'external-workloads.mesh-endpoints.io', 'kubernetes.io/service-name': svc },
            ownerReferences: [{ apiVersion: 'v1', kind: 'Service', name: svc, uid: randomUUID(), controller: true, blockOwnerDeletion: true }], managedFields },
        addressType: 'IPv4', ports: [{ name: 'http', port: 8080, protocol: 'TCP' }],
        endpoints: Array.from({ length: 100 }, (_, i) => ({ addresses: [ipOf(s * 100 + i + 1)], conditions: { ready: false, serving: false, terminating: false },
            targetRef: { apiVersion: 'workload.linkerd.io/v1beta1', kind: 'ExternalWorkload', namespace: 'bench', name: nameOf(s * 100 + i), uid: randomUUID() } })) };
}
const remoteService = (k: number) => ({ metadata: { name: svcOf(k * 100), namespace: `ns-${k % 5}`, uid: randomUUID(), resourceVersion: String(300000 + k), creationTimestamp: '2026-12-01T07:00:00Z', labels: { 'mirror.linkerd.io/exported': 'true' }, managedFields },
    spec: { clusterIP: ipOf(k + 1), clusterIPs: [ipOf(k + 1)], internalTrafficPolicy: 'Cluster', ipFamilies: ['IPv4'], ipFamilyPolicy: 'SingleStack', ports: [{ name: 'http', port: 80, protocol: 'TCP', targetPort: 80 }], sessionAffinity: 'None', type: 'ClusterIP' }, status: { loadBalancer: {} } });
function mirrorService(k: number) {
    const svc = remoteService(k);
    const name = `${svc.metadata.name}-east`;
    return { ...svc, metadata: { ...svc.metadata, name, labels: { ...svc.metadata.labels, 'mirror.linkerd.io/mirrored-service': 'true', 'mirror.linkerd.io/cluster-name': 'east' },
        annotations: { 'mirror.linkerd.io/remote-svc-fq-name': `${svc.metadata.name}.${svc.metadata.namespace}.svc.cluster.local`, 'mirror.linkerd.io/remote-resource-version': String(100000 + k), 'mesh-endpoints.io/link': 'multicluster/east' } } };
}
const remoteSlice = (k: number) => ({ metadata: { name: `${svcOf(k * 100)}-remote`, namespace: `ns-${k % 5}`, uid: randomUUID(), resourceVersion: String(400000 + k), generation: 1, creationTimestamp: '2026-12-01T07:00:00Z',
        labels: { 'kubernetes.io/service-name': svcOf(k * 100), 'endpointslice.kubernetes.io/managed-by': 'bench' }, managedFields },
    addressType: 'IPv4', endpoints: [{ addresses: [ipOf(k + 1)], conditions: { ready: true } }], ports: [{ name: 'http', port: 8080, protocol: 'TCP' }] });
const mirrorObjects: Record<string, (k: number) => object> = { 'remote-service': remoteService, 'mirror-service': mirrorService, 'remote-slice': remoteSlice };
const shared = new SharedValues();
const transforms: Record<string, (o: KubeObject) => KubeObject> = {
    'workload-parsed': (o) => { const p = parseExternalWorkload(o); return p.ok ? { metadata: p.workload.metadata, parsed: p } as KubeObject : o; },
    'workload-compact': (o) => cacheWorkload(o, { keepConditions: true, shared }) as unknown as KubeObject,
    'slice-whole': (o) => o,
    'slice-compact': (o) => compactSlice(o as OwnedSlice, shared),
    'remote-service-whole': (o) => o,
    'remote-service-compact': (o) => compactService(o, 'source', shared),
    'mirror-service-whole': (o) => o,
    'mirror-service-compact': (o) => compactService(o, 'mirror', shared),
    'remote-slice-whole': (o) => o,
    'remote-slice-compact': (o) => compactRemoteSlice(o, false, shared),
};
const transform = transforms[`${what}-${mode}`]!;
const make = mirrorObjects[what!] ?? (what === 'workload' ? workload : slice);
const count = what === 'slice' ? n / 100 : n;
const heap = () => { globalThis.gc!(); globalThis.gc!(); return process.memoryUsage().heapUsed; };
const store = new ObjectStore<KubeObject>();
if (what === 'workload') store.addIndex('label', (o) => workloadIndexValues(o as never));
else if (what === 'mirror-service') ['mirror.linkerd.io/cluster-name', 'mirror.linkerd.io/headless-mirror-svc-name'].forEach((label) => store.indexLabel(label));
else if (what !== 'remote-service') store.indexLabel('kubernetes.io/service-name');
// Whatever start-up left behind (tsx's compiled sources) is collected before the baseline.
await new Promise((resolve) => setTimeout(resolve, 500));
const before = heap();
for (let page = 0; page < count; page += 100) {
    const text = JSON.stringify({ items: Array.from({ length: Math.min(100, count - page) }, (_, i) => make(page + i)) });
    for (const item of (JSON.parse(text) as { items: KubeObject[] }).items) {
        const { managedFields: _, ...metadata } = item.metadata!;
        store.set(transform({ apiVersion: 'v1', kind: 'X', ...item, metadata }));
    }
}
const per = (heap() - before) / n;
// store.size() after the measure keeps the store alive through it (else V8 may collect it after its last use).
console.log(`${what} ${mode}: ${store.size()} objects, ${n} ${what === 'slice' ? 'endpoints' : 'objects'}: ${per.toFixed(0)} B each`);
