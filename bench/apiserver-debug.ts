// The local kube-apiserver's Go runtime, through its /debug/pprof (on by default: --profiling):
// CPU profiles of a phase, and a garbage collection forced before a measurement. A Go GC cycle of
// the apiserver holding cluster-scale's objects costs it about as much CPU as a few hundred slice
// creates, so whether one falls inside a window of 1 010 creates moves that window's rate
// ("The apiserver's pace" in docs/benchmarks.md). And the GOMAXPROCS of it and of etcd, which
// their Go runtime (1.25 on) follows from the cores they may run on.
import https from 'node:https';
import type { TestCluster } from '../src/testing/harness.js';
import { statCpuSeconds } from './controller-process.js';

export async function debugGet(cluster: TestCluster, path: string): Promise<Buffer> {
    const options: https.RequestOptions = {};
    await cluster.kubeConfig().applyToHTTPSOptions(options);
    return new Promise<Buffer>((resolve, reject) => {
        https
            .get(`${cluster.state.server}${path}`, options, (res) => {
                const chunks: Buffer[] = [];
                res.on('data', (c: Buffer) => chunks.push(c));
                res.on('end', () => (res.statusCode === 200 ? resolve(Buffer.concat(chunks)) : reject(new Error(`${path}: ${res.statusCode} ${Buffer.concat(chunks).toString()}`))));
            })
            .on('error', reject);
    });
}

/** Runs a full Go garbage collection in the apiserver (the heap profile's gc=1) and waits for it. */
export async function collectApiserverGarbage(cluster: TestCluster): Promise<void> {
    await debugGet(cluster, '/debug/pprof/heap?gc=1');
}

/** What the apiserver spent up to now: CPU seconds (/proc), Go GC cycles and bytes allocated (its /metrics). */
export interface ApiserverSpend {
    cpuSeconds: number;
    gcs: number;
    allocatedMb: number;
}

export async function apiserverSpend(cluster: TestCluster): Promise<ApiserverSpend> {
    const metrics = (await debugGet(cluster, '/metrics')).toString('utf8');
    const gauge = (name: string) => Number(/^(\S+) (\S+)$/m.exec(metrics.split('\n').find((l) => l.startsWith(`${name} `)) ?? '')?.[2] ?? Number.NaN);
    return {
        cpuSeconds: statCpuSeconds(`/proc/${cluster.state.apiserverPid}/stat`),
        gcs: gauge('go_gc_duration_seconds_count'),
        allocatedMb: gauge('go_memstats_alloc_bytes_total') / 1e6,
    };
}

export function spentSince(before: ApiserverSpend, after: ApiserverSpend): ApiserverSpend {
    return { cpuSeconds: after.cpuSeconds - before.cpuSeconds, gcs: after.gcs - before.gcs, allocatedMb: after.allocatedMb - before.allocatedMb };
}

async function goMaxProcs(cluster: TestCluster): Promise<{ apiserver: number; etcd: number }> {
    const gauge = (metrics: string) => Number(/^go_sched_gomaxprocs_threads (\S+)$/m.exec(metrics)?.[1]);
    const etcd = await fetch(`http://127.0.0.1:${cluster.state.etcdPort}/metrics`).then((res) => res.text());
    return { apiserver: gauge((await debugGet(cluster, '/metrics')).toString('utf8')), etcd: gauge(etcd) };
}

/**
 * Waits until the apiserver's and etcd's Go runtimes run `cores` Ps, after their cores changed
 * (they check about once a second): a window measured before would run on the old setting.
 */
export async function waitForGoMaxProcs(cluster: TestCluster, cores: number): Promise<void> {
    const deadline = performance.now() + 15_000;
    for (;;) {
        const now = await goMaxProcs(cluster);
        if (now.apiserver === cores && now.etcd === cores) return;
        if (performance.now() > deadline) throw new Error(`GOMAXPROCS of the apiserver ${now.apiserver} and of etcd ${now.etcd} after 15 s, not ${cores}: are they built with Go 1.25 or later?`);
        await new Promise((r) => setTimeout(r, 100));
    }
}
