// Issue 22, "the mirror changes only what it created" and "bounded by the configuration, not by
// the remote", against two real clusters: a user's Service (and its slice) under a mirror's
// name, a mirror of another Link, a federated and an endpoint mirror name taken, spoofed remote
// labels and annotations, remote endpoint addresses no endpoint may hold, and a remote that
// exports more Services than --max-mirrors-per-link.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1EndpointSlice, V1Service } from '@kubernetes/client-node';
import { collectionPath, EndpointSlices, Links, objectPath, Services } from '../../src/kube/resources.js';
import { eventually, setUp } from '../../src/testing/harness.js';
import {
    createLink,
    createRemoteService,
    deleteRemoteService,
    endpointsOf,
    EXPORTED,
    getLink,
    hasEvent,
    mirrorService,
    pairedNamespace,
    patchRemoteService,
    runServiceMirror,
    startMirrorEnv,
} from './mirror-support.js';

const env = await startMirrorEnv('smo');
const linkNs = await setUp('a namespace', () => env.local.namespace('mc'));
await setUp('the service mirror', () => runServiceMirror(env, linkNs, { enableHeadlessServices: true }));
const FEDERATED = { 'mirror.linkerd.io/federated': 'member' };
await setUp('the Link east', async () => {
    await createLink(env, linkNs, { name: 'east', gatewayAddress: '192.0.2.1', federatedSelector: { matchLabels: FEDERATED } });
    await env.local.admin.mergePatch(objectPath(Links, linkNs, 'east'), { spec: { remoteDiscoverySelector: { matchLabels: { 'mirror.linkerd.io/exported': 'remote-discovery' } } } });
});

/** A local Service someone else made, with a selector and its own EndpointSlice. */
async function usersService(ns: string, name: string, labels?: Record<string, string>, annotations?: Record<string, string>) {
    const svc = await env.local.admin.create<V1Service>(collectionPath(Services, ns), {
        metadata: { name, labels, annotations },
        spec: { selector: { app: name }, ports: [{ name: 'http', port: 8080 }] },
    });
    const slice = await env.local.admin.create<V1EndpointSlice>(collectionPath(EndpointSlices, ns), {
        metadata: { name: `${name}-users`, labels: { 'kubernetes.io/service-name': name, 'endpointslice.kubernetes.io/managed-by': 'users-controller' } },
        addressType: 'IPv4',
        endpoints: [{ addresses: ['10.2.0.1'], conditions: { ready: true } }],
        ports: [{ name: 'http', port: 8080, protocol: 'TCP' }],
    });
    return { svc, slice };
}

/** Asserts the Service and its slice are exactly as made: same resourceVersion, same spec. */
async function assertUntouched(ns: string, made: { svc: V1Service; slice: V1EndpointSlice }) {
    const name = made.svc.metadata!.name!;
    const svc = await env.local.admin.get<V1Service>(objectPath(Services, ns, name));
    assert.equal(svc.metadata?.resourceVersion, made.svc.metadata?.resourceVersion, `${name} was written`);
    assert.deepEqual(svc.spec, made.svc.spec);
    assert.deepEqual(svc.metadata?.labels, made.svc.metadata?.labels);
    const slice = await env.local.admin.get<V1EndpointSlice>(objectPath(EndpointSlices, ns, made.slice.metadata!.name!));
    assert.equal(slice.metadata?.resourceVersion, made.slice.metadata?.resourceVersion, `${name}'s slice was written`);
}

/** The Link status entry of a remote Service not mirrored, with its reason and message. */
async function notMirrored(ns: string, remote: string): Promise<{ reason?: string; message?: string } | undefined> {
    const link = await getLink(env, linkNs, 'east');
    const entry = link.status?.mirrorServices?.find((e) => e.remoteRef.namespace === ns && e.remoteRef.name === remote);
    return entry?.conditions?.[0];
}

describe('ownership: the mirror changes only what it created', () => {
    it('leaves a user’s own Service cart-east and its slice untouched, lists it in the Link status and says so in an Event, while other Services mirror', async () => {
        const ns = await pairedNamespace(env, 'shop');
        const made = await usersService(ns, 'cart-east');
        await createRemoteService(env, ns, 'cart');
        await createRemoteService(env, ns, 'web');
        await eventually('web mirrored', async () => (await endpointsOf(env, ns, 'web-east')).length === 1);
        const text = `${ns}/cart-east exists and is not a mirror of Link east`;
        await eventually('the Event', () => hasEvent(env, linkNs, 'east', 'NotOwned', text));
        await eventually('the status entry', async () => (await notMirrored(ns, 'cart'))?.reason === 'NotOwned');
        assert.match((await notMirrored(ns, 'cart'))!.message!, new RegExp(`^${text}: it is not labelled mirror\\.linkerd\\.io/mirrored-service=true`));
        await assertUntouched(ns, made);

        // Updated, then unexported remotely (the delete path): still untouched.
        await patchRemoteService(env, ns, 'cart', { spec: { ports: [{ name: 'http', port: 80 }, { name: 'admin', port: 9000 }] } });
        await patchRemoteService(env, ns, 'cart', { metadata: { labels: { 'mirror.linkerd.io/exported': null } } });
        await eventually('the entry gone with the export', async () => (await notMirrored(ns, 'cart')) === undefined);
        await assertUntouched(ns, made);
    });

    it('leaves alone a mirror labelled for another Link, and one of another cluster', async () => {
        const ns = await pairedNamespace(env, 'shop');
        const mirrorLabels = { 'mirror.linkerd.io/mirrored-service': 'true', 'mirror.linkerd.io/cluster-name': 'east' };
        const otherLink = await usersService(ns, 'api-east', mirrorLabels, { 'mesh-endpoints.io/link': 'team-b/east' });
        const otherCluster = await usersService(ns, 'db-east', { ...mirrorLabels, 'mirror.linkerd.io/cluster-name': 'west' });
        await createRemoteService(env, ns, 'api');
        await createRemoteService(env, ns, 'db');
        await eventually('both listed', async () => (await notMirrored(ns, 'api'))?.reason === 'NotOwned' && (await notMirrored(ns, 'db'))?.reason === 'NotOwned');
        assert.match((await notMirrored(ns, 'api'))!.message!, /is not a mirror of Link east: it is a mirror of Link team-b\/east/);
        assert.match((await notMirrored(ns, 'db'))!.message!, /is not a mirror of Link east: it mirrors cluster "west"/);
        await deleteRemoteService(env, ns, 'api');
        await eventually('the entry gone with the remote', async () => (await notMirrored(ns, 'api')) === undefined);
        await assertUntouched(ns, otherLink);
        await assertUntouched(ns, otherCluster);
    });

    it('leaves alone a user’s Service with a federated Service’s name, and one with an endpoint mirror’s name', async () => {
        const ns = await pairedNamespace(env, 'shop');
        const fed = await usersService(ns, 'pay-federated');
        await createRemoteService(env, ns, 'pay', { labels: FEDERATED });
        await eventually('the federated Event', () => hasEvent(env, linkNs, 'east', 'FederatedServiceNotConverged', `${ns}/pay-federated exists and is not a federated Service`));
        await assertUntouched(ns, fed);

        const pod = await usersService(ns, 'pod-1-east');
        // Another Link's endpoint mirror of the same headless mirror name: not deleted as one of ours gone stale.
        const othersPod = await usersService(
            ns,
            'pod-9-east',
            { 'mirror.linkerd.io/mirrored-service': 'true', 'mirror.linkerd.io/cluster-name': 'east', 'mirror.linkerd.io/headless-mirror-svc-name': 'pg-east' },
            { 'mesh-endpoints.io/link': 'team-b/east' },
        );
        await env.remote.admin.create(collectionPath(Services, ns), { metadata: { name: 'pg', labels: EXPORTED }, spec: { clusterIP: 'None', ports: [{ name: 'tcp', port: 5432 }] } });
        await remoteSlice(ns, 'pg', [{ ip: '10.1.0.10', hostname: 'pod-0' }, { ip: '10.1.0.11', hostname: 'pod-1' }]);
        await eventually('pod-0 mirrored', async () => (await mirrorService(env, ns, 'pod-0-east')) !== undefined);
        await eventually('the Event for pod-1', () => hasEvent(env, linkNs, 'east', 'NotOwned', `hostname "pod-1" has no endpoint mirror: ${ns}/pod-1-east exists and is not a mirror of Link east`));
        await assertUntouched(ns, pod);
        await assertUntouched(ns, othersPod);
    });
});

describe('remote metadata never overrides the mirror’s own', () => {
    it('drops spoofed ownership, Linkerd, product and Kubernetes keys of the remote Service, and keeps the rest', async () => {
        const ns = await pairedNamespace(env, 'shop');
        const spoof = {
            'mirror.linkerd.io/cluster-name': 'west',
            'mirror.linkerd.io/mirrored-service': 'false',
            'multicluster.linkerd.io/remote-discovery': 'west',
            'mesh-endpoints.io/link': 'evil.ns-x',
            'service.kubernetes.io/service-proxy-name': 'nobody',
            'endpointslice.kubernetes.io/skip-mirror': 'true',
        };
        await createRemoteService(env, ns, 'spoof', {
            labels: { ...EXPORTED, ...spoof, 'app.kubernetes.io/name': 'spoof', team: 'a' },
            annotations: { ...spoof, 'mesh-endpoints.io/link': 'evil/link', 'mirror.linkerd.io/remote-svc-fq-name': 'evil.example.com', 'kubernetes.io/description': 'x', note: 'kept' },
        });
        await eventually('the mirror', async () => (await endpointsOf(env, ns, 'spoof-east')).length === 1);
        const mirror = (await mirrorService(env, ns, 'spoof-east'))!;
        assert.deepEqual(mirror.metadata?.labels, {
            'app.kubernetes.io/name': 'spoof',
            team: 'a',
            'mirror.linkerd.io/mirrored-service': 'true',
            'mirror.linkerd.io/cluster-name': 'east',
        });
        assert.deepEqual(mirror.metadata?.annotations, {
            note: 'kept',
            'mirror.linkerd.io/remote-svc-fq-name': `spoof.${ns}.svc.cluster.local`,
            'mirror.linkerd.io/remote-resource-version': mirror.metadata?.annotations?.['mirror.linkerd.io/remote-resource-version'],
            'mesh-endpoints.io/link': `${linkNs}/east`,
        });
    });
});

describe('remote endpoint addresses', () => {
    it('are refused by a real apiserver when loopback, link-local, unspecified or link-local multicast, so a remote can only send them by lying', async () => {
        const ns = await env.remote.namespace('probe');
        for (const ip of ['127.0.0.1', '169.254.169.254', '0.0.0.0', '224.0.0.1']) {
            await assert.rejects(remoteSlice(ns, `x${ip.replaceAll('.', '-')}`, [{ ip }]), /Invalid|may not be|must not be/i, ip);
        }
    });

    it('that no endpoint may hold give a remote-discovery, a gateway and a headless mirror nothing, with a Warning naming the remote slice', async () => {
        const ns = await pairedNamespace(env, 'shop');
        // What a real apiserver lets through and src/ip/ refuses: other multicast, "this network", broadcast.
        const hostile = ['239.1.1.1', '0.1.2.3', '255.255.255.255'];
        await createRemoteService(env, ns, 'gw', { endpoints: 'none' });
        await remoteSlice(ns, 'gw', hostile.map((ip) => ({ ip })));
        await createRemoteService(env, ns, 'rd', { labels: { 'mirror.linkerd.io/exported': 'remote-discovery' }, endpoints: 'none' });
        await remoteSlice(ns, 'rd', hostile.map((ip) => ({ ip })));
        await env.remote.admin.create(collectionPath(Services, ns), { metadata: { name: 'sts', labels: EXPORTED }, spec: { clusterIP: 'None', ports: [{ name: 'tcp', port: 5432 }] } });
        await remoteSlice(ns, 'sts', [{ ip: '10.1.0.20', hostname: 'sts-0' }, { ip: '239.1.1.1', hostname: 'sts-1' }]);
        for (const service of ['gw', 'rd']) {
            await eventually(`the Warning for ${service}`, () =>
                hasEvent(env, linkNs, 'east', 'RemoteEndpointsRefused', `remote EndpointSlice ${ns}/${service}-hostile: left out "239.1.1.1" (multicast), "0.1.2.3" (unspecified), "255.255.255.255" (broadcast)`),
            );
        }
        await eventually('the Warning for sts', () => hasEvent(env, linkNs, 'east', 'RemoteEndpointsRefused', `remote EndpointSlice ${ns}/sts-hostile: left out "239.1.1.1" (multicast)`));
        await eventually('sts-0 mirrored', async () => (await mirrorService(env, ns, 'sts-0-east')) !== undefined);
        // The gateway mirror exists with no endpoint (the remote has none ready), the remote-discovery mirror has no slices at all.
        assert.ok(await mirrorService(env, ns, 'gw-east'));
        assert.deepEqual(await endpointsOf(env, ns, 'gw-east'), []);
        assert.ok(await mirrorService(env, ns, 'rd-east'));
        assert.deepEqual(await endpointsOf(env, ns, 'rd-east'), []);
        assert.equal(await mirrorService(env, ns, 'sts-1-east'), undefined);
        const hosts = (await env.local.admin.get<{ items: V1EndpointSlice[] }>(collectionPath(EndpointSlices, ns), { labelSelector: 'kubernetes.io/service-name=sts-east' })).items;
        // One endpoint per address type of the mirror (the local cluster may be dual-stack), all sts-0.
        assert.deepEqual([...new Set(hosts.flatMap((s) => (s.endpoints ?? []).map((e) => e.hostname)))], ['sts-0']);
        // Every address the mirror wrote in this namespace is one an endpoint may hold.
        const all = (await env.local.admin.get<{ items: V1EndpointSlice[] }>(collectionPath(EndpointSlices, ns))).items.flatMap((s) => (s.endpoints ?? []).flatMap((e) => e.addresses));
        for (const address of all) assert.ok(!hostile.includes(address), address);
    });
});

describe('bounded by --max-mirrors-per-link', () => {
    it('mirrors exactly the 20 oldest of 60 exports, says MirrorLimitReached, and hands a freed place to the next oldest', async () => {
        const limitNs = await env.local.namespace('mc-limit');
        await runServiceMirror(env, limitNs, { maxMirrorsPerLink: 20 });
        const ns = await pairedNamespace(env, 'many');
        const selected = { 'limit-test': 'true' };
        // Created a few at a time, so creation times (whole seconds) both differ and tie.
        for (let i = 0; i < 60; i += 6) {
            await Promise.all([...Array(6).keys()].map((j) => createRemoteService(env, ns, `s${String(59 - i - j).padStart(2, '0')}`, { labels: selected, endpoints: 'none' })));
        }
        await createLink(env, limitNs, { name: 'lim', gatewayAddress: '192.0.2.2', selector: { matchLabels: selected } });
        const oldest = async (n: number) => {
            const items = (await env.remote.admin.get<{ items: V1Service[] }>(collectionPath(Services, ns))).items;
            const rank = (s: V1Service) => `${String(s.metadata?.creationTimestamp)} ${s.metadata?.name}`;
            return items.sort((a, b) => (rank(a) < rank(b) ? -1 : 1)).slice(0, n).map((s) => `${s.metadata?.name}-lim`).sort();
        };
        const mirrors = async () =>
            (await env.local.admin.get<{ items: V1Service[] }>(collectionPath(Services, ns), { labelSelector: 'mirror.linkerd.io/cluster-name=lim' })).items.map((s) => s.metadata!.name!).sort();
        const expected = await oldest(20);
        await eventually('20 mirrors', async () => (await mirrors()).length === 20);
        assert.deepEqual(await mirrors(), expected);
        const condition = async () => (await getLink(env, limitNs, 'lim')).status?.conditions?.find((c) => c.type === 'MirrorLimitReached');
        await eventually('MirrorLimitReached', async () => (await condition())?.status === 'True');
        assert.match((await condition())!.message!, /exports 60 Services, more than --max-mirrors-per-link=20: the 20 oldest .* the other 40 are not/);

        const first = expected[0]!.replace(/-lim$/, '');
        await deleteRemoteService(env, ns, first);
        const next = await oldest(20);
        assert.equal(next.length, 20);
        await eventually('the next oldest mirrored', async () => JSON.stringify(await mirrors()) === JSON.stringify(next));
        assert.ok(!next.includes(`${first}-lim`));
    });
});

/** A remote EndpointSlice of `service`, one endpoint per address. */
async function remoteSlice(ns: string, service: string, endpoints: { ip: string; hostname?: string }[]) {
    await env.remote.admin.create(collectionPath(EndpointSlices, ns), {
        metadata: { name: `${service}-hostile`, labels: { 'kubernetes.io/service-name': service, 'endpointslice.kubernetes.io/managed-by': 'test' } },
        addressType: 'IPv4',
        endpoints: endpoints.map((e) => ({ addresses: [e.ip], conditions: { ready: true }, ...(e.hostname && { hostname: e.hostname }) })),
        ports: [{ name: 'tcp', port: 5432, protocol: 'TCP' }],
    });
}
