// Linkerd's other mirror modes end to end on two real clusters: headless mirrors
// (--enable-headless-services), federated services (Link federatedServiceSelector and the local
// member, with --excluded-labels/--excluded-annotations) and --enable-namespace-creation.
// There is no endpoint controller in the test clusters: the remote EndpointSlices a StatefulSet
// would have (endpoints with hostnames) are written by the test.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1EndpointSlice, V1Namespace, V1Service } from '@kubernetes/client-node';
import { collectionPath, EndpointSlices, Namespaces, objectPath, Services } from '../../src/kube/resources.js';
import { eventually, setUp } from '../../src/testing/harness.js';
import {
    createLink,
    EXPORTED,
    mirrorService,
    mirrorSlices,
    pairedNamespace,
    patchRemoteService,
    runServiceMirror,
    startMirrorEnv,
} from './mirror-support.js';

const env = await startMirrorEnv('smm');
const linkNs = await setUp('a namespace', () => env.local.namespace('mc'));
const modes = {
    enableHeadlessServices: true,
    enableNamespaceCreation: true,
    localFederation: { selector: { matchLabels: { 'mirror.linkerd.io/federated': 'member' } }, excludedLabels: ['evil.linkerd/*', 'evil'], excludedAnnotations: ['evil.linkerd/*'] },
};
let running = await setUp('the service mirror', () => runServiceMirror(env, linkNs, modes));
await setUp('the Link east', () => createLink(env, linkNs, { name: 'east', gatewayAddress: '192.0.2.1', gatewayPort: '4143', federatedSelector: { matchLabels: { 'mirror.linkerd.io/federated': 'member' } } }));

/** A remote headless Service and the slice its StatefulSet's pods would give it. */
async function remoteStatefulSet(ns: string, name: string, pods: { hostname?: string; ip: string; ready?: boolean }[]): Promise<void> {
    await env.remote.admin.create(collectionPath(Services, ns), {
        metadata: { name, labels: { ...EXPORTED, app: name } },
        spec: { clusterIP: 'None', ports: [{ name: 'tcp', port: 5432 }] },
    });
    await setStatefulSetPods(ns, name, pods);
}

async function setStatefulSetPods(ns: string, name: string, pods: { hostname?: string; ip: string; ready?: boolean }[]): Promise<void> {
    const path = objectPath(EndpointSlices, ns, `${name}-sts`);
    const slice: V1EndpointSlice = {
        apiVersion: 'discovery.k8s.io/v1',
        kind: 'EndpointSlice',
        metadata: { name: `${name}-sts`, labels: { 'kubernetes.io/service-name': name, 'endpointslice.kubernetes.io/managed-by': 'test', 'service.kubernetes.io/headless': '' } },
        addressType: 'IPv4',
        endpoints: pods.map((p) => ({ addresses: [p.ip], ...(p.hostname ? { hostname: p.hostname } : {}), conditions: { ready: p.ready ?? true } })),
        ports: [{ name: 'tcp', port: 5432, protocol: 'TCP' }],
    };
    const current = await env.remote.admin.get<V1EndpointSlice>(path).catch(() => undefined);
    if (current) await env.remote.admin.replace(path, { ...slice, metadata: { ...slice.metadata, resourceVersion: current.metadata?.resourceVersion } });
    else await env.remote.admin.create(collectionPath(EndpointSlices, ns), slice);
}

/**
 * "hostname address ready" per endpoint of a Service's IPv4 mirror slices, sorted. (A headless
 * Service without a selector is dual-stack where the cluster is, so its mirror has an IPv6
 * slice as well, with the endpoint mirrors' IPv6 ClusterIPs.)
 */
async function hostLines(ns: string, service: string): Promise<string[]> {
    return (await mirrorSlices(env, ns, service))
        .filter((s) => s.addressType === 'IPv4')
        .flatMap((s) => (s.endpoints ?? []).map((e) => `${e.hostname ?? '-'} ${e.addresses.join(',')} ${e.conditions?.ready ? 'ready' : 'not-ready'}`))
        .sort();
}

async function localServices(ns: string): Promise<V1Service[]> {
    return (await env.local.admin.get<{ items: V1Service[] }>(collectionPath(Services, ns))).items;
}

describe('headless mirrors (--enable-headless-services)', () => {
    it('mirror a StatefulSet behind a headless Service as a headless mirror plus one endpoint mirror per pod hostname', async () => {
        const ns = await pairedNamespace(env);
        await remoteStatefulSet(ns, 'db', [
            { hostname: 'db-0', ip: '10.1.0.1' },
            { hostname: 'db-1', ip: '10.1.0.2' },
        ]);
        let pods: V1Service[] = [];
        await eventually('the headless mirror with both hostnames', async () => {
            pods = (await localServices(ns)).filter((s) => s.metadata?.labels?.['mirror.linkerd.io/headless-mirror-svc-name'] === 'db-east');
            return pods.length === 2 && (await hostLines(ns, 'db-east')).length === 2;
        });
        const mirror = (await mirrorService(env, ns, 'db-east'))!;
        assert.equal(mirror.spec?.clusterIP, 'None');
        assert.equal(mirror.metadata?.labels?.app, 'db');
        const byName = new Map(pods.map((s) => [s.metadata!.name!, s]));
        const db0 = byName.get('db-0-east')!;
        const db1 = byName.get('db-1-east')!;
        assert.ok(db0 && db1, 'endpoint mirrors db-0-east and db-1-east');
        assert.notEqual(db0.spec?.clusterIP, 'None');
        assert.equal(db0.metadata?.labels?.['mirror.linkerd.io/cluster-name'], 'east');
        assert.equal(db0.metadata?.annotations?.['mirror.linkerd.io/remote-svc-fq-name'], `db-0.db.${ns}.svc.cluster.local`);
        // pod-0.svc-<cluster> resolves: the headless mirror lists db-0 at db-0-east's ClusterIP.
        assert.deepEqual(await hostLines(ns, 'db-east'), [`db-0 ${db0.spec?.clusterIP} ready`, `db-1 ${db1.spec?.clusterIP} ready`]);
        const headlessSlices = await mirrorSlices(env, ns, 'db-east');
        const families = (mirror.spec?.ipFamilies ?? []).slice().sort();
        assert.deepEqual(headlessSlices.map((s) => s.addressType).sort(), families, 'one slice per family of the headless mirror');
        for (const slice of headlessSlices) {
            assert.equal(slice.metadata?.labels?.['service.kubernetes.io/headless'], '');
            assert.deepEqual(slice.ports?.map((p) => p.port), [5432]);
            const want = [db0, db1].map((svc) => svc.spec!.clusterIPs!.find((ip) => ip.includes(':') === (slice.addressType === 'IPv6'))).sort();
            assert.deepEqual(slice.endpoints?.map((e) => e.addresses[0]).sort(), want);
        }
        // Each endpoint mirror points at the gateway, on the gateway port, under its pod's fq-name.
        const [podSlice] = await mirrorSlices(env, ns, 'db-0-east');
        assert.deepEqual(podSlice!.endpoints?.map((e) => e.addresses[0]), ['192.0.2.1']);
        assert.deepEqual(podSlice!.ports?.map((p) => p.port), [4143]);
        assert.equal(podSlice!.metadata?.annotations?.['mirror.linkerd.io/remote-svc-fq-name'], `db-0.db.${ns}.svc.cluster.local`);
    });

    it('follow pods coming and going, keep a not-ready pod listed not ready, and remove everything on unexport', async () => {
        const ns = await pairedNamespace(env);
        await remoteStatefulSet(ns, 'kv', [{ hostname: 'kv-0', ip: '10.1.0.1' }]);
        await eventually('kv-0', async () => (await hostLines(ns, 'kv-east')).length === 1);

        await setStatefulSetPods(ns, 'kv', [
            { hostname: 'kv-0', ip: '10.1.0.1', ready: false },
            { hostname: 'kv-1', ip: '10.1.0.2' },
        ]);
        await eventually('kv-1 added, kv-0 not ready', async () => {
            const lines = await hostLines(ns, 'kv-east');
            return lines.length === 2 && lines[0]!.startsWith('kv-0 ') && lines[0]!.endsWith(' not-ready') && lines[1]!.endsWith(' ready');
        });
        await eventually('kv-0-east without endpoints while its pod is not ready', async () => (await mirrorSlices(env, ns, 'kv-0-east')).every((s) => (s.endpoints ?? []).length === 0));

        await setStatefulSetPods(ns, 'kv', [{ hostname: 'kv-1', ip: '10.1.0.2' }]);
        await eventually('kv-0-east deleted', async () => !(await mirrorService(env, ns, 'kv-0-east')) && (await mirrorSlices(env, ns, 'kv-0-east')).length === 0);
        // The headless mirror's slice and kv-0-east are synced apart: either may land first.
        await eventually('kv-0 gone from the headless mirror', async () => (await hostLines(ns, 'kv-east')).length === 1);

        await patchRemoteService(env, ns, 'kv', { metadata: { labels: { 'mirror.linkerd.io/exported': null } } });
        await eventually('every mirror of kv gone', async () => {
            const left = (await localServices(ns)).filter((s) => s.metadata?.labels?.['mirror.linkerd.io/cluster-name'] === 'east');
            return left.length === 0 && (await mirrorSlices(env, ns, 'kv-1-east')).length === 0 && (await mirrorSlices(env, ns, 'kv-east')).length === 0;
        });
    });

    it('mirror a headless Service whose pods have no hostnames as an ordinary mirror to the gateway', async () => {
        const ns = await pairedNamespace(env);
        await remoteStatefulSet(ns, 'plain', [{ ip: '10.1.0.1' }]);
        await eventually('a ClusterIP mirror with the gateway', async () => {
            const mirror = await mirrorService(env, ns, 'plain-east');
            return mirror !== undefined && mirror.spec?.clusterIP !== 'None' && (await hostLines(ns, 'plain-east')).join() === '- 192.0.2.1 ready';
        });
    });
});

describe('federated services', () => {
    it('gather the members of two Links and the local one in one <name>-federated, follow them leaving, and delete it after the last', async () => {
        await createLink(env, linkNs, { name: 'west', gatewayAddress: '192.0.2.2', selector: null, federatedSelector: { matchLabels: { 'fed-west': 'member' } } });
        const ns = await pairedNamespace(env);
        const fed = (): Promise<V1Service | undefined> => mirrorService(env, ns, 'web-federated');
        // remote-discovery lists the members in the order the Links saw them join (Linkerd appends on
        // Join), and east's and west's watches of the remote see `web` in either order: it is
        // compared as a set. A wait that times out says what it saw last.
        const discoveryBecomes = (remote: string | undefined, local: string | undefined) =>
            eventually(`remote-discovery ${remote}, local-discovery ${local}`, async () => {
                const annotations = (await fed())?.metadata?.annotations;
                const seen = annotations && [annotations['multicluster.linkerd.io/remote-discovery']?.split(',').sort().join(), annotations['multicluster.linkerd.io/local-discovery']];
                if (JSON.stringify(seen) !== JSON.stringify([remote, local])) throw new Error(`saw ${JSON.stringify(seen)}`);
                return true;
            });
        await env.remote.admin.create(collectionPath(Services, ns), {
            metadata: { name: 'web', labels: { 'mirror.linkerd.io/federated': 'member', 'fed-west': 'member', app: 'remote-web' } },
            spec: { ports: [{ name: 'http', port: 80 }] },
        });
        await discoveryBecomes('web@east,web@west', undefined);
        const remoteOnly = (await fed())!;
        assert.equal(remoteOnly.metadata?.labels?.['mirror.linkerd.io/mirrored-service'], 'true');
        assert.equal(remoteOnly.metadata?.labels?.['mirror.linkerd.io/cluster-name'], undefined);
        assert.equal(remoteOnly.metadata?.labels?.app, 'remote-web');
        assert.equal(remoteOnly.spec?.selector, undefined);
        assert.deepEqual(await mirrorSlices(env, ns, 'web-federated'), [], 'a federated Service has no endpoints of its own');

        // The local member joins; its metadata and ports win, minus the excluded keys.
        await env.local.admin.create(collectionPath(Services, ns), {
            metadata: {
                name: 'web',
                labels: { 'mirror.linkerd.io/federated': 'member', app: 'local-web', evil: 'x', 'evil.linkerd/y': 'z' },
                annotations: { 'evil.linkerd/a': 'b', 'config.linkerd.io/opaque-ports': '8080', kept: 'yes' },
            },
            spec: { ports: [{ name: 'http', port: 8080 }] },
        });
        await discoveryBecomes('web@east,web@west', 'web');
        const withLocal = (await fed())!;
        assert.equal(withLocal.metadata?.labels?.app, 'local-web');
        assert.equal(withLocal.metadata?.labels?.evil, undefined);
        assert.equal(withLocal.metadata?.labels?.['evil.linkerd/y'], undefined);
        assert.equal(withLocal.metadata?.annotations?.['evil.linkerd/a'], undefined);
        assert.equal(withLocal.metadata?.annotations?.kept, 'yes');
        assert.equal(withLocal.metadata?.annotations?.['config.linkerd.io/opaque-ports'], '8080');
        assert.deepEqual(withLocal.spec?.ports?.map((p) => p.port), [8080]);

        // A remote member leaving through one Link only.
        await patchRemoteService(env, ns, 'web', { metadata: { labels: { 'fed-west': null } } });
        await discoveryBecomes('web@east', 'web');

        // The local member leaving.
        await env.local.admin.delete(objectPath(Services, ns, 'web'));
        await discoveryBecomes('web@east', undefined);
        assert.equal((await fed())!.metadata?.labels?.app, 'remote-web', 'the remaining member’s metadata');

        // The last one leaving.
        await patchRemoteService(env, ns, 'web', { metadata: { labels: { 'mirror.linkerd.io/federated': null } } });
        await eventually('web-federated deleted', async () => (await fed()) === undefined);
    });

    it('refuse a headless member, as Linkerd does', async () => {
        const ns = await pairedNamespace(env);
        await env.remote.admin.create(collectionPath(Services, ns), {
            metadata: { name: 'hl', labels: { 'mirror.linkerd.io/federated': 'member' } },
            spec: { clusterIP: 'None', ports: [{ name: 'http', port: 80 }] },
        });
        await env.remote.admin.create(collectionPath(Services, ns), {
            metadata: { name: 'ok', labels: { 'mirror.linkerd.io/federated': 'member' } },
            spec: { ports: [{ name: 'http', port: 80 }] },
        });
        await eventually('ok-federated', async () => (await mirrorService(env, ns, 'ok-federated')) !== undefined);
        assert.equal(await mirrorService(env, ns, 'hl-federated'), undefined);
    });
});

describe('--enable-namespace-creation', () => {
    it('creates a missing namespace labelled as Linkerd does, and mirrors into it', async () => {
        const ns = await env.remote.namespace('only-remote');
        await env.remote.admin.create(collectionPath(Services, ns), { metadata: { name: 'web', labels: EXPORTED }, spec: { ports: [{ name: 'http', port: 80 }] } });
        await eventually('the mirror in a created namespace', async () => (await mirrorService(env, ns, 'web-east')) !== undefined);
        const created = await env.local.admin.get<V1Namespace>(objectPath(Namespaces, undefined, ns));
        assert.equal(created.metadata?.labels?.['mirror.linkerd.io/mirrored-service'], 'true');
        assert.equal(created.metadata?.labels?.['mirror.linkerd.io/cluster-name'], 'east');
    });
});

describe('restarts', () => {
    it('a new process with nothing changed writes nothing to headless mirrors, endpoint mirrors or federated Services', async () => {
        const ns = await pairedNamespace(env);
        await remoteStatefulSet(ns, 'rs', [
            { hostname: 'rs-0', ip: '10.1.0.1' },
            { hostname: 'rs-1', ip: '10.1.0.2', ready: false },
        ]);
        await env.remote.admin.create(collectionPath(Services, ns), {
            metadata: { name: 'fed', labels: { 'mirror.linkerd.io/federated': 'member' } },
            spec: { ports: [{ name: 'http', port: 80 }] },
        });
        await env.local.admin.create(collectionPath(Services, ns), {
            metadata: { name: 'fed', labels: { 'mirror.linkerd.io/federated': 'member' } },
            spec: { ports: [{ name: 'http', port: 80 }] },
        });
        await eventually('converged', async () => {
            const fed = await mirrorService(env, ns, 'fed-federated');
            return (
                (await hostLines(ns, 'rs-east')).length === 2 &&
                (await mirrorSlices(env, ns, 'rs-0-east')).some((s) => (s.endpoints ?? []).length === 1) &&
                fed?.metadata?.annotations?.['multicluster.linkerd.io/local-discovery'] === 'fed'
            );
        });
        await new Promise((r) => setTimeout(r, 1000));
        await running.stop();
        running = await runServiceMirror(env, linkNs, modes);
        await eventually('the new process watching east', () => running.controller.controllerOf('east')?.ready === true);
        // Time for every queued sync of the new leader to run.
        await new Promise((r) => setTimeout(r, 3000));
        assert.deepEqual(running.rest.writesMatching(`/namespaces/${ns}/`), []);
        // And it is the one serving them now.
        await setStatefulSetPods(ns, 'rs', [{ hostname: 'rs-0', ip: '10.1.0.1' }]);
        await eventually('rs-1-east deleted by the new process', async () => !(await mirrorService(env, ns, 'rs-1-east')));
    });
});
