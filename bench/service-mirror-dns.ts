// Benchmark 3: the service mirror following its gateway's DNS name, end to end: two local
// clusters (local and remote), the loopback DNS server, and the controller in-process with the
// integration tests' DNS policy (--dns-min-ttl 1s, max 3 s) but the default 5-min stale window. Times are from the record change
// in the DNS server to the updated mirror slice arriving on a watch of the local apiserver.
import { DEFAULT_DNS_POLICY } from '../src/dns/name-state.js';
import { installCrds } from '../src/testing/crds.js';
import { TestDnsServer } from '../src/testing/dns-server.js';
import { MIRROR_SLICE_MANAGED_BY } from '../src/servicemirror/api/keys.js';
import {
    createLink,
    createRemoteService,
    endpointLines,
    pairedNamespace,
    runServiceMirror,
    TEST_DNS,
    type MirrorEnv,
    type RunningMirror,
} from '../test/integration/mirror-support.js';
import { benchClusterName, startBenchCluster, type BenchCluster, type Cleanups } from './local-cluster.js';
import { SliceWatch } from './watch.js';
import { median, type Report } from './stats.js';
import { sleep } from './async.js';

const BENCHMARK = 'service-mirror-dns';
const GATEWAY = 'gw.bench.test';
const LINK = 'bench';
const TTL_S = 1;
/** Wait after each update before the next change, so changes land at different points of the 1 s refresh cycle. */
const GAPS_MS = [100, 300, 500, 700, 900];
const STEADY_TTLS = 5;
/** runServiceMirror's statusDelayMs: Link status changes within it make one write. */
const STATUS_DELAY_MS = 200;

const gatewayIp = (i: number) => `192.0.2.${30 + i}`;

async function measure(env: MirrorEnv, running: RunningMirror, report: Report): Promise<void> {
    env.dns.setRecords(GATEWAY, { A: [{ address: gatewayIp(0), ttl: TTL_S }] });
    await createLink(env, running.namespace, { name: LINK, gatewayAddress: GATEWAY });
    const ns = await pairedNamespace(env);
    const mirror = `web-${LINK}`;
    const watch = await SliceWatch.start(env.local.admin, ns, `kubernetes.io/service-name=${mirror},endpointslice.kubernetes.io/managed-by=${MIRROR_SLICE_MANAGED_BY}`);
    try {
        await createRemoteService(env, ns, 'web', { families: ['IPv4'] });
        const only = (ip: string) => (slices: Parameters<typeof endpointLines>[0]) => endpointLines(slices).join() === `IPv4 ${ip} ready`;
        await watch.until('the first mirror slice', only(gatewayIp(0)), 60_000);
        await sleep(300);

        const latencies: number[] = [];
        const writesFrom: number[] = [];
        for (const [k, gap] of GAPS_MS.entries()) {
            const ip = gatewayIp(k + 1);
            writesFrom.push(running.rest.writes.length);
            env.dns.setRecords(GATEWAY, { A: [{ address: ip, ttl: TTL_S }] });
            const changedAt = performance.now();
            const seenAt = await watch.until(`the slice with ${ip}`, only(ip), 10_000);
            latencies.push(seenAt - changedAt);
            await sleep(gap);
        }
        // The last change's Link status write comes after the status delay.
        await sleep(STATUS_DELAY_MS + 300);
        writesFrom.push(running.rest.writes.length);
        const sliceWrites = GAPS_MS.map((_, k) =>
            running.rest.writes.slice(writesFrom[k], writesFrom[k + 1]).filter((w) => w.path.includes('/endpointslices')).length,
        );
        report.timing(BENCHMARK, `DNS record change to updated mirror slice (TTL ${TTL_S} s, --dns-min-ttl ${TEST_DNS.minTtlMs / 1000}s)`, GAPS_MS.length, 'changes', latencies);
        report.value(BENCHMARK, 'EndpointSlice writes per DNS change (median)', GAPS_MS.length, 'changes', median(sliceWrites), 'writes', 1, {
            'max of a change': Math.max(...sliceWrites),
        });
        // The Link status carries the resolved addresses (gatewayResolution), so a change rewrites
        // it too, once its status delay is over: counted over all changes, not per change.
        const others = running.rest.writes.slice(writesFrom[0], writesFrom[GAPS_MS.length]).filter((w) => !w.path.includes('/endpointslices'));
        report.value(BENCHMARK, 'other API writes over all the DNS changes (Link status, one per change)', GAPS_MS.length, 'changes', others.length, 'writes', GAPS_MS.length);

        await sleep(1_000);
        const [writesBefore, queriesBefore] = [running.rest.writes.length, env.dns.queryCount(GATEWAY, 'A')];
        await sleep(STEADY_TTLS * TTL_S * 1000);
        report.value(BENCHMARK, `API writes in steady state (same answers, over ${STEADY_TTLS} TTLs)`, STEADY_TTLS, 'TTLs', running.rest.writes.length - writesBefore, 'writes', 0, {
            'A queries answered': env.dns.queryCount(GATEWAY, 'A') - queriesBefore,
        });
    } finally {
        await watch.stop();
    }
}

export async function runServiceMirrorDnsBenchmark(report: Report, cleanups: Cleanups): Promise<void> {
    const clusters: BenchCluster[] = [];
    let dns: TestDnsServer | undefined;
    const controllers = new Set<RunningMirror>();
    try {
        const started = performance.now();
        // Settled, not all: if one fails to start, the other is still stopped below.
        const starts = await Promise.allSettled([startBenchCluster(benchClusterName('mirror-l'), cleanups), startBenchCluster(benchClusterName('mirror-r'), cleanups)]);
        for (const start of starts) if (start.status === 'fulfilled') clusters.push(start.value);
        for (const start of starts) if (start.status === 'rejected') throw start.reason;
        const [local, remote] = clusters as [BenchCluster, BenchCluster];
        dns = await TestDnsServer.start();
        await installCrds(local.admin);
        report.value(BENCHMARK, 'set-up: two clusters, DNS server, CRDs', 2, 'clusters', performance.now() - started, 'ms');
        const env: MirrorEnv = { local, remote, dns, controllers };
        // The default stale window (5 min): its resolvedAt refresh (a Link status write per
        // quarter window) then falls outside the run, as in a cluster with default flags.
        const running = await runServiceMirror(env, await local.namespace('mc'), { dnsPolicy: { ...TEST_DNS, staleWindowMs: DEFAULT_DNS_POLICY.staleWindowMs } });
        await measure(env, running, report);
    } finally {
        // Controllers first, so no watch holds an apiserver's shutdown up.
        await Promise.allSettled([...controllers].map((c) => c.stop()));
        await dns?.close();
        await Promise.allSettled(clusters.map((c) => c.stop()));
    }
}
