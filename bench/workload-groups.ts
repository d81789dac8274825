// Benchmark: VMs that register themselves, against a real local apiserver and the compiled
// controller in its own process. The agents are simulated in this process, each heartbeat one
// replace of its Lease (what `workload-agent` sends), as the admin: what the apiserver and the
// controller see is what 1 000 real agents would send, without 1 000 processes on 2 cores.
//   1. registration -> endpoint: a Lease created (of a group whose Leases last an hour: none lapses
//      during the run), until its address is a ready endpoint of the
//      Service (slices polled every 10 ms), one at a time: median, p95, max;
//   2. lapse -> not ready: ready registrations whose heartbeats stop 600 ms apart, until the
//      endpoint is not ready (the controller's reaction, past the lease duration);
//   3. 1 000 registrations heartbeating every 10 s for a minute: apiserver writes per second
//      (Leases, ExternalWorkloads, EndpointSlices, group status), the controller's CPU and RSS.
import { collectionPath, EndpointSlices, ExternalWorkloadGroups, Leases, objectPath, Services } from '../src/kube/resources.js';
import type { KubeRest } from '../src/kube/rest.js';
import { microTime } from '../src/time/format.js';
import { installCrds } from '../src/testing/crds.js';
import { inParallel, sleep } from './async.js';
import { ControllerProcess, controllerEntry } from './controller-process.js';
import { debugGet } from './apiserver-debug.js';
import { benchClusterName, startBenchCluster, type BenchCluster, type Cleanups } from './local-cluster.js';
import { percentile, type Report } from './stats.js';

const BENCHMARK = 'workload-groups';
const REGISTRATIONS = Number(process.env.BENCH_GROUP_WORKLOADS ?? 1000);
const LATENCY_RUNS = 30;
const LAPSES = 20;
const WINDOW_MS = 60_000;
const HEARTBEAT_S = 10;

const ipOf = (n: number) => `10.20.${(n >> 8) & 255}.${(n & 255) || 1}`;

function group(name: string, heartbeat: string, lease: string) {
    return {
        apiVersion: 'mesh-endpoints.io/v1alpha1',
        kind: 'ExternalWorkloadGroup',
        metadata: { name },
        spec: {
            addressRanges: ['10.20.0.0/16'],
            heartbeatPeriod: heartbeat,
            leaseDuration: lease,
            gracePeriod: '10m',
            template: { metadata: { labels: { app: name } }, spec: { ports: [{ name: 'http', port: 8080 }], meshTLS: { identity: '{serviceAccount}.{namespace}.serviceaccount.identity.linkerd.cluster.local', serverName: '{vm}' } } },
        },
    };
}

function lease(ns: string, groupName: string, i: number, renewTime = new Date()) {
    const name = `${groupName}.vm-${i}`;
    return {
        apiVersion: 'coordination.k8s.io/v1',
        kind: 'Lease',
        metadata: { name, labels: { 'mesh-endpoints.io/workload-group': groupName }, annotations: { 'mesh-endpoints.io/addresses': ipOf(i) } },
        spec: { holderIdentity: `system:serviceaccount:${ns}:${name}`, leaseDurationSeconds: 40, renewTime: microTime(renewTime) },
    };
}

/** Each endpoint address of the Service's slices and whether it is ready: one list. */
async function endpointsOf(rest: KubeRest, ns: string, service: string): Promise<Map<string, boolean | undefined>> {
    const list = await rest.get<{ items: Array<{ endpoints?: Array<{ addresses: string[]; conditions?: { ready?: boolean } }> }> }>(collectionPath(EndpointSlices, ns), { labelSelector: `kubernetes.io/service-name=${service}` });
    return new Map(list.items.flatMap((s) => s.endpoints ?? []).map((e) => [e.addresses[0]!, e.conditions?.ready]));
}

/** apiserver_request_total of the write verbs, per resource. */
async function apiserverWrites(cluster: BenchCluster): Promise<Map<string, number>> {
    const text = (await debugGet(cluster, '/metrics')).toString('utf8');
    const writes = new Map<string, number>();
    for (const line of text.split('\n')) {
        if (!line.startsWith('apiserver_request_total{') || !/verb="(POST|PUT|PATCH|DELETE)"/.test(line)) continue;
        const resource = /resource="([^"]*)"/.exec(line)?.[1] ?? '';
        const sub = /subresource="([^"]*)"/.exec(line)?.[1] ?? '';
        const key = sub ? `${resource}/${sub}` : resource;
        writes.set(key, (writes.get(key) ?? 0) + Number(line.slice(line.lastIndexOf(' ') + 1)));
    }
    return writes;
}

export async function runWorkloadGroupsBenchmark(report: Report, cleanups: Cleanups): Promise<void> {
    const entry = controllerEntry();
    const cluster = await startBenchCluster(benchClusterName('groups'), cleanups);
    const rest = cluster.admin;
    try {
        await installCrds(rest);
        const ns = await cluster.namespace('vms');
        const leaseNs = await cluster.namespace('lease');
        for (const [name, heartbeat, duration] of [['latency', '10m', '1h'], ['lapse', '1s', '3s'], ['fleet', `${HEARTBEAT_S}s`, '40s']] as const) {
            await rest.create(collectionPath(ExternalWorkloadGroups, ns), group(name, heartbeat, duration) as never);
            await rest.create(collectionPath(Services, ns), { metadata: { name }, spec: { selector: { app: name }, ports: [{ port: 80, targetPort: 'http' }] } } as never);
        }
        const controller = await ControllerProcess.start(entry, 'external-workloads', ['--kubeconfig', cluster.state.kubeconfig, '--namespace', leaseNs, '--watch-namespace', ns, '--health-checks=false'], cleanups);
        try {
            // 1. One registration at a time, to a ready endpoint.
            const latencies: number[] = [];
            for (let i = 1; i <= LATENCY_RUNS; i++) {
                const started = performance.now();
                await rest.create(collectionPath(Leases, ns), lease(ns, 'latency', i) as never);
                while ((await endpointsOf(rest, ns, 'latency')).get(ipOf(i)) !== true) await sleep(10);
                latencies.push(performance.now() - started);
            }
            report.timing(BENCHMARK, 'registration (Lease created) -> ready endpoint in the Service’s slice', LATENCY_RUNS, 'registrations, one at a time', latencies, { 'p99 (ms)': percentile(latencies, 99) });

            // 2. Heartbeats lapsing at known times (lease 3 s): 20 registrations, all ready, renewed
            //    every second (a renewal changes no workload) until each stops, 600 ms apart: each
            //    lapse is then the Service's only change, the controller's reaction alone.
            const expiries = new Map<number, number>();
            const lapseVersions = new Map<number, string>();
            for (let i = 1; i <= LAPSES; i++) {
                const created = await rest.create<{ metadata: { resourceVersion: string } }>(collectionPath(Leases, ns), lease(ns, 'lapse', i) as never);
                lapseVersions.set(i, created.metadata.resourceVersion);
            }
            const stopsAt = Date.now() + 3000;
            const writing = (async () => {
                const last = new Map<number, number>();
                while (expiries.size < LAPSES) {
                    for (let i = 1; i <= LAPSES; i++) {
                        // The last renewal at its time exactly; the others every second until then.
                        const final = Date.now() >= stopsAt + i * 600;
                        if (expiries.has(i) || (!final && Date.now() - (last.get(i) ?? 0) < 1000)) continue;
                        const renewed = Date.now();
                        const body = lease(ns, 'lapse', i, new Date(renewed));
                        const stored = await rest.replace<{ metadata: { resourceVersion: string } }>(objectPath(Leases, ns, body.metadata.name), { ...body, metadata: { ...body.metadata, resourceVersion: lapseVersions.get(i) } } as never);
                        lapseVersions.set(i, stored.metadata.resourceVersion);
                        last.set(i, renewed);
                        if (final) expiries.set(i, renewed + 3000);
                    }
                    await sleep(50);
                }
            })();
            const lags: number[] = [];
            const pending = new Set(Array.from({ length: LAPSES }, (_, i) => i + 1));
            const deadline = Date.now() + 60_000;
            while (pending.size > 0 && Date.now() < deadline) {
                const endpoints = await endpointsOf(rest, ns, 'lapse');
                const at = Date.now();
                for (const i of [...pending]) {
                    const expiry = expiries.get(i);
                    if (expiry !== undefined && at >= expiry && endpoints.get(ipOf(i)) === false) {
                        lags.push(at - expiry);
                        pending.delete(i);
                    }
                }
                await sleep(10);
            }
            await writing;
            report.timing(BENCHMARK, 'heartbeat lapsed (renewTime + lease duration) -> endpoint not ready', lags.length, 'registrations', lags);

            // 3. The fleet: register, then heartbeat every 10 s, spread evenly.
            const registerStarted = performance.now();
            const versions = new Map<number, string>();
            await inParallel([...Array(REGISTRATIONS).keys()].map((i) => i + 1), 16, async (i) => {
                const created = await rest.create<{ metadata: { resourceVersion: string } }>(collectionPath(Leases, ns), lease(ns, 'fleet', i) as never);
                versions.set(i, created.metadata.resourceVersion);
            });
            while ((await rest.get<{ status?: { ready?: number } }>(objectPath(ExternalWorkloadGroups, ns, 'fleet'))).status?.ready !== REGISTRATIONS) await sleep(500);
            report.value(BENCHMARK, 'fleet registered: Leases created (16 at a time) -> every workload ready (group status)', REGISTRATIONS, 'registrations', (performance.now() - registerStarted) / 1000, 's');

            let stop = false;
            const renewed = { ok: 0, failed: 0 };
            const heartbeats = (async () => {
                const perTick = REGISTRATIONS / (HEARTBEAT_S * 10);
                let next = 0;
                while (!stop) {
                    const tick = performance.now();
                    const batch = Array.from({ length: Math.round(perTick) }, () => (next++ % REGISTRATIONS) + 1);
                    await Promise.all(
                        batch.map(async (i) => {
                            const body = lease(ns, 'fleet', i);
                            try {
                                const stored = await rest.replace<{ metadata: { resourceVersion: string } }>(objectPath(Leases, ns, body.metadata.name), { ...body, metadata: { ...body.metadata, resourceVersion: versions.get(i) } } as never);
                                versions.set(i, stored.metadata.resourceVersion);
                                renewed.ok++;
                            } catch {
                                renewed.failed++;
                            }
                        }),
                    );
                    await sleep(Math.max(0, 100 - (performance.now() - tick)));
                }
            })();
            await sleep(15_000); // every Lease renewed at least once before the window
            const writesBefore = await apiserverWrites(cluster);
            const cpuBefore = controller.cpuSeconds();
            const renewedBefore = renewed.ok;
            const windowStarted = performance.now();
            await sleep(WINDOW_MS);
            const windowS = (performance.now() - windowStarted) / 1000;
            const cpuAfter = controller.cpuSeconds();
            const writesAfter = await apiserverWrites(cluster);
            stop = true;
            await heartbeats;
            const delta = (key: string) => ((writesAfter.get(key) ?? 0) - (writesBefore.get(key) ?? 0)) / windowS;
            const total = [...writesAfter.keys()].reduce((sum, key) => sum + delta(key), 0);
            report.value(BENCHMARK, `steady state, heartbeats every ${HEARTBEAT_S} s: apiserver writes per second`, REGISTRATIONS, 'registrations', total, 'writes/s', undefined, {
                'Lease renewals/s (the agents)': (renewed.ok - renewedBefore) / windowS,
                'leases/s': delta('leases'),
                'externalworkloads/s': delta('externalworkloads') + delta('externalworkloads/status'),
                'endpointslices/s': delta('endpointslices'),
                'group status/s': delta('externalworkloadgroups/status'),
                'failed renewals': renewed.failed,
            });
            report.value(BENCHMARK, 'steady state: controller CPU per second', REGISTRATIONS, 'registrations', (cpuAfter - cpuBefore) / windowS, 'CPU s/s', undefined, {
                'CPU ms per heartbeat': (1000 * (cpuAfter - cpuBefore)) / Math.max(1, renewed.ok - renewedBefore),
            });
            report.value(BENCHMARK, 'controller RSS', REGISTRATIONS, 'registrations', controller.rssMb(), 'MB', undefined, { 'peak (MB)': controller.peakRssMb(), 'V8 heap used (MB)': await controller.heapUsedMb() });
        } finally {
            await controller.stop();
        }
    } finally {
        await cluster.stop();
    }
}
