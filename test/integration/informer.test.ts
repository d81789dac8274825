// The informer against a real kube-apiserver, with real faults between them.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Registry } from 'prom-client';
import { Informer } from '../../src/kube/informer.js';
import { newLogger } from '../../src/kube/log.js';
import { Manager } from '../../src/kube/manager.js';
import { KubeRest, type RequestOpts } from '../../src/kube/rest.js';
import { isConflict } from '../../src/kube/errors.js';
import { collectionPath, ConfigMaps, Leases, objectPath } from '../../src/kube/resources.js';
import type { KubeObject } from '../../src/kube/store.js';
import { restartApiserver } from '../../src/testing/cluster.js';
import { eventually, startTestCluster, type TestCluster } from '../../src/testing/harness.js';
import { TcpProxy } from '../../src/testing/tcp-proxy.js';

const cluster: TestCluster = await startTestCluster('informer');

async function serverState(ns: string): Promise<Map<string, string>> {
    const list = await cluster.admin.get<{ items: KubeObject[] }>(collectionPath(ConfigMaps, ns));
    return new Map(list.items.map((cm) => [cm.metadata!.name!, cm.metadata!.resourceVersion!]));
}

function cacheState(informer: Informer<KubeObject>, ns: string): Map<string, string> {
    return new Map(informer.store.list(ns).map((cm) => [cm.metadata!.name!, cm.metadata!.resourceVersion!]));
}

async function converged(informer: Informer<KubeObject>, ns: string) {
    await eventually('the cache to hold exactly what the server holds', async () => {
        const [server, cache] = [await serverState(ns), cacheState(informer, ns)];
        return server.size === cache.size && [...server].every(([k, rv]) => cache.get(k) === rv);
    });
}

const cm = (name: string, value = 'v') => ({ metadata: { name }, data: { value } });

/** An informer reaching the apiserver through a proxy the test controls. */
async function proxiedInformer(ns: string, extra: Partial<ConstructorParameters<typeof Informer>[1]> = {}) {
    const proxy = new TcpProxy('127.0.0.1', cluster.state.apiserverPort);
    const port = await proxy.start();
    const rest = new KubeRest(cluster.kubeConfig(`https://127.0.0.1:${port}`));
    const informer = new Informer<KubeObject>(rest, {
        resource: ConfigMaps,
        namespace: ns,
        backoffInitialMs: 50,
        backoffMaxMs: 500,
        ...extra,
    });
    const cleanup = async () => {
        await informer.stop();
        rest.close();
        await proxy.stop();
    };
    return { proxy, rest, informer, cleanup };
}

/**
 * The client of the informer, recording the list pages it asks for (and, in `steps`, when, among
 * the objects the informer caches); `beforeContinue` runs before each page after the first.
 */
class PageRecordingRest extends KubeRest {
    readonly pages: (string | undefined)[] = [];
    readonly steps: string[] = [];
    beforeContinue: () => Promise<void> = async () => undefined;

    override async request<T>(method: string, path: string, o: RequestOpts = {}): Promise<T> {
        if (method === 'GET' && o.query?.limit !== undefined) {
            const token = o.query.continue as string | undefined;
            this.pages.push(token);
            this.steps.push(token ? 'next page' : 'first page');
            if (token) await this.beforeContinue();
        }
        return super.request<T>(method, path, o);
    }
}

/**
 * Compacts etcd's history up to now, then restarts the apiserver (whose watch cache could
 * still serve the old snapshot): a continue token issued before now has expired (410).
 */
async function expireContinueTokens(): Promise<void> {
    const etcd = `http://127.0.0.1:${cluster.state.etcdPort}/v3/kv`;
    const post = async (path: string, body: unknown) => {
        const res = await fetch(`${etcd}/${path}`, { method: 'POST', body: JSON.stringify(body) });
        const text = await res.text();
        assert.equal(res.status, 200, `etcd ${path}: ${text}`);
        return JSON.parse(text) as { header: { revision: string } };
    };
    const { header } = await post('range', { key: Buffer.from('/').toString('base64') });
    await post('compaction', { revision: header.revision, physical: true });
    await restartApiserver(cluster.state.name);
}

describe('informer', () => {
    it('lists page by page, asking for the next page before caching the current one and telling the handlers; an expired token starts the list over', async () => {
        const ns = await cluster.namespace();
        for (let i = 0; i < 7; i++) await cluster.admin.create(collectionPath(ConfigMaps, ns), cm(`page-${i}`));
        const rest = new PageRecordingRest(cluster.kubeConfig());
        let compacted = false;
        rest.beforeContinue = async () => {
            if (compacted) return;
            compacted = true;
            // A change after the first page, then the history of the list's snapshot is gone.
            await cluster.admin.create(collectionPath(ConfigMaps, ns), cm('page-late'));
            await expireContinueTokens();
        };
        const transform = (obj: KubeObject) => {
            rest.steps.push('cache');
            return obj;
        };
        const informer = new Informer<KubeObject>(rest, { resource: ConfigMaps, namespace: ns, listPageSize: 3, backoffInitialMs: 50, transform });
        informer.on({ add: () => rest.steps.push('add') });
        informer.start();
        await informer.synced;
        try {
            assert.deepEqual([...cacheState(informer, ns).keys()].sort(), [...[0, 1, 2, 3, 4, 5, 6].map((i) => `page-${i}`), 'page-late'].sort());
            assert.equal(informer.stats.expired, 1, `the expired continue token: ${JSON.stringify(informer.stats)}`);
            assert.equal(informer.stats.lists, 2);
            // First list: page 1, then its continue fails; second list: 3 pages of 3, 3 and 2.
            assert.equal(rest.pages.length, 5, `pages asked for: ${JSON.stringify(rest.pages)}`);
            assert.deepEqual(rest.pages.map((token) => token !== undefined), [false, true, false, true, true]);
            // The apiserver serves a page while the informer caches the one before and tells the
            // handlers about it; the first page, cached before its list failed, is not parsed again.
            const cached = ['cache', 'add', 'cache', 'add', 'cache', 'add'];
            const second = rest.steps.lastIndexOf('first page');
            assert.deepEqual(rest.steps.slice(0, second), ['first page', 'next page', ...cached]);
            assert.deepEqual(rest.steps.slice(second), ['first page', 'next page', 'next page', ...cached, 'cache', 'add', 'cache', 'add']);
        } finally {
            await informer.stop();
            rest.close();
        }
    });

    it('lists, then follows adds, updates and deletes through the watch', async () => {
        const ns = await cluster.namespace();
        await cluster.admin.create(collectionPath(ConfigMaps, ns), cm('before'));
        const { informer, cleanup } = await proxiedInformer(ns);
        const seen: string[] = [];
        informer.on({
            add: (o) => seen.push(`add ${o.metadata?.name}`),
            update: (_, o) => seen.push(`update ${o.metadata?.name}`),
            delete: (o) => seen.push(`delete ${o.metadata?.name}`),
        });
        informer.start();
        await informer.synced;
        assert.ok(informer.hasSynced());
        assert.deepEqual(seen, ['add before']);
        await cluster.admin.create(collectionPath(ConfigMaps, ns), cm('after'));
        await cluster.admin.replace(objectPath(ConfigMaps, ns, 'before'), cm('before', 'changed'));
        await cluster.admin.delete(objectPath(ConfigMaps, ns, 'after'));
        await converged(informer, ns);
        await eventually('the delete event', () => seen.includes('delete after'));
        assert.deepEqual(seen, ['add before', 'add after', 'update before', 'delete after']);
        assert.equal(informer.store.get(ns, 'before')?.apiVersion, 'v1', 'cached objects carry their type');
        await cleanup();
    });

    it('caches what the transform keeps, once per version, without managedFields', async () => {
        const ns = await cluster.namespace();
        await cluster.admin.create(collectionPath(ConfigMaps, ns), cm('one'));
        const versions: string[] = [];
        const { informer, cleanup } = await proxiedInformer(ns, {
            transform: (obj: KubeObject) => {
                versions.push(`${obj.metadata?.name}@${obj.metadata?.resourceVersion}`);
                assert.equal(obj.metadata?.managedFields, undefined, 'managedFields dropped before the transform');
                return { ...obj, transformed: true } as KubeObject;
            },
        });
        informer.start();
        await informer.synced;
        const changed = await cluster.admin.replace<KubeObject>(objectPath(ConfigMaps, ns, 'one'), cm('one', 'changed'));
        await converged(informer, ns);
        const cached = informer.store.get(ns, 'one') as KubeObject & { transformed?: boolean };
        assert.equal(cached.transformed, true);
        assert.equal(cached.metadata?.resourceVersion, changed.metadata?.resourceVersion);
        assert.equal(new Set(versions).size, versions.length, `each version transformed once: ${versions.join(', ')}`);
        await cleanup();
    });

    it('caches a version that changes nothing the handlers read without telling them', async () => {
        const ns = await cluster.namespace();
        await cluster.admin.create(collectionPath(ConfigMaps, ns), cm('one'));
        const updates: string[] = [];
        const dataOf = (obj: KubeObject) => JSON.stringify((obj as { data?: unknown }).data);
        const { informer, cleanup } = await proxiedInformer(ns, {
            // The handlers read the data only.
            unchanged: (cached: KubeObject, next: KubeObject) => dataOf(cached) === dataOf(next),
        });
        informer.on({ update: (_, obj) => updates.push(obj.metadata!.resourceVersion!) });
        informer.start();
        await informer.synced;
        const annotated = await cluster.admin.replace<KubeObject>(objectPath(ConfigMaps, ns, 'one'), { ...cm('one'), metadata: { name: 'one', annotations: { note: 'x' } } });
        await converged(informer, ns);
        assert.equal(informer.store.get(ns, 'one')?.metadata?.resourceVersion, annotated.metadata?.resourceVersion, 'the cache holds the new version');
        assert.deepEqual([updates, informer.stats.unchanged], [[], 1]);
        const changed = await cluster.admin.replace<KubeObject>(objectPath(ConfigMaps, ns, 'one'), cm('one', 'changed'));
        await eventually('the update to be delivered', () => updates.includes(changed.metadata!.resourceVersion!));
        assert.equal(informer.stats.unchanged, 1);
        await cleanup();
    });

    it('reconnects after every connection is cut, and converges on what changed meanwhile', async () => {
        const ns = await cluster.namespace();
        for (const n of ['a', 'b', 'c']) await cluster.admin.create(collectionPath(ConfigMaps, ns), cm(n));
        const { proxy, informer, cleanup } = await proxiedInformer(ns);
        informer.start();
        await informer.synced;
        proxy.refuse(true);
        proxy.cutAll();
        await cluster.admin.delete(objectPath(ConfigMaps, ns, 'a'));
        await cluster.admin.replace(objectPath(ConfigMaps, ns, 'b'), cm('b', 'changed'));
        await cluster.admin.create(collectionPath(ConfigMaps, ns), cm('d'));
        await eventually('a failed reconnect', () => informer.stats.errors >= 1);
        proxy.refuse(false);
        await converged(informer, ns);
        assert.deepEqual([...cacheState(informer, ns).keys()].sort(), ['b', 'c', 'd']);
        await cleanup();
    });

    it('detects a silently dead connection with its inactivity timer', async () => {
        const ns = await cluster.namespace();
        const { proxy, informer, cleanup } = await proxiedInformer(ns, { inactivityMs: 1000 });
        informer.start();
        await informer.synced;
        proxy.freeze(true);
        await cluster.admin.create(collectionPath(ConfigMaps, ns), cm('while-frozen'));
        // Answered before the freeze, the silent watch is restarted quietly; the next one (or
        // one not yet answered) is never answered, and ended.
        await eventually('the inactivity abort', () => informer.stats.inactivityAborts >= 1);
        proxy.freeze(false);
        proxy.cutAll(); // the frozen sockets are dead for good
        await converged(informer, ns);
        assert.ok(informer.store.get(ns, 'while-frozen'));
        await cleanup();
    });

    it('restarts a quiet answered watch that had no bookmark without telling health a failure', async () => {
        const ns = await cluster.namespace();
        await cluster.admin.create(collectionPath(ConfigMaps, ns), cm('a'));
        const health: (string | undefined)[] = [];
        const { informer, cleanup } = await proxiedInformer(ns, { inactivityMs: 1500, health: (error) => health.push(error) });
        try {
            informer.start();
            await informer.synced;
            // Nothing changes in the namespace: each watch is answered, then silent past its limit.
            await eventually('two quiet restarts', () => informer.stats.quietRestarts >= 2);
            assert.deepEqual(health, [], 'a quiet live watch is not a failure');
            assert.deepEqual([informer.stats.inactivityAborts, informer.stats.errors, informer.stats.lists], [0, 0, 1], JSON.stringify(informer.stats));
            await cluster.admin.create(collectionPath(ConfigMaps, ns), cm('b'));
            await eventually('the restarted watch delivers', () => informer.store.get(ns, 'b') !== undefined);
        } finally {
            await cleanup();
        }
    });

    it('keeps a quiet watch the apiserver answered past its open timeout, and ends one never answered within it', async () => {
        const ns = await cluster.namespace();
        const health: (string | undefined)[] = [];
        const { proxy, informer, cleanup } = await proxiedInformer(ns, { openTimeoutMs: 500, inactivityMs: 60_000, health: (error) => health.push(error) });
        try {
            informer.start();
            await informer.synced;
            // Nothing changes in the namespace: the watch is answered, then silent.
            await new Promise((r) => setTimeout(r, 2_500));
            assert.equal(informer.stats.inactivityAborts, 0);
            assert.equal(informer.stats.watches, 1);
            // The path dies: the next watch's answer never begins.
            proxy.freeze(true);
            proxy.cutAll();
            await eventually('a watch ended for want of an answer', () => health.some((e) => e?.includes('no answer')));
            assert.ok(informer.stats.inactivityAborts >= 1);
            proxy.freeze(false);
            await cluster.admin.create(collectionPath(ConfigMaps, ns), cm('after'));
            await eventually('the cache caught up', () => informer.store.get(ns, 'after') !== undefined);
            await eventually('health told again', () => health[health.length - 1] === undefined);
        } finally {
            await cleanup();
        }
    });

    it('restarts a watch that stays silent after a write of its client found the server ahead (409), long before its inactivity timer', async () => {
        const ns = await cluster.namespace();
        await cluster.admin.create(collectionPath(ConfigMaps, ns), cm('a'));
        // The writes below go through the informer's own client, as a controller's do: it hears their answers.
        const { proxy, rest, informer, cleanup } = await proxiedInformer(ns, { staleWatchMs: 500 });
        informer.start();
        await informer.synced;
        try {
            // A live watch that shows a change after the conflict is left alone, as after the
            // answer to a write of its own (a version the cache has yet to see).
            await rest.replace(objectPath(ConfigMaps, ns, 'a'), { ...cm('a', 'mine'), metadata: { name: 'a' } });
            const cached = informer.store.get(ns, 'a')!;
            await cluster.admin.replace(objectPath(ConfigMaps, ns, 'a'), { ...cm('a', 'v2'), metadata: { name: 'a' } });
            await assert.rejects(rest.replace(objectPath(ConfigMaps, ns, 'a'), { ...cm('a', 'stale'), metadata: cached.metadata }), (err) => isConflict(err));
            await converged(informer, ns);
            await new Promise((resolve) => setTimeout(resolve, 1_000));
            assert.equal(informer.stats.staleWatchRestarts, 0);

            // Bytes dropped while frozen: the change never reaches the informer, and its watch
            // connection, open and silent, would stay so until the inactivity timer (minutes).
            proxy.freeze(true);
            await cluster.admin.replace(objectPath(ConfigMaps, ns, 'a'), { ...cm('a', 'v3'), metadata: { name: 'a' } });
            await new Promise((resolve) => setTimeout(resolve, 300));
            proxy.freeze(false);
            const behind = informer.store.get(ns, 'a')!;
            await assert.rejects(rest.replace(objectPath(ConfigMaps, ns, 'a'), { ...cm('a', 'stale'), metadata: behind.metadata }), (err) => isConflict(err));
            await converged(informer, ns);
            assert.equal((informer.store.get(ns, 'a') as { data?: { value?: string } }).data?.value, 'v3');
            assert.equal(informer.stats.staleWatchRestarts, 1, JSON.stringify(informer.stats));
            assert.equal(informer.stats.inactivityAborts, 0);
        } finally {
            await cleanup();
        }
    });

    it('restarts a watch that is silent while the lease requests of its replica go unanswered, long before its inactivity timer', async (t) => {
        const ns = await cluster.namespace();
        await cluster.admin.create(collectionPath(ConfigMaps, ns), cm('a'));
        // One replica: a manager holding a Lease and an informer with the default inactivity
        // limit, both reaching the apiserver through the proxy.
        const proxy = new TcpProxy('127.0.0.1', cluster.state.apiserverPort);
        const port = await proxy.start();
        const rest = new KubeRest(cluster.kubeConfig(`https://127.0.0.1:${port}`), { timeoutMs: 1_000 });
        const informer = new Informer<KubeObject>(rest, { resource: ConfigMaps, namespace: ns, backoffInitialMs: 50, backoffMaxMs: 500 });
        const manager = new Manager({
            rest,
            logger: newLogger('silent'),
            registry: new Registry(),
            leaderElection: { namespace: ns, name: 'replica', leaseDurationMs: 4_000, renewDeadlineMs: 2_500, retryPeriodMs: 500, rest: rest.fork({ qps: 0 }) },
        });
        manager.add({ name: 'cache', informers: [informer], startLeading: () => undefined, stopLeading: async () => undefined });
        try {
            await manager.start();
            await eventually('the Lease', () => manager.isLeader());
            // The term may have started from a list of its own (when the Lease came after the
            // first sync); from then on, with the Lease calls answered, the watch is left alone.
            const watchesAtTermStart = informer.stats.watches;
            await new Promise((resolve) => setTimeout(resolve, 2_000));
            assert.deepEqual([informer.stats.watches, informer.stats.unansweredRestarts], [watchesAtTermStart, 0]);

            // The path goes dead, new connections too: the change never reaches the informer.
            proxy.freeze(true);
            const frozenAt = performance.now();
            await cluster.admin.replace(objectPath(ConfigMaps, ns, 'a'), cm('a', 'while-frozen'));
            await eventually('a restart for the unanswered lease calls', () => informer.stats.unansweredRestarts >= 1);
            const detectedMs = performance.now() - frozenAt;
            // The watch opened meanwhile is as dead: the first answer after the outage restarts it.
            await new Promise((resolve) => setTimeout(resolve, 1_000));
            proxy.freeze(false);
            await converged(informer, ns);
            assert.equal((informer.store.get(ns, 'a') as { data?: { value?: string } }).data?.value, 'while-frozen');
            assert.equal(informer.stats.inactivityAborts, 0);
            assert.ok(informer.stats.unansweredRestarts <= 3, JSON.stringify(informer.stats));
            t.diagnostic(`dead watch restarted ${Math.round(detectedMs)} ms after the path froze (lease retry 500 ms, request timeout 1 s); ${JSON.stringify(informer.stats)}`);
        } finally {
            await manager.stop();
            rest.close();
            await proxy.stop();
        }
    });

    it('leads again after a lost term only once its caches are listed anew: a watch that went silent unnoticed is not planned from', async () => {
        const ns = await cluster.namespace();
        await cluster.admin.create(collectionPath(ConfigMaps, ns), cm('a'));
        // The caches reach the apiserver through the proxy; the Lease directly, so its calls are
        // answered and nothing tells the silent watch apart from a quiet one.
        const proxy = new TcpProxy('127.0.0.1', cluster.state.apiserverPort);
        const port = await proxy.start();
        const rest = new KubeRest(cluster.kubeConfig(`https://127.0.0.1:${port}`), { timeoutMs: 1_000 });
        const informer = new Informer<KubeObject>(rest, { resource: ConfigMaps, namespace: ns, backoffInitialMs: 50, backoffMaxMs: 500 });
        const lease = { namespace: ns, name: 'relist', leaseDurationMs: 2_000, renewDeadlineMs: 1_500, retryPeriodMs: 250 };
        const manager = new Manager({ rest, logger: newLogger('silent'), registry: new Registry(), leaderElection: { ...lease, identity: 'me', rest: new KubeRest(cluster.kubeConfig()) } });
        const seenAtTermStart: string[] = [];
        const value = () => (informer.store.get(ns, 'a') as { data?: { value?: string } } | undefined)?.data?.value ?? '';
        manager.add({ name: 'cache', informers: [informer], startLeading: () => void seenAtTermStart.push(value()), stopLeading: async () => undefined });
        try {
            await manager.start();
            await eventually('the first term', () => seenAtTermStart.length === 1);
            proxy.freeze(true);
            await cluster.admin.replace(objectPath(ConfigMaps, ns, 'a'), cm('a', 'while-frozen'));
            // Another replica takes the Lease and lets it lapse: this one's term ends and it takes the Lease again.
            const held = await cluster.admin.get<{ spec: Record<string, unknown> }>(objectPath(Leases, ns, 'relist'));
            await cluster.admin.replace(objectPath(Leases, ns, 'relist'), { ...held, spec: { ...held.spec, holderIdentity: 'other', renewTime: new Date().toISOString().replace('Z', '000Z'), leaseDurationSeconds: 4 } });
            await eventually('the term lost', () => !manager.isLeader());
            await eventually('the Lease held again', () => manager.elector!.isLeader(), 15_000);
            await new Promise((resolve) => setTimeout(resolve, 1_000));
            assert.equal(seenAtTermStart.length, 1, 'no term starts from caches that may have missed changes');
            proxy.freeze(false);
            await eventually('the second term', () => seenAtTermStart.length === 2, 15_000);
            assert.deepEqual(seenAtTermStart, ['v', 'while-frozen']);
        } finally {
            await manager.stop();
            rest.close();
            await proxy.stop();
        }
    });

    it('starts a term regained only once the last term\'s controllers have stopped: two terms never run side by side', async () => {
        const ns = await cluster.namespace();
        const rest = new KubeRest(cluster.kubeConfig());
        const informer = new Informer<KubeObject>(rest, { resource: ConfigMaps, namespace: ns });
        const lease = { namespace: ns, name: 'one-term', leaseDurationMs: 2_000, renewDeadlineMs: 1_500, retryPeriodMs: 250 };
        const manager = new Manager({ rest, logger: newLogger('silent'), registry: new Registry(), leaderElection: { ...lease, identity: 'me', rest: new KubeRest(cluster.kubeConfig()) } });
        // The first term's stop hangs on an item in hand (a request stuck in a cut) until the test lets it end.
        const terms: string[] = [];
        let endFirstTerm!: () => void;
        const firstTermInHand = new Promise<void>((resolve) => (endFirstTerm = resolve));
        manager.add({
            name: 'slow-stop',
            informers: [informer],
            startLeading: () => void terms.push('start'),
            stopLeading: async () => {
                terms.push('stopping');
                if (terms.filter((t) => t === 'stopping').length === 1) await firstTermInHand;
                terms.push('stopped');
            },
        });
        try {
            await manager.start();
            await eventually('the first term', () => terms.length === 1);
            // Another replica takes the Lease and lets it lapse: this one's term ends and it takes the Lease again.
            const held = await cluster.admin.get<{ spec: Record<string, unknown> }>(objectPath(Leases, ns, 'one-term'));
            await cluster.admin.replace(objectPath(Leases, ns, 'one-term'), { ...held, spec: { ...held.spec, holderIdentity: 'other', renewTime: new Date().toISOString().replace('Z', '000Z'), leaseDurationSeconds: 3 } });
            await eventually('the term lost', () => !manager.elector!.isLeader());
            await eventually('the Lease held again', () => manager.elector!.isLeader(), 15_000);
            await new Promise((resolve) => setTimeout(resolve, 1_000));
            assert.deepEqual(terms, ['start', 'stopping'], 'the second term waits for the first to end');
            assert.equal(manager.isLeader(), false, 'and nothing writes meanwhile');
            endFirstTerm();
            await eventually('the second term', () => terms.length === 4, 15_000);
            assert.deepEqual(terms, ['start', 'stopping', 'stopped', 'start']);
        } finally {
            endFirstTerm();
            await manager.stop();
            rest.close();
        }
    });

    it('survives an apiserver restart, relisting when its resourceVersion has expired', async () => {
        const ns = await cluster.namespace();
        for (const n of ['x', 'y']) await cluster.admin.create(collectionPath(ConfigMaps, ns), cm(n));
        const { proxy, informer, cleanup } = await proxiedInformer(ns);
        const deleted: string[] = [];
        informer.on({ delete: (o) => deleted.push(o.metadata!.name!) });
        informer.start();
        await informer.synced;
        proxy.refuse(true);
        proxy.cutAll();
        // Changes the informer cannot see, then a restart that empties the watch cache:
        // resuming from the old resourceVersion must fail with 410 and relist.
        await cluster.admin.delete(objectPath(ConfigMaps, ns, 'x'));
        for (let i = 0; i < 5; i++) await cluster.admin.create(collectionPath(ConfigMaps, ns), cm(`new-${i}`));
        await restartApiserver(cluster.state.name);
        proxy.refuse(false);
        await converged(informer, ns);
        assert.deepEqual(deleted, ['x'], 'the relist delivers the missed delete');
        assert.ok(informer.stats.expired >= 1, `expected a 410, stats: ${JSON.stringify(informer.stats)}`);
        assert.ok(informer.stats.lists >= 2, 'relisted after the 410');
        await cleanup();
    });

    it('backs off further while a watch keeps failing after lists that work (list allowed, watch forbidden)', async () => {
        const ns = await cluster.namespace();
        await cluster.admin.create(`/apis/rbac.authorization.k8s.io/v1/namespaces/${ns}/roles`, {
            metadata: { name: 'list-only' },
            rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['list'] }],
        });
        await cluster.admin.create(`/apis/rbac.authorization.k8s.io/v1/namespaces/${ns}/rolebindings`, {
            metadata: { name: 'list-only' },
            roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'list-only' },
            subjects: [{ kind: 'ServiceAccount', name: 'lister', namespace: ns }],
        });
        const rest = await cluster.serviceAccountClient(ns, 'lister');
        await eventually('the binding to take effect', async () => Array.isArray((await rest.get<{ items: unknown[] }>(collectionPath(ConfigMaps, ns))).items));
        const informer = new Informer<KubeObject>(rest, { resource: ConfigMaps, namespace: ns, backoffInitialMs: 20, backoffMaxMs: 60_000 });
        informer.start();
        await informer.synced;
        await new Promise((r) => setTimeout(r, 3000));
        await informer.stop();
        rest.close();
        // Doubling from 20 ms, about 8 attempts fit in 3 s; without growth it would be ~100.
        assert.ok(informer.stats.watches >= 3 && informer.stats.watches <= 12, `watch attempts: ${informer.stats.watches}`);
    });

    it('keeps working when a handler throws', async () => {
        const ns = await cluster.namespace();
        const { informer, cleanup } = await proxiedInformer(ns);
        const added: string[] = [];
        informer.on({ add: () => { throw new Error('handler bug'); } });
        informer.on({ add: (o) => added.push(o.metadata!.name!) });
        informer.start();
        await informer.synced;
        await cluster.admin.create(collectionPath(ConfigMaps, ns), cm('one'));
        await cluster.admin.create(collectionPath(ConfigMaps, ns), cm('two'));
        await eventually('both adds', () => added.length === 2);
        await cleanup();
    });
});
