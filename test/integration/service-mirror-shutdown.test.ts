// The service-mirror command as users run it, reading a remote cluster through a proxy the test
// controls: SIGTERM ends the process within its bound while the remote cluster hangs, and
// neither cluster's token shows in its debug logs.
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { collectionPath, Links, Secrets } from '../../src/kube/resources.js';
import { eventually } from '../../src/testing/harness.js';
import { TcpProxy } from '../../src/testing/tcp-proxy.js';
import { kubeconfigFile } from './cli-support.js';
import { createRemoteService, linkObject, mirrorService, pairedNamespace, startMirrorEnv } from './mirror-support.js';
import { ControllerProcess } from './process-support.js';

const env = await startMirrorEnv('mirrorstop');
const remoteProxy = new TcpProxy('127.0.0.1', env.remote.state.apiserverPort);
const remotePort = await remoteProxy.start();
after(() => remoteProxy.stop());

describe('the service-mirror process', () => {
    it('exits within 10 s of SIGTERM while the remote cluster hangs', async () => {
        const linkNs = await env.local.namespace('linkerd-multicluster');
        const ns = await pairedNamespace(env);
        await createRemoteService(env, ns, 'api');
        // The Link's credentials reach the remote apiserver only through the proxy.
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
        }
        const tokens = [env.local.state.adminToken, env.remote.state.adminToken];
        assert.ok(output.length > 5, 'the process logged');
        assert.deepEqual(output.filter((line) => tokens.some((t) => line.includes(t))), [], 'no token in the logs');
    });
});
