// The remote cluster misbehaves: frozen (SIGSTOP), stopped and back, or refusing a revoked
// token. Mirrors stay exactly as they are throughout; the Link says what is wrong (the
// RemoteReadable condition, an Event, a metric); once the remote is back everything converges
// with no restart. And the service-mirror command as users run it, reading the remote through
// a proxy the test freezes: SIGTERM ends the process within its bound while the remote hangs,
// and neither cluster's token shows in its debug logs.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { collectionPath, Links, objectPath, Secrets, Services } from '../../src/kube/resources.js';
import { kubeconfigForToken, startApiserverAgain, stopApiserver } from '../../src/testing/cluster.js';
import { eventually } from '../../src/testing/harness.js';
import { TcpProxy } from '../../src/testing/tcp-proxy.js';
import { kubeconfigFile } from './cli-support.js';
import {
    createLink,
    createRemoteService,
    endpointsOf,
    EXPORTED,
    getLink,
    hasEvent,
    linkObject,
    mirrorHolds,
    mirrorService,
    pairedNamespace,
    runServiceMirror,
    startMirrorEnv,
} from './mirror-support.js';
import { ControllerProcess } from './process-support.js';

const env = await startMirrorEnv('mirror-faults');

/** A Link of its own (selecting only its Services), a remote Service `web` and its mirror, with the controller running. */
async function mirroredLink(link: string, gateway: string, services = ['web']) {
    const ctlNs = await env.local.namespace(`mc-${link}`);
    const labels = { ...EXPORTED, link };
    await createLink(env, ctlNs, { name: link, gatewayAddress: gateway, selector: { matchLabels: labels } });
    const ns = await pairedNamespace(env);
    for (const name of services) await createRemoteService(env, ns, name, { labels });
    const running = await runServiceMirror(env, ctlNs);
    for (const name of services) {
        await eventually(`the mirror of ${name}`, async () => (await endpointsOf(env, ns, `${name}-${link}`)).join() === `IPv4 ${gateway} ready`);
    }
    return { ctlNs, ns, labels, running };
}

const readable = async (ns: string, link: string) => (await getLink(env, ns, link)).status?.conditions?.find((c) => c.type === 'RemoteReadable');

describe('service mirror with a misbehaving remote cluster', () => {
    it('keeps the mirrors through a frozen remote apiserver (SIGSTOP) and converges after SIGCONT', async (t) => {
        const { ns, labels, running } = await mirroredLink('frozen', '192.0.2.71');

        process.kill(env.remote.state.apiserverPid, 'SIGSTOP');
        try {
            await mirrorHolds(env, ns, 'web-frozen', ['IPv4 192.0.2.71 ready'], Date.now() + 6000);
        } finally {
            process.kill(env.remote.state.apiserverPid, 'SIGCONT');
        }
        const resumed = Date.now();
        await createRemoteService(env, ns, 'api', { labels });
        await eventually('a Service exported after the thaw is mirrored', async () => (await endpointsOf(env, ns, 'api-frozen')).length === 1, 60_000);
        t.diagnostic(`SIGCONT → new export mirrored: ${Date.now() - resumed} ms`);
        assert.deepEqual(await endpointsOf(env, ns, 'web-frozen'), ['IPv4 192.0.2.71 ready']);
        await running.stop();
    });

    it('says RemoteReadable False while the remote apiserver is down, keeps the mirrors, and converges when it is back', async (t) => {
        const { ctlNs, ns, labels, running } = await mirroredLink('down', '192.0.2.72', ['web', 'gone-later']);
        await eventually('RemoteReadable True', async () => (await readable(ctlNs, 'down'))?.status === 'True');

        // Down until all that is seen, then started again.
        await stopApiserver(env.remote.state.name);
        try {
            await eventually('RemoteReadable False', async () => (await readable(ctlNs, 'down'))?.status === 'False', 20_000);
            const down = await readable(ctlNs, 'down');
            assert.equal(down?.reason, 'Unreachable');
            assert.match(down?.message ?? '', /cannot be read/);
            await eventually('the RemoteClusterUnreachable Event', () => hasEvent(env, ctlNs, 'down', 'RemoteClusterUnreachable'));
            const metrics = await running.registry.metrics();
            assert.match(metrics, /mesh_endpoints_service_mirror_remote_readable\{link="down",target_cluster_name="down"\} 0/);
            assert.deepEqual(await endpointsOf(env, ns, 'web-down'), ['IPv4 192.0.2.72 ready'], 'mirrors stay while the remote is down');
            assert.deepEqual(await endpointsOf(env, ns, 'gone-later-down'), ['IPv4 192.0.2.72 ready']);
        } finally {
            await startApiserverAgain(env.remote.state.name);
        }
        const back = Date.now();
        await env.remote.admin.delete(objectPath(Services, ns, 'gone-later'));
        await createRemoteService(env, ns, 'api', { labels });
        await eventually('converged', async () => (await endpointsOf(env, ns, 'api-down')).length === 1 && (await endpointsOf(env, ns, 'gone-later-down')).length === 0, 60_000);
        t.diagnostic(`remote back → converged: ${Date.now() - back} ms`);
        await eventually('RemoteReadable True again', async () => (await readable(ctlNs, 'down'))?.status === 'True');
        await eventually('the RemoteClusterReadable Event', () => hasEvent(env, ctlNs, 'down', 'RemoteClusterReadable'));
        await running.stop();
    });

    it('says RemoteReadable False (Forbidden) when the remote revokes the Link access, keeps the mirrors, and recovers with rotated credentials', async () => {
        const ctlNs = await env.local.namespace('mc-revoked');
        const labels = { ...EXPORTED, link: 'revoked' };
        const ns = await pairedNamespace(env);
        await createRemoteService(env, ns, 'web', { labels });
        // A remote ServiceAccount that may read Services and EndpointSlices, reached through a proxy we can cut.
        const saNs = await env.remote.namespace('mirror-sa');
        await env.remote.admin.create(`/api/v1/namespaces/${saNs}/serviceaccounts`, { metadata: { name: 'reader' } });
        await env.remote.admin.create('/apis/rbac.authorization.k8s.io/v1/clusterroles', {
            metadata: { name: `${saNs}-reader` },
            rules: [
                { apiGroups: [''], resources: ['services'], verbs: ['list', 'watch'] },
                { apiGroups: ['discovery.k8s.io'], resources: ['endpointslices'], verbs: ['list', 'watch'] },
            ],
        });
        await env.remote.admin.create('/apis/rbac.authorization.k8s.io/v1/clusterrolebindings', {
            metadata: { name: `${saNs}-reader` },
            roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: `${saNs}-reader` },
            subjects: [{ kind: 'ServiceAccount', name: 'reader', namespace: saNs }],
        });
        const review = await env.remote.admin.create<{ status: { token: string } }>(`/api/v1/namespaces/${saNs}/serviceaccounts/reader/token`, {
            apiVersion: 'authentication.k8s.io/v1',
            kind: 'TokenRequest',
            spec: { expirationSeconds: 3600 },
        } as never);
        const proxy = new TcpProxy('127.0.0.1', env.remote.state.apiserverPort);
        await proxy.start();
        const viaProxy = { ...env.remote.state, server: `https://127.0.0.1:${proxy.port}` };
        const kubeconfig = (token: string) => Buffer.from(kubeconfigForToken(viaProxy, 'reader', token)).toString('base64');
        await env.local.admin.create(collectionPath(Secrets, ctlNs), {
            metadata: { name: 'creds-revoked' },
            type: 'mirror.linkerd.io/remote-kubeconfig',
            data: { kubeconfig: kubeconfig(review.status.token) },
        });
        await env.local.admin.create(collectionPath(Links, ctlNs), linkObject({ name: 'revoked', gatewayAddress: '192.0.2.73', selector: { matchLabels: labels } }, 'creds-revoked'));
        const running = await runServiceMirror(env, ctlNs);
        await eventually('the mirror', async () => (await endpointsOf(env, ns, 'web-revoked')).join() === 'IPv4 192.0.2.73 ready');

        // The remote's admin takes the Link's access away; open watches end when the path is cut.
        await env.remote.admin.delete(`/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/${saNs}-reader`);
        proxy.cutAll();
        await eventually('RemoteReadable False, Forbidden', async () => (await readable(ctlNs, 'revoked'))?.reason === 'Forbidden', 30_000);
        await eventually('the RemoteClusterUnreachable Event', () => hasEvent(env, ctlNs, 'revoked', 'RemoteClusterUnreachable', 'forbidden'));
        await mirrorHolds(env, ns, 'web-revoked', ['IPv4 192.0.2.73 ready'], Date.now() + 2000);

        await env.local.admin.mergePatch(objectPath(Secrets, ctlNs, 'creds-revoked'), { data: { kubeconfig: Buffer.from(kubeconfigForToken(viaProxy, 'admin', env.remote.state.adminToken)).toString('base64') } });
        await createRemoteService(env, ns, 'api', { labels });
        await eventually('the new export mirrored with the rotated credentials', async () => (await endpointsOf(env, ns, 'api-revoked')).length === 1, 30_000);
        await eventually('RemoteReadable True again', async () => (await readable(ctlNs, 'revoked'))?.status === 'True');
        await running.stop();
        await proxy.stop();
    });

    it('makes the mirrors of a Link that turned invalid not ready once the stale window has run out, and ready again once it is fixed', async () => {
        const { ctlNs, ns, running } = await mirroredLink('invalid', '192.0.2.74');

        await env.local.admin.mergePatch(objectPath(Links, ctlNs, 'invalid'), { spec: { gatewayPort: 'not-a-port' } });
        await eventually('the InvalidLink Event', () => hasEvent(env, ctlNs, 'invalid', 'InvalidLink', 'gatewayPort'));
        // TEST_DNS's window is 2 s: kept ready for it, then not ready, never deleted.
        await eventually('not ready past the window', async () => (await endpointsOf(env, ns, 'web-invalid')).join() === 'IPv4 192.0.2.74 not-ready', 15_000);
        await eventually('the MirrorsNotReady Event', () => hasEvent(env, ctlNs, 'invalid', 'MirrorsNotReady'));

        await env.local.admin.mergePatch(objectPath(Links, ctlNs, 'invalid'), { spec: { gatewayPort: '4143' } });
        await eventually('ready again', async () => (await endpointsOf(env, ns, 'web-invalid')).join() === 'IPv4 192.0.2.74 ready');
        await running.stop();
    });
});

describe('the service-mirror process', () => {
    it('exits within 10 s of SIGTERM while the remote cluster hangs', async () => {
        const linkNs = await env.local.namespace('linkerd-multicluster');
        const ns = await pairedNamespace(env);
        await createRemoteService(env, ns, 'api');
        // The Link's credentials reach the remote apiserver only through the proxy.
        const remoteProxy = new TcpProxy('127.0.0.1', env.remote.state.apiserverPort);
        const remotePort = await remoteProxy.start();
        const remoteKubeconfig = env.remote.kubeConfig(`https://127.0.0.1:${remotePort}`).exportConfig();
        await env.local.admin.create(collectionPath(Secrets, linkNs), {
            metadata: { name: 'creds-east' },
            type: 'mirror.linkerd.io/remote-kubeconfig',
            data: { kubeconfig: Buffer.from(remoteKubeconfig).toString('base64') },
        });
        await env.local.admin.create(collectionPath(Links, linkNs), linkObject({ name: 'east', gatewayAddress: '192.0.2.10' }, 'creds-east'));
        const output: string[] = [];
        const mirror = new ControllerProcess(
            ['service-mirror', '--kubeconfig', kubeconfigFile(env.local.admin, 'mirrorstop-local'), '--namespace', linkNs,
                '--admin-addr', '127.0.0.1:0', '--log-level', 'debug'],
            output,
        );
        try {
            await eventually('the remote Service mirrored', async () => (await mirrorService(env, ns, 'api-east')) !== undefined, 60_000);
            remoteProxy.freeze(true); // the remote's watches and any list stay open and silent
            await createRemoteService(env, ns, 'web'); // a change the frozen watch cannot deliver
            await new Promise((r) => setTimeout(r, 1000));
            const tookMs = await mirror.terminate();
            assert.notEqual(mirror.exitCode, undefined, 'the process exited');
            assert.ok(tookMs < 10_000, `exited ${tookMs} ms after SIGTERM`);
            console.log(`# exited ${tookMs} ms after SIGTERM with a frozen remote cluster (code ${mirror.exitCode})`);
        } finally {
            remoteProxy.freeze(false);
            remoteProxy.cutAll();
            await remoteProxy.stop();
        }
        const tokens = [env.local.state.adminToken, env.remote.state.adminToken];
        assert.ok(output.length > 5, 'the process logged');
        assert.deepEqual(output.filter((line) => tokens.some((t) => line.includes(t))), [], 'no token in the logs');
    });
});
