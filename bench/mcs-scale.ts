// Benchmark: the Multi-Cluster Services import at scale (issue 31), run as users run it (the
// compiled CLI, one service-mirror process per cluster, `--cluster-name`) against real local
// apiservers linked both ways, N Services of 10 endpoints each in east. Every time is read off
// watches of each cluster's ServiceImports and MCS slices (mcs-support.ts: ImportWatch), as the
// arrival of the event that made a Service imported in every cluster (its ServiceImport has
// spec.ips, an MCS slice of it has an endpoint), or gone from every cluster. The phases:
//
// 1. floor: before the controllers start, after a forced Go GC of each apiserver, a plain client
//    makes in every cluster at once the writes the controller makes for N imports (mcsFloor: the
//    derived Service, the ServiceImport with its ips, its status and one slice of as many
//    endpoints as the controller's: 10 in east, the gateway's 1 elsewhere; the ServiceExport's
//    status in east), 2 x --mcs-workers writes in flight per cluster; then they are deleted. Its
//    time (the slowest cluster's) is what the burst is divided by.
// 2. burst, client limits off (`--kube-api-qps 0 --mcs-api-qps 0`): the N ServiceExports created
//    in east at once (16 at a time); each export's create → imported everywhere (median, p99),
//    the whole burst (first create → last import), its ratio to the floor (target ≤ 1.5), writes
//    per export in all clusters (apiserver_request_total; 4 per cluster, the export's status and
//    the bench's create promised, those refused with 409 in detail), each controller's CPU, memory
//    per imported Service (RSS and V8 heap after less before), then writes over 10 s with nothing
//    changing (0 promised).
// 3. lone export: with the N in place, LONE more exported one at a time (target p99 < 1 s).
// 4. unexport: LONE of the burst's exports deleted one at a time → gone everywhere.
// 5. the CLI's default client limits: the controllers stopped, a second floor (fresh namespace),
//    the controllers started again with the default flags (their restart's writes: 0 promised),
//    and the same burst of N fresh exports in another namespace.
// The machine's share busy (/proc/stat) and load average go with each figure.
//
// BENCH_MCS_SERVICES=N changes the 200 (SCALE=large: 1 000); BENCH_MCS_CLUSTERS=3 adds a third
// cluster (north) linked with both, importing too. The figures are 3 clusters of 1 000.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { collectionPath, EndpointSlices, Links, Namespaces, objectPath, Secrets, Services, ServiceExports } from '../src/kube/resources.js';
import { DEFAULT_MCS_WORKERS } from '../src/servicemirror/mcs/controller.js';
import { installCrds, installMcsCrds } from '../src/testing/crds.js';
import { apiserverMetrics, apiserverRequestSums } from '../test/integration/mirror-support.js';
import { collectApiserverGarbage } from './apiserver-debug.js';
import { inParallel, sleep } from './async.js';
import { ControllerProcess, controllerEntry, machineCpuSeconds } from './controller-process.js';
import { benchClusterName, startBenchCluster, type BenchCluster, type Cleanups } from './local-cluster.js';
import { clearFloor, floorExports, ImportWatch, mcsFloor, type FloorCluster } from './mcs-support.js';
import { percentile, type Report } from './stats.js';

const BENCHMARK = 'mcs-scale';
const SERVICES = Number(process.env.BENCH_MCS_SERVICES ?? (process.env.SCALE === 'large' ? 1_000 : 200));
const CLUSTERS = (process.env.BENCH_MCS_CLUSTERS === '3' ? ['east', 'west', 'north'] : ['east', 'west']) as readonly string[];
const ENDPOINTS = 10;
/** Lone exports, and unexports, each one at a time. */
const LONE = 20;
/** The controller's writes in flight per cluster: two reconcilers of DEFAULT_MCS_WORKERS, one write each. */
const IN_FLIGHT = 2 * DEFAULT_MCS_WORKERS;
const NS = { burst: 'bench-mcs', floor: 'bench-mcs-floor', defaults: 'bench-mcs-defaults', floorDefaults: 'bench-mcs-floor-2' };
const WRITTEN = ['serviceimports', 'services', 'endpointslices', 'serviceexports'];
const GATEWAY: Record<string, string> = { east: '192.0.2.10', west: '192.0.2.20', north: '192.0.2.30' };
const BURST_TIMEOUT_MS = 15 * 60_000;
const ONE_TIMEOUT_MS = 30_000;

type Writes = Record<string, number>;
const names = Array.from({ length: SERVICES }, (_, i) => `svc-${i}`);
const loneNames = Array.from({ length: LONE }, (_, i) => `lone-${i}`);

export async function runMcsScaleBenchmark(report: Report, cleanups: Cleanups): Promise<void> {
    const entry = controllerEntry();
    const help = spawnSync(process.execPath, [entry, 'service-mirror', '--help'], { encoding: 'utf8' }).stdout;
    const clusters = new Map<string, BenchCluster>();
    let controllers: ControllerProcess[] = [];
    let watch: ImportWatch | undefined;
    try {
        await Promise.all(CLUSTERS.map(async (name) => clusters.set(name, await startBenchCluster(benchClusterName(`mcs-${name}`), cleanups))));
        await linkAll(clusters);
        const east = clusters.get('east')!;
        const all = [...clusters.values()];
        const C = clusters.size;
        // east's Services and their own slices (upstream-labelled: no endpointslice controller runs here).
        await createSourceServices(east, NS.burst, [...names, ...loneNames]);
        await createSourceServices(east, NS.defaults, names);
        watch = await ImportWatch.start(clusters);
        const w = watch;

        const writesNow = async () => new Map(await Promise.all([...clusters].map(async ([name, c]) => [name, writesOf(await apiserverMetrics(c))] as const)));
        const memoryNow = async () => Promise.all(controllers.map(async (c) => ({ rss: c.rssMb(), heap: await c.heapUsedMb() })));
        const machine = () => {
            const m0 = machineCpuSeconds();
            const load = loadavg()[0]!;
            return () => {
                const m = machineCpuSeconds();
                const busy = m.busy - m0.busy;
                return { 'machine busy share': busy / (busy + m.idle - m0.idle), 'load average at start': load };
            };
        };
        const startControllers = async (extra: string[]) => {
            controllers = await Promise.all(
                CLUSTERS.map((name) =>
                    ControllerProcess.start(entry, 'service-mirror', ['--kubeconfig', clusters.get(name)!.state.kubeconfig, '--namespace', 'mc', '--identity', `bench-${name}`, '--cluster-name', name, ...extra], cleanups),
                ),
            );
            await Promise.all(controllers.map((c) => c.ready(60_000)));
            await sleep(3_000); // the Links' remote watches synced
        };
        /** Until no write for 3 s (at most 60 s). */
        const quiet = async () => {
            let last = JSON.stringify([...(await writesNow())]);
            for (let still = 0, deadline = performance.now() + 60_000; still < 3 && performance.now() < deadline; ) {
                await sleep(1_000);
                const now = JSON.stringify([...(await writesNow())]);
                still = now === last ? still + 1 : 0;
                last = now;
            }
        };

        const floor = async (ns: string, label: string): Promise<number> => {
            const exports = await floorExports(east, ns, names);
            // A slice of as many endpoints as the controller's: east's own 10; elsewhere east's gateway address.
            const fcs: FloorCluster[] = CLUSTERS.map((name) => ({ name, cluster: clusters.get(name)!, endpoints: name === 'east' ? ENDPOINTS : 1, exporting: name === 'east' }));
            await Promise.all(all.map((c) => collectApiserverGarbage(c)));
            const spent = machine();
            const before = await writesNow();
            const took = await mcsFloor(fcs, ns, names, exports, IN_FLIGHT);
            const written = totals(diffOf(await writesNow(), before));
            const ms = Math.max(...took.values());
            report.value(BENCHMARK, `floor${label}: a plain client's writes of ${SERVICES} imports in all ${C} clusters at once (${IN_FLIGHT} in flight per cluster), the slowest cluster`, SERVICES, 'imports', ms / 1000, 's', undefined, {
                ...Object.fromEntries([...took].map(([name, t]) => [`${name} s`, t / 1000])),
                'writes per import, all clusters': sum(written) / SERVICES,
                ...spent(),
            });
            await clearFloor(all, ns);
            return ms;
        };

        /** N exports in `ns` at once → each imported everywhere; the figures of the burst. */
        const burst = async (ns: string, label: string, floorMs: number) => {
            const keys = names.map((n) => `${ns}/${n}`);
            await Promise.all(all.map((c) => collectApiserverGarbage(c)));
            const writes0 = await writesNow();
            const cpu0 = controllers.map((c) => c.cpuSeconds());
            const spent = machine();
            const created = new Map<string, number>();
            const first = performance.now();
            await inParallel(names, 16, async (name) => {
                created.set(`${ns}/${name}`, performance.now());
                await east.admin.create(collectionPath(ServiceExports, ns), { apiVersion: 'multicluster.x-k8s.io/v1beta1', kind: 'ServiceExport', metadata: { name } });
            });
            // The user's creates load east during the burst, not during the floor: how long they took goes with it.
            const createsMs = performance.now() - first;
            const last = await w.allImported(keys, BURST_TIMEOUT_MS);
            const machineShare = spent();
            const samples = keys.map((k) => w.importedAt.get(k)! - created.get(k)!);
            const wholeMs = last - first;
            await sleep(2_000); // the last status writes
            const cpu = controllers.map((c, i) => c.cpuSeconds() - cpu0[i]!);
            const byCluster = diffOf(await writesNow(), writes0);
            const written = totals(byCluster);
            report.timing(BENCHMARK, `burst${label}: ServiceExport in east → imported in all ${C} clusters`, SERVICES, 'exported Services', samples, { p99: percentile(samples, 99), ...machineShare });
            report.value(BENCHMARK, `burst${label}: whole burst, first export → last import everywhere`, SERVICES, 'exported Services', wholeMs / 1000, 's', undefined, { 'floor s': floorMs / 1000, 'the ServiceExport creates s': createsMs / 1000, ...machineShare });
            report.value(BENCHMARK, `burst${label}: whole burst / floor (target ≤ 1.5)`, SERVICES, 'exported Services', wholeMs / floorMs, '×');
            report.value(BENCHMARK, `burst${label}: writes in all ${C} clusters per export (the bench's ServiceExport create included)`, SERVICES, 'exported Services', sum(written) / SERVICES, 'writes', 4 * C + 2, {
                ...Object.fromEntries([...byCluster].map(([name, wr]) => [`${name} per import`, sum(wr) / SERVICES])),
                ...written,
                ...Object.fromEntries(Object.entries(w.endpointsOf(keys[0]!)).map(([name, n]) => [`${name}: endpoints in a slice of ${names[0]}`, n])),
            });
            report.value(BENCHMARK, `burst${label}: controller CPU, export → imports written (all ${C} processes; each in detail)`, SERVICES, 'exported Services', cpu.reduce((a, b) => a + b, 0), 'CPU s', undefined, {
                ...Object.fromEntries(CLUSTERS.map((name, i) => [`${name} CPU s`, cpu[i]!])),
                'CPU ms per export, all processes': (cpu.reduce((a, b) => a + b, 0) * 1000) / SERVICES,
            });
        };

        // 1-2: floor, then the burst with the client limits off.
        const floorMs = await floor(NS.floor, '');
        await startControllers(help.includes('--mcs-api-qps') ? ['--mcs-api-qps', '0'] : []);
        const memBefore = await memoryNow();
        await burst(NS.burst, ' (client limits off)', floorMs);
        const memAfter = await memoryNow();
        CLUSTERS.forEach((name, i) => {
            report.value(BENCHMARK, `${name}'s service-mirror memory per imported Service (RSS; heap in detail)`, SERVICES, 'imports', ((memAfter[i]!.rss - memBefore[i]!.rss) * 1024) / SERVICES, 'KB', undefined, {
                heapKbPerImport: ((memAfter[i]!.heap - memBefore[i]!.heap) * 1024) / SERVICES,
                rssMbAfter: memAfter[i]!.rss,
                heapMbAfter: memAfter[i]!.heap,
            });
        });
        const converged = await writesNow();
        let spent = machine();
        await sleep(10_000);
        const steady = totals(diffOf(await writesNow(), converged));
        report.value(BENCHMARK, `writes in all ${C} clusters over 10 s with nothing changing`, SERVICES, 'imports', sum(steady), 'writes', 0, { ...steady, ...spent() });

        // 3: lone exports, each waiting for the one before.
        spent = machine();
        const lone: number[] = [];
        for (const name of loneNames) {
            const started = performance.now();
            await east.admin.create(collectionPath(ServiceExports, NS.burst), { apiVersion: 'multicluster.x-k8s.io/v1beta1', kind: 'ServiceExport', metadata: { name } });
            lone.push((await w.imported(`${NS.burst}/${name}`, ONE_TIMEOUT_MS)) - started);
        }
        report.timing(BENCHMARK, `lone export (${SERVICES} in place): ServiceExport in east → imported in all ${C} clusters (target p99 < 1 s)`, LONE, 'exports, one at a time', lone, { p99: percentile(lone, 99), ...spent() });

        // 4: unexports, spread over the burst's names.
        spent = machine();
        const gone: number[] = [];
        for (let i = 0; i < LONE; i++) {
            const name = names[Math.floor((i * SERVICES) / LONE)]!;
            const started = performance.now();
            await east.admin.delete(objectPath(ServiceExports, NS.burst, name));
            gone.push((await w.gone(`${NS.burst}/${name}`, ONE_TIMEOUT_MS)) - started);
        }
        report.timing(BENCHMARK, `unexport: ServiceExport deleted in east → ServiceImport and its MCS slices gone from all ${C} clusters`, LONE, 'unexports, one at a time', gone, { p99: percentile(gone, 99), ...spent() });

        // 5: the CLI's defaults. ControllerProcess passes --kube-api-qps 0: the later flag wins.
        await Promise.all(controllers.map((c) => c.stop()));
        controllers = [];
        const floorDefaultsMs = await floor(NS.floorDefaults, ' (before the default-limits burst)');
        const qps = /--kube-api-qps <n>[\s\S]*?\(default: ([\d.]+)\)/.exec(help)?.[1] ?? '20';
        const mcsQps = /--mcs-api-qps <n>[\s\S]*?\(default: ([\d.]+)\)/.exec(help)?.[1];
        const beforeStart = await writesNow();
        spent = machine();
        await startControllers(['--kube-api-qps', qps]);
        await quiet();
        const restart = totals(diffOf(await writesNow(), beforeStart));
        report.value(BENCHMARK, `restart with ${SERVICES} imports in place: writes in all ${C} clusters`, SERVICES, 'imports', sum(restart), 'writes', 0, { ...restart, ...spent() });
        await burst(NS.defaults, ` (default limits: --kube-api-qps ${qps}, --mcs-api-qps ${mcsQps ?? 'none'})`, floorDefaultsMs);
    } finally {
        await watch?.stop();
        await Promise.all(controllers.map((c) => c.stop()));
        await Promise.all([...clusters.values()].map((c) => c.stop()));
    }
}

/** Every cluster: the MCS CRDs, the namespaces, and a Link to each other cluster. */
async function linkAll(clusters: Map<string, BenchCluster>): Promise<void> {
    for (const [name, cluster] of clusters) {
        await installCrds(cluster.admin);
        await installMcsCrds(cluster.admin);
        for (const ns of ['mc', ...Object.values(NS)]) await cluster.admin.create(collectionPath(Namespaces), { metadata: { name: ns } });
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
}

async function createSourceServices(east: BenchCluster, ns: string, serviceNames: readonly string[]): Promise<void> {
    await inParallel([...serviceNames.keys()], 16, async (i) => {
        const name = serviceNames[i]!;
        await east.admin.create(collectionPath(Services, ns), { metadata: { name }, spec: { selector: { app: name }, ports: [{ name: 'http', port: 80 }] } });
        await east.admin.create(collectionPath(EndpointSlices, ns), {
            metadata: { name: `${name}-upstream`, labels: { 'kubernetes.io/service-name': name, 'endpointslice.kubernetes.io/managed-by': 'endpointslice-controller.k8s.io' } },
            addressType: 'IPv4',
            ports: [{ name: 'http', port: 8080, protocol: 'TCP' }],
            endpoints: Array.from({ length: ENDPOINTS }, (_, j) => ({ addresses: [`10.${1 + j}.${Math.floor(i / 250)}.${(i % 250) + 1}`], conditions: { ready: true } })),
        });
    });
}

/** Writes refused with a conflict (409), also counted among the writes: a write planned from a stale copy. */
const REFUSED = 'of them 409: ';

/** apiserver_request_total of the MCS resources' writes by "VERB resource[/subresource]", and those refused with 409. */
function writesOf(metrics: string): Writes {
    const conflicts = metrics.split('\n').filter((line) => line.includes('code="409"')).join('\n');
    const refused = apiserverRequestSums(conflicts, 'apiserver_request_total', WRITTEN);
    return { ...apiserverRequestSums(metrics, 'apiserver_request_total', WRITTEN), ...Object.fromEntries(Object.entries(refused).map(([k, v]) => [`${REFUSED}${k}`, v])) };
}

const sum = (counts: Writes) => Object.entries(counts).reduce((a, [k, v]) => (k.startsWith(REFUSED) ? a : a + v), 0);
const diff = (after: Writes, before: Writes): Writes => Object.fromEntries(Object.entries(after).map(([k, v]) => [k, v - (before[k] ?? 0)]).filter(([, v]) => v !== 0));
const diffOf = (after: Map<string, Writes>, before: Map<string, Writes>) => new Map([...after].map(([name, w]) => [name, diff(w, before.get(name) ?? {})]));
/** By "VERB resource", over every cluster. */
function totals(byCluster: Map<string, Writes>): Writes {
    const total: Writes = {};
    for (const counts of byCluster.values()) for (const [k, v] of Object.entries(counts)) total[k] = (total[k] ?? 0) + v;
    return total;
}
