// The service mirror end to end against two real clusters: export, update, unexport and
// delete of remote Services, empty selectors, remote Services without endpoints, missing
// namespaces, Link restarts, deletion, two Links naming one cluster and a Link moved to another,
// the Link status, and a Services watch gone silently dead.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { KubeRest } from '../../src/kube/rest.js';
import { collectionPath, Links, Namespaces, objectPath, Secrets, Services } from '../../src/kube/resources.js';
import { kubeconfigForToken } from '../../src/testing/cluster.js';
import { TcpProxy } from '../../src/testing/tcp-proxy.js';
import type { LinkStatus } from '../../src/servicemirror/api/link.js';
import { LINK_ANNOTATION } from '../../src/servicemirror/api/keys.js';
import { eventually, setUp } from '../../src/testing/harness.js';
import {
    createLink,
    createRemoteService,
    deleteRemoteService,
    endpointsOf,
    EXPORTED,
    getLink,
    hasEvent,
    linkObject,
    mirrorService,
    mirrorSlices,
    pairedNamespace,
    patchRemoteService,
    runServiceMirror,
    setRemoteEndpoints,
    startMirrorEnv,
} from './mirror-support.js';

const env = await startMirrorEnv('sm');
const linkNs = await setUp('a namespace', () => env.local.namespace('mc'));
const running = await setUp('the service mirror', () => runServiceMirror(env, linkNs));

describe('service mirror', () => {
    it('mirrors an exported remote Service with its labels, annotations and ports, and slices pointing at the gateway', async () => {
        await createLink(env, linkNs, { name: 'east', gatewayAddress: '192.0.2.1', gatewayPort: '4143' });
        const ns = await pairedNamespace(env);
        await createRemoteService(env, ns, 'web', {
            labels: { ...EXPORTED, app: 'web', 'mirror.linkerd.io/other': 'x' },
            annotations: { note: 'kept', 'service.kubernetes.io/topology-mode': 'Auto' },
            ports: [{ name: 'http', port: 80 }, { name: 'grpc', port: 9090 }],
        });
        await eventually('the mirror slice', async () => (await endpointsOf(env, ns, 'web-east')).length === 1);
        const mirror = (await mirrorService(env, ns, 'web-east'))!;
        assert.equal(mirror.metadata?.labels?.app, 'web');
        assert.equal(mirror.metadata?.labels?.['mirror.linkerd.io/mirrored-service'], 'true');
        assert.equal(mirror.metadata?.labels?.['mirror.linkerd.io/cluster-name'], 'east');
        assert.equal(mirror.metadata?.labels?.['mirror.linkerd.io/other'], undefined);
        assert.equal(mirror.metadata?.annotations?.note, 'kept');
        assert.equal(mirror.metadata?.annotations?.['service.kubernetes.io/topology-mode'], undefined);
        assert.equal(mirror.metadata?.annotations?.['mirror.linkerd.io/remote-svc-fq-name'], `web.${ns}.svc.cluster.local`);
        assert.equal(mirror.spec?.selector, undefined);
        assert.deepEqual(mirror.spec?.ports?.map((p) => `${p.name}:${p.port}`), ['http:80', 'grpc:9090']);
        const [slice] = await mirrorSlices(env, ns, 'web-east');
        assert.deepEqual(await endpointsOf(env, ns, 'web-east'), ['IPv4 192.0.2.1 ready']);
        assert.deepEqual(slice!.ports?.map((p) => `${p.name}:${p.port}`).sort(), ['grpc:4143', 'http:4143']);
        assert.equal(slice!.metadata?.annotations?.['mirror.linkerd.io/remote-svc-fq-name'], `web.${ns}.svc.cluster.local`);
        assert.match(slice!.metadata?.annotations?.['mirror.linkerd.io/remote-gateway-identity'] ?? '', /^linkerd-gateway\./);
        assert.equal(slice!.metadata?.ownerReferences?.[0]?.uid, mirror.metadata?.uid);
    });

    it('follows an update of the remote Service, then deletes the mirror when it is unexported or deleted', async () => {
        const ns = await pairedNamespace(env);
        await createRemoteService(env, ns, 'api');
        await createRemoteService(env, ns, 'db');
        await eventually('both mirrors', async () => (await endpointsOf(env, ns, 'api-east')).length === 1 && (await endpointsOf(env, ns, 'db-east')).length === 1);

        await patchRemoteService(env, ns, 'api', { metadata: { labels: { tier: 'backend' } }, spec: { ports: [{ name: 'http', port: 80 }, { name: 'admin', port: 9000 }] } });
        await eventually('the updated mirror', async () => {
            const mirror = await mirrorService(env, ns, 'api-east');
            const [slice] = await mirrorSlices(env, ns, 'api-east');
            return mirror?.metadata?.labels?.tier === 'backend' && mirror.spec?.ports?.length === 2 && slice?.ports?.length === 2;
        });

        await patchRemoteService(env, ns, 'api', { metadata: { labels: { 'mirror.linkerd.io/exported': null } } });
        await eventually('the unexported mirror gone', async () => !(await mirrorService(env, ns, 'api-east')) && (await mirrorSlices(env, ns, 'api-east')).length === 0);

        await deleteRemoteService(env, ns, 'db');
        await eventually('the deleted mirror gone', async () => !(await mirrorService(env, ns, 'db-east')) && (await mirrorSlices(env, ns, 'db-east')).length === 0);
    });

    it('exports nothing when the Link selector is empty or absent', async () => {
        await createLink(env, linkNs, { name: 'empty', gatewayAddress: '192.0.2.2', selector: {} });
        await createLink(env, linkNs, { name: 'absent', gatewayAddress: '192.0.2.3', selector: null });
        const ns = await pairedNamespace(env);
        await createRemoteService(env, ns, 'web');
        await eventually('the east mirror (the cluster is watched)', async () => (await endpointsOf(env, ns, 'web-east')).length === 1);
        await eventually('both Links watching', () => running.controller.controllerOf('empty')?.ready === true && running.controller.controllerOf('absent')?.ready === true);
        await new Promise((r) => setTimeout(r, 1000));
        assert.equal(await mirrorService(env, ns, 'web-empty'), undefined);
        assert.equal(await mirrorService(env, ns, 'web-absent'), undefined);
    });

    it('gives a remote Service without ready endpoints a mirror without endpoints, and endpoints once it has some', async () => {
        const ns = await pairedNamespace(env);
        await createRemoteService(env, ns, 'none', { endpoints: 'none' });
        await createRemoteService(env, ns, 'idle', { endpoints: 'not-ready' });
        await eventually('both mirror Services', async () => Boolean((await mirrorService(env, ns, 'none-east')) && (await mirrorService(env, ns, 'idle-east'))));
        await new Promise((r) => setTimeout(r, 500));
        assert.deepEqual(await mirrorSlices(env, ns, 'none-east'), []);
        assert.deepEqual(await mirrorSlices(env, ns, 'idle-east'), []);
        await setRemoteEndpoints(env, ns, 'idle', true);
        await eventually('endpoints once ready', async () => (await endpointsOf(env, ns, 'idle-east')).join() === 'IPv4 192.0.2.1 ready');
        await setRemoteEndpoints(env, ns, 'idle', false);
        await eventually('no endpoints again', async () => (await endpointsOf(env, ns, 'idle-east')).length === 0);
    });

    it('skips a mirror whose namespace is missing here with a Warning Event, and creates it when the namespace appears', async () => {
        const ns = await env.remote.namespace('only-remote');
        await createRemoteService(env, ns, 'web');
        await eventually('the MissingNamespace Event', () => hasEvent(env, linkNs, 'east', 'MissingNamespace', `${ns}/web`));
        await eventually('the MissingNamespace status', async () => {
            const entry = (await getLink(env, linkNs, 'east')).status?.mirrorServices?.find((s) => s.remoteRef.namespace === ns);
            return entry?.conditions?.[0]?.reason === 'MissingNamespace' && entry.conditions[0].status === 'False';
        });
        await env.local.admin.create(collectionPath(Namespaces), { metadata: { name: ns } });
        await eventually('the mirror once the namespace exists', async () => (await endpointsOf(env, ns, 'web-east')).length === 1);
    });

    it('counts every mirrored Service in the Link status, with a ServicesMirrored condition, lists only those not mirrored, and the gateway resolution', async () => {
        const ns = await pairedNamespace(env);
        await createRemoteService(env, ns, 'status-one');
        const bad = `status-bad-${'x'.repeat(49)}`; // its mirror's name would be too long
        await createRemoteService(env, ns, bad);
        const entryOf = (status: LinkStatus | undefined, name: string) => status?.mirrorServices?.find((s) => s.remoteRef.namespace === ns && s.remoteRef.name === name);
        await eventually('the not-mirrored one listed, the mirrored one counted', async () => {
            const status = (await getLink(env, linkNs, 'east')).status;
            return entryOf(status, bad)?.conditions?.[0]?.status === 'False' && (await mirrorService(env, ns, 'status-one-east')) !== undefined && !entryOf(status, 'status-one');
        });
        const status = (await getLink(env, linkNs, 'east')).status!;
        const entry = entryOf(status, bad)!;
        assert.equal(entry.controllerName, 'mesh-endpoints.io/service-mirror');
        assert.deepEqual(entry.remoteRef, { group: 'core', kind: 'Service', name: bad, namespace: ns });
        assert.deepEqual([entry.conditions![0]!.type, entry.conditions![0]!.reason], ['Mirrored', 'InvalidService']);
        assert.ok(status.mirrorServices!.every((s) => s.conditions?.[0]?.status === 'False'), 'mirrored Services are counted, not listed');
        const summary = status.mirrorSummary!;
        assert.equal(summary.services, summary.mirrored + summary.notMirrored);
        assert.ok(summary.mirrored >= 1 && summary.notMirrored >= 1);
        const condition = status.conditions?.find((c) => c.type === 'ServicesMirrored');
        assert.deepEqual([condition?.status, condition?.reason], ['False', 'NotAllMirrored']);
        assert.deepEqual(status.gatewayResolution, [{ name: '192.0.2.1', addresses: ['192.0.2.1'] }]);
        const metric = await running.registry.getSingleMetric('mesh_endpoints_service_mirror_mirrored_services')?.get();
        assert.ok((metric?.values.find((v) => v.labels.link === 'east')?.value ?? 0) >= 1);
        // The Link's work runs on the reconciler runtime, under a controller name of its own.
        const reconciles = await running.registry.getSingleMetric('mesh_endpoints_reconcile_total')?.get();
        assert.ok((reconciles?.values.find((v) => v.labels.name === 'service-mirror/link/east' && v.labels.result === 'success')?.value ?? 0) >= 1);
        await deleteRemoteService(env, ns, bad);
        await eventually('no longer listed once gone', async () => !entryOf((await getLink(env, linkNs, 'east')).status, bad));
    });

    it('restarts only the remote watch of the Link whose spec changed, and not on status writes', async () => {
        await createLink(env, linkNs, { name: 'west', gatewayAddress: '192.0.2.10' });
        const ns = await pairedNamespace(env);
        await createRemoteService(env, ns, 'web');
        await eventually('west mirror', async () => (await endpointsOf(env, ns, 'web-west')).join() === 'IPv4 192.0.2.10 ready');
        const [east, west] = [running.controller.remoteWatchOf('east'), running.controller.remoteWatchOf('west')];
        await env.local.admin.mergePatch(objectPath(Links, linkNs, 'west'), { spec: { gatewayAddress: '192.0.2.11' } });
        await eventually('west follows its new gateway', async () => (await endpointsOf(env, ns, 'web-west')).join() === 'IPv4 192.0.2.11 ready');
        assert.notEqual(running.controller.remoteWatchOf('west'), west, 'the changed Link got a new watch');
        assert.equal(running.controller.remoteWatchOf('east'), east, 'the other Link kept its watch');
        assert.deepEqual(await endpointsOf(env, ns, 'web-east'), ['IPv4 192.0.2.1 ready']);
    });

    it('serves a cluster two Links name by one, the other waiting with a Warning until it is free; a moved Link takes the mirrors of the cluster it left', async () => {
        await createLink(env, linkNs, { name: 'first', cluster: 'shared', gatewayAddress: '192.0.2.60' });
        const ns = await pairedNamespace(env);
        await createRemoteService(env, ns, 'web');
        await eventually('first mirrors shared', async () => (await endpointsOf(env, ns, 'web-shared')).join() === 'IPv4 192.0.2.60 ready');
        await createLink(env, linkNs, { name: 'second', cluster: 'shared', gatewayAddress: '192.0.2.61' });
        await eventually('the DuplicateTargetCluster Event', () => hasEvent(env, linkNs, 'second', 'DuplicateTargetCluster', 'Link first already mirrors cluster "shared"'));
        assert.equal(running.controller.controllerOf('second')?.servedCluster, undefined);
        assert.equal(running.controller.controllerOf('first')?.servedCluster, 'shared');

        // Nothing about the second Link changes: only its own retry finds the cluster free.
        await env.local.admin.mergePatch(objectPath(Links, linkNs, 'first'), { spec: { targetClusterName: 'moved' } });
        await eventually('first mirrors the cluster it moved to', async () => (await endpointsOf(env, ns, 'web-moved')).join() === 'IPv4 192.0.2.60 ready');
        await eventually('the second Link serves shared', async () => running.controller.controllerOf('second')?.servedCluster === 'shared');
        assert.ok(await mirrorService(env, ns, 'web-shared'), 'a cluster a Link still names keeps its mirrors');

        await env.local.admin.mergePatch(objectPath(Links, linkNs, 'second'), { spec: { targetClusterName: 'elsewhere' } });
        await eventually('the mirrors of the cluster no Link names go', async () => !(await mirrorService(env, ns, 'web-shared')) && (await mirrorSlices(env, ns, 'web-shared')).length === 0);
        await eventually('second mirrors elsewhere', async () => (await endpointsOf(env, ns, 'web-elsewhere')).join() === 'IPv4 192.0.2.61 ready');
        assert.deepEqual(await endpointsOf(env, ns, 'web-moved'), ['IPv4 192.0.2.60 ready']);
        await eventually('east mirrors it as ever', async () => (await endpointsOf(env, ns, 'web-east')).join() === 'IPv4 192.0.2.1 ready');
        for (const name of ['first', 'second']) await env.local.admin.delete(objectPath(Links, linkNs, name));
    });

    it('serves a cluster two Links name by the older one when both are synced at once, as when a term starts: the younger gets the Warning', async () => {
        const dupLinkNs = await env.local.namespace('mc');
        // The older is the later by name, so the first synced is not the one that wins.
        await createLink(env, dupLinkNs, { name: 'dup-z', cluster: 'dup', gatewayAddress: '192.0.2.90' });
        const created = (await getLink(env, dupLinkNs, 'dup-z')).metadata.creationTimestamp;
        await eventually('a creation timestamp a second later', () => `${new Date().toISOString().slice(0, 19)}Z` > created);
        await createLink(env, dupLinkNs, { name: 'dup-a', cluster: 'dup', gatewayAddress: '192.0.2.91' });
        const ns = await pairedNamespace(env);
        await createRemoteService(env, ns, 'web');
        // Both Links are queued when its term starts, one to each worker.
        const mirror = await runServiceMirror(env, dupLinkNs);
        try {
            await eventually('the DuplicateTargetCluster Event', () => hasEvent(env, dupLinkNs, 'dup-a', 'DuplicateTargetCluster', 'Link dup-z already mirrors cluster "dup"'));
            await eventually('the older mirrors the cluster', async () => (await endpointsOf(env, ns, 'web-dup')).join() === 'IPv4 192.0.2.90 ready');
            assert.equal(mirror.controller.controllerOf('dup-a')?.servedCluster, undefined);
            assert.equal(mirror.controller.controllerOf('dup-z')?.servedCluster, 'dup');
            assert.equal((await mirrorService(env, ns, 'web-dup'))?.metadata?.annotations?.[LINK_ANNOTATION], `${dupLinkNs}/dup-z`);
        } finally {
            await mirror.stop();
        }
    });

    it('serves a Link named like one of its other controllers: the work of each Link has a controller name of its own', async () => {
        await createLink(env, linkNs, { name: 'federated', cluster: 'fed', gatewayAddress: '192.0.2.80' });
        const ns = await pairedNamespace(env);
        await createRemoteService(env, ns, 'web');
        await eventually('its mirror', async () => (await endpointsOf(env, ns, 'web-fed')).join() === 'IPv4 192.0.2.80 ready');
        await env.local.admin.delete(objectPath(Links, linkNs, 'federated'));
    });

    it('removes the mirrors and slices of a deleted Link, and only those', async () => {
        await createLink(env, linkNs, { name: 'gone', gatewayAddress: '192.0.2.20' });
        const ns = await pairedNamespace(env);
        await createRemoteService(env, ns, 'web');
        await eventually('both Links mirror it', async () => (await endpointsOf(env, ns, 'web-gone')).length === 1 && (await endpointsOf(env, ns, 'web-east')).length === 1);
        const series = async () => (await running.registry.getMetricsAsJSON()).filter((m) => m.values.some((v) => v.labels.name === 'service-mirror/link/gone')).map((m) => m.name);
        assert.ok((await series()).includes('mesh_endpoints_reconcile_total'));
        await env.local.admin.delete(objectPath(Links, linkNs, 'gone'));
        await eventually('the deleted Link leaves nothing', async () => !(await mirrorService(env, ns, 'web-gone')) && (await mirrorSlices(env, ns, 'web-gone')).length === 0);
        assert.equal(running.controller.controllerOf('gone'), undefined);
        assert.deepEqual(await series(), [], 'no metric series of its work is left');
        assert.deepEqual(await endpointsOf(env, ns, 'web-east'), ['IPv4 192.0.2.1 ready']);
    });

    it('removes on start the mirrors of a Link deleted while no controller ran, and leaves other namespaces\' Links alone', async () => {
        const otherLinkNs = await env.local.namespace('mc');
        const first = await runServiceMirror(env, otherLinkNs);
        await createLink(env, otherLinkNs, { name: 'offline', gatewayAddress: '192.0.2.40' });
        const ns = await pairedNamespace(env);
        await createRemoteService(env, ns, 'web');
        await eventually('both Links mirror it', async () =>
            (await endpointsOf(env, ns, 'web-offline')).length === 1 && (await endpointsOf(env, ns, 'web-east')).length === 1,
        );
        await first.stop();
        await env.local.admin.delete(objectPath(Links, otherLinkNs, 'offline'));
        const second = await runServiceMirror(env, otherLinkNs);
        await eventually('the deleted Link leaves nothing', async () => !(await mirrorService(env, ns, 'web-offline')) && (await mirrorSlices(env, ns, 'web-offline')).length === 0);
        assert.deepEqual(await endpointsOf(env, ns, 'web-east'), ['IPv4 192.0.2.1 ready'], "the other namespace's Link keeps its mirror");
        await second.stop();
    });

    it('removes on start the mirrors of the cluster a Link left while no controller ran', async () => {
        const movedLinkNs = await env.local.namespace('mc');
        const first = await runServiceMirror(env, movedLinkNs);
        await createLink(env, movedLinkNs, { name: 'mover', cluster: 'before', gatewayAddress: '192.0.2.70' });
        const ns = await pairedNamespace(env);
        await createRemoteService(env, ns, 'web');
        await eventually('the mirror of the cluster it names', async () => (await endpointsOf(env, ns, 'web-before')).length === 1);
        await first.stop();
        await env.local.admin.mergePatch(objectPath(Links, movedLinkNs, 'mover'), { spec: { targetClusterName: 'after' } });
        const second = await runServiceMirror(env, movedLinkNs);
        await eventually('the mirror of the cluster it moved to', async () => (await endpointsOf(env, ns, 'web-after')).join() === 'IPv4 192.0.2.70 ready');
        await eventually('none of the cluster it left', async () => !(await mirrorService(env, ns, 'web-before')) && (await mirrorSlices(env, ns, 'web-before')).length === 0);
        await second.stop();
    });

    it('restarts its Services watch when an update finds the cache stale while that watch has gone silently dead', async () => {
        // This replica reaches the local apiserver through a proxy that forgets idle connections.
        const proxy = new TcpProxy('127.0.0.1', env.local.state.apiserverPort);
        const port = await proxy.start();
        const rest = new KubeRest(env.local.kubeConfig(`https://127.0.0.1:${port}`), { timeoutMs: 2_000 });
        const staleLinkNs = await env.local.namespace('mc');
        const mirror = await runServiceMirror(env, staleLinkNs, { rest });
        try {
            // Its own selector: the Link of the other replica mirrors nothing here.
            const selected = { 'stale-test': 'true' };
            await createLink(env, staleLinkNs, { name: 'stale', gatewayAddress: '192.0.2.50', selector: { matchLabels: selected } });
            const ns = await pairedNamespace(env);
            await createRemoteService(env, ns, 'web', { labels: selected });
            await eventually('the mirror', async () => (await endpointsOf(env, ns, 'web-stale')).length === 1);
            const cachedVersion = () => mirror.controller.services.store.get(ns, 'web-stale')?.metadata?.resourceVersion;
            await eventually('the mirror cached as stored', async () => cachedVersion() === (await mirrorService(env, ns, 'web-stale'))?.metadata?.resourceVersion);

            // Every watch of the replica goes dead without a sound; the Services watch then misses
            // someone's change to the mirror, so the update below is planned from a stale cache.
            await new Promise((resolve) => setTimeout(resolve, 600));
            assert.ok(proxy.forgetIdle(500) >= 5, 'the watches are forgotten');
            await env.local.admin.mergePatch(objectPath(Services, ns, 'web-stale'), { metadata: { annotations: { touched: 'by someone' } } });
            await patchRemoteService(env, ns, 'web', { spec: { ports: [{ name: 'http', port: 80 }, { name: 'admin', port: 9000 }] } });
            // Within the deadline only if the stale read restarts the watch (the inactivity limit is minutes).
            await eventually('the mirror updated', async () => (await mirrorService(env, ns, 'web-stale'))?.spec?.ports?.length === 2, 30_000);
            assert.equal(mirror.controller.services.stats.staleWatchRestarts, 1, JSON.stringify(mirror.controller.services.stats));
            assert.equal(mirror.controller.services.stats.inactivityAborts, 0);
        } finally {
            await mirror.stop();
            rest.close();
            await proxy.stop();
        }
    });

    it('waits for a missing credentials Secret with a Warning Event, and serves the Link once it exists', async () => {
        await env.local.admin.create(collectionPath(Links, linkNs), linkObject({ name: 'late', gatewayAddress: '192.0.2.30' }, 'late-creds'));
        await eventually('the MissingCredentials Event', () => hasEvent(env, linkNs, 'late', 'MissingCredentials', 'late-creds not found'));
        const ns = await pairedNamespace(env);
        await createRemoteService(env, ns, 'web');
        await env.local.admin.create(collectionPath(Secrets, linkNs), {
            metadata: { name: 'late-creds' },
            type: 'mirror.linkerd.io/remote-kubeconfig',
            data: { kubeconfig: Buffer.from(readFileSync(env.remote.state.kubeconfig)).toString('base64') },
        });
        await eventually('the mirror once the Secret exists', async () => (await endpointsOf(env, ns, 'web-late')).join() === 'IPv4 192.0.2.30 ready');
    });

    it('reports a remote cluster that refuses the credentials as a Warning Event, and recovers when the Secret is rotated', async () => {
        await env.local.admin.create(collectionPath(Secrets, linkNs), {
            metadata: { name: 'bad-creds' },
            type: 'mirror.linkerd.io/remote-kubeconfig',
            data: { kubeconfig: Buffer.from(kubeconfigForToken(env.remote.state, 'nobody', 'not-a-valid-token')).toString('base64') },
        });
        await env.local.admin.create(collectionPath(Links, linkNs), linkObject({ name: 'refused', gatewayAddress: '192.0.2.31' }, 'bad-creds'));
        await eventually('the RemoteClusterUnreachable Event', () => hasEvent(env, linkNs, 'refused', 'RemoteClusterUnreachable', 'Unauthorized'));
        await eventually('RemoteReadable False, Unauthorized, in the Link status', async () => {
            const conditions = (await getLink(env, linkNs, 'refused')).status?.conditions ?? [];
            return conditions.some((c) => c.type === 'RemoteReadable' && c.status === 'False' && c.reason === 'Unauthorized');
        });
        const refusedWatch = running.controller.remoteWatchOf('refused');
        assert.equal(refusedWatch?.synced, false);
        const [east, ns] = [running.controller.remoteWatchOf('east'), await pairedNamespace(env)];
        await createRemoteService(env, ns, 'web');

        await env.local.admin.mergePatch(objectPath(Secrets, linkNs, 'bad-creds'), {
            data: { kubeconfig: Buffer.from(readFileSync(env.remote.state.kubeconfig)).toString('base64') },
        });
        await eventually('the mirror with the rotated credentials', async () => (await endpointsOf(env, ns, 'web-refused')).join() === 'IPv4 192.0.2.31 ready');
        assert.notEqual(running.controller.remoteWatchOf('refused'), refusedWatch);
        assert.equal(running.controller.remoteWatchOf('east'), east, 'a Secret of another Link restarts nothing else');
    });
});
