// What the informer's dead-watch detectors cost and how soon they act, against the real
// apiserver the harness builds, with the defaults (Lease 15 s / 10 s / 2 s as the CLI's, request
// timeout 8 s, inactivity limits 150 s, 75 s once a watch has had a bookmark). Not part of
// `make test` (it waits minutes on purpose):
//   npx tsx hack/watch-liveness.ts [quietSeconds=150]
// Two replicas, each with informers of ConfigMaps (one namespace, where a change elsewhere
// moves the watch cache on: bookmarks come) and of Services (all namespaces, nothing changes:
// none come), reach the apiserver through one TcpProxy; one holds a Lease (a Manager), the
// other has none (as the service mirror's remote watches).
// 1. Quiet: the gaps between the bookmarks each watch receives, and every request each replica
//    sends. A live watch must be neither aborted nor restarted; nothing beyond the lease calls.
// 2. The proxy freezes (every connection, new ones too): how long until each watch is ended,
//    and until a change made meanwhile is cached once the path is back.
import { Registry } from 'prom-client';
import { Informer } from '../src/kube/informer.js';
import { newLogger } from '../src/kube/log.js';
import { Manager } from '../src/kube/manager.js';
import { KubeRest, type Query, type RequestOpts } from '../src/kube/rest.js';
import { collectionPath, ConfigMaps, objectPath, Services } from '../src/kube/resources.js';
import type { KubeObject } from '../src/kube/store.js';
import { startLocalCluster } from '../src/testing/harness.js';
import { TcpProxy } from '../src/testing/tcp-proxy.js';

/** Counts every request and watch it sends, and when each watch received a bookmark. */
class CountingRest extends KubeRest {
    readonly sent: string[] = [];
    readonly bookmarks = new Map<string, number[]>();
    override request<T>(method: string, path: string, o?: RequestOpts): Promise<T> {
        this.sent.push(`${method} ${path.replace(/\/namespaces\/[^/]+/, '/namespaces/*')}`);
        return super.request<T>(method, path, o);
    }
    override watch(path: string, query: Query, signal: AbortSignal, onEvent: (e: { type: string; object: unknown }) => void, onData: () => void): Promise<void> {
        this.sent.push(`WATCH ${path.replace(/\/namespaces\/[^/]+/, '/namespaces/*')}`);
        const times = this.bookmarks.get(path) ?? [performance.now()];
        this.bookmarks.set(path, times);
        return super.watch(path, query, signal, (e) => (e.type === 'BOOKMARK' && times.push(performance.now()), onEvent(e)), onData);
    }
}

const tally = (lines: string[]) => Object.fromEntries([...new Set(lines)].map((l) => [l, lines.filter((x) => x === l).length]));
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

const quietMs = Number(process.argv[2] ?? 150) * 1000;
const cluster = await startLocalCluster(`liveness-${process.pid}`);
const proxy = new TcpProxy('127.0.0.1', cluster.state.apiserverPort);
const server = `https://127.0.0.1:${await proxy.start()}`;
const timeoutMs = 8_000;
const ns = await cluster.namespace();
const elsewhere = await cluster.namespace();
await cluster.admin.create(collectionPath(ConfigMaps, ns), { metadata: { name: 'a' }, data: { value: 'v1' } });

interface Replica {
    name: string;
    rest: CountingRest;
    leaseRest?: CountingRest;
    informers: Informer<KubeObject>[];
    manager: Manager;
}
function replica(name: string, withLease: boolean): Replica {
    const rest = new CountingRest(cluster.kubeConfig(server), { timeoutMs });
    const leaseRest = withLease ? new CountingRest(cluster.kubeConfig(server), { timeoutMs, qps: 0 }) : undefined;
    const informers = [new Informer<KubeObject>(rest, { resource: ConfigMaps, namespace: ns }), new Informer<KubeObject>(rest, { resource: Services })];
    const manager = new Manager({
        rest,
        logger: newLogger('silent'),
        registry: new Registry(),
        leaderElection: leaseRest && { namespace: ns, name: 'replica', leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000, rest: leaseRest },
    });
    manager.add({ name: 'caches', informers, startLeading: () => undefined, stopLeading: async () => undefined });
    return { name, rest, leaseRest, informers, manager };
}
const replicas = [replica('with a Lease', true), replica('without a Lease', false)];
const named = (r: Replica, i: number) => `${r.name} ${i === 0 ? 'ConfigMaps' : 'Services'}`;
try {
    await Promise.all(replicas.map((r) => r.manager.start()));
    // The ConfigMaps watch cache moves past the watches' start: their bookmarks come from now on.
    await cluster.admin.create(collectionPath(ConfigMaps, elsewhere), { metadata: { name: 'moves-the-cache' } });
    const before = replicas.map((r) => [r.rest.sent.length, r.leaseRest?.sent.length ?? 0]);
    console.log(`quiet for ${seconds(quietMs)}...`);
    await sleep(quietMs);
    const perMinute = (n: number) => ((n * 60_000) / quietMs).toFixed(1);
    replicas.forEach((r, k) => {
        for (const [path, times] of r.rest.bookmarks) {
            const gaps = times.slice(1).map((t, i) => seconds(t - times[i]!));
            console.log(`${r.name}: bookmarks on ${path}: ${times.length - 1}; gaps, the first from the first watch's start: ${gaps.join(', ') || '-'}`);
        }
        const sent = r.rest.sent.slice(before[k]![0]);
        console.log(`${r.name}: requests while quiet: informers' client ${sent.length} (${perMinute(sent.length)}/min) ${JSON.stringify(tally(sent))}; lease client ${(r.leaseRest?.sent.length ?? 0) - before[k]![1]!}`);
        r.informers.forEach((informer, i) => console.log(`${named(r, i)}: ${JSON.stringify(informer.stats)}`));
    });

    proxy.freeze(true);
    const frozenAt = performance.now();
    await cluster.admin.replace(objectPath(ConfigMaps, ns, 'a'), { metadata: { name: 'a' }, data: { value: 'v2' } });
    const all = replicas.flatMap((r) => r.informers.map((informer, i) => ({ name: named(r, i), informer, r, endedAfter: 0 })));
    while (all.some((w) => w.endedAfter === 0) && performance.now() - frozenAt < 200_000) {
        for (const w of all) {
            const { unansweredRestarts, quietRestarts, inactivityAborts } = w.informer.stats;
            if (!w.endedAfter && unansweredRestarts + quietRestarts + inactivityAborts > 0) w.endedAfter = performance.now() - frozenAt;
        }
        await sleep(50);
    }
    for (const w of all) {
        const times = w.r.rest.bookmarks.get(w.informer === w.r.informers[0] ? collectionPath(ConfigMaps, ns) : collectionPath(Services)) ?? [];
        const last = times.length > 1 ? `, ${seconds(frozenAt - times[times.length - 1]!)} after its last bookmark came before the freeze` : ', no bookmark before';
        console.log(`path frozen: ${w.name} watch ended ${seconds(w.endedAfter)} after the freeze${last}: ${JSON.stringify(w.informer.stats)}`);
    }
    proxy.freeze(false);
    const backAt = performance.now();
    await Promise.all(
        replicas.map(async (r) => {
            while ((r.informers[0]!.store.get(ns, 'a') as { data?: { value?: string } } | undefined)?.data?.value !== 'v2') await sleep(50);
            console.log(`path back: ${r.name}: the change made while frozen cached ${seconds(performance.now() - backAt)} later`);
        }),
    );
} finally {
    for (const r of replicas) {
        await r.manager.stop();
        r.rest.close();
        r.leaseRest?.close();
    }
    await proxy.stop();
    await cluster.stop();
}
