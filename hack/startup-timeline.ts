// The external-workloads controller's start-up, phase by phase, on one cluster kept for several
// runs (and several builds, alternating, so they see the same load): process start → admin
// endpoint → caches synced (/readyz ok, probed every 50 ms) → Lease → first slice write → last
// slice write, with the process's CPU seconds at each point, its peak RSS, and the apiserver's
// own time for the LISTs (its apiserver_request_duration_seconds; those of endpointslices include
// this script's own polling of the slice count). Every run starts from no slices, as the
// cluster-scale bench's initial sync does.
//
//   npx tsx hack/startup-timeline.ts [RUNS] [ENTRY.js ...]     (default: 3 runs of dist/cli/main.js)
//   SCALE=large ...             one more Service of 10 000 workloads
//   STARTUP_LOG_LEVEL=debug STARTUP_SHOW_LOG=1   the controller's log lines too (the informers' 'listed')
//   STARTUP_NODE_ARGS="--cpu-prof --cpu-prof-dir=/tmp/prof"     node flags for the controller
//   STARTUP_NICE=-10            (root) the scheduling groups of etcd, the apiserver and the controller
//                               raised during each run: a busy machine's figure closer to a quiet one's
import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { createClusterScaleObjects } from '../bench/cluster-scale-objects.js';
import { statCpuSeconds } from '../bench/controller-process.js';
import { Cleanups, benchClusterName, startBenchCluster } from '../bench/local-cluster.js';
import { collectionPath, EndpointSlices } from '../src/kube/resources.js';
import { installCrds } from '../src/testing/crds.js';
import { apiserverMetrics } from '../test/integration/mirror-support.js';

const args = process.argv.slice(2);
const RUNS = Number(args.find((a) => /^\d+$/.test(a)) ?? 3);
const entries = args.filter((a) => a.endsWith('.js'));
if (entries.length === 0) entries.push(new URL('../dist/cli/main.js', import.meta.url).pathname);
const SERVICES = Number(process.env.BENCH_SERVICES ?? 1_000);
const services = Array.from({ length: SERVICES }, (_, i) => ({ name: `svc-${String(i).padStart(4, '0')}`, workloads: 10 }));
services.push({ name: 'burst', workloads: 1_000 });
if (process.env.SCALE === 'large') services.push({ name: 'big', workloads: 10_000 });
const minimumSlices = services.reduce((n, s) => n + Math.ceil(s.workloads / 100), 0);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Seconds and count of the apiserver's LISTs per resource. */
function listTimes(text: string): Record<string, { s: number; n: number }> {
    const out: Record<string, { s: number; n: number }> = {};
    for (const line of text.split('\n')) {
        const m = /^apiserver_request_duration_seconds_(sum|count)\{(.*)\} (\S+)$/.exec(line);
        if (!m || !m[2]!.includes('verb="LIST"')) continue;
        const resource = /resource="([^"]*)"/.exec(m[2]!)?.[1] ?? '?';
        const entry = (out[resource] ??= { s: 0, n: 0 });
        if (m[1] === 'sum') entry.s += Number(m[3]);
        else entry.n += Number(m[3]);
    }
    return out;
}

const cpuSeconds = (pid: number) => statCpuSeconds(`/proc/${pid}/stat`);
const peakRss = (pid: number) => Number(/^VmHWM:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]) / 1024;

async function main(): Promise<void> {
    const cleanups = new Cleanups();
    process.on('SIGINT', () => void cleanups.runAll().finally(() => process.exit(130)));
    const cluster = await startBenchCluster(benchClusterName('startup'), cleanups);
    try {
        await installCrds(cluster.admin);
        const ns = await cluster.namespace('scale');
        const leaseNs = await cluster.namespace('lease');
        const setUpStart = performance.now();
        const workloads = await createClusterScaleObjects(cluster, ns, services);
        console.log(`set-up: ${workloads} workloads, ${services.length} Services in ${((performance.now() - setUpStart) / 1000).toFixed(1)} s`);
        for (let run = 0; run < RUNS; run++) {
            for (const entry of entries) await oneRun(entry, cluster, ns, leaseNs);
        }
    } finally {
        await cluster.stop();
    }
}

async function sliceCount(cluster: Awaited<ReturnType<typeof startBenchCluster>>, ns: string): Promise<number> {
    const list = await cluster.admin.get<{ items: unknown[] }>(collectionPath(EndpointSlices, ns), { labelSelector: 'endpointslice.kubernetes.io/managed-by=external-workloads.mesh-endpoints.io' });
    return list.items.length;
}

async function oneRun(entry: string, cluster: Awaited<ReturnType<typeof startBenchCluster>>, ns: string, leaseNs: string): Promise<void> {
    await cluster.admin.request('DELETE', collectionPath(EndpointSlices, ns), { timeoutMs: 120_000 });
    while ((await sliceCount(cluster, ns)) > 0) await sleep(200);
    const listsBefore = listTimes(await apiserverMetrics(cluster));
    const nodeArgs = (process.env.STARTUP_NODE_ARGS ?? '').split(' ').filter(Boolean);
    const load = loadavg()[0]!;
    const t0 = performance.now();
    const epoch0 = Date.now();
    const child = spawn(
        process.execPath,
        [...nodeArgs, entry, 'external-workloads', '--kubeconfig', cluster.state.kubeconfig, '--namespace', leaseNs, '--watch-namespace', ns, '--admin-addr', '127.0.0.1:0', '--kube-api-qps', '0', '--log-level', process.env.STARTUP_LOG_LEVEL ?? 'info'],
        { stdio: ['ignore', 'pipe', 'pipe'], detached: true },
    );
    const pid = child.pid!;
    let exited = false;
    child.once('exit', () => (exited = true));
    const nice = process.env.STARTUP_NICE;
    if (nice) for (const p of [pid, cluster.state.apiserverPid, cluster.state.etcdPid]) writeFileSync(`/proc/${p}/autogroup`, nice);
    const marks: Record<string, number> = {};
    const cpuAt: Record<string, number> = {};
    const apiserverCpuAt: Record<string, number> = {};
    const peakAt: Record<string, number> = {};
    const apiserverCpu0 = cpuSeconds(cluster.state.apiserverPid);
    const mark = (what: string, at = performance.now()) => {
        if (marks[what] !== undefined) return;
        marks[what] = at - t0;
        apiserverCpuAt[what] = cpuSeconds(cluster.state.apiserverPid) - apiserverCpu0;
        try {
            cpuAt[what] = cpuSeconds(pid);
            peakAt[what] = peakRss(pid);
        } catch {
            /* gone */
        }
    };
    const logLines: string[] = [];
    let out = '';
    child.stdout!.on('data', (chunk: Buffer) => {
        out += chunk.toString();
        let nl: number;
        while ((nl = out.indexOf('\n')) >= 0) {
            const line = out.slice(0, nl);
            out = out.slice(nl + 1);
            try {
                const rec = JSON.parse(line) as { time: string; msg: string; [k: string]: unknown };
                const at = Date.parse(rec.time) - epoch0;
                if (rec.msg !== 'synced') logLines.push(`${at.toFixed(0).padStart(6)} ms  ${line.length > 300 ? line.slice(0, 300) : line}`);
                if (['admin endpoint listening', 'caches synced', 'became leader', 'caches synced and leading: controllers started'].includes(rec.msg)) mark(`log: ${rec.msg}`, t0 + at);
            } catch {
                logLines.push(line);
            }
        }
    });
    let admin: string | undefined;
    let err = '';
    child.stderr!.on('data', (c: Buffer) => {
        err += c.toString();
        admin ??= /admin endpoint listening on (\S+)/.exec(err)?.[1];
    });
    // The slices, by polling the count (a watch would add the same load to each run).
    let done = false;
    const deadline = performance.now() + 10 * 60_000;
    while (!done && performance.now() < deadline) {
        if (exited) throw new Error(`${entry} exited early: ${err.slice(-2000)}`);
        if (admin && marks['readyz ok'] === undefined) {
            const ok = await fetch(`http://${admin}/readyz`).then((r) => r.text()).catch(() => '');
            if (ok === 'ok') mark('readyz ok');
        }
        if (marks['readyz ok'] !== undefined) {
            const count = await sliceCount(cluster, ns);
            if (count > 0) mark('first slice seen');
            if (count >= minimumSlices) {
                mark('all slices seen');
                done = true;
            }
        }
        await sleep(50);
    }
    const rss = peakRss(pid);
    const listsAfter = listTimes(await apiserverMetrics(cluster));
    child.kill('SIGTERM');
    if (!exited) await new Promise((r) => child.once('exit', r));
    if (nice) for (const p of [cluster.state.apiserverPid, cluster.state.etcdPid]) writeFileSync(`/proc/${p}/autogroup`, '0');
    console.log(`\n=== ${entry} (load ${load.toFixed(1)} → ${loadavg()[0]!.toFixed(1)}), peak RSS ${rss.toFixed(0)} MB`);
    for (const [what, at] of Object.entries(marks).sort((a, b) => a[1] - b[1])) console.log(`${at.toFixed(0).padStart(6)} ms  cpu ${cpuAt[what]?.toFixed(2) ?? '?'} s  apiserver cpu ${apiserverCpuAt[what]!.toFixed(2)} s  peak RSS ${peakAt[what]?.toFixed(0)} MB  ${what}`);
    for (const [resource, after] of Object.entries(listsAfter)) {
        const before = listsBefore[resource] ?? { s: 0, n: 0 };
        if (after.n > before.n) console.log(`apiserver LIST ${resource}: ${after.n - before.n} requests, ${((after.s - before.s) * 1000).toFixed(0)} ms`);
    }
    if (process.env.STARTUP_SHOW_LOG) for (const line of logLines) console.log(line);
}

await main();
