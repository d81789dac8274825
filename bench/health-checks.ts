// Benchmark: the health checks of 10 000 ExternalWorkloads (BENCH_PROBED_WORKLOADS for another
// count), each annotated with an HTTP probe at the default period (10 s, so 1 000 probes/s are
// asked for) and the default concurrency, run by the compiled controller in its own process
// against a real local apiserver. Probes reach loopback servers through
// --probe-address-override (the workloads' own addresses are never connected to).
//
// Two phases: the first leader term, which writes every workload's missing Ready condition
// (uncapped --kube-api-qps, so the figure is the controller's and the apiserver's, not the
// cap's), then a steady-state window, in which nothing may be written.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { collectionPath, ExternalWorkloads } from '../src/kube/resources.js';
import { installCrds } from '../src/testing/crds.js';
import { ControllerProcess, controllerEntry, metricFrom } from './controller-process.js';
import { benchClusterName, startBenchCluster, type BenchCluster, type Cleanups } from './local-cluster.js';
import { inParallel, sleep } from './async.js';
import type { Report } from './stats.js';

const BENCHMARK = 'health-checks';
const WORKLOADS = Number(process.env.BENCH_PROBED_WORKLOADS ?? 10_000);
/** BENCH_PROBE_CONCURRENCY: --probe-concurrency for a comparison (the default otherwise). */
const CONCURRENCY = process.env.BENCH_PROBE_CONCURRENCY;
/** Loopback servers the probes are spread over (20 ports: no one port's TIME_WAIT sockets pile up). */
const SERVERS = 20;
const PERIOD_S = 10;
const STEADY_WINDOW_MS = 60_000;
const SETTLE_MS = 15_000;
const METRIC = 'mesh_endpoints_external_workloads_';

/** Addresses from 10/8, one per workload; never connected to. */
const ipOf = (n: number) => `10.${(n >> 16) & 255}.${(n >> 8) & 255}.${(n & 255) || 1}`;

interface ProbeServers {
    ports: number[];
    requests(): number;
    close(): void;
}

async function startProbeServers(): Promise<ProbeServers> {
    let requests = 0;
    const servers: Server[] = [];
    for (let i = 0; i < SERVERS; i++) {
        const server = createServer((_, res) => {
            requests++;
            res.end('ready\n');
        });
        await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
        servers.push(server);
    }
    return {
        ports: servers.map((s) => (s.address() as AddressInfo).port),
        requests: () => requests,
        close: () => servers.forEach((s) => s.close()),
    };
}

/** `count` workloads in `ns`, each with an HTTP probe of one of the loopback servers (16 creates at a time). */
async function createProbedWorkloads(cluster: BenchCluster, ns: string, servers: ProbeServers, count: number): Promise<void> {
    await inParallel([...Array(count).keys()], 16, async (i) => {
        await cluster.admin.create(collectionPath(ExternalWorkloads, ns), {
            apiVersion: 'workload.linkerd.io/v1beta1',
            kind: 'ExternalWorkload',
            metadata: { name: `vm-${String(i).padStart(5, '0')}`, labels: { app: 'probed' }, annotations: { 'mesh-endpoints.io/probe': `http:${servers.ports[i % SERVERS]}/ready` } },
            spec: { meshTLS: { identity: `vm-${i}.${ns}.serviceaccount.identity.linkerd.cluster.local`, serverName: `vm-${i}` }, workloadIPs: [{ ip: ipOf(i + 1) }], ports: [{ name: 'http', port: 8080 }] },
        } as never);
    });
}

interface Snapshot {
    at: number;
    cpuS: number;
    probes: number;
    failures: number;
    writes: number;
    durationSum: number;
    durationCount: number;
    served: number;
}

async function snapshot(controller: ControllerProcess, servers: ProbeServers): Promise<Snapshot> {
    const { text } = await controller.get('/metrics');
    const m = (name: string, labels = '') => metricFrom(text, `${METRIC}${name}`, labels) || 0;
    return {
        at: performance.now(),
        cpuS: controller.cpuSeconds(),
        probes: m('probes_total', 'result="success"') + m('probes_total', 'result="failure"'),
        failures: m('probes_total', 'result="failure"'),
        writes: m('ready_transitions_total', 'status="True"') + m('ready_transitions_total', 'status="False"'),
        durationSum: m('probe_duration_seconds_sum'),
        durationCount: m('probe_duration_seconds_count'),
        served: servers.requests(),
    };
}

export async function runHealthChecksBenchmark(report: Report, cleanups: Cleanups): Promise<void> {
    const entry = controllerEntry();
    const servers = await startProbeServers();
    const cluster = await startBenchCluster(benchClusterName('health'), cleanups);
    try {
        await installCrds(cluster.admin);
        const ns = await cluster.namespace('probed');
        const leaseNs = await cluster.namespace('lease');
        const createStarted = performance.now();
        await createProbedWorkloads(cluster, ns, servers, WORKLOADS);
        report.value(BENCHMARK, 'set-up: ExternalWorkloads created (not the controller)', WORKLOADS, 'workloads', (performance.now() - createStarted) / 1000, 's');

        const flags = ['--kubeconfig', cluster.state.kubeconfig, '--namespace', leaseNs, '--watch-namespace', ns, '--probe-address-override', '127.0.0.1'];
        if (CONCURRENCY) flags.push('--probe-concurrency', CONCURRENCY);
        const controller = await ControllerProcess.start(entry, 'external-workloads', flags, cleanups);
        try {
            // First term: every workload's Ready condition is missing, so each is written once.
            const start = await snapshot(controller, servers);
            let now = start;
            const deadline = performance.now() + 20 * 60_000;
            while (now.writes < WORKLOADS && performance.now() < deadline) {
                await sleep(1000);
                now = await snapshot(controller, servers);
            }
            const firstTermS = (now.at - controller.startedAt) / 1000;
            report.value(BENCHMARK, 'first term: process start to every Ready condition written', WORKLOADS, 'workloads', firstTermS, 's', undefined, {
                'Ready writes': now.writes,
                'writes/s': now.writes / firstTermS,
                'controller CPU (s)': now.cpuS - start.cpuS,
                'Events dropped (recorder queue full)': metricFrom((await controller.get('/metrics')).text, 'mesh_endpoints_events_total', 'result="dropped"') || 0,
            });

            // Steady state: every condition stored, probes agreeing with it.
            await sleep(SETTLE_MS);
            const before = await snapshot(controller, servers);
            await sleep(STEADY_WINDOW_MS);
            const after = await snapshot(controller, servers);
            const windowS = (after.at - before.at) / 1000;
            const probesPerS = (after.probes - before.probes) / windowS;
            const configured = WORKLOADS / PERIOD_S;
            report.value(BENCHMARK, `steady state: probes/s achieved (configured ${configured}/s: ${WORKLOADS} workloads / ${PERIOD_S} s)`, WORKLOADS, 'workloads', probesPerS, 'probes/s', undefined, {
                'of configured (%)': (100 * probesPerS) / configured,
                'served by the loopback servers /s': (after.served - before.served) / windowS,
                failures: after.failures - before.failures,
                'mean probe latency (ms)': (1000 * (after.durationSum - before.durationSum)) / Math.max(1, after.durationCount - before.durationCount),
            });
            report.value(BENCHMARK, `steady state: Ready writes in ${Math.round(windowS)} s`, WORKLOADS, 'workloads', after.writes - before.writes, 'writes', 0);
            report.value(BENCHMARK, 'steady state: controller CPU per second', WORKLOADS, 'workloads', (after.cpuS - before.cpuS) / windowS, 'CPU s/s', undefined, {
                'CPU ms per probe': (1000 * (after.cpuS - before.cpuS)) / Math.max(1, after.probes - before.probes),
            });
            // The heap in use apart: RSS also holds pages V8 has not given back since the first term's peak.
            report.value(BENCHMARK, 'controller RSS', WORKLOADS, 'workloads', controller.rssMb(), 'MB', undefined, {
                'peak (MB)': controller.peakRssMb(),
                'V8 heap used (MB)': await controller.heapUsedMb(),
            });
        } finally {
            await controller.stop();
        }
    } finally {
        servers.close();
        await cluster.stop();
    }
}
