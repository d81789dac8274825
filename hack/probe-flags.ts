// health-checks' steady state, several node flag sets (or builds) alternating on one cluster:
// the 10 000 probed workloads are created once and their Ready conditions written once (a first
// controller), then each run starts a fresh controller, lets it settle and reads the steady-state
// window as the health-checks bench does: probes/s, mean probe latency, CPU per probe, Ready
// writes (expected 0), RSS. Each variant sees the same cluster and, run by run, the same load.
//
//   npx tsx hack/probe-flags.ts [RUNS=3] [ENTRY.js ...]            (default: dist/cli/main.js)
//   PROBE_FLAGS_VARIANTS="default=|ib4=--interrupt-budget=270336"  node flag sets (after the bundle's own)
//   PROBE_FLAGS_SETTLE_S=15 PROBE_FLAGS_WINDOW_S=60               the bench's settle and window
//   BENCH_PROBED_WORKLOADS=10000
import { loadavg } from 'node:os';
import { createProbedWorkloads, snapshot, startProbeServers } from '../bench/health-checks.js';
import { ControllerProcess } from '../bench/controller-process.js';
import { Cleanups, benchClusterName, startBenchCluster } from '../bench/local-cluster.js';
import { installCrds } from '../src/testing/crds.js';

const args = process.argv.slice(2);
const RUNS = Number(args.find((a) => /^\d+$/.test(a)) ?? 3);
const entries = args.filter((a) => a.endsWith('.js'));
if (entries.length === 0) entries.push(new URL('../dist/cli/main.js', import.meta.url).pathname);
const variants = (process.env.PROBE_FLAGS_VARIANTS ?? '=')
    .split('|')
    .map((v) => ({ name: v.slice(0, v.indexOf('=')), nodeArgs: v.slice(v.indexOf('=') + 1) }));
const WORKLOADS = Number(process.env.BENCH_PROBED_WORKLOADS ?? 10_000);
const SETTLE_MS = 1000 * Number(process.env.PROBE_FLAGS_SETTLE_S ?? 15);
const WINDOW_MS = 1000 * Number(process.env.PROBE_FLAGS_WINDOW_S ?? 60);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function main(): Promise<void> {
    const cleanups = new Cleanups();
    process.once('SIGINT', () => void cleanups.runAll().then(() => process.exit(130)));
    const servers = await startProbeServers();
    const cluster = await startBenchCluster(benchClusterName('probe-flags'), cleanups);
    try {
        await installCrds(cluster.admin);
        const ns = await cluster.namespace('probed');
        const leaseNs = await cluster.namespace('lease');
        await createProbedWorkloads(cluster, ns, servers, WORKLOADS);
        const flags = ['--kubeconfig', cluster.state.kubeconfig, '--namespace', leaseNs, '--watch-namespace', ns, '--probe-address-override', '127.0.0.1'];
        const start = (entry: string, nodeArgs: string) => ControllerProcess.start(entry, 'external-workloads', flags, cleanups, { listenTimeoutMs: 120_000, nodeArgs });
        // The first term once: every Ready condition written, so that each run below is steady state.
        const first = await start(entries[0]!, '');
        for (let s = await snapshot(first, servers); s.writes < WORKLOADS; s = await snapshot(first, servers)) await sleep(1000);
        await first.stop();
        console.log(`set-up done: ${WORKLOADS} workloads, their Ready conditions written`);
        for (let run = 0; run < RUNS; run++) {
            for (const entry of entries) {
                for (const { name, nodeArgs } of variants) {
                    const controller = await start(entry, nodeArgs);
                    try {
                        await sleep(SETTLE_MS);
                        const before = await snapshot(controller, servers);
                        const load = loadavg()[0]!;
                        await sleep(WINDOW_MS);
                        const after = await snapshot(controller, servers);
                        const windowS = (after.at - before.at) / 1000;
                        const probes = after.probes - before.probes;
                        const label = `${entries.length > 1 ? entry : ''}${name ? ` [${name}]` : ''}`;
                        console.log(
                            `run ${run} ${label} load ${load.toFixed(1)}-${loadavg()[0]!.toFixed(1)}: ${(probes / windowS).toFixed(0)} probes/s, ` +
                                `mean probe ${((1000 * (after.durationSum - before.durationSum)) / Math.max(1, after.durationCount - before.durationCount)).toFixed(2)} ms, ` +
                                `CPU ${((1000 * (after.cpuS - before.cpuS)) / Math.max(1, probes)).toFixed(3)} ms per probe, failures ${after.failures - before.failures}, ` +
                                `Ready writes ${after.writes - before.writes}, RSS ${controller.rssMb().toFixed(0)} MB (peak ${controller.peakRssMb().toFixed(0)}, V8 heap used ${(await controller.heapUsedMb()).toFixed(0)})`,
                        );
                    } finally {
                        await controller.stop();
                    }
                }
            }
        }
    } finally {
        servers.close();
        await cluster.stop();
        await cleanups.runAll();
    }
}

await main();
