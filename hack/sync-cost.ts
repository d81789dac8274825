// The external-workloads controller's own CPU per slice write in cluster-scale's initial sync,
// without the transport: the real controller (informers' caches, queue, workers, syncService,
// planning, the writer's check, the tracker, metrics) in a fresh process, its caches filled
// through the informers' event path, against a stand-in KubeRest whose create answers on the
// next turn with the stored metadata and feeds the watch echo of the slice back through the
// slice informer (parsed from JSON, as a watch delivers it). No apiserver and no HTTP: what is
// left is the part of the main thread's time per write that is ours (docs/benchmarks.md, "Our
// code per write"). Every tree is bundled as dist/ is (esbuild, minified) and the trees'
// fresh processes alternate (ABBA), so each pair sees the same load.
//
//   npx tsx hack/sync-cost.ts [RUNS] [TREE ...]     (default: 5 runs of this tree)
//   SYNC_COST_NODE_ARGS="--cpu-prof --cpu-prof-dir=DIR"   node flags of the measured processes (after the bundle's
//       --max-semi-space-size=8); a run's window (µs, monotonic) minus the profile's startTime gives --from/--to
//
// Prints per run and tree the CPU ms per write of the main thread and of the whole process
// (V8's compiler and GC threads included) from the first sync to the last echo, then medians and
// each tree's median ratio to the first, run by run.
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const SERVICES = 1_000;
const PER_SERVICE = 10;
const BURST = 1_000;
const NAMESPACE = 'bench';

if (process.env.SYNC_COST_CHILD === '1') await measure();
else await drive();

async function drive(): Promise<void> {
    const { build } = await import('esbuild');
    const args = process.argv.slice(2);
    const runs = Number(args.find((a) => /^\d+$/.test(a)) ?? 5);
    const trees = args.filter((a) => !/^\d+$/.test(a)).map((t) => resolve(t));
    const self = fileURLToPath(import.meta.url);
    const here = resolve(self, '../..');
    if (trees.length === 0) trees.push(here);
    // Two levels below a repository, as dist/cli/main.js: rest.ts reads ../../package.json.
    const out = join(here, 'dist/sync-cost');
    mkdirSync(out, { recursive: true });
    const bundles = await Promise.all(
        trees.map(async (tree, i) => {
            const outfile = join(out, `${i}.mjs`);
            await build({
                entryPoints: [self],
                outfile,
                bundle: true,
                format: 'esm',
                platform: 'node',
                target: 'node20',
                minify: true,
                sourcemap: true,
                logLevel: 'warning',
                external: ['esbuild'],
                banner: { js: "import{createRequire as __createRequire}from'node:module';const require=__createRequire(import.meta.url);" },
                // This file's imports of ../src/ are the tree's.
                plugins: [{ name: 'tree', setup: (b) => b.onResolve({ filter: /^\.\.\/src\// }, (a) => ({ path: join(tree, a.path.slice(3)).replace(/\.js$/, '.ts') })) }],
                nodePaths: [join(here, 'node_modules')],
            });
            return outfile;
        }),
    );
    const nodeArgs = ['--max-semi-space-size=8', ...(process.env.SYNC_COST_NODE_ARGS ?? '').split(' ').filter(Boolean)];
    const results: { main: number; total: number }[][] = trees.map(() => []);
    for (let run = 0; run < runs; run++) {
        // Every other run in reverse order: what runs second in a pair should not always be the same tree.
        const order = [...trees.keys()];
        if (run % 2 === 1) order.reverse();
        for (const i of order) {
            const tree = trees[i]!;
            const output = execFileSync(process.execPath, [...nodeArgs, bundles[i]!], { env: { ...process.env, SYNC_COST_CHILD: '1' }, encoding: 'utf8' });
            const r = JSON.parse(output.trim().split('\n').pop()!) as { writes: number; mainMs: number; totalMs: number; wallMs: number; windowUs: [number, number] };
            const main = r.mainMs / r.writes;
            const total = r.totalMs / r.writes;
            results[i]!.push({ main, total });
            console.log(`run ${run} ${tree}: ${r.writes} writes, CPU ms per write: main ${main.toFixed(3)}, whole process ${total.toFixed(3)}; wall ${r.wallMs.toFixed(0)} ms; load ${loadavg()[0]!.toFixed(1)}; window ${r.windowUs.join('-')} µs`);
        }
    }
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
    for (const [i, tree] of trees.entries()) {
        // Identical runs differ by a third under load: each run's ratio to the first tree's run beside it is steadier.
        const ratios = i === 0 ? '' : `; median ratio to the first tree, run by run: main ${median(results[i]!.map((r, run) => r.main / results[0]![run]!.main)).toFixed(3)}, whole process ${median(results[i]!.map((r, run) => r.total / results[0]![run]!.total)).toFixed(3)}`;
        console.log(`median of ${runs}, ${tree}: main ${median(results[i]!.map((r) => r.main)).toFixed(3)}, whole process ${median(results[i]!.map((r) => r.total)).toFixed(3)} ms per write${ratios}`);
    }
}

async function measure(): Promise<void> {
    const { Registry } = await import('prom-client');
    const { ExternalWorkloadsController } = await import('../src/externalworkloads/controller.js');
    const { newLogger } = await import('../src/kube/log.js');
    const { WorkQueueMetrics } = await import('../src/kube/workqueue-metrics.js');
    type KubeRest = import('../src/kube/rest.js').KubeRest;

    let created = 0;
    let echoed = 0;
    let controller: InstanceType<typeof ExternalWorkloadsController> | undefined;
    const informerOf = (o: unknown) => o as { handleEvent(event: { type: string; object: unknown }): void };
    const turn = () => new Promise<void>((r) => setImmediate(r));
    const rest = {
        async createForMetadata(_path: string, body: unknown, _query: unknown, write?: { whileLeader?: () => boolean }) {
            await turn();
            if (write?.whileLeader && !write.whileLeader()) throw new Error('not leader');
            const n = ++created;
            const slice = body as { metadata: Record<string, unknown> & { generateName: string } };
            const metadata = { ...slice.metadata, name: `${slice.metadata.generateName}${n.toString(36).padStart(5, '0')}`, uid: `uid-${n}`, resourceVersion: String(10_000 + n), generation: 1, creationTimestamp: '2026-12-01T00:00:00Z' };
            // As served: with the write's managed fields (a short stand-in), which the informer drops.
            const managedFields = [{ manager: 'external-workloads.mesh-endpoints.io', operation: 'Update', apiVersion: 'discovery.k8s.io/v1', time: '2026-12-01T00:00:00Z', fieldsType: 'FieldsV1', fieldsV1: { 'f:addressType': {}, 'f:endpoints': {}, 'f:ports': {} } }];
            const served = JSON.stringify({ type: 'ADDED', object: { ...slice, metadata: { ...metadata, managedFields } } });
            setImmediate(() => {
                informerOf(controller!.slices.informer).handleEvent(JSON.parse(served));
                echoed++;
            });
            return { metadata };
        },
    } as unknown as KubeRest;
    const registry = new Registry();
    controller = new ExternalWorkloadsController({
        rest,
        logger: newLogger('warn'),
        registry,
        queueMetrics: new WorkQueueMetrics(registry, 'mesh_endpoints'),
        events: { record: () => undefined },
        isLeader: () => true,
    });

    // The caches, through the informers' own event path (transforms, indexes), as a list fills them.
    const services = [...Array.from({ length: SERVICES }, (_, i) => ({ name: `svc-${String(i).padStart(4, '0')}`, workloads: PER_SERVICE })), { name: 'burst', workloads: BURST }];
    let n = 0;
    let rv = 1;
    for (const svc of services) {
        for (let i = 0; i < svc.workloads; i++) {
            n++;
            const name = `${svc.name}-vm-${String(i).padStart(5, '0')}`;
            informerOf(controller.workloads).handleEvent({
                type: 'ADDED',
                object: JSON.parse(
                    JSON.stringify({
                        apiVersion: 'workload.linkerd.io/v1beta1',
                        kind: 'ExternalWorkload',
                        metadata: { name, namespace: NAMESPACE, uid: `wl-${n}`, resourceVersion: String(rv++), generation: 1, labels: { app: svc.name } },
                        spec: {
                            meshTLS: { identity: `${name}.${NAMESPACE}.serviceaccount.identity.linkerd.cluster.local`, serverName: name },
                            workloadIPs: [{ ip: `10.${(n >> 16) & 255}.${(n >> 8) & 255}.${n & 255 || 1}` }],
                            ports: [{ name: 'http', port: 8080 }],
                        },
                    }),
                ),
            });
        }
        informerOf(controller.services).handleEvent({
            type: 'ADDED',
            object: JSON.parse(
                JSON.stringify({
                    apiVersion: 'v1',
                    kind: 'Service',
                    metadata: { name: svc.name, namespace: NAMESPACE, uid: `svc-${svc.name}`, resourceVersion: String(rv++) },
                    spec: { selector: { app: svc.name }, ports: [{ name: 'http', port: 80, protocol: 'TCP', targetPort: 'http' }], clusterIP: '10.96.0.10', ipFamilies: ['IPv4'], type: 'ClusterIP' },
                }),
            ),
        });
    }
    const want = services.reduce((w, s) => w + Math.ceil(s.workloads / 100), 0);

    /** The main thread's time on a CPU in ms: schedstat's nanoseconds, not stat's 10 ms ticks (a run is some hundreds of ms). */
    const mainMs = () => Number(readFileSync(`/proc/self/task/${process.pid}/schedstat`, 'utf8').split(' ')[0]) / 1e6;
    const cpuMs = () => {
        const { user, system } = process.cpuUsage();
        return (user + system) / 1000;
    };
    await turn();
    const [main0, total0, wall0, started] = [mainMs(), cpuMs(), performance.now(), process.hrtime.bigint() / 1000n];
    controller.startLeading();
    while (echoed < want) await new Promise((r) => setTimeout(r, 2));
    const [main1, total1, wall1, ended] = [mainMs(), cpuMs(), performance.now(), process.hrtime.bigint() / 1000n];
    await controller.stopLeading();
    if (created !== want) throw new Error(`${created} creates, ${want} expected`);
    // One sync per Service: the echoes of our creates must queue none.
    const syncs = (await controller.metrics.syncs.get()).values.reduce((n, v) => n + v.value, 0);
    if (syncs !== services.length) throw new Error(`${syncs} syncs of ${services.length} Services`);
    // The window on the monotonic clock in µs, as a --cpu-prof profile's startTime: --from/--to of hack/cpuprofile-summary.ts.
    console.log(JSON.stringify({ writes: created, mainMs: main1 - main0, totalMs: total1 - total0, wallMs: wall1 - wall0, windowUs: [Number(started), Number(ended)] }));
    process.exit(0);
}
