// The federated Services' controller on the runtime, against real stores and writers (MirrorSync)
// and an apiserver in memory (testing/memory-rest.ts): a remote member's change reaches it as the
// Links' remote watches tell it (a SourceSet each Link adds its remote to), `<name>-federated`
// lists the members of every cluster, and one that leaves is dropped; a remote it no longer
// watches tells it nothing.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Registry } from 'prom-client';
import { LABEL_SERVICE_NAME } from '../endpointslice/slice.js';
import { Informer, type InformerHandlers } from '../kube/informer.js';
import { newLogger } from '../kube/log.js';
import { Links } from '../kube/resources.js';
import { Published, SourceSet } from '../kube/sources.js';
import { ObjectStore, type KubeObject } from '../kube/store.js';
import { WorkQueueMetrics } from '../kube/workqueue-metrics.js';
import { DEFAULT_FEDERATED_SELECTOR, FEDERATED_LABEL, REMOTE_DISCOVERY_ANNOTATION } from './api/keys.js';
import { testLink } from './api/testkit.js';
import type { CompactRemoteSlice, CompactService } from './cache/compact.js';
import { FederationController } from './federation-controller.js';
import type { RemoteCluster, RemoteObjectRef } from './mcs/clusterset.js';
import { localSide } from './write/testkit.js';

const NS = 'app';
const LINKS = 'mc';

/** Waits (the test runner's timeout is the limit) until `check` holds. */
async function until(check: () => boolean): Promise<void> {
    while (!check()) await new Promise((resolve) => setTimeout(resolve, 5));
}

/** A Link's remote cluster as its controller publishes it, and its watch's changes. */
function remoteCluster(cluster: string) {
    const link = { ...testLink({ targetClusterName: cluster, federatedServiceSelector: DEFAULT_FEDERATED_SELECTOR }), metadata: { name: cluster, namespace: LINKS } };
    const services = new ObjectStore<CompactService>();
    const slices = new ObjectStore<CompactRemoteSlice>();
    slices.indexLabel(LABEL_SERVICE_NAME);
    const remote: RemoteCluster = { link, services, slices, gatewayAddresses: () => [], gatewayAlive: true, admitted: () => true };
    const watches: InformerHandlers<RemoteObjectRef>[] = [];
    const changes = {
        on: (h: InformerHandlers<RemoteObjectRef>) => {
            watches.push(h);
            return () => void watches.splice(watches.indexOf(h), 1);
        },
        list: () => [],
    };
    const ref = (name: string): RemoteObjectRef => ({ link: cluster, cluster, namespace: NS, name, kind: 'service' });
    return {
        remote,
        changes,
        /** A member in the remote's cache, told (as its watch would) unless `quietly`. */
        member(name: string, quietly = false) {
            services.set({
                metadata: { namespace: NS, name, uid: `${name}-${cluster}`, resourceVersion: '1', labels: { [FEDERATED_LABEL]: 'member' } },
                spec: { type: 'ClusterIP', ports: [{ name: 'http', port: 80, protocol: 'TCP' }] },
            } as unknown as CompactService);
            if (!quietly) watches.forEach((h) => h.add?.(ref(name)));
        },
        gone(name: string) {
            services.delete(services.get(NS, name)!);
            watches.forEach((h) => h.delete?.(ref(name)));
        },
    };
}

function setUp() {
    const { rest, log, services, mirrors } = localSide(NS);
    const links = new Informer<KubeObject>(rest, { resource: Links, namespace: LINKS, log });
    rest.serve('links', links);

    const [east, west] = [remoteCluster('east'), remoteCluster('west')];
    const served = new Map<string, RemoteCluster>();
    const remoteChanges = new SourceSet<RemoteObjectRef>();
    const readableRemotes = new Published<RemoteCluster>();
    for (const { remote, changes } of [east, west]) {
        rest.add('links', { apiVersion: 'multicluster.linkerd.io/v1alpha3', kind: 'Link', metadata: remote.link.metadata, spec: { targetClusterName: remote.link.spec.targetClusterName } });
        served.set(remote.link.metadata.name, remote);
        remoteChanges.set(remote.link.metadata.name, changes);
    }
    const federation = new FederationController({
        namespace: LINKS,
        links,
        remoteOf: (link) => served.get(link),
        remoteChanges,
        readableRemotes,
        servedLink: (link) => served.get(link)?.link,
        services,
        excludedLabels: [],
        excludedAnnotations: [],
        writes: mirrors,
        ensureNamespace: (ns, cluster) => mirrors.ensureNamespace(ns, cluster),
        event: () => undefined,
        queueMetrics: new WorkQueueMetrics(new Registry(), 'test'),
        events: { record: () => undefined },
        logger: newLogger('silent'),
    });
    const members = () => services.store.get(NS, 'web-federated')?.metadata?.annotations?.[REMOTE_DISCOVERY_ANNOTATION];
    // Its watch ends; its cache still reads (a sync would list what it holds): only a change told could bring it in.
    const unwatch = (link: string) => remoteChanges.remove(link);
    return { rest, federation, east, west, members, unwatch, readableRemotes };
}

describe('the federated Services', () => {
    it('list the members of every cluster as their remotes tell them, and drop one that leaves', async () => {
        const { federation, east, west, members } = setUp();
        federation.start();
        east.member('web');
        await until(() => members() === 'web@east');
        west.member('web');
        await until(() => members() === 'web@east,web@west');
        east.gone('web');
        await until(() => members() === 'web@west');
        await federation.stop();
    });

    it('hear nothing more of a remote no longer watched', async () => {
        const { federation, east, west, members, unwatch } = setUp();
        federation.start();
        east.member('web');
        await until(() => members() === 'web@east');
        unwatch('west');
        west.member('web');
        await new Promise((resolve) => setTimeout(resolve, 50));
        assert.equal(members(), 'web@east');
        await federation.stop();
    });

    it('take in the members of a Link whose remote is published readable, and drop them once it goes', async () => {
        const { rest, federation, east, members, readableRemotes } = setUp();
        federation.start();
        // In its cache before it was ready: no change will tell of it.
        east.member('web', true);
        readableRemotes.set('east', east.remote);
        await until(() => members() === 'web@east');
        // The Link deleted, then its remote stops: its member is gone, and so the federated Service.
        rest.remove('links', LINKS, 'east');
        readableRemotes.set('east', undefined);
        await until(() => members() === undefined);
        await federation.stop();
    });
});
