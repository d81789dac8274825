// CPU of this process per EndpointSlice write through KubeRest, against a real local apiserver:
// N creates, then N updates, of slices shaped as the controller writes them (a controller
// reference, 10 endpoints with target references and all three conditions, a generated name,
// the fieldManager, the leader guard), DEFAULT_CONCURRENT_SYNCS at a time, through SliceWriter
// as the controller sends them. CPU is user+sys of this process (process.cpuUsage), which the
// apiserver's load does not change; the wall time is an upper bound on a shared machine.
//   npx tsx hack/transport-cost.ts [N=2000] [ROUNDS=3]
// With --cpu-prof (node --cpu-prof --import tsx hack/transport-cost.ts) the profile shows where it goes.
import { randomUUID } from 'node:crypto';
import type { V1EndpointSlice } from '@kubernetes/client-node';
import { DEFAULT_CONCURRENT_SYNCS } from '../src/externalworkloads/controller.js';
import { SliceTracker } from '../src/endpointslice/tracker.js';
import { writesPlan } from '../src/kube/slice-owner.js';
import { SliceWriter } from '../src/kube/slice-writer.js';
import { collectionPath, EndpointSlices, Services } from '../src/kube/resources.js';
import { down } from '../src/testing/cluster.js';
import { startLocalCluster } from '../src/testing/harness.js';
import { inParallel } from '../bench/parallel.js';

const n = Number(process.argv[2] ?? 2000);
const rounds = Number(process.argv[3] ?? 3);
const ipOf = (k: number) => `10.${(k >> 16) & 255}.${(k >> 8) & 255}.${(k & 255) || 1}`;

const name = `transport-cost-${process.pid}`;
const cluster = await startLocalCluster(name);
try {
    const ns = await cluster.namespace('cost');
    const rest = cluster.admin.fork({ timeoutMs: 120_000 });
    const owner = await rest.create<{ metadata: { name: string; uid: string } }>(collectionPath(Services, ns), {
        metadata: { name: 'owner' },
        spec: { ports: [{ name: 'http', port: 80 }] },
    } as never);
    const slice = (i: number, ready: boolean): V1EndpointSlice => ({
        apiVersion: 'discovery.k8s.io/v1',
        kind: 'EndpointSlice',
        metadata: {
            generateName: 'owner-',
            namespace: ns,
            labels: { 'endpointslice.kubernetes.io/managed-by': 'cost.mesh-endpoints.io', 'kubernetes.io/service-name': 'owner' },
            ownerReferences: [{ apiVersion: 'v1', kind: 'Service', name: 'owner', uid: owner.metadata.uid, controller: true, blockOwnerDeletion: true }],
        },
        addressType: 'IPv4',
        ports: [{ name: 'http', port: 8080, protocol: 'TCP' }],
        endpoints: Array.from({ length: 10 }, (_, j) => ({
            addresses: [ipOf(i * 10 + j + 1)],
            conditions: { ready, serving: ready, terminating: false },
            targetRef: { apiVersion: 'workload.linkerd.io/v1beta1', kind: 'ExternalWorkload', namespace: ns, name: `vm-${i}-${j}`, uid: randomUUID() },
        })),
    });
    const writer = new SliceWriter({ rest, tracker: new SliceTracker(), isLeader: () => true, fieldManager: 'cost.mesh-endpoints.io' });
    const measure = async (what: string, write: (i: number) => Promise<unknown>) => {
        const cpu = process.cpuUsage();
        const started = performance.now();
        await inParallel(
            Array.from({ length: n }, (_, i) => i),
            DEFAULT_CONCURRENT_SYNCS,
            async (i) => void (await write(i)),
        );
        const used = process.cpuUsage(cpu);
        const ms = performance.now() - started;
        console.log(
            `${what}: ${n} in ${ms.toFixed(0)} ms (${((n * 1000) / ms).toFixed(0)}/s), CPU ${((used.user + used.system) / 1000 / n).toFixed(3)} ms per write (user ${(used.user / 1000 / n).toFixed(3)}, sys ${(used.system / 1000 / n).toFixed(3)})`,
        );
    };
    for (let round = 0; round < rounds; round++) {
        const creates = Array.from({ length: n }, (_, i) => slice(i, false));
        await measure(`round ${round} creates`, (i) => writer.apply(writesPlan({ creates: [creates[i]!] })));
        const updates = (await rest.get<{ items: V1EndpointSlice[] }>(collectionPath(EndpointSlices, ns))).items.map(({ metadata }, i) => {
            const updated = slice(i, true);
            return { ...updated, metadata: { ...updated.metadata, name: metadata!.name, resourceVersion: metadata!.resourceVersion } };
        });
        await measure(`round ${round} updates`, (i) => writer.apply(writesPlan({ updates: [updates[i]!] })));
        await rest.delete(collectionPath(EndpointSlices, ns));
    }
    rest.close();
} finally {
    await cluster.stop().catch(() => down(name));
}
