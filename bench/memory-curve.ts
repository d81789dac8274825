// Benchmark: the external-workloads controller's memory as the workloads grow, run as users run
// it (the compiled CLI, a process of its own, default flags but `--kube-api-qps 0`). At each step
// the cluster holds that many workloads, 100 per Service (one full slice each); a fresh
// controller converges them and its RSS and V8 heap are read once it is idle. The first step,
// no workloads at all, is the fixed cost; the slope between steps the cost of one more workload
// (its cached object, its endpoint in a cached slice, its share of a Service).
//
// Default steps: 0, 10 000 and 50 000 workloads; SCALE=large adds 100 000.
// BENCH_MEMORY_STEPS=0,1000,2000 for a quick look (multiples of 100).
import { readFileSync } from 'node:fs';
import { collectionPath, EndpointSlices, ExternalWorkloads, Services } from '../src/kube/resources.js';
import { installCrds } from '../src/testing/crds.js';
import { ControllerProcess, controllerEntry, metricFrom } from './controller-process.js';
import { benchClusterName, startBenchCluster, type BenchCluster, type Cleanups } from './local-cluster.js';
import { inParallel, sleep } from './async.js';
import type { Report } from './stats.js';

const BENCHMARK = 'memory-curve';
const STEPS = process.env.BENCH_MEMORY_STEPS?.split(',').map(Number) ?? (process.env.SCALE === 'large' ? [0, 10_000, 50_000, 100_000] : [0, 10_000, 50_000]);
const PER_SERVICE = 100;
/** Creates in flight while setting up: the local apiserver, not this client, sets the pace. */
const CREATE_CONCURRENCY = 32;
/**
 * Idle time after convergence over which the heap is sampled (every second): the least heap
 * used is the one after V8 collected the initial sync's garbage (its memory reducer runs a
 * few seconds into an idle period); a single reading may catch tens of MB of garbage.
 */
const SETTLE_S = 20;
const MB = 2 ** 20;

const serviceName = (i: number) => `svc-${String(i).padStart(5, '0')}`;
/** Addresses from 10/8, one per workload; never connected to. */
const ipOf = (n: number) => `10.${(n >> 16) & 255}.${(n >> 8) & 255}.${(n & 255) || 1}`;

function rssMbOf(pid: number): number {
    const match = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Number(match[1]) / 1024 : Number.NaN;
}

/** Workloads [from, to) and the Services that select them (workload k belongs to Service k / PER_SERVICE). */
async function grow(cluster: BenchCluster, ns: string, from: number, to: number): Promise<void> {
    const indexes = Array.from({ length: to - from }, (_, i) => from + i);
    await inParallel(indexes, CREATE_CONCURRENCY, async (k) => {
        const name = `${serviceName(Math.floor(k / PER_SERVICE))}-vm-${String(k % PER_SERVICE).padStart(3, '0')}`;
        await cluster.admin.create(collectionPath(ExternalWorkloads, ns), {
            apiVersion: 'workload.linkerd.io/v1beta1',
            kind: 'ExternalWorkload',
            metadata: { name, labels: { app: serviceName(Math.floor(k / PER_SERVICE)) } },
            spec: {
                meshTLS: { identity: `${name}.${ns}.serviceaccount.identity.linkerd.cluster.local`, serverName: name },
                workloadIPs: [{ ip: ipOf(k + 1) }],
                ports: [{ name: 'http', port: 8080 }],
            },
        });
    });
    const services = Array.from({ length: (to - from) / PER_SERVICE }, (_, i) => from / PER_SERVICE + i);
    await inParallel(services, CREATE_CONCURRENCY, async (i) => {
        await cluster.admin.create(collectionPath(Services, ns), {
            apiVersion: 'v1',
            kind: 'Service',
            metadata: { name: serviceName(i) },
            spec: { selector: { app: serviceName(i) }, ports: [{ name: 'http', port: 80, targetPort: 'http' }] },
        });
    });
}

/**
 * The slices in the namespace (all ours: the local control plane runs no other controller),
 * counted by the apiserver: one item listed, the rest counted (it counts only without a selector).
 */
async function sliceCount(cluster: BenchCluster, ns: string): Promise<number> {
    const list = await cluster.admin.get<{ items: unknown[]; metadata: { remainingItemCount?: number } }>(collectionPath(EndpointSlices, ns), { limit: 1 });
    return list.items.length + (list.metadata.remainingItemCount ?? 0);
}

interface Step {
    workloads: number;
    rssMb: number;
    heapUsedMb: number;
}

/** A fresh controller converges `workloads`; its memory once idle. */
async function measureStep(cluster: BenchCluster, entry: string, ns: string, leaseNs: string, workloads: number, cleanups: Cleanups, report: Report): Promise<Step> {
    const slices = workloads / PER_SERVICE;
    // The CLI prints its admin address once its caches synced: listing 50 000 workloads took over a minute at load 25.
    const args = ['--kubeconfig', cluster.state.kubeconfig, '--namespace', leaseNs, '--watch-namespace', ns];
    const controller = await ControllerProcess.start(entry, 'external-workloads', args, cleanups, { listenTimeoutMs: 15 * 60_000 });
    try {
        for (;;) {
            const metrics = (await controller.get('/metrics')).text;
            const published = metricFrom(metrics, 'mesh_endpoints_external_workloads_endpoints_desired');
            const queued = metricFrom(metrics, 'mesh_endpoints_workqueue_depth', 'name="external-workloads"');
            if (published === workloads && queued === 0 && (await sliceCount(cluster, ns)) === slices) break;
            if (performance.now() - controller.startedAt > 30 * 60_000) throw new Error(`${workloads} workloads not converged after 30 minutes`);
            await sleep(1_000);
        }
        const convergedMs = performance.now() - controller.startedAt;
        let heapUsedMb = Number.POSITIVE_INFINITY;
        let metrics = '';
        for (let i = 0; i < SETTLE_S; i++) {
            await sleep(1_000);
            metrics = (await controller.get('/metrics')).text;
            heapUsedMb = Math.min(heapUsedMb, metricFrom(metrics, 'mesh_endpoints_nodejs_heap_size_used_bytes') / MB);
        }
        const step = { workloads, rssMb: controller.rssMb(), heapUsedMb };
        report.value(BENCHMARK, `controller RSS after converging ${workloads} workloads (${slices} Services of ${PER_SERVICE})`, workloads, 'workloads', step.rssMb, 'MB', undefined, {
            'peak RSS (MB)': controller.peakRssMb(),
            'V8 heap used, least over 20 s (MB)': step.heapUsedMb,
            'V8 heap total (MB)': metricFrom(metrics, 'mesh_endpoints_nodejs_heap_size_total_bytes') / MB,
            'process start to converged (s)': convergedMs / 1000,
            'controller CPU (s)': controller.cpuSeconds(),
            'etcd RSS (MB)': rssMbOf(cluster.state.etcdPid),
            'kube-apiserver RSS (MB)': rssMbOf(cluster.state.apiserverPid),
        });
        return step;
    } finally {
        await controller.stop();
    }
}

export async function runMemoryCurveBenchmark(report: Report, cleanups: Cleanups): Promise<void> {
    const entry = controllerEntry();
    const cluster = await startBenchCluster(benchClusterName('memory'), cleanups);
    try {
        await installCrds(cluster.admin);
        const ns = await cluster.namespace('memory');
        const leaseNs = await cluster.namespace('lease');
        const steps: Step[] = [];
        let created = 0;
        for (const workloads of STEPS) {
            if (workloads > created) {
                const started = performance.now();
                await grow(cluster, ns, created, workloads);
                report.value(BENCHMARK, `set-up: workloads ${created}..${workloads} and their Services created (${CREATE_CONCURRENCY} at a time)`, workloads - created, 'workloads', performance.now() - started, 'ms');
                created = workloads;
            }
            steps.push(await measureStep(cluster, entry, ns, leaseNs, workloads, cleanups, report));
        }
        for (let i = 1; i < steps.length; i++) {
            const [a, b] = [steps[i - 1]!, steps[i]!];
            const n = b.workloads - a.workloads;
            report.value(BENCHMARK, `cost of one more workload, ${a.workloads} to ${b.workloads} (RSS slope)`, n, 'workloads', ((b.rssMb - a.rssMb) * MB) / n / 1024, 'KB', undefined, {
                'V8 heap used slope (KB)': ((b.heapUsedMb - a.heapUsedMb) * MB) / n / 1024,
            });
        }
    } finally {
        await cluster.stop();
    }
}
