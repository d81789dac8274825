// Benchmark: the Multi-Cluster Services import at scale, run as users run it (the compiled CLI,
// one service-mirror process per cluster, `--cluster-name`) against real local apiservers linked
// both ways: N Services of 10 endpoints each exported in east. The figures: the time from each
// ServiceExport's create to its ServiceImport with an IP and an MCS slice with endpoints in every
// cluster, east included (polled every 100 ms, so ±100 ms; median, p95 and p99), the writes per
// import summed over every cluster (apiserver_request_total), the steady state (writes over 10 s
// with nothing changing, every cluster: 0 promised), and memory per imported Service (each
// service-mirror's RSS and heap after the imports less before, over N).
//
// BENCH_MCS_SERVICES=N changes the 200 (SCALE=large: 1 000); BENCH_MCS_CLUSTERS=3 adds a third
// cluster (north) linked with both, importing too. The figure is 3 clusters of 1 000.
import type { V1EndpointSlice } from '@kubernetes/client-node';
import { readFileSync } from 'node:fs';
import { collectionPath, EndpointSlices, Links, Namespaces, Secrets, Services } from '../src/kube/resources.js';
import { LABEL_MCS_SERVICE_NAME, ServiceExports, ServiceImports, type ServiceImport } from '../src/servicemirror/mcs/types.js';
import { installCrds, installMcsCrds } from '../src/testing/crds.js';
import { apiserverMetrics, apiserverRequestSums } from '../test/integration/mirror-support.js';
import { percentile } from './stats.js';
import { inParallel, sleep } from './async.js';
import { ControllerProcess, controllerEntry } from './controller-process.js';
import { benchClusterName, startBenchCluster, type BenchCluster, type Cleanups } from './local-cluster.js';
import type { Report } from './stats.js';

const BENCHMARK = 'mcs-scale';
const SERVICES = Number(process.env.BENCH_MCS_SERVICES ?? (process.env.SCALE === 'large' ? 1_000 : 200));
const CLUSTERS = (process.env.BENCH_MCS_CLUSTERS === '3' ? ['east', 'west', 'north'] : ['east', 'west']) as readonly string[];
const ENDPOINTS = 10;
const NAMESPACE = 'bench-mcs';
const WRITTEN = ['serviceimports', 'services', 'endpointslices', 'serviceexports'];
const GATEWAY: Record<string, string> = { east: '192.0.2.10', west: '192.0.2.20', north: '192.0.2.30' };

export async function runMcsScaleBenchmark(report: Report, cleanups: Cleanups): Promise<void> {
    const entry = controllerEntry();
    const clusters = new Map<string, BenchCluster>();
    const controllers: ControllerProcess[] = [];
    try {
        await Promise.all(CLUSTERS.map(async (name) => clusters.set(name, await startBenchCluster(benchClusterName(`mcs-${name}`), cleanups))));
        for (const [name, cluster] of clusters) {
            await installCrds(cluster.admin);
            await installMcsCrds(cluster.admin);
            for (const ns of ['mc', NAMESPACE]) await cluster.admin.create(collectionPath(Namespaces), { metadata: { name: ns } });
            for (const [other, remote] of clusters) {
                if (other === name) continue;
                await cluster.admin.create(collectionPath(Secrets, 'mc'), {
                    metadata: { name: `creds-${other}` },
                    type: 'mirror.linkerd.io/remote-kubeconfig',
                    data: { kubeconfig: Buffer.from(readFileSync(remote.state.kubeconfig, 'utf8')).toString('base64') },
                });
                await cluster.admin.create(collectionPath(Links, 'mc'), {
                    apiVersion: 'multicluster.linkerd.io/v1alpha3',
                    kind: 'Link',
                    metadata: { name: other },
                    spec: { targetClusterName: other, targetClusterDomain: 'cluster.local', clusterCredentialsSecret: `creds-${other}`, gatewayAddress: GATEWAY[other], gatewayPort: '4143', gatewayIdentity: `gw.${other}`, selector: { matchLabels: { 'mirror.linkerd.io/exported': 'true' } } },
                });
            }
        }
        const east = clusters.get('east')!;
        // east's Services and their own slices (upstream-labelled: no endpointslice controller runs here).
        const names = Array.from({ length: SERVICES }, (_, i) => `svc-${i}`);
        await inParallel(names, 16, async (name) => {
            const i = Number(name.slice('svc-'.length));
            await east.admin.create(collectionPath(Services, NAMESPACE), { metadata: { name }, spec: { selector: { app: name }, ports: [{ name: 'http', port: 80 }] } });
            await east.admin.create(collectionPath(EndpointSlices, NAMESPACE), {
                metadata: { name: `${name}-upstream`, labels: { 'kubernetes.io/service-name': name, 'endpointslice.kubernetes.io/managed-by': 'endpointslice-controller.k8s.io' } },
                addressType: 'IPv4',
                ports: [{ name: 'http', port: 8080, protocol: 'TCP' }],
                endpoints: Array.from({ length: ENDPOINTS }, (_, j) => ({ addresses: [`10.${1 + j}.${Math.floor(i / 250)}.${(i % 250) + 1}`], conditions: { ready: true } })),
            });
        });
        for (const [name, cluster] of clusters) {
            controllers.push(
                await ControllerProcess.start(entry, 'service-mirror', ['--kubeconfig', cluster.state.kubeconfig, '--namespace', 'mc', '--identity', `bench-${name}`, '--cluster-name', name], cleanups),
            );
        }
        await sleep(3_000); // leading, and the Links' remote watches synced
        const all = [...clusters.values()];
        const writesNow = async () => {
            const per = await Promise.all(all.map(async (c) => apiserverRequestSums(await apiserverMetrics(c), 'apiserver_request_total', WRITTEN)));
            const total: Record<string, number> = {};
            for (const counts of per) for (const [k, v] of Object.entries(counts)) total[k] = (total[k] ?? 0) + v;
            return total;
        };
        const memoryNow = async () => Promise.all(controllers.map(async (c) => ({ rss: c.rssMb(), heap: await c.heapUsedMb() })));
        const before = await writesNow();
        const memBefore = await memoryNow();
        const created = new Map<string, number>();
        await inParallel(names, 16, async (name) => {
            created.set(name, performance.now());
            await east.admin.create(collectionPath(ServiceExports, NAMESPACE), { apiVersion: 'multicluster.x-k8s.io/v1beta1', kind: 'ServiceExport', metadata: { name } });
        });
        // Per Service, when each cluster first had both; the figure is the last cluster's.
        const seen = new Map<string, Map<string, number>>();
        const done = new Map<string, number>();
        const deadline = performance.now() + 600_000;
        while (done.size < SERVICES && performance.now() < deadline) {
            for (const [cluster, c] of clusters) {
                const [imports, slices] = await Promise.all([
                    c.admin.get<{ items: ServiceImport[] }>(collectionPath(ServiceImports, NAMESPACE)),
                    c.admin.get<{ items: V1EndpointSlice[] }>(collectionPath(EndpointSlices, NAMESPACE), { labelSelector: 'endpointslice.kubernetes.io/managed-by=mcs.mesh-endpoints.io' }),
                ]);
                const now = performance.now();
                const sliced = new Set(slices.items.filter((s) => (s.endpoints ?? []).length > 0).map((s) => s.metadata?.labels?.[LABEL_MCS_SERVICE_NAME]));
                for (const si of imports.items) {
                    const name = si.metadata!.name!;
                    if (!created.has(name) || !(si.spec?.ips ?? []).length || !sliced.has(name)) continue;
                    const at = seen.get(name) ?? new Map<string, number>();
                    seen.set(name, at);
                    if (!at.has(cluster)) at.set(cluster, now - created.get(name)!);
                    if (!done.has(name) && at.size === clusters.size) done.set(name, Math.max(...at.values()));
                }
            }
            await sleep(100);
        }
        if (done.size < SERVICES) throw new Error(`only ${done.size} of ${SERVICES} imports converged in every cluster within 600 s`);
        const samples = [...done.values()];
        report.timing(BENCHMARK, `ServiceExport in east to ServiceImport with an IP and a slice in all ${clusters.size} clusters`, SERVICES, 'exported Services', samples, {
            p99: percentile(samples, 99),
        });
        await sleep(2_000); // the last status writes
        const converged = await writesNow();
        const writes = sum(converged) - sum(before);
        report.value(BENCHMARK, `writes in all ${clusters.size} clusters per import`, SERVICES, 'exported Services', writes / SERVICES, 'writes', undefined, diff(converged, before));
        const memAfter = await memoryNow();
        CLUSTERS.forEach((name, i) => {
            const rss = memAfter[i]!.rss - memBefore[i]!.rss;
            const heap = memAfter[i]!.heap - memBefore[i]!.heap;
            report.value(BENCHMARK, `${name}'s service-mirror memory per imported Service (RSS; heap in detail)`, SERVICES, 'imports', (rss * 1024) / SERVICES, 'KB', undefined, {
                heapKbPerImport: (heap * 1024) / SERVICES,
                rssMbAfter: memAfter[i]!.rss,
                heapMbAfter: memAfter[i]!.heap,
            });
        });
        await sleep(10_000);
        const steady = await writesNow();
        report.value(BENCHMARK, `writes in all ${clusters.size} clusters over 10 s with nothing changing`, SERVICES, 'imports', sum(steady) - sum(converged), 'writes', 0, diff(steady, converged));
    } finally {
        await Promise.all(controllers.map((c) => c.stop()));
        await Promise.all([...clusters.values()].map((c) => c.stop()));
    }
}

const sum = (counts: Record<string, number>) => Object.values(counts).reduce((a, b) => a + b, 0);
const diff = (after: Record<string, number>, before: Record<string, number>) => Object.fromEntries(Object.entries(after).map(([k, v]) => [k, v - (before[k] ?? 0)]).filter(([, v]) => v !== 0));
