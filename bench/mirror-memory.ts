// Benchmark: what one mirror and one remote export cost the service mirror's memory, the figure
// behind --max-mirrors-per-link's default (docs/configuration.md). One remote cluster exports
// EXPORTS Services, each with a ready EndpointSlice; the controller (the compiled CLI, a process
// of its own) mirrors them through one Link, twice: with --max-mirrors-per-link LIMIT (every
// export cached, LIMIT mirrored, MirrorLimitReached) and with the limit above EXPORTS (all
// mirrored). The V8 heap (least over 5 s, off /metrics) of each run, over the same process
// with no Link, gives the cost per mirror (the difference of the two runs) and per export
// cached but not mirrored (the rest of the first run).
//
// BENCH_MIRROR_EXPORTS=N changes the 3 000 (SCALE=large: 10 000), BENCH_MIRROR_LIMIT the 1 000.
import type { V1EndpointSlice } from '@kubernetes/client-node';
import { collectionPath, EndpointSlices, Links, Namespaces, objectPath, Services } from '../src/kube/resources.js';
import { installCrds } from '../src/testing/crds.js';
import { TestDnsServer } from '../src/testing/dns-server.js';
import { createLink, EXPORTED, type MirrorEnv } from '../test/integration/mirror-support.js';
import { ControllerProcess, controllerEntry } from './controller-process.js';
import { benchClusterName, startBenchCluster, type BenchCluster, type Cleanups } from './local-cluster.js';
import { inParallel, sleep } from './async.js';
import type { Report } from './stats.js';

const BENCHMARK = 'mirror-memory';
const EXPORTS = Number(process.env.BENCH_MIRROR_EXPORTS ?? (process.env.SCALE === 'large' ? 10_000 : 3_000));
const LIMIT = Number(process.env.BENCH_MIRROR_LIMIT ?? 1_000);
const NAMESPACES = 5;
const GATEWAY = 'gw-mem.bench.test';
const TIMEOUT_MS = 20 * 60_000;

const namespaceOf = (i: number) => `mirror-mem-${i % NAMESPACES}`;
const serviceOf = (i: number) => `svc-${String(i).padStart(5, '0')}`;

async function exportServices(remote: BenchCluster): Promise<void> {
    await inParallel([...Array(EXPORTS).keys()], 16, async (i) => {
        const ns = namespaceOf(i);
        const name = serviceOf(i);
        await remote.admin.create(collectionPath(Services, ns), {
            metadata: { name, labels: { ...EXPORTED, app: name }, annotations: { 'example.com/owner': 'bench' } },
            spec: { ports: [{ name: 'http', port: 80 }, { name: 'grpc', port: 9090 }] },
        });
        const slice: V1EndpointSlice = {
            metadata: { name: `${name}-a`, labels: { 'kubernetes.io/service-name': name, 'endpointslice.kubernetes.io/managed-by': 'bench' } },
            addressType: 'IPv4',
            endpoints: [0, 1, 2].map((j) => ({ addresses: [`10.${(i >> 8) & 255}.${i & 255}.${j + 1}`], conditions: { ready: true }, nodeName: `node-${j}`, zone: 'z1' })),
            ports: [{ name: 'http', port: 8080, protocol: 'TCP' }, { name: 'grpc', port: 9090, protocol: 'TCP' }],
        };
        await remote.admin.create(collectionPath(EndpointSlices, ns), slice);
    });
}

/** The least V8 heap used over 5 s: closest to what is live (garbage comes and goes). */
async function heapMb(controller: ControllerProcess): Promise<number> {
    let least = Infinity;
    for (let i = 0; i < 5; i++) {
        await sleep(1_000);
        least = Math.min(least, await controller.heapUsedMb());
    }
    return least;
}

interface LinkStatusView {
    status?: { mirrorSummary?: { mirrored?: number }; conditions?: { type: string; status: string }[] };
}

/** One controller run: heap with no Link, then with the Link once `mirrored` mirrors are reported. */
async function run(local: BenchCluster, remote: BenchCluster, dns: TestDnsServer, limit: number, cleanups: Cleanups, entry: string) {
    const linkNamespace = await local.namespace('mem');
    const controller = await ControllerProcess.start(
        entry,
        'service-mirror',
        ['--kubeconfig', local.state.kubeconfig, '--namespace', linkNamespace, '--dns-servers', dns.address, '--dns-min-ttl', '1s', '--max-mirrors-per-link', String(limit)],
        cleanups,
    );
    try {
        await controller.ready(120_000);
        const none = await heapMb(controller);
        const env: MirrorEnv = { local, remote, dns, controllers: new Set() };
        await createLink(env, linkNamespace, { name: 'mem', gatewayAddress: GATEWAY });
        const expected = Math.min(limit, EXPORTS);
        const deadline = performance.now() + TIMEOUT_MS;
        for (;;) {
            const link = await local.admin.get<LinkStatusView>(objectPath(Links, linkNamespace, 'mem'));
            const reached = link.status?.conditions?.some((c) => c.type === 'MirrorLimitReached' && c.status === 'True') ?? false;
            if (link.status?.mirrorSummary?.mirrored === expected && reached === limit < EXPORTS) break;
            if (performance.now() > deadline) throw new Error(`no ${expected} mirrors within ${TIMEOUT_MS} ms: ${JSON.stringify(link.status?.mirrorSummary)}`);
            await sleep(2_000);
        }
        const linked = await heapMb(controller);
        // The next run starts from no mirror: this Link's go with it.
        await local.admin.delete(objectPath(Links, linkNamespace, 'mem'));
        for (;;) {
            const left = await local.admin.get<{ items: unknown[] }>(collectionPath(Services), { labelSelector: 'mirror.linkerd.io/cluster-name=mem', limit: 1 });
            if (left.items.length === 0) break;
            await sleep(2_000);
        }
        return { none, linked, mirrors: expected, rssMb: controller.rssMb() };
    } finally {
        await controller.stop();
    }
}

export async function runMirrorMemoryBenchmark(report: Report, cleanups: Cleanups): Promise<void> {
    const clusters: BenchCluster[] = [];
    let dns: TestDnsServer | undefined;
    try {
        const starts = await Promise.allSettled(['mem-l', 'mem-r'].map((n) => startBenchCluster(benchClusterName(n), cleanups)));
        for (const start of starts) if (start.status === 'fulfilled') clusters.push(start.value);
        for (const start of starts) if (start.status === 'rejected') throw start.reason;
        const [local, remote] = clusters as [BenchCluster, BenchCluster];
        dns = await TestDnsServer.start();
        dns.setRecords(GATEWAY, { A: [{ address: '192.0.2.50', ttl: 30 }] });
        await installCrds(local.admin);
        for (const cluster of clusters) {
            for (let i = 0; i < NAMESPACES; i++) await cluster.admin.create(collectionPath(Namespaces), { metadata: { name: namespaceOf(i) } });
        }
        let started = performance.now();
        await exportServices(remote);
        report.value(BENCHMARK, 'set-up: exported Services and their slices', EXPORTS, 'Services', performance.now() - started, 'ms');
        const entry = controllerEntry();

        started = performance.now();
        const capped = await run(local, remote, dns, LIMIT, cleanups, entry);
        const all = await run(local, remote, dns, EXPORTS, cleanups, entry);
        const perMirrorKb = ((all.linked - all.none - (capped.linked - capped.none)) * 1024) / (all.mirrors - capped.mirrors);
        const perExportKb = ((capped.linked - capped.none) * 1024 - perMirrorKb * capped.mirrors) / EXPORTS;
        report.value(BENCHMARK, `V8 heap per mirror (${EXPORTS} exports, limit ${LIMIT} vs all)`, all.mirrors - capped.mirrors, 'mirrors', perMirrorKb, 'KB', undefined, {
            'heap per export cached, not mirrored (KB)': perExportKb,
            [`heap with limit ${LIMIT} over no Link (MB)`]: capped.linked - capped.none,
            [`heap with all ${EXPORTS} mirrored over no Link (MB)`]: all.linked - all.none,
            'heap with no Link (MB)': all.none,
            'RSS with all mirrored (MB)': all.rssMb,
            'both runs (ms)': performance.now() - started,
        });
    } finally {
        await dns?.close();
        await Promise.allSettled(clusters.map((c) => c.stop()));
    }
}
