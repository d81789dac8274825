// The Link-wide reconcilers against the runtime's real stores and writers (LinkStatusBook,
// MirrorSync, SliceOwner) and an apiserver in memory (testing/memory-rest.ts, each write back in its informer):
// the status written from what is observed of the Link when it runs, and the readiness of an
// unserved Link's mirrors withdrawn once its window has passed, and only theirs. The apiserver
// itself is in test/integration/service-mirror*.test.ts.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1EndpointSlice } from '@kubernetes/client-node';
import { Registry } from 'prom-client';
import { LABEL_MANAGED_BY, LABEL_SERVICE_NAME } from '../endpointslice/slice.js';
import { Informer } from '../kube/informer.js';
import { logFn, newLogger } from '../kube/log.js';
import { Links, Namespaces, Services } from '../kube/resources.js';
import { SliceOwner } from '../kube/slice-owner.js';
import { ObjectStore, type KubeObject } from '../kube/store.js';
import { MemoryRest } from '../testing/memory-rest.js';
import { WorkQueueMetrics } from '../kube/workqueue-metrics.js';
import { DEFAULT_DNS_POLICY } from '../dns/name-state.js';
import type { Clock } from '../time/clock.js';
import { linkKey, LINK_ANNOTATION, MIRROR_SLICE_MANAGED_BY } from './api/keys.js';
import type { LinkStatus } from './api/link.js';
import type { CompactService } from './cache/compact.js';
import type { LinkEvent } from './link/gateway-events.js';
import { LinkStatusBook, type LinkStatusSource } from './link/link-status.js';
import { ServiceMirrorMetrics } from './link/metrics.js';
import type { LinkConfig, LinkName, LinkObject } from './link-options.js';
import { LinkStatusReconciler, LinkWork, UnservedReconciler, type UnservedLink } from './link-work.js';
import { MirrorSync } from './write/mirror-sync.js';

const LINKS = 'mc';
const T0 = Date.UTC(2026, 0, 1, 12, 0, 0);
const east = 'east' as LinkName;

const clockAt = (now: () => number): Clock => ({ now, schedule: () => () => undefined });

function linkStatusBook(rest: MemoryRest, links: ObjectStore<LinkObject>, events: LinkEvent[] = []) {
    return new LinkStatusBook({
        rest,
        namespace: LINKS,
        name: east,
        stored: () => links.get(LINKS, east),
       
        policy: DEFAULT_DNS_POLICY,
        event: (event) => events.push(event),
        written: () => undefined,
        logger: newLogger('silent'),
        now: () => T0,
    });
}

/** The Links as the controller's informer holds them, with the one Link in it. */
function linksStore(rest: MemoryRest): ObjectStore<LinkObject> {
    const links = new Informer<LinkObject>(rest, { resource: Links, namespace: LINKS, log: logFn(newLogger('silent')) });
    rest.serve('links', links);
    rest.add('links', { apiVersion: 'multicluster.linkerd.io/v1alpha3', kind: 'Link', metadata: { namespace: LINKS, name: east, uid: 'link-uid' } });
    return links.store;
}

const observed = (o: Partial<LinkStatusSource> = {}): LinkStatusSource => ({
    complete: true,
    entries: undefined,
    nameStates: new Map(),
    remote: { readable: true, since: T0 - 60_000 },
    credentials: null,
    limit: { max: 1000, exported: 1 },
    ...o,
});

describe('the Link status reconciler', () => {
    it('writes what it observes: the early conditions alone while the mirrors converge, then the counts of their outcomes; nothing when nothing changed', async () => {
        const rest = new MemoryRest();
        const links = linksStore(rest);
        const status = linkStatusBook(rest, links);
        let now = observed({ complete: false });
        const reconciler = new LinkStatusReconciler((name) => (name === east ? { status, observed: now, stored: () => links.get(LINKS, east) } : undefined));

        await reconciler.reconcile(east);
        assert.deepEqual(rest.writes, [`PATCH links/status ${LINKS}/${east}`]);
        const early: LinkStatus | undefined = links.get(LINKS, east)!.status;
        assert.deepEqual(early?.conditions?.map((c) => [c.type, c.status]), [['RemoteCredentialsValid', 'True'], ['RemoteReadable', 'True']]);
        assert.equal(early?.mirrorSummary, undefined, 'no count while the mirrors have not all been synced once');

        status.record({ namespace: 'app', remoteName: 'web', mirrored: true, reason: 'Mirrored', message: 'mirrored', localName: 'web-east' }, 'app/web');
        status.record({ namespace: 'app', remoteName: 'bad', mirrored: false, reason: 'InvalidService', message: 'no ports' }, 'app/bad');
        now = observed();
        await reconciler.reconcile(east);
        const whole = links.get(LINKS, east)!.status!;
        assert.deepEqual([whole.mirrorSummary?.services, whole.mirrorSummary?.mirrored, whole.mirrorSummary?.notMirrored], [2, 1, 1]);
        assert.deepEqual(whole.mirrorServices?.map((s) => s.remoteRef.name), ['bad']);

        rest.writes.length = 0;
        await reconciler.reconcile(east);
        assert.deepEqual(rest.writes, [], 'converged: nothing written');
        await reconciler.reconcile('gone' as LinkName);
        assert.deepEqual(rest.writes, [], 'a Link without a controller has no status to write');
    });

    it('runs on the runtime: a Link queued by its controller has its status written', async () => {
        const rest = new MemoryRest();
        const links = linksStore(rest);
        const status = linkStatusBook(rest, links);
        const link = { status, observed: observed({ remote: { readable: false, since: T0, error: '401 Unauthorized' } }), stored: () => links.get(LINKS, east), unservedSince: undefined, event: () => undefined };
        const config = { queueMetrics: new WorkQueueMetrics(new Registry(), 'test'), events: { record: () => undefined } } as unknown as LinkConfig;
        const work = new LinkWork({ config, log: newLogger('silent'), linkOf: (name) => (name === east ? link : undefined), namespace: LINKS, localMirrors: new ObjectStore(), mirrors: { withdrawReadiness: async () => 0 }, staleWindowMs: 1000 });
        work.start();
        work.status.add(east);
        while (rest.writes.length === 0) await new Promise((resolve) => setTimeout(resolve, 5));
        await work.stop();
        const readable = links.get(LINKS, east)!.status?.conditions?.find((c) => c.type === 'RemoteReadable');
        assert.deepEqual([readable?.status, readable?.reason], ['False', 'Unauthorized']);
    });
});

describe('the unserved reconciler', () => {
    function setUp(unservedSince: number | undefined) {
        const rest = new MemoryRest();
        const log = logFn(newLogger('silent'));
        const services = new Informer<CompactService>(rest, { resource: Services, log });
        const slices = new SliceOwner({ rest, managedBy: MIRROR_SLICE_MANAGED_BY, log });
        rest.serve('services', services);
        rest.serve('endpointslices', slices.informer);
        const mirrors = new MirrorSync({
            rest,
            owner: slices,
            services,
            namespaces: new Informer<KubeObject>(rest, { resource: Namespaces, log }),
            metrics: new ServiceMirrorMetrics(new Registry()),
           
            maxEndpointsPerSlice: 100,
        });
        // Two mirrors of one cluster: one names this Link, the other a Link of another namespace.
        for (const [name, link] of [['web-east', linkKey({ namespace: LINKS, name: east })], ['api-east', linkKey({ namespace: 'elsewhere', name: east })]] as const) {
            rest.add('services', { metadata: { namespace: 'app', name, uid: `${name}-uid`, annotations: { [LINK_ANNOTATION]: link } } });
            const slice: V1EndpointSlice = {
                metadata: { namespace: 'app', name: `${name}-1`, labels: { [LABEL_SERVICE_NAME]: name, [LABEL_MANAGED_BY]: MIRROR_SLICE_MANAGED_BY }, ownerReferences: [{ apiVersion: 'v1', kind: 'Service', name, uid: `${name}-uid` }] },
                addressType: 'IPv4',
                endpoints: [{ addresses: ['192.0.2.1'], conditions: { ready: true, serving: true } }],
            };
            rest.add('endpointslices', slice);
        }
        const events: LinkEvent[] = [];
        const link: UnservedLink = { unservedSince, event: (event) => events.push(event), stored: () => undefined };
        let now = T0;
        const reconciler = new UnservedReconciler({
            linkOf: (name) => (name === east ? link : undefined),
            namespace: LINKS,
            localMirrors: services.store,
            mirrors,
            staleWindowMs: 30_000,
            clock: clockAt(() => now),
        });
        const ready = (name: string) => slices.informer.store.get('app', `${name}-1`)?.endpoints?.[0]?.conditions?.ready;
        return { rest, reconciler, events, ready, advance: (ms: number) => (now += ms) };
    }

    it('waits out the stale window, then makes every endpoint of the Link\'s mirrors not ready, once, and only of its mirrors', async () => {
        const { rest, reconciler, events, ready, advance } = setUp(T0);
        assert.deepEqual(await reconciler.reconcile(east), { requeueAfterMs: 30_001 });
        assert.deepEqual(rest.writes, []);

        advance(30_001);
        assert.equal(await reconciler.reconcile(east), undefined);
        assert.deepEqual(rest.writes, ['PUT endpointslices app/web-east-1']);
        assert.equal(ready('web-east'), false);
        assert.equal(ready('api-east'), true, 'the mirror of a Link of another namespace is that namespace\'s');
        assert.deepEqual(events.map((e) => e.reason), ['MirrorsNotReady']);

        await reconciler.reconcile(east);
        assert.deepEqual(rest.writes, ['PUT endpointslices app/web-east-1'], 'nothing left to withdraw: no write');
        assert.deepEqual(events.map((e) => e.reason), ['MirrorsNotReady'], 'and no Event');
    });

    it('does nothing for a Link served again, or whose controller is gone', async () => {
        const { rest, reconciler, events } = setUp(undefined);
        assert.equal(await reconciler.reconcile(east), undefined);
        assert.equal(await reconciler.reconcile('gone' as LinkName), undefined);
        assert.deepEqual([rest.writes, events], [[], []]);
    });
});
