// Benchmark: the service mirror at 500 exported Services per Link, run as users run it (the
// compiled CLI in a process of its own) against three real local apiservers: the local cluster
// and two remotes, each exporting the same 500 Services in 5 namespaces. Gateway names come
// from the loopback DNS server; the gateway probe goes to a loopback HTTP server. Times are
// read off watches of the local apiserver (when it had the state), writes off the apiservers'
// own apiserver_request_total (per verb and resource), RSS off /proc, V8 heap off /metrics.
// Each figure sits next to a baseline of the same run: the local apiserver's own rate of the
// writes a mirror needs.
//
// BENCH_MIRROR_SERVICES=N changes the 500 (SCALE=large: 2 000); BENCH_MIRROR_REMOTES=1 links one
// remote twice, under two cluster names, for a machine that cannot take three apiservers.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { V1EndpointSlice, V1Service } from '@kubernetes/client-node';
import { collectionPath, EndpointSlices, Namespaces, objectPath, Services } from '../src/kube/resources.js';
import type { KubeObject } from '../src/kube/store.js';
import { CLUSTER_NAME_LABEL, MIRROR_SLICE_MANAGED_BY, MIRRORED_SERVICE_LABEL } from '../src/servicemirror/api/keys.js';
import { installCrds } from '../src/testing/crds.js';
import { TestDnsServer } from '../src/testing/dns-server.js';
import { apiserverMetrics, apiserverRequestSums, apiserverWrites, createLink, EXPORTED, type MirrorEnv } from '../test/integration/mirror-support.js';
import { ControllerProcess, controllerEntry } from './controller-process.js';
import { benchClusterName, startBenchCluster, type BenchCluster, type Cleanups } from './local-cluster.js';
import { ObjectWatch, Waiters, type WatchEventType } from './watch.js';
import { inParallel, sleep } from './async.js';
import type { Report } from './stats.js';

const BENCHMARK = 'service-mirror-scale';
const SERVICES = Number(process.env.BENCH_MIRROR_SERVICES ?? (process.env.SCALE === 'large' ? 2_000 : 500));
const REMOTES = process.env.BENCH_MIRROR_REMOTES === '1' ? 1 : 2;
const NAMESPACES = 5;
const LINKS = ['east', 'west'] as const;
/** The gateway names' TTL; the controller re-resolves at it (--dns-min-ttl 1s lets it). */
const TTL_S = 2;
const STEADY_TTLS = 10;
/** --dns-stale-window: a quarter of it is how often an unchanged answer's resolvedAt is written to the Link status. */
const STALE_WINDOW_S = 20;
/** Workers per Link (LinkControllerDeps.workers): the controller's concurrency of writes per Link. */
const LINK_WORKERS = 2;
const BASELINE_PAIRS = 200;
const SETUP_CONCURRENCY = 16;
const SETTLE_MS = 3_000;
const MIRROR_TIMEOUT_MS = 15 * 60_000;
const LOCAL_RESOURCES = ['services', 'endpointslices', 'links', 'events', 'leases', 'namespaces', 'secrets'];

const namespaceOf = (i: number) => `mirror-bench-${i % NAMESPACES}`;
const serviceOf = (i: number) => `svc-${String(i).padStart(4, '0')}`;
const gatewayName = (link: string) => `gw-${link}.bench.test`;
const gatewayIp = (link: string, generation: number) => `192.0.2.${(link === LINKS[0] ? 10 : 110) + generation}`;

type Writes = Record<string, number>;

/** Writes counted by one apiserver since `before`, "VERB resource[/subresource]" → count, zeros left out. */
function writesSince(before: Writes, after: Writes): Writes {
    const diff: Writes = {};
    for (const [key, n] of Object.entries(after)) if (n - (before[key] ?? 0) > 0) diff[key] = n - (before[key] ?? 0);
    return diff;
}
const total = (writes: Writes, ...keys: string[]) => keys.reduce((n, k) => n + (writes[k] ?? 0), 0);
const sum = (writes: Writes) => Object.values(writes).reduce((a, b) => a + b, 0);

/**
 * The mirrors of every cluster name as the local apiserver has them: mirror Services present,
 * and each mirror's ready gateway addresses (one slice per mirror: one gateway address). Counts
 * are kept as events arrive, so a waiter's check costs nothing whatever the number of mirrors.
 */
class MirrorWatch {
    private readonly services = new Set<string>();
    /** "cluster/ns/svc" → its slice's ready addresses ("" when none). */
    private readonly sliceState = new Map<string, string>();
    /** "cluster addresses" → how many mirrors have exactly those ready addresses. */
    private readonly stateCount = new Map<string, number>();
    private readonly serviceCount = new Map<string, number>();
    /** "cluster/ns/svc addresses" → when the mirror first had them. */
    readonly firstSeen = new Map<string, number>();
    private readonly waiters = new Waiters();
    private watches: { stop(): Promise<void> }[] = [];

    static async start(local: BenchCluster): Promise<MirrorWatch> {
        const watch = new MirrorWatch();
        watch.watches = await Promise.all([
            ObjectWatch.start<V1Service & KubeObject>(local.admin, collectionPath(Services), `${MIRRORED_SERVICE_LABEL}=true`, (t, s, at) => watch.onService(t, s, at), (err) => watch.waiters.fail(err)),
            ObjectWatch.start<V1EndpointSlice & KubeObject>(
                local.admin,
                collectionPath(EndpointSlices),
                `endpointslice.kubernetes.io/managed-by=${MIRROR_SLICE_MANAGED_BY}`,
                (t, s, at) => watch.onSlice(t, s, at),
                (err) => watch.waiters.fail(err),
            ),
        ]);
        return watch;
    }

    private onService(type: WatchEventType, svc: V1Service, at: number): void {
        const cluster = svc.metadata?.labels?.[CLUSTER_NAME_LABEL] ?? '';
        const key = `${cluster}/${svc.metadata!.namespace}/${svc.metadata!.name}`;
        const had = this.services.has(key);
        if (type === 'DELETED') this.services.delete(key);
        else this.services.add(key);
        const delta = Number(this.services.has(key)) - Number(had);
        if (delta !== 0) this.serviceCount.set(cluster, (this.serviceCount.get(cluster) ?? 0) + delta);
        this.waiters.wake(at);
    }

    private onSlice(type: WatchEventType, slice: V1EndpointSlice, at: number): void {
        const cluster = slice.metadata?.labels?.[CLUSTER_NAME_LABEL] ?? '';
        const key = `${cluster}/${slice.metadata!.namespace}/${slice.metadata?.labels?.['kubernetes.io/service-name']}`;
        const old = this.sliceState.get(key);
        if (old !== undefined) this.stateCount.set(`${cluster} ${old}`, this.stateCount.get(`${cluster} ${old}`)! - 1);
        if (type === 'DELETED') this.sliceState.delete(key);
        else {
            const ready = (slice.endpoints ?? []).filter((e) => e.conditions?.ready).flatMap((e) => e.addresses).sort().join(',');
            this.sliceState.set(key, ready);
            this.stateCount.set(`${cluster} ${ready}`, (this.stateCount.get(`${cluster} ${ready}`) ?? 0) + 1);
            if (!this.firstSeen.has(`${key} ${ready}`)) this.firstSeen.set(`${key} ${ready}`, at);
        }
        this.waiters.wake(at);
    }

    /** Mirrors of `cluster` that exist and whose slice has exactly `address`, ready. */
    mirrored(cluster: string, address: string): number {
        return Math.min(this.serviceCount.get(cluster) ?? 0, this.stateCount.get(`${cluster} ${address}`) ?? 0);
    }

    /** When every one of `n` mirrors of `cluster` exists with `address` ready (the arrival of the event that made it so). */
    allMirrored(cluster: string, address: string, n: number, timeoutMs: number): Promise<number> {
        return this.waiters.until(`${n} mirrors of ${cluster} with ${address}`, () => this.mirrored(cluster, address) === n, timeoutMs, () => `${this.mirrored(cluster, address)} of ${n}`);
    }

    /** When each mirror of `cluster` first had `address` ready. */
    arrivals(cluster: string, address: string): number[] {
        return [...this.firstSeen.entries()].filter(([k]) => k.startsWith(`${cluster}/`) && k.endsWith(` ${address}`)).map(([, at]) => at);
    }

    async stop(): Promise<void> {
        await Promise.all(this.watches.map((w) => w.stop()));
    }
}

/** The exported Services of one remote: SERVICES of them in NAMESPACES namespaces, each with one ready endpoint. */
async function exportServices(remote: BenchCluster): Promise<void> {
    const indexes = Array.from({ length: SERVICES }, (_, i) => i);
    await inParallel(indexes, SETUP_CONCURRENCY, async (i) => {
        const [ns, name] = [namespaceOf(i), serviceOf(i)];
        await remote.admin.create(collectionPath(Services, ns), {
            apiVersion: 'v1',
            kind: 'Service',
            metadata: { name, labels: EXPORTED },
            spec: { ports: [{ name: 'http', port: 80 }], ipFamilies: ['IPv4'], ipFamilyPolicy: 'SingleStack' },
        });
        await remote.admin.create(collectionPath(EndpointSlices, ns), {
            apiVersion: 'discovery.k8s.io/v1',
            kind: 'EndpointSlice',
            metadata: { name: `${name}-remote`, labels: { 'kubernetes.io/service-name': name, 'endpointslice.kubernetes.io/managed-by': 'bench' } },
            addressType: 'IPv4',
            endpoints: [{ addresses: [`10.1.${i >> 8}.${(i & 255) || 1}`], conditions: { ready: true } }],
            ports: [{ name: 'http', port: 8080, protocol: 'TCP' }],
        } satisfies V1EndpointSlice);
    });
}

async function createNamespaces(cluster: BenchCluster): Promise<void> {
    for (let i = 0; i < NAMESPACES; i++) await cluster.admin.create(collectionPath(Namespaces), { metadata: { name: namespaceOf(i) } });
}

/**
 * What one mirror costs the local apiserver by itself: a Service create (a ClusterIP allocated)
 * then an EndpointSlice create, from one client, LINK_WORKERS at a time; then as many slice updates.
 */
async function apiserverMirrorRates(local: BenchCluster, report: Report, when = ''): Promise<{ createsPerS: number; updatesPerS: number }> {
    const ns = await local.namespace('baseline');
    const indexes = Array.from({ length: BASELINE_PAIRS }, (_, i) => i);
    const slices: V1EndpointSlice[] = [];
    let started = performance.now();
    await inParallel(indexes, LINK_WORKERS, async (i) => {
        await local.admin.create(collectionPath(Services, ns), { apiVersion: 'v1', kind: 'Service', metadata: { name: `base-${i}` }, spec: { ports: [{ port: 80 }] } });
        slices[i] = await local.admin.create<V1EndpointSlice>(collectionPath(EndpointSlices, ns), {
            apiVersion: 'discovery.k8s.io/v1',
            kind: 'EndpointSlice',
            metadata: { name: `base-${i}`, labels: { 'kubernetes.io/service-name': `base-${i}` } },
            addressType: 'IPv4',
            endpoints: [{ addresses: ['192.0.2.1'], conditions: { ready: true } }],
            ports: [{ name: 'http', port: 4143, protocol: 'TCP' }],
        });
    });
    const createsPerS = (2 * BASELINE_PAIRS) / ((performance.now() - started) / 1000);
    started = performance.now();
    await inParallel(indexes, LINK_WORKERS, async (i) => {
        const slice = slices[i]!;
        slice.endpoints[0]!.addresses = ['192.0.2.2'];
        await local.admin.replace(objectPath(EndpointSlices, ns, slice.metadata!.name!), slice);
    });
    const updatesPerS = BASELINE_PAIRS / ((performance.now() - started) / 1000);
    report.value(BENCHMARK, `baseline${when}: apiserver writes per second for a mirror's Service + slice creates (one client, ${LINK_WORKERS} at a time)`, 2 * BASELINE_PAIRS, 'writes', createsPerS, 'writes/s');
    report.value(BENCHMARK, `baseline${when}: apiserver EndpointSlice updates per second (one client, ${LINK_WORKERS} at a time)`, BASELINE_PAIRS, 'writes', updatesPerS, 'writes/s');
    return { createsPerS, updatesPerS };
}

/** A gateway probe target on loopback that always answers. */
async function probeServer(): Promise<Server> {
    const server = createServer((_req, res) => res.writeHead(200).end('ok'));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return server;
}

interface Run {
    local: BenchCluster;
    remotes: BenchCluster[];
    dns: TestDnsServer;
    probePort: number;
    linkNamespace: string;
    controller: ControllerProcess;
    watch: MirrorWatch;
    rates: { createsPerS: number; updatesPerS: number };
    report: Report;
}

/** The local apiserver's count of writes, and the seconds it spent on them, per "VERB resource[/subresource]". */
interface Requests {
    writes: Writes;
    seconds: Writes;
}
async function localRequests(run: Run): Promise<Requests> {
    const text = await apiserverMetrics(run.local);
    return {
        writes: apiserverRequestSums(text, 'apiserver_request_total', LOCAL_RESOURCES),
        seconds: apiserverRequestSums(text, 'apiserver_request_duration_seconds_sum', LOCAL_RESOURCES),
    };
}
/** Mean time the apiserver took for one Link status write between two snapshots (NaN: none). */
function statusWriteMs(before: Requests, after: Requests): number {
    const key = 'PATCH links/status';
    return ((after.seconds[key] ?? 0) - (before.seconds[key] ?? 0)) * 1000 / ((after.writes[key] ?? 0) - (before.writes[key] ?? 0));
}
/** The reconciles of the Links' work so far (whatever their result; mirrors, the Link status, the unserved withdrawal): work done, written or not. */
const mirrorSyncs = async (run: Run) => {
    const { text } = await run.controller.get('/metrics');
    const lines = text.split('\n').filter((l) => l.startsWith('mesh_endpoints_reconcile_total{') && l.includes('name="service-mirror/link'));
    return lines.reduce((n, line) => n + (Number(line.slice(line.lastIndexOf(' ') + 1)) || 0), 0);
};

/** RSS now, and the least V8 heap used over 5 s (closest to what is live: garbage comes and goes). */
async function memory(run: Run): Promise<{ rssMb: number; heapMb: number }> {
    let heapMb = Infinity;
    for (let i = 0; i < 5; i++) {
        await sleep(1_000);
        heapMb = Math.min(heapMb, await run.controller.heapUsedMb());
    }
    return { rssMb: run.controller.rssMb(), heapMb };
}

/**
 * Creates Link `link` (its credentials Secret first) and times it to every mirror present with
 * its gateway address. `ratesNow`: the apiserver's rates measured again just before, with the
 * mirrors of the Links before this one present (its own cost may grow with what it holds).
 */
async function linkAndMirror(run: Run, link: string, remote: BenchCluster, ratesNow?: Run['rates']): Promise<void> {
    const { report } = run;
    run.dns.setRecords(gatewayName(link), { A: [{ address: gatewayIp(link, 0), ttl: TTL_S }] });
    const env: MirrorEnv = { local: run.local, remote, dns: run.dns, controllers: new Set() };
    const [before, syncsBefore] = [await localRequests(run), await mirrorSyncs(run)];
    const cpuBefore = run.controller.cpuSeconds();
    await createLink(env, run.linkNamespace, {
        name: link,
        gatewayAddress: gatewayName(link),
        probe: { path: '/ready', port: run.probePort, period: '3s' },
    });
    const createdAt = performance.now();
    const doneAt = await run.watch.allMirrored(link, gatewayIp(link, 0), SERVICES, MIRROR_TIMEOUT_MS);
    const cpu = run.controller.cpuSeconds() - cpuBefore;
    await sleep(SETTLE_MS); // the Link status write comes after its delay
    const after = await localRequests(run);
    const writes = writesSince(before.writes, after.writes);
    const syncs = (await mirrorSyncs(run)) - syncsBefore;
    const mirrorWrites = total(writes, 'POST services', 'POST endpointslices');
    const minimum = 2 * SERVICES;
    const ms = doneAt - createdAt;
    const ideal = (minimum / run.rates.createsPerS) * 1000;
    report.value(BENCHMARK, `Link ${link} created to all ${SERVICES} mirrors and their slices present`, SERVICES, 'mirrors', ms, 'ms', undefined, {
        'minimum writes / apiserver rate (ms)': ideal,
        'ratio to that': ms / ideal,
        'controller CPU (s)': cpu,
        'CPU per mirror (ms)': (cpu * 1000) / SERVICES,
        'mirror syncs per mirror (by the settle)': syncs / SERVICES,
        ...(ratesNow ? { 'ratio to the baseline measured just before': ms / ((minimum / ratesNow.createsPerS) * 1000) } : {}),
    });
    const others = { ...writes };
    for (const key of ['POST services', 'POST endpointslices', 'PATCH links/status', 'POST events', 'POST secrets', 'POST links', 'PUT leases']) delete others[key];
    report.value(BENCHMARK, `Link ${link}: mirror writes (Service + slice creates; minimum one of each per mirror)`, SERVICES, 'mirrors', mirrorWrites, 'writes', minimum, {
        'Service creates': writes['POST services'] ?? 0,
        'slice creates': writes['POST endpointslices'] ?? 0,
        'other mirror writes (updates, deletes)': sum(others),
        'Link status writes (minimum 1)': writes['PATCH links/status'] ?? 0,
        'apiserver time per Link status write (ms)': statusWriteMs(before, after),
        Events: writes['POST events'] ?? 0,
    });
}

/** The gateway name's answer changes: every mirror's slice is rewritten with the new address. */
async function dnsChange(run: Run, link: string): Promise<void> {
    const { report } = run;
    await sleep(2 * TTL_S * 1000);
    const [before, syncsBefore] = [await localRequests(run), await mirrorSyncs(run)];
    const cpuBefore = run.controller.cpuSeconds();
    const address = gatewayIp(link, 1);
    run.dns.setRecords(gatewayName(link), { A: [{ address, ttl: TTL_S }] });
    const changedAt = performance.now();
    const doneAt = await run.watch.allMirrored(link, address, SERVICES, MIRROR_TIMEOUT_MS);
    const latencies = run.watch.arrivals(link, address).map((at) => at - changedAt);
    const cpu = run.controller.cpuSeconds() - cpuBefore;
    await sleep(SETTLE_MS);
    const after = await localRequests(run);
    const writes = writesSince(before.writes, after.writes);
    const syncs = (await mirrorSyncs(run)) - syncsBefore;
    const ideal = (SERVICES / run.rates.updatesPerS) * 1000;
    report.timing(BENCHMARK, `gateway DNS answer changed to each of ${SERVICES} mirrors updated (TTL ${TTL_S} s)`, SERVICES, 'mirrors', latencies, {
        'time to the last (ms)': doneAt - changedAt,
        'first to last (ms)': doneAt - changedAt - Math.min(...latencies),
        'slice updates / apiserver update rate (ms)': ideal,
        'controller CPU per mirror (ms)': (cpu * 1000) / SERVICES,
        'mirror syncs per mirror': syncs / SERVICES,
    });
    report.value(BENCHMARK, 'DNS change: EndpointSlice writes (minimum one update per mirror)', SERVICES, 'mirrors', total(writes, 'PUT endpointslices', 'PATCH endpointslices', 'POST endpointslices', 'DELETE endpointslices'), 'writes', SERVICES, {
        'Service writes': total(writes, 'POST services', 'PUT services', 'PATCH services', 'DELETE services'),
        'Link status writes (the new address; 1)': writes['PATCH links/status'] ?? 0,
        'apiserver time per Link status write (ms)': statusWriteMs(before, after),
        Events: writes['POST events'] ?? 0,
    });
}

/** STEADY_TTLS TTLs with the same answers: nothing but the resolvedAt refresh and lease renewals is written. */
async function steadyState(run: Run, links: readonly string[]): Promise<void> {
    const { report } = run;
    await sleep(SETTLE_MS);
    const remoteWrites = () => Promise.all(run.remotes.map((r) => apiserverWrites(r, ['services', 'endpointslices', 'events'])));
    const [before, remotesBefore] = [await localRequests(run), await remoteWrites()];
    const queriesBefore = links.map((l) => run.dns.queryCount(gatewayName(l), 'A'));
    const windowMs = STEADY_TTLS * TTL_S * 1000;
    await sleep(windowMs);
    const after = await localRequests(run);
    const writes = writesSince(before.writes, after.writes);
    const remotesAfter = await remoteWrites();
    const remote = remotesAfter.reduce((n, after, i) => n + sum(writesSince(remotesBefore[i]!, after)), 0);
    const mirrorWrites = Object.entries(writes).filter(([k]) => / (services|endpointslices|namespaces)$/.test(k)).reduce((n, [, v]) => n + v, 0);
    // The status refresh: every quarter of the stale window, at the first resolution past it.
    const refreshS = Math.ceil(STALE_WINDOW_S / 4 / TTL_S) * TTL_S;
    report.value(BENCHMARK, `steady state, ${STEADY_TTLS} TTLs with unchanged DNS answers: Service/slice writes (apiserver's count)`, SERVICES * links.length, 'mirrors', mirrorWrites, 'writes', 0, {
        'A queries answered': links.reduce((n, l, i) => n + run.dns.queryCount(gatewayName(l), 'A') - queriesBefore[i]!, 0),
        Events: writes['POST events'] ?? 0,
        'writes to the remotes': remote,
    });
    report.value(BENCHMARK, `steady state: Link status writes (resolvedAt refresh, one per Link per ${refreshS} s: --dns-stale-window ${STALE_WINDOW_S}s / 4 rounded up to a refresh)`, links.length, 'Links', writes['PATCH links/status'] ?? 0, 'writes', undefined, {
        'about (per design)': (links.length * windowMs) / 1000 / refreshS,
        'apiserver time per Link status write (ms)': statusWriteMs(before, after),
        'lease renewals (the controller, every 2 s, and the apiserver its own)': writes['PUT leases'] ?? 0,
    });
}

export async function runServiceMirrorScaleBenchmark(report: Report, cleanups: Cleanups): Promise<void> {
    const entry = controllerEntry();
    const clusters: BenchCluster[] = [];
    let dns: TestDnsServer | undefined;
    let probe: Server | undefined;
    let controller: ControllerProcess | undefined;
    let watch: MirrorWatch | undefined;
    try {
        let started = performance.now();
        const names = ['scale-l', 'scale-r1', 'scale-r2'].slice(0, 1 + REMOTES);
        // Settled, not all: if one fails to start, the others are still stopped below.
        const starts = await Promise.allSettled(names.map((n) => startBenchCluster(benchClusterName(`mirror-${n}`), cleanups)));
        for (const start of starts) if (start.status === 'fulfilled') clusters.push(start.value);
        for (const start of starts) if (start.status === 'rejected') throw start.reason;
        const [local, ...remotes] = clusters as [BenchCluster, ...BenchCluster[]];
        [dns, probe] = await Promise.all([TestDnsServer.start(), probeServer()]);
        await installCrds(local.admin);
        await Promise.all(clusters.map(createNamespaces));
        report.value(BENCHMARK, `set-up: ${clusters.length} clusters, DNS server, CRDs`, clusters.length, 'clusters', performance.now() - started, 'ms');
        started = performance.now();
        await Promise.all(remotes.map(exportServices));
        report.value(BENCHMARK, 'set-up: exported Services and their slices on the remotes', SERVICES * remotes.length, 'Services', performance.now() - started, 'ms');
        const rates = await apiserverMirrorRates(local, report);

        const linkNamespace = await local.namespace('multicluster');
        watch = await MirrorWatch.start(local);
        controller = await ControllerProcess.start(
            entry,
            'service-mirror',
            [
                '--kubeconfig', local.state.kubeconfig,
                '--namespace', linkNamespace,
                '--dns-servers', dns.address,
                '--dns-min-ttl', '1s',
                '--dns-stale-window', `${STALE_WINDOW_S}s`,
                '--probe-address-override', '127.0.0.1',
            ],
            cleanups,
        );
        const readyAt = await controller.ready(120_000);
        const run: Run = { local, remotes, dns, probePort: (probe.address() as AddressInfo).port, linkNamespace, controller, watch, rates, report };
        const none = await memory(run);
        report.value(BENCHMARK, 'controller RSS with no Link', 0, 'mirrors', none.rssMb, 'MB', undefined, { 'V8 heap used, least over 5 s (MB)': none.heapMb, 'process start to ready (ms)': readyAt - controller.startedAt });

        await linkAndMirror(run, LINKS[0], remotes[0]!);
        await dnsChange(run, LINKS[0]);
        await steadyState(run, [LINKS[0]]);
        const one = await memory(run);
        const ratesNow = await apiserverMirrorRates(local, report, ` again, with ${SERVICES} mirrors present`);
        await linkAndMirror(run, LINKS[1], remotes[REMOTES - 1]!, ratesNow);
        const two = await memory(run);
        const mirrors = 2 * SERVICES;
        report.value(BENCHMARK, `controller RSS with 2 Links of ${SERVICES} mirrors (${REMOTES === 2 ? 'two remote clusters' : 'one remote linked twice'})`, mirrors, 'mirrors', two.rssMb, 'MB', undefined, {
            'V8 heap used, least over 5 s (MB)': two.heapMb,
            'with 1 Link: RSS (MB)': one.rssMb,
            'with 1 Link: heap (MB)': one.heapMb,
            'RSS per mirror over no Link (KB)': ((two.rssMb - none.rssMb) * 1024) / mirrors,
            'heap per mirror over no Link (KB)': ((two.heapMb - none.heapMb) * 1024) / mirrors,
            'peak RSS (MB)': controller.peakRssMb(),
            'controller CPU since start (s)': controller.cpuSeconds(),
        });
    } finally {
        // The controller first, so no watch holds an apiserver's shutdown up.
        await controller?.stop();
        await watch?.stop();
        await dns?.close();
        probe?.close();
        await Promise.allSettled(clusters.map((c) => c.stop()));
    }
}
