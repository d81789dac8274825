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
import { logFn, newLogger } from '../kube/log.js';
import { Links, Namespaces, Services } from '../kube/resources.js';
import { SliceOwner } from '../kube/slice-owner.js';
import { SourceSet } from '../kube/sources.js';
import { ObjectStore, type KubeObject } from '../kube/store.js';
import { WorkQueueMetrics } from '../kube/workqueue-metrics.js';
import { MemoryRest } from '../testing/memory-rest.js';
import { CLUSTER_NAME_LABEL, DEFAULT_FEDERATED_SELECTOR, FEDERATED_LABEL, HEADLESS_MIRROR_SVC_NAME_LABEL, MIRROR_SLICE_MANAGED_BY, REMOTE_DISCOVERY_ANNOTATION } from './api/keys.js';
import { testLink } from './api/testkit.js';
import type { CompactRemoteSlice, CompactService } from './cache/compact.js';
import { FederationController } from './federation-controller.js';
import { ServiceMirrorMetrics } from './link/metrics.js';
import type { RemoteCluster, RemoteObjectRef } from './mcs/clusterset.js';
import { MirrorSync } from './write/mirror-sync.js';

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
        member(name: string) {
            services.set({
                metadata: { namespace: NS, name, uid: `${name}-${cluster}`, resourceVersion: '1', labels: { [FEDERATED_LABEL]: 'member' } },
                spec: { type: 'ClusterIP', ports: [{ name: 'http', port: 80, protocol: 'TCP' }] },
            } as unknown as CompactService);
            watches.forEach((h) => h.add?.(ref(name)));
        },
        gone(name: string) {
            services.delete(services.get(NS, name)!);
            watches.forEach((h) => h.delete?.(ref(name)));
        },
    };
}

function setUp() {
    const rest = new MemoryRest();
    const log = logFn(newLogger('silent'));
    const services = new Informer<CompactService>(rest, { resource: Services, log });
    services.store.indexLabel(CLUSTER_NAME_LABEL);
    services.store.indexLabel(HEADLESS_MIRROR_SVC_NAME_LABEL);
    const namespaces = new Informer<KubeObject>(rest, { resource: Namespaces, log });
    const links = new Informer<KubeObject>(rest, { resource: Links, namespace: LINKS, log });
    const slices = new SliceOwner({ rest, managedBy: MIRROR_SLICE_MANAGED_BY, log });
    rest.serve('services', services);
    rest.serve('namespaces', namespaces);
    rest.serve('links', links);
    rest.serve('endpointslices', slices.informer);
    rest.add('namespaces', { metadata: { name: NS } });
    const mirrors = new MirrorSync({ rest, owner: slices, services, namespaces, metrics: new ServiceMirrorMetrics(new Registry()), maxEndpointsPerSlice: 100 });

    const [east, west] = [remoteCluster('east'), remoteCluster('west')];
    const served = new Map<string, RemoteCluster>();
    const remoteChanges = new SourceSet<RemoteObjectRef>();
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
    return { federation, east, west, members, unwatch };
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
});
