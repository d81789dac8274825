// How fast the local kube-apiserver takes EndpointSlice writes: the figure behind the defaults of
// --kube-api-qps and --kube-api-burst (src/cli/common.ts). One client, no client-side limit,
// creates then updates slices of 100 endpoints, one request at a time and 8 at once.
import type { V1EndpointSlice } from '@kubernetes/client-node';
import { KubeRest } from '../src/kube/rest.js';
import { collectionPath, EndpointSlices, objectPath } from '../src/kube/resources.js';
import { benchClusterName, startBenchCluster, type Cleanups } from './local-cluster.js';
import type { Report } from './stats.js';

const BENCHMARK = 'apiserver-writes';
const SLICES = 200;
const ENDPOINTS = 100;

function slice(name: string, generation: number): V1EndpointSlice {
    return {
        apiVersion: 'discovery.k8s.io/v1',
        kind: 'EndpointSlice',
        metadata: { name, labels: { 'kubernetes.io/service-name': 'bench', 'endpointslice.kubernetes.io/managed-by': 'bench.mesh-endpoints.io' } },
        addressType: 'IPv4',
        endpoints: Array.from({ length: ENDPOINTS }, (_, i) => ({
            addresses: [`10.${generation % 250}.${Math.floor(i / 250)}.${(i % 250) + 1}`],
            conditions: { ready: true },
        })),
        ports: [{ name: 'http', port: 8080, protocol: 'TCP' }],
    };
}

/** Runs `count` writes with `concurrency` in flight; returns writes per second. */
async function rate(count: number, concurrency: number, write: (i: number) => Promise<unknown>): Promise<number> {
    let next = 0;
    const started = performance.now();
    await Promise.all(
        Array.from({ length: concurrency }, async () => {
            for (let i = next++; i < count; i = next++) await write(i);
        }),
    );
    return (count * 1000) / (performance.now() - started);
}

export async function runApiserverWritesBenchmark(report: Report, cleanups: Cleanups): Promise<void> {
    const cluster = await startBenchCluster(benchClusterName('writes'), cleanups);
    const rest = new KubeRest(cluster.kubeConfig(), { timeoutMs: 30_000 });
    try {
        for (const concurrency of [1, 8]) {
            const ns = await cluster.namespace('bench');
            const path = collectionPath(EndpointSlices, ns);
            const created: V1EndpointSlice[] = [];
            const creates = await rate(SLICES, concurrency, async (i) => (created[i] = await rest.create(path, slice(`s-${i}`, 0))));
            report.value(BENCHMARK, `EndpointSlice creates per second, ${concurrency} in flight`, SLICES, 'slices', creates, 'writes/s');
            const updates = await rate(SLICES, concurrency, (i) =>
                rest.replace(objectPath(EndpointSlices, ns, `s-${i}`), { ...slice(`s-${i}`, 1), metadata: { ...created[i]!.metadata } }),
            );
            report.value(BENCHMARK, `EndpointSlice updates per second, ${concurrency} in flight`, SLICES, 'slices', updates, 'writes/s');
        }
    } finally {
        rest.close();
        await cluster.stop();
    }
}
