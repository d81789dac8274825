// A Link's mirrors on the runtime, against real stores and writers (MirrorSync, SliceOwner,
// LinkStatusBook) and an apiserver in memory (testing/memory-rest.ts): a full convergence queues every
// export, the mirror limit admits the oldest, each outcome is recorded for the status, and the
// status is asked for at once only when the last mirror of the convergence has been synced; a
// remote Service that goes moves the limit on to the next export.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Registry } from 'prom-client';
import { LABEL_SERVICE_NAME } from '../endpointslice/slice.js';
import type { InformerHandlers } from '../kube/informer.js';
import { SourceSet } from '../kube/sources.js';
import { newLogger } from '../kube/log.js';
import { ObjectStore } from '../kube/store.js';
import { kinds } from '../testing/memory-rest.js';
import { WorkQueueMetrics } from '../kube/workqueue-metrics.js';
import { DEFAULT_DNS_POLICY } from '../dns/name-state.js';
import { EXPORTED_LABEL } from './api/keys.js';
import { testLink } from './api/testkit.js';
import type { CompactRemoteSlice, CompactService } from './cache/compact.js';
import { LinkStatusBook } from './link/link-status.js';
import { LinkMirrors } from './link-mirrors.js';
import type { LinkOptions } from './link-options.js';
import type { RemoteCluster, RemoteObjectRef } from './mcs/clusterset.js';
import { localSide } from './write/testkit.js';

const NS = 'app';

/** Waits (the test runner's timeout is the limit) until `check` holds. */
async function until(check: () => boolean): Promise<void> {
    while (!check()) await new Promise((resolve) => setTimeout(resolve, 5));
}

function setUp(maxMirrorsPerLink: number) {
    const { rest, services, namespaces, slices, metrics, mirrors } = localSide(NS);

    const link = testLink();
    const remoteServices = new ObjectStore<CompactService>();
    const remoteSlices = new ObjectStore<CompactRemoteSlice>();
    remoteSlices.indexLabel(LABEL_SERVICE_NAME);
    const exported = (name: string, created: string) => {
        remoteServices.set({
            metadata: { namespace: NS, name, uid: `${name}-uid`, resourceVersion: '1', creationTimestamp: created, labels: { [EXPORTED_LABEL]: 'true' } },
            spec: { type: 'ClusterIP', ports: [{ name: 'http', port: 80, protocol: 'TCP' }] },
        } as unknown as CompactService);
        remoteSlices.set({
            metadata: { namespace: NS, name: `${name}-1`, labels: { [LABEL_SERVICE_NAME]: name } },
            addressType: 'IPv4',
            endpoints: [{ addresses: ['10.1.0.1'], conditions: { ready: true } }],
        } as CompactRemoteSlice);
    };
    exported('web', '2026-01-01T00:00:00Z');
    exported('late', '2026-01-02T00:00:00Z');

    const status = new LinkStatusBook({
        rest,
        namespace: link.metadata.namespace,
        name: link.metadata.name,
        stored: () => undefined,
       
        policy: DEFAULT_DNS_POLICY,
        event: () => undefined,
        written: () => undefined,
        logger: newLogger('silent'),
    });
    const asked: boolean[] = [];
    const config = { queueMetrics: new WorkQueueMetrics(new Registry(), 'test'), events: { record: () => undefined }, maxMirrorsPerLink };
    // The remote's changes, as its watch tells them (link/remote-watch.ts).
    const remoteChanges = new SourceSet<RemoteObjectRef>();
    const told: InformerHandlers<RemoteObjectRef>[] = [];
    remoteChanges.set(link.metadata.name, { on: (handlers) => void told.push(handlers), list: () => [] });
    const remoteDeleted = (name: string) => told.forEach((h) => h.delete?.({ link: link.metadata.name, cluster: 'remote', namespace: NS, name, kind: 'service' }));
    const opts = { config, localMirrors: services, mirrorSlices: slices.foreignChanges, namespaces, remoteChanges, mirrors, metrics } as unknown as LinkOptions;
    let remote: RemoteCluster | undefined;
    const linkMirrors = new LinkMirrors({
        opts,
        name: link.metadata.name,
        remote: () => remote,
        watched: () => remote,
        status,
        statusChanged: (now) => asked.push(now),
        stored: () => undefined,
        labels: () => ({ link: link.metadata.name, target_cluster_name: 'remote' }),
        log: newLogger('silent'),
    });
    remote = {
        link,
        services: remoteServices,
        slices: remoteSlices,
        gatewayAddresses: () => [{ address: '192.0.2.127', family: 'IPv4', ready: true }],
        gatewayAlive: true,
        admitted: (namespace, name) => linkMirrors.admitted(namespace, name),
    };
    const mirror = (name: string) => services.store.get(NS, `${name}-remote`);
    return { rest, remote, remoteServices, remoteDeleted, status, asked, linkMirrors, mirror, slices };
}

describe('the mirrors of a Link', () => {
    it('converge every export the limit admits, record each outcome, and ask for the status at once after the last', async () => {
        const { rest, remote, status, asked, linkMirrors, mirror, slices } = setUp(1);
        linkMirrors.enqueue(remote, true);
        assert.equal(linkMirrors.converged, false, 'the status waits for the convergence');
        await until(() => linkMirrors.converged);
        assert.deepEqual(asked.at(-1), true, 'the last sync of the convergence asks for the status at once');
        assert.deepEqual(linkMirrors.limitReport, { max: 1, exported: 2 });
        assert.ok(mirror('web'), 'the oldest export is mirrored');
        assert.equal(mirror('late'), undefined, 'the younger one is past the limit');
        assert.deepEqual(kinds(rest.writes), ['POST services', 'POST endpointslices']);
        assert.deepEqual(slices.slicesOf(NS, 'web-remote').flatMap((s) => s.endpoints.map((e) => `${e.addresses.join()} ${e.conditions?.ready}`)), ['192.0.2.127 true']);
        assert.equal(status.mirrored, 1);
        await linkMirrors.stop();
    });

    it('move the limit on when an admitted export goes: its mirror is deleted, the next one mirrored', async () => {
        const { rest, remote, remoteServices, remoteDeleted, status, linkMirrors, mirror } = setUp(1);
        linkMirrors.enqueue(remote, true);
        await until(() => linkMirrors.converged);
        rest.writes.length = 0;

        remoteServices.delete(remoteServices.get(NS, 'web')!);
        remoteDeleted('web');
        await until(() => mirror('late') !== undefined && mirror('web') === undefined && status.mirrored === 1);
        await until(() => rest.writes.length >= 4);
        assert.deepEqual(kinds(rest.writes).sort(), ['DELETE endpointslices', 'DELETE services', 'POST endpointslices', 'POST services']);
        await linkMirrors.stop();
    });
    it('undo what someone else does to their mirrors, let their own writes pass, and watch nothing once stopped', async () => {
        const { rest, remote, linkMirrors, mirror, slices } = setUp(2);
        linkMirrors.enqueue(remote, true);
        await until(() => linkMirrors.converged && mirror('late') !== undefined);
        const settle = () => new Promise((resolve) => setTimeout(resolve, 50));
        await settle();
        rest.writes.length = 0;

        rest.remove('services', NS, 'web-remote');
        await until(() => mirror('web') !== undefined);
        await settle();
        // A new uid: the slices of the old one are replaced. Once: the echoes of these writes queue nothing.
        assert.deepEqual(kinds(rest.writes), ['POST services', 'POST endpointslices', 'DELETE endpointslices']);

        rest.writes.length = 0;
        const [slice] = slices.slicesOf(NS, 'late-remote');
        rest.remove('endpointslices', NS, slice!.metadata!.name!);
        await until(() => slices.slicesOf(NS, 'late-remote').length === 1);
        assert.deepEqual(kinds(rest.writes), ['POST endpointslices']);

        await linkMirrors.stop();
        rest.remove('services', NS, 'web-remote');
        await settle();
        assert.equal(mirror('web'), undefined, 'a stopped Link watches no more');
    });
});
