import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Registry } from 'prom-client';
import { Controller, type ReconcileResult, type Source } from './controller.js';
import { ApiError, classifyFailure, InvalidError, NotLeaderError, StaleCacheError } from './errors.js';
import type { EventSink } from './events.js';
import type { InformerHandlers } from './informer.js';
import { OwnWrites } from './own-writes.js';
import { SourceSet } from './sources.js';
import { newLogger } from './log.js';
import { controllerRateLimiter } from './ratelimit.js';
import type { KubeObject } from './store.js';
import { WorkQueueMetrics } from './workqueue-metrics.js';

interface Recorded {
    name: string | undefined;
    type: string;
    reason: string;
    message: string;
}

/** The runtime around a reconciler that answers from `answers` (key → what each run does, in turn). */
function harness(answers: Record<string, Array<() => ReconcileResult | Promise<ReconcileResult>>>, options: { resyncMs?: number; maxRetries?: number } = {}) {
    const registry = new Registry();
    const metrics = new WorkQueueMetrics(registry, 'test');
    const runs: string[] = [];
    const events: Recorded[] = [];
    const sink: EventSink = { record: (obj, type, reason, message) => events.push({ name: obj.metadata?.name, type, reason, message }) };
    const controller = new Controller<string>({
        name: 'things',
        reconciler: {
            async reconcile(key) {
                runs.push(key);
                const next = answers[key]?.shift();
                return next?.();
            },
            eventTarget: (key) => ({ apiVersion: 'v1', kind: 'Thing', metadata: { namespace: 'default', name: key } }),
        },
        workers: 2,
        rateLimiter: controllerRateLimiter({ baseMs: 1 }),
        metrics,
        events: sink,
        log: newLogger('silent'),
        ...options,
    });
    const result = async (result: string) =>
        (await registry.getSingleMetric('test_reconcile_total')!.get()).values.find((v) => v.labels.name === 'things' && v.labels.result === result)?.value ?? 0;
    const retries = async () => (await registry.getSingleMetric('test_workqueue_retries_total')!.get()).values.find((v) => v.labels.name === 'things')?.value ?? 0;
    return { controller, runs, events, result, retries };
}

/** Waits (without a deadline of its own: the test runner's timeout is the limit) until `check` holds. */
async function until(check: () => boolean | Promise<boolean>): Promise<void> {
    while (!(await check())) await new Promise((r) => setTimeout(r, 2));
}

/** A source whose events the test sends itself, holding `held` (what a term starts from). */
function fakeInformer<T extends KubeObject>(held: T[] = []): { informer: Source<T>; handlers: InformerHandlers<T>[] } {
    const handlers: InformerHandlers<T>[] = [];
    const on = (h: InformerHandlers<T>) => {
        handlers.push(h);
        return () => void handlers.splice(handlers.indexOf(h), 1);
    };
    return { informer: { on, list: () => held }, handlers };
}

const conflict = () => new ApiError(409, 'Conflict', 'the object has been modified');

describe('the reconciler runtime', () => {
    it('reconciles every key a term starts with, once each when they succeed', async () => {
        const { controller, runs, result } = harness({});
        controller.start(['a', 'b', 'c']);
        await until(async () => (await result('success')) === 3);
        await controller.stop();
        assert.deepEqual([...runs].sort(), ['a', 'b', 'c']);
    });

    it('retries a transient failure with backoff until it succeeds', async () => {
        const fail = () => {
            throw new Error('connection reset');
        };
        const { controller, runs, result, retries } = harness({ a: [fail, fail] });
        controller.start(['a']);
        await until(async () => (await result('success')) === 1);
        await controller.stop();
        assert.deepEqual(runs, ['a', 'a', 'a']);
        assert.equal(await result('error'), 2);
        assert.equal(await retries(), 2);
    });

    it('runs a key again at once after a conflict, and backs off when the conflict repeats', async () => {
        const { controller, runs, result, retries } = harness({
            a: [
                () => {
                    throw conflict();
                },
                () => undefined,
            ],
            b: [
                () => {
                    throw conflict();
                },
                () => {
                    throw conflict();
                },
                () => undefined,
            ],
        });
        controller.start(['a', 'b']);
        await until(async () => (await result('success')) === 2);
        await controller.stop();
        assert.equal(runs.filter((k) => k === 'a').length, 2);
        assert.equal(runs.filter((k) => k === 'b').length, 3);
        assert.equal(await result('requeue'), 2, 'each key requeued at once on its first conflict');
        assert.equal(await retries(), 1, "only b's second conflict in a row waited for the backoff");
    });

    it('backs off ever longer while the conflicts go on: only the first of a streak runs again at once', async () => {
        const refused = () => {
            throw conflict();
        };
        const { controller, runs, result, retries } = harness({ stale: [refused, refused, refused, refused, refused, () => undefined] });
        controller.start(['stale']);
        await until(async () => (await result('success')) === 1);
        await controller.stop();
        assert.equal(runs.length, 6);
        assert.equal(await result('requeue'), 1, 'the first conflict is run again at once');
        // Each backoff counted in a row (the rate limiter's failures were never forgotten in between: 1, 2, 4, 8 ms here).
        assert.equal(await retries(), 4);
    });

    it('reports an invalid key with a Warning Event on its object and does not retry it', async () => {
        const { controller, runs, events, result } = harness({
            bad: [
                () => {
                    throw new InvalidError('spec.port 70000 is out of range', 'InvalidPort');
                },
            ],
        });
        controller.start(['bad', 'good']);
        await until(async () => (await result('invalid')) === 1 && (await result('success')) === 1);
        await controller.stop();
        assert.deepEqual(runs.filter((k) => k === 'bad'), ['bad']);
        assert.deepEqual(events, [{ name: 'bad', type: 'Warning', reason: 'InvalidPort', message: 'spec.port 70000 is out of range' }]);
    });

    it('runs a key again after the delay its reconcile asked for', async () => {
        const { controller, runs, result } = harness({ a: [() => ({ requeueAfterMs: 5 }), () => undefined] });
        controller.start(['a']);
        await until(async () => (await result('success')) === 2);
        await controller.stop();
        assert.deepEqual(runs, ['a', 'a']);
    });

    it("queues the keys of a watched object's old and new versions while leading, and nothing while not", async () => {
        const { controller, runs, result } = harness({});
        const { informer, handlers } = fakeInformer<KubeObject>();
        controller.watch(informer, (obj) => [obj.metadata!.labels!.owner!]);
        const thing = (owner: string): KubeObject => ({ metadata: { namespace: 'default', name: 'x', labels: { owner } } });
        handlers[0]!.add!(thing('before-the-term'));
        controller.start([]);
        handlers[0]!.update!(thing('old-owner'), thing('new-owner'));
        await until(async () => (await result('success')) === 2);
        await controller.stop();
        assert.deepEqual([...runs].sort(), ['new-owner', 'old-owner']);
    });

    it('starts a term from every key the watched sources hold, without the controller listing them', async () => {
        const { controller, runs, result } = harness({});
        const thing = (owner: string): KubeObject => ({ metadata: { namespace: 'default', name: owner, labels: { owner } } });
        controller.watch(fakeInformer([thing('a'), thing('b')]).informer, (obj) => [obj.metadata!.labels!.owner!]);
        controller.watch(fakeInformer([thing('b'), thing('c')]).informer, (obj) => [obj.metadata!.labels!.owner!]);
        controller.start();
        await until(async () => (await result('success')) === 3);
        await controller.stop();
        assert.deepEqual([...runs].sort(), ['a', 'b', 'c']);
    });

    it('replays nothing of a watch that says its keys come through another, and still queues its changes', async () => {
        const { controller, runs, result } = harness({});
        const thing = (owner: string): KubeObject => ({ metadata: { namespace: 'default', name: owner, labels: { owner } } });
        const replayed = fakeInformer([thing('a')]);
        const notReplayed = fakeInformer([thing('a'), thing('stale')]);
        controller.watch(replayed.informer, (obj) => [obj.metadata!.labels!.owner!]);
        controller.watch(notReplayed.informer, (obj) => [obj.metadata!.labels!.owner!], { replay: false });
        controller.start();
        await until(async () => (await result('success')) === 1);
        notReplayed.handlers[0]!.add!(thing('new'));
        await until(async () => (await result('success')) === 2);
        await controller.stop();
        assert.deepEqual([...runs], ['a', 'new']);
    });

    it("gives timers and I/O a turn while a term's replay passes over a large cache, and still queues every key", async () => {
        const { controller, result } = harness({});
        const held = Array.from({ length: 300 }, (_, i): KubeObject => ({ metadata: { namespace: 'default', name: `w${i}` } }));
        let mapped = 0;
        const busyKeysOf = (obj: KubeObject) => {
            // 0.1 ms per object: 30 ms in all, several of the runtime's slices.
            for (const until = performance.now() + 0.1; performance.now() < until; );
            mapped += 1;
            return [obj.metadata!.name!];
        };
        controller.watch(fakeInformer(held).informer, busyKeysOf);
        controller.start();
        const mappedWhenATimerRan = await new Promise<number>((resolve) => setImmediate(() => resolve(mapped)));
        await until(async () => (await result('success')) === 300);
        await controller.stop();
        assert.ok(mappedWhenATimerRan < 300, `the replay held the event loop until all ${mappedWhenATimerRan} objects were mapped`);
    });

    it('queues an update only when its predicate says it matters, and never the echo of its own write', async () => {
        const { controller, runs, result } = harness({});
        const own = new OwnWrites();
        const { informer, handlers } = fakeInformer<KubeObject>();
        controller.watch(informer, (obj) => [obj.metadata!.name!], { changed: (old, obj) => old.metadata?.generation !== obj.metadata?.generation, ownWrites: own });
        const version = (name: string, generation: number, resourceVersion: string): KubeObject => ({ metadata: { namespace: 'ns', name, generation, resourceVersion } });
        controller.start();
        handlers[0]!.update!(version('status-only', 1, '1'), version('status-only', 1, '2'));
        await own.write('ns', 'ours', async () => version('ours', 2, '7'));
        handlers[0]!.update!(version('ours', 1, '6'), version('ours', 2, '7'));
        handlers[0]!.update!(version('spec', 1, '1'), version('spec', 2, '2'));
        await until(async () => (await result('success')) === 1);
        await controller.stop();
        assert.deepEqual([...runs], ['spec']);
    });

    it('judges an echo only in a watch it has keys in: controllers sharing one OwnWrites over one cache, each its own part', async () => {
        const own = new OwnWrites();
        const cache = new SourceSet<KubeObject>();
        const members = fakeInformer<KubeObject>();
        cache.set('cache', members.informer);
        // Two controllers (two Links' mirrors), each watching the objects of its own cluster.
        const [east, west] = [harness({}), harness({})];
        const ofCluster = (cluster: string) => (obj: KubeObject) => (obj.metadata?.labels?.cluster === cluster ? [obj.metadata.name!] : []);
        east.controller.watch(cache, ofCluster('east'), { ownWrites: own });
        west.controller.watch(cache, ofCluster('west'), { ownWrites: own });
        east.controller.start();
        west.controller.start();
        const object = (name: string, cluster: string, resourceVersion: string): KubeObject => ({ metadata: { namespace: 'ns', name, resourceVersion, labels: { cluster } } });
        // West sees east's echo first (it registered later, but has no key in it): the echo stays east's to judge.
        await own.write('ns', 'ours', async () => object('ours', 'east', '7'));
        const tell = (o: KubeObject) => [...members.handlers].reverse().forEach((h) => h.add?.(o));
        tell(object('ours', 'east', '7'));
        tell(object('theirs', 'west', '3'));
        await until(async () => (await west.result('success')) === 1);
        await Promise.all([east.controller.close(), west.controller.close()]);
        assert.deepEqual([east.runs, west.runs], [[], ['theirs']]);
        assert.equal(members.handlers.length, 0, 'closed controllers hold no subscription');
    });

    it('resyncs the keys a change of a resync source selects, and only while leading', async () => {
        const { controller, runs, result } = harness({});
        const thing = (ns: string, name: string): KubeObject => ({ metadata: { namespace: ns, name } });
        controller.watch(fakeInformer([thing('a', 'x'), thing('b', 'y')]).informer, (obj) => [`${obj.metadata!.namespace}/${obj.metadata!.name}`]);
        const namespaces = fakeInformer<KubeObject>();
        controller.resyncOn(namespaces.informer, (ns, key) => key.startsWith(`${ns.metadata!.name}/`));
        namespaces.handlers[0]!.add!({ metadata: { name: 'a' } });
        assert.equal(runs.length, 0, 'nothing queued while not leading');
        controller.start([]);
        await until(async () => (await result('success')) === 2);
        namespaces.handlers[0]!.add!({ metadata: { name: 'b' } });
        await until(async () => (await result('success')) === 3);
        await controller.stop();
        assert.deepEqual(runs.slice(2), ['b/y']);
    });

    it('resyncs every resyncMs of a term: every key the sources map to, and the keys given up on after their retries', async () => {
        const apiserverSaysNo = () => {
            throw new Error('apiserver says no');
        };
        const { controller, runs } = harness({ gone: [apiserverSaysNo, apiserverSaysNo, apiserverSaysNo] }, { resyncMs: 100, maxRetries: 2 });
        controller.watch(fakeInformer<KubeObject>([{ metadata: { name: 'held' } }]).informer, (obj) => [obj.metadata!.name!]);
        controller.start(['gone']);
        await until(() => runs.filter((k) => k === 'held').length >= 3);
        await controller.stop();
        const count = (key: string) => runs.filter((k) => k === key).length;
        assert.ok(count('gone') >= 4, `the first run, two retries, then the resync: ${runs.join(' ')}`);
        const after = runs.length;
        await new Promise((r) => setTimeout(r, 250));
        assert.equal(runs.length, after, 'no resync once the term ended');
    });

    it('classifies failures by what a retry can do', () => {
        assert.equal(classifyFailure(conflict()), 'conflict');
        assert.equal(classifyFailure(new ApiError(422, 'Invalid', 'spec.endpoints: Invalid value')), 'invalid');
        assert.equal(classifyFailure(new InvalidError('bad')), 'invalid');
        for (const err of [new StaleCacheError('not yet in cache'), new NotLeaderError(), new ApiError(0, '', 'reset'), new ApiError(503, 'ServiceUnavailable', ''), new Error('x')]) {
            assert.equal(classifyFailure(err), 'transient', String(err));
        }
    });
});
