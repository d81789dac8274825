// The external-workloads controller's write phase (caches synced → last slice of the initial
// sync), next to the apiserver's own pace measured just before it on the same cluster: the
// baseline client's creates of slices shaped as ours, at the same concurrency. Several builds
// alternate run by run, so each pair sees the same load. For each: wall time and ratio, the
// CPU seconds of the controller (main thread and V8's other threads apart, /proc/<pid>/task),
// of the apiserver and of etcd, per write; the main thread's time on a CPU and waiting for one.
//
// The creates the apiserver had in flight on average come from its own request durations.
//
//   npx tsx hack/write-phase.ts [RUNS] [ENTRY.js[@WORKERS] ...]   (default: 3 runs of dist/cli/main.js)
//       ENTRY.js@8: a build with 8 workers; its baseline then runs 8 at a time too
//   WRITE_PHASE_VARIANTS="A=|B=--max-opt=2" each entry with several sets of node flags (after the bundle's own)
//   WRITE_PHASE_NICE=-10                    (root) etcd, the apiserver, the controller and this process raised
//   WRITE_PHASE_BASELINES_ONLY=N            N rounds of the baseline alone, in several conditions
//   WRITE_PHASE_KINDS="plain|metadata answers"   only these of them
//   BENCH_SERVICES=1000                     Services of 10 workloads (plus one of 1 000), as cluster-scale
//   WRITE_PHASE_BIG=10000                   one more Service of that many workloads (as SCALE=large); the baseline writes the same mix of slices
//   WRITE_PHASE_BASELINE_N=400              the baseline's creates (default: as many as the sync's minimum)
//   WRITE_PHASE_PROFILE=DIR                 a Go CPU profile of the apiserver over each phase into DIR
//                                           (WRITE_PHASE_PROFILE_SECONDS, 4 by default: the phase and some idle);
//                                           compare: go tool pprof -top -cum -diff_base=DIR/0-0-baseline.pb.gz DIR/0-0-controller.pb.gz
//   WRITE_PHASE_LIKE_SYNC=1                 each baseline as bench/cluster-scale.ts's pairs: a GC, the informers' lists, two watches first
//   WRITE_PHASE_SPLIT=1                     the apiserver and etcd on half the cores, this tool and the controllers on the rest
//   WRITE_PHASE_GC=1                        a full Go GC of the apiserver before each baseline and each controller start
//   Each phase also prints what the apiserver and etcd counted meanwhile (requests by verb and
//   resource, watch events sent, Go GCs, etcd's WAL fsyncs and backend commits).
import { mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import type { V1EndpointSlice } from '@kubernetes/client-node';
import { apiserverCpuProfile, collectApiserverGarbage } from '../bench/apiserver-debug.js';
import { createClusterScaleObjects, listAsInformers, sliceSizesOf } from '../bench/cluster-scale-objects.js';
import { shapedSlice, shapedSlicesOfMix } from '../bench/write-baselines.js';
import { ControllerProcess, machineCpuSeconds, statCpuSeconds } from '../bench/controller-process.js';
import { coreSplit, splitClusterCores } from '../bench/core-layout.js';
import { Cleanups, benchClusterName, startBenchCluster, type BenchCluster } from '../bench/local-cluster.js';
import { inParallel } from '../bench/parallel.js';
import { DEFAULT_CONCURRENT_SYNCS } from '../src/externalworkloads/controller.js';
import { collectionPath, EndpointSlices, Services } from '../src/kube/resources.js';
import { installCrds } from '../src/testing/crds.js';
import { apiserverMetrics } from '../test/integration/mirror-support.js';

const args = process.argv.slice(2);
const RUNS = Number(args.find((a) => /^\d+$/.test(a)) ?? 3);
const entries = args.filter((a) => /\.js(@\d+)?$/.test(a));
if (entries.length === 0) entries.push(new URL('../dist/cli/main.js', import.meta.url).pathname);
const variants = (process.env.WRITE_PHASE_VARIANTS ?? '=')
    .split('|')
    .map((v) => ({ name: v.slice(0, v.indexOf('=')), nodeArgs: v.slice(v.indexOf('=') + 1) }));
const SERVICES = Number(process.env.BENCH_SERVICES ?? 1_000);
const CONCURRENCY = Number(process.env.WRITE_PHASE_CONCURRENCY ?? DEFAULT_CONCURRENT_SYNCS);
const NICE = process.env.WRITE_PHASE_NICE;
const services = Array.from({ length: SERVICES }, (_, i) => ({ name: `svc-${String(i).padStart(4, '0')}`, workloads: 10 }));
services.push({ name: 'burst', workloads: 1_000 });
if (process.env.WRITE_PHASE_BIG) services.push({ name: 'big', workloads: Number(process.env.WRITE_PHASE_BIG) });
/** The endpoints of each slice of the initial sync: the baseline writes the same mix. */
const sliceSizes = sliceSizesOf(services);
const minimumSlices = sliceSizes.length;
const BASELINE_N = Number(process.env.WRITE_PHASE_BASELINE_N ?? minimumSlices);
const PROFILE_DIR = process.env.WRITE_PHASE_PROFILE;
const PROFILE_SECONDS = Number(process.env.WRITE_PHASE_PROFILE_SECONDS ?? 4);
/** A full Go GC of the apiserver before each baseline and each controller start. */
const GC_FIRST = process.env.WRITE_PHASE_GC === '1';
/** The paired baseline as cluster-scale's pairs run it: a GC, the informers' lists and two slice watches first. */
const LIKE_SYNC = process.env.WRITE_PHASE_LIKE_SYNC === '1';
/** The apiserver and etcd on cores of their own, this tool and the controllers on the rest (bench/core-layout.ts). */
const SPLIT = process.env.WRITE_PHASE_SPLIT === '1';
const MANAGED = 'endpointslice.kubernetes.io/managed-by=external-workloads.mesh-endpoints.io';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const cpu = (pid: number) => statCpuSeconds(`/proc/${pid}/stat`);
/** Milliseconds between the phase's start and each quarter's last write, differenced. */
function quarters(startedAt: number, doneAt: number[]): number[] {
    const sorted = [...doneAt].sort((a, b) => a - b);
    const ends = [1, 2, 3, 4].map((q) => sorted[Math.ceil((q * sorted.length) / 4) - 1]! - startedAt);
    return ends.map((end, q) => end - (q === 0 ? 0 : ends[q - 1]!));
}
const machineSince = (m0: { busy: number; idle: number }) => {
    const m = machineCpuSeconds();
    return { machineBusy: m.busy - m0.busy, machineIdle: m.idle - m0.idle };
};
/** The controller's main thread and the sum of its other threads (V8's compiler and GC helpers, libuv's pool). */
function threads(pid: number): { main: number; others: number } {
    let others = 0;
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
        if (Number(tid) === pid) continue;
        try {
            others += statCpuSeconds(`/proc/${pid}/task/${tid}/stat`);
        } catch {
            /* exited */
        }
    }
    return { main: statCpuSeconds(`/proc/${pid}/task/${pid}/stat`), others };
}

/** Counts the slices of ours the apiserver has (a watch, as the cluster-scale bench keeps one). */
async function watchSlices(cluster: BenchCluster, ns: string, want: number, signal: AbortSignal, labelSelector = MANAGED, onAdded: (count: number) => void = () => undefined): Promise<{ done: Promise<number>; addedAt: number[] }> {
    const names = new Set<string>();
    const addedAt: number[] = [];
    let resolve: (at: number) => void = () => undefined;
    const done = new Promise<number>((r) => (resolve = r));
    const list = await cluster.admin.get<{ metadata: { resourceVersion: string } }>(collectionPath(EndpointSlices, ns), { labelSelector, limit: 1 });
    void cluster.admin
        .watch(
            collectionPath(EndpointSlices, ns),
            { labelSelector, resourceVersion: list.metadata.resourceVersion },
            signal,
            (event) => {
                const slice = event.object as V1EndpointSlice;
                if (event.type === 'ADDED') {
                    names.add(slice.metadata!.name!);
                    addedAt.push(performance.now());
                    onAdded(addedAt.length);
                }
                if (event.type === 'DELETED') names.delete(slice.metadata!.name!);
                if (names.size >= want) resolve(performance.now());
            },
            () => undefined,
        )
        .catch(() => undefined);
    await sleep(300);
    return { done, addedAt };
}

async function deleteSlices(cluster: BenchCluster, ns: string, selector?: string): Promise<void> {
    await cluster.admin.request('DELETE', collectionPath(EndpointSlices, ns), { query: { labelSelector: selector }, timeoutMs: 120_000 });
    for (;;) {
        const list = await cluster.admin.get<{ items: unknown[] }>(collectionPath(EndpointSlices, ns), { labelSelector: selector, limit: 1 });
        if (list.items.length === 0) return;
        await sleep(200);
    }
}

interface Phase {
    wallMs: number;
    writes: number;
    client: number;
    clientMain?: number;
    clientOthers?: number;
    apiserver: number;
    etcd: number;
    mainOnCpuMs?: number;
    mainWaitMs?: number;
    /** Creates the apiserver had in flight, on average over the phase. */
    inFlight?: number;
    /** The machine's CPU seconds over the phase, busy and idle (both cores). */
    machineBusy?: number;
    machineIdle?: number;
    /** This tool's CPU seconds during a controller's phase (its watch of the slices). */
    tool?: number;
    /** Milliseconds each quarter of the writes took, in the order written (warm-up shows in the first). */
    quarters?: number[];
    /** The controller's CPU ms per write in each quarter. */
    cpuQuarters?: number[];
    /** What the apiserver and etcd counted over the phase (countersDelta). */
    counted?: string;
}

interface BaselineOptions {
    concurrency: number;
    /** Watches of the slices open in this process meanwhile. */
    watchers?: number;
    /** A namespace whose workloads and Services are listed just before. */
    listFirst?: string;
    /** Asking for metadata-only answers, as the controller does. */
    metadata?: boolean;
    /** A full Go GC of the apiserver just before the creates. */
    gcFirst?: boolean;
    /** The profile's file name with WRITE_PHASE_PROFILE. */
    profileName?: string;
}

/** The baseline: BASELINE_N creates of slices shaped as ours, from this process. */
async function baseline(cluster: BenchCluster, ns: string, ownerUid: string, o: BaselineOptions): Promise<Phase> {
    const ofMix = shapedSlicesOfMix(ns, 'owner', ownerUid, sliceSizes);
    const slice = (i: number) => (i < sliceSizes.length ? ofMix(i) : shapedSlice(ns, 'owner', ownerUid, i));
    const abort = new AbortController();
    // In the order of a controller's start: the apiserver's GC state, then its lists and watches.
    if (o.gcFirst) await collectApiserverGarbage(cluster);
    for (let i = 0; i < (o.watchers ?? 0); i++) await watchSlices(cluster, ns, BASELINE_N, abort.signal, '');
    if (o.listFirst) await listAsInformers(cluster, o.listFirst);
    const apiSeconds0 = await createSeconds(cluster);
    const counted0 = await counters(cluster);
    const profile = startProfile(cluster);
    const api0 = cpu(cluster.state.apiserverPid);
    const etcd0 = cpu(cluster.state.etcdPid);
    const client0 = process.cpuUsage();
    const machine0 = machineCpuSeconds();
    const doneAt: number[] = [];
    const started = performance.now();
    await inParallel(Array.from({ length: BASELINE_N }, (_, i) => i), o.concurrency, async (i) => {
        if (o.metadata) await cluster.admin.createForMetadata(collectionPath(EndpointSlices, ns), slice(i), { fieldManager: 'bench.mesh-endpoints.io' });
        else await cluster.admin.create(collectionPath(EndpointSlices, ns), slice(i), { fieldManager: 'bench.mesh-endpoints.io' });
        doneAt.push(performance.now());
    });
    const wallMs = performance.now() - started;
    const c = process.cpuUsage(client0);
    const phase: Phase = { wallMs, writes: BASELINE_N, client: (c.user + c.system) / 1e6, apiserver: cpu(cluster.state.apiserverPid) - api0, etcd: cpu(cluster.state.etcdPid) - etcd0, ...machineSince(machine0), quarters: quarters(started, doneAt) };
    abort.abort();
    phase.inFlight = ((await createSeconds(cluster)) - apiSeconds0) / (wallMs / 1000);
    phase.counted = countersDelta(counted0, await counters(cluster));
    await profile.save(o.profileName ?? 'baseline');
    await deleteSlices(cluster, ns);
    return phase;
}

async function controllerRun(entry: string, nodeArgs: string, cluster: BenchCluster, ns: string, leaseNs: string, cleanups: Cleanups, profileName = 'controller'): Promise<Phase & { syncedMs: number; cpuAtSynced: number }> {
    await deleteSlices(cluster, ns, MANAGED);
    if (GC_FIRST || LIKE_SYNC) await collectApiserverGarbage(cluster);
    const abort = new AbortController();
    // The controller's CPU at each quarter of the slices seen: a fresh process's warm-up shows as a dearer first quarter.
    const cpuAtQuarter: number[] = [];
    let pid = 0;
    const quarterMarks = [1, 2, 3].map((q) => Math.ceil((q * minimumSlices) / 4));
    const watch = await watchSlices(cluster, ns, minimumSlices, abort.signal, MANAGED, (count) => {
        if (pid && quarterMarks.includes(count)) cpuAtQuarter.push(Object.values(threads(pid)).reduce((a, b) => a + b, 0));
    });
    const apiSeconds0 = await createSeconds(cluster);
    const controller = await ControllerProcess.start(entry, 'external-workloads', ['--kubeconfig', cluster.state.kubeconfig, '--namespace', leaseNs, '--watch-namespace', ns], cleanups, { nodeArgs });
    pid = controller.child.pid!;
    try {
        while ((await controller.get('/readyz').catch(() => undefined))?.text !== 'ok') await sleep(20);
        const syncedAt = performance.now();
        const profile = startProfile(cluster);
        const counted0 = await counters(cluster);
        const t0 = threads(pid);
        const s0 = controller.mainThreadSchedMs();
        const api0 = cpu(cluster.state.apiserverPid);
        const etcd0 = cpu(cluster.state.etcdPid);
        const tool0 = process.cpuUsage();
        const machine0 = machineCpuSeconds();
        const doneAt = await watch.done;
        const machine = machineSince(machine0);
        const toolUsage = process.cpuUsage(tool0);
        const t1 = threads(pid);
        const s1 = controller.mainThreadSchedMs();
        const apiserver = cpu(cluster.state.apiserverPid) - api0;
        const etcd = cpu(cluster.state.etcdPid) - etcd0;
        const inFlight = ((await createSeconds(cluster)) - apiSeconds0) / ((doneAt - syncedAt) / 1000);
        const counted = countersDelta(counted0, await counters(cluster));
        await profile.save(profileName);
        return {
            ...machine,
            quarters: quarters(syncedAt, watch.addedAt),
            cpuQuarters: [t0.main + t0.others, ...cpuAtQuarter, t1.main + t1.others].map((cpu, q, all) => (q === 0 ? 0 : ((cpu - all[q - 1]!) * 1000) / (minimumSlices / 4))).slice(1),
            tool: (toolUsage.user + toolUsage.system) / 1e6,
            counted,
            inFlight,
            syncedMs: syncedAt - controller.startedAt,
            cpuAtSynced: t0.main + t0.others,
            wallMs: doneAt - syncedAt,
            writes: minimumSlices,
            client: t1.main + t1.others - t0.main - t0.others,
            clientMain: t1.main - t0.main,
            clientOthers: t1.others - t0.others,
            apiserver,
            etcd,
            mainOnCpuMs: s1.onCpu - s0.onCpu,
            mainWaitMs: s1.waiting - s0.waiting,
        };
    } finally {
        abort.abort();
        await controller.stop();
    }
}

/**
 * Counters of the apiserver and etcd that tell what a phase cost them besides its creates. Keys
 * starting with `= ` are gauges (the apiserver's heap), shown as before -> after.
 */
async function counters(cluster: BenchCluster): Promise<Map<string, number>> {
    const out = new Map<string, number>();
    const add = (key: string, value: number) => out.set(key, (out.get(key) ?? 0) + value);
    const label = (line: string, name: string) => new RegExp(`[{,]${name}="([^"]*)"`).exec(line)?.[1] ?? '';
    const value = (line: string) => Number(line.slice(line.lastIndexOf(' ') + 1));
    for (const line of (await apiserverMetrics(cluster)).split('\n')) {
        if (line.startsWith('apiserver_request_total{')) {
            const sub = label(line, 'subresource');
            add(`${label(line, 'verb')} ${label(line, 'resource')}${sub ? `/${sub}` : ''} ${label(line, 'code')}`, value(line));
        } else if (line.startsWith('apiserver_watch_events_total{')) add(`watch events ${label(line, 'kind') || label(line, 'resource')}`, value(line));
        else if (line.startsWith('apiserver_watch_events_sizes_sum{')) add(`watch event KB ${label(line, 'kind') || label(line, 'resource')}`, value(line) / 1024);
        else if (line.startsWith('go_gc_duration_seconds_count')) add('apiserver Go GCs', value(line));
        else if (line.startsWith('go_memstats_alloc_bytes_total ')) add('apiserver MB allocated', value(line) / 1e6);
        else if (line.startsWith('go_memstats_heap_alloc_bytes ')) add('= apiserver heap MB', value(line) / 1e6);
        else if (line.startsWith('go_memstats_next_gc_bytes ')) add('= apiserver next GC at MB', value(line) / 1e6);
    }
    const etcd = await (await fetch(`http://127.0.0.1:${cluster.state.etcdPort}/metrics`)).text();
    for (const line of etcd.split('\n')) {
        if (line.startsWith('etcd_disk_wal_fsync_duration_seconds_count')) add('etcd WAL fsyncs', value(line));
        else if (line.startsWith('etcd_disk_wal_fsync_duration_seconds_sum')) add('etcd WAL fsync ms', value(line) * 1000);
        else if (line.startsWith('etcd_disk_backend_commit_duration_seconds_count')) add('etcd backend commits', value(line));
        else if (line.startsWith('etcd_disk_backend_commit_duration_seconds_sum')) add('etcd backend commit ms', value(line) * 1000);
        else if (line.startsWith('go_gc_duration_seconds_count')) add('etcd Go GCs', value(line));
    }
    return out;
}

/** What changed between two `counters`. */
function countersDelta(before: Map<string, number>, after: Map<string, number>): string {
    const changed: string[] = [];
    for (const [key, v] of after) {
        if (key.startsWith('= ')) {
            changed.push(`${key.slice(2)}: ${before.get(key)?.toFixed(0)} -> ${v.toFixed(0)}`);
            continue;
        }
        const d = v - (before.get(key) ?? 0);
        if (Math.abs(d) >= 0.5) changed.push(`${key}: ${Number.isInteger(d) ? d : d.toFixed(0)}`);
    }
    return changed.join(', ');
}

/** With WRITE_PHASE_PROFILE: starts a profile now; `save(name)` waits for it and writes DIR/name.pb.gz. */
function startProfile(cluster: BenchCluster): { save(name: string): Promise<void> } {
    if (!PROFILE_DIR) return { save: async () => undefined };
    const profile = apiserverCpuProfile(cluster, PROFILE_SECONDS);
    return {
        async save(name) {
            mkdirSync(PROFILE_DIR, { recursive: true });
            writeFileSync(`${PROFILE_DIR}/${name}.pb.gz`, await profile);
        },
    };
}

/** Seconds the apiserver spent on slice creates so far (its apiserver_request_duration_seconds): over a phase's wall time, the creates it had in flight on average. */
async function createSeconds(cluster: BenchCluster): Promise<number> {
    let sum = 0;
    for (const line of (await apiserverMetrics(cluster)).split('\n')) {
        if (line.startsWith('apiserver_request_duration_seconds_sum{') && line.includes('verb="POST"') && line.includes('resource="endpointslices"')) sum += Number(line.slice(line.lastIndexOf(' ') + 1));
    }
    return sum;
}

/**
 * WRITE_PHASE_BASELINES_ONLY=N: N rounds of the baseline alone: plain, watched once and twice,
 * right after listing the workloads, and asking for metadata-only answers as the controller does.
 */
async function baselinesOnly(rounds: number, cluster: BenchCluster, writesNs: string, ownerUid: string, scaleNs: string): Promise<void> {
    const kinds = [
        { name: 'plain' },
        { name: 'after a GC', gcFirst: true },
        { name: 'one watch', watchers: 1 },
        { name: 'one watch, GC', watchers: 1, gcFirst: true },
        { name: 'two watches', watchers: 2 },
        { name: 'after a list', listFirst: scaleNs },
        { name: 'metadata answers', metadata: true },
        { name: 'two watches, GC', watchers: 2, gcFirst: true },
        { name: 'metadata, two watches, GC', metadata: true, watchers: 2, gcFirst: true },
    ].filter(({ name }) => !process.env.WRITE_PHASE_KINDS || process.env.WRITE_PHASE_KINDS.split('|').includes(name));
    const idle0 = cpu(cluster.state.apiserverPid);
    await sleep(5_000);
    console.log(`apiserver idle: ${(((cpu(cluster.state.apiserverPid) - idle0) / 5) * 1000).toFixed(0)} ms of CPU per second`);
    for (let round = 0; round < rounds; round++) {
        for (const { name, ...kind } of kinds) {
            const b = await baseline(cluster, writesNs, ownerUid, { concurrency: CONCURRENCY, profileName: `${round}-${name.replace(/ /g, '-')}`, ...kind });
            console.log(`round ${round} ${name.padEnd(16)} load ${loadavg()[0]!.toFixed(1)}: ${describe(b)}`);
        }
    }
}

const perWrite = (s: number, n: number) => ((s * 1000) / n).toFixed(2);
const describe = (p: Phase) =>
    `${((p.writes / p.wallMs) * 1000).toFixed(0)}/s; per write ms: ${p.clientMain === undefined ? `client ${perWrite(p.client, p.writes)}` : `controller ${perWrite(p.client, p.writes)} (main ${perWrite(p.clientMain, p.writes)}, other threads ${perWrite(p.clientOthers!, p.writes)})`} ` +
    `apiserver ${perWrite(p.apiserver, p.writes)} etcd ${perWrite(p.etcd, p.writes)}; our three processes used ${(((p.client + p.apiserver + p.etcd) * 1000) / p.wallMs / 2) * 100 | 0} % of 2 CPUs; ` +
    `in flight at the apiserver ${p.inFlight!.toFixed(2)}` +
    (p.machineBusy === undefined ? '' : `; machine busy ${perWrite(p.machineBusy, p.writes)} ms per write, idle ${((p.machineIdle! / (p.machineBusy + p.machineIdle!)) * 100).toFixed(0)} %`) +
    (p.tool === undefined ? '' : `; this tool's watch ${perWrite(p.tool, p.writes)}`) +
    (p.quarters ? `; quarters ${p.quarters.map((q) => q.toFixed(0)).join(' / ')} ms` : '') +
    (p.cpuQuarters?.length === 4 ? `, the controller's CPU per write in each ${p.cpuQuarters.map((q) => q.toFixed(2)).join(' / ')} ms` : '') +
    (p.mainOnCpuMs === undefined ? '' : `; main thread on a CPU ${p.mainOnCpuMs.toFixed(0)} ms, waiting for one ${p.mainWaitMs!.toFixed(0)} ms`) +
    (p.counted ? `\n    counted: ${p.counted}` : '');

async function main(): Promise<void> {
    const cleanups = new Cleanups();
    process.on('SIGINT', () => void cleanups.runAll().finally(() => process.exit(130)));
    const cluster = await startBenchCluster(benchClusterName('writephase'), cleanups);
    try {
        await installCrds(cluster.admin);
        const ns = await cluster.namespace('scale');
        const leaseNs = await cluster.namespace('lease');
        const writesNs = await cluster.namespace('writes');
        const owner = await cluster.admin.create<{ metadata: { uid: string } }>(collectionPath(Services, writesNs), {
            metadata: { name: 'owner' },
            spec: { ports: [{ name: 'http', port: 80, targetPort: 'http' }] },
        } as never);
        await createClusterScaleObjects(cluster, ns, services);
        const split = SPLIT ? coreSplit() : undefined;
        if (split) await splitClusterCores(cluster, split);
        if (NICE) {
            for (const pid of [cluster.state.apiserverPid, cluster.state.etcdPid, process.pid]) writeFileSync(`/proc/${pid}/autogroup`, NICE);
            process.env.BENCH_CONTROLLER_NICE = NICE;
        }
        console.log(`set-up done; ${minimumSlices} slices per run, baseline ${BASELINE_N} creates`);
        if (process.env.WRITE_PHASE_BASELINES_ONLY) return await baselinesOnly(Number(process.env.WRITE_PHASE_BASELINES_ONLY), cluster, writesNs, owner.metadata.uid, ns);
        for (let run = 0; run < RUNS; run++) {
            for (const arg of entries) {
                const [entry, workers] = arg.split('@') as [string, string | undefined];
                const concurrency = workers ? Number(workers) : CONCURRENCY;
                for (const variant of variants) {
                    const load = loadavg()[0]!;
                    const profileName = `${run}-${entries.indexOf(arg)}${variant.name ? `-${variant.name}` : ''}`;
                    const likeSync = LIKE_SYNC ? { watchers: 2, listFirst: ns } : {};
                    const base = await baseline(cluster, writesNs, owner.metadata.uid, { concurrency, gcFirst: GC_FIRST || LIKE_SYNC, ...likeSync, profileName: `${profileName}-baseline` });
                    const ours = await controllerRun(entry, variant.nodeArgs, cluster, ns, leaseNs, cleanups, `${profileName}-controller`);
                    const ideal = (ours.writes * base.wallMs) / base.writes;
                    const name = `${entry.replace(/^.*\/([^/]+)\/dist\/cli\/main\.js$/, '$1')}${variant.name ? ` [${variant.name}]` : ''}`;
                    console.log(`run ${run} ${name} x${concurrency} load ${load.toFixed(1)}`);
                    console.log(`  baseline: ${describe(base)}`);
                    console.log(`  controller: synced at ${ours.syncedMs.toFixed(0)} ms (${ours.cpuAtSynced.toFixed(2)} s CPU), write phase ${ours.wallMs.toFixed(0)} ms, ratio ${(ours.wallMs / ideal).toFixed(2)}; ${describe(ours)}`);
                }
            }
        }
    } finally {
        if (NICE) writeFileSync(`/proc/${process.pid}/autogroup`, '0');
        await cluster.stop();
    }
}

await main();
