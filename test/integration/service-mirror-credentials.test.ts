// A credentials Secret is untrusted input: whoever may write a Secret in the Links' namespace
// writes it. On real clusters: an exec plugin is not run (the file it would create never
// appears), a tokenFile is neither read nor sent (a loopback listener at the kubeconfig's
// server hears nothing), an http:// server is refused; each such Link shows
// RemoteCredentialsValid=False naming the field and a Warning Event, and is not served, while
// a Link with the token kubeconfig `linkerd multicluster link` writes goes on being served.
// With --allow-insecure-remote-tls the insecure kubeconfigs are accepted.
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer as createHttpServer, type IncomingMessage } from 'node:http';
import { createServer, type AddressInfo, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { parse, stringify } from 'yaml';
import { collectionPath, Links, objectPath, Secrets } from '../../src/kube/resources.js';
import { eventually, setUp } from '../../src/testing/harness.js';
import { cli } from './cli-support.js';
import {
    createRemoteService,
    getLink,
    linkEvents,
    linkObject,
    mirrorService,
    pairedNamespace,
    runServiceMirror,
    startMirrorEnv,
} from './mirror-support.js';

const env = await startMirrorEnv('smc');
const strictNs = await setUp('a namespace for the strict service mirror', () => env.local.namespace('mc'));
const allowingNs = await setUp('a namespace for the allowing service mirror', () => env.local.namespace('mci'));
const strict = await setUp('the strict service mirror', () => runServiceMirror(env, strictNs));
await setUp('the service mirror with --allow-insecure-remote-tls', () => runServiceMirror(env, allowingNs, { credentialsPolicy: { allowExec: false, allowInsecureTls: true } }));
const appNs = await setUp('the paired namespace', () => pairedNamespace(env));
await setUp('an exported remote Service', () => createRemoteService(env, appNs, 'web'));

const dir = mkdtempSync(join(tmpdir(), 'smc-'));
after(() => rmSync(dir, { recursive: true, force: true }));

/** The remote's admin kubeconfig, as an object: its server, CA data and token. */
const admin = parse(readFileSync(env.remote.state.kubeconfig, 'utf8')) as {
    clusters: { cluster: { server: string; 'certificate-authority-data': string } }[];
    users: { user: { token: string } }[];
};
const remoteServer = admin.clusters[0]!.cluster.server;
const remoteCa = admin.clusters[0]!.cluster['certificate-authority-data'];
const remoteToken = admin.users[0]!.user.token;

/** A kubeconfig as client-go's clientcmd.Write gives it (what `linkerd multicluster link` writes), with overrides. */
function kubeconfig(cluster: Record<string, unknown>, user: Record<string, unknown>): string {
    return stringify({
        apiVersion: 'v1',
        clusters: [{ cluster, name: 'remote' }],
        contexts: [{ context: { cluster: 'remote', user: 'linkerd-service-mirror-remote-access-default' }, name: 'remote' }],
        'current-context': 'remote',
        kind: 'Config',
        preferences: {},
        users: [{ name: 'linkerd-service-mirror-remote-access-default', user }],
    });
}

async function link(namespace: string, name: string, kubeconfigText: string): Promise<void> {
    const secretName = `cluster-credentials-${name}`;
    await env.local.admin.create(collectionPath(Secrets, namespace), {
        metadata: { name: secretName },
        type: 'mirror.linkerd.io/remote-kubeconfig',
        data: { kubeconfig: Buffer.from(kubeconfigText).toString('base64') },
    });
    await env.local.admin.create(collectionPath(Links, namespace), linkObject({ name, gatewayAddress: '192.0.2.30' }, secretName));
}

async function credentialsCondition(namespace: string, name: string) {
    const stored = await getLink(env, namespace, name);
    return stored.status?.conditions?.find((c) => c.type === 'RemoteCredentialsValid');
}

/** Waits for RemoteCredentialsValid=False with `reason`, and the Warning Event of that reason; returns the condition's message. */
async function refused(namespace: string, name: string, reason: string): Promise<string> {
    await eventually(`${name}: RemoteCredentialsValid=False ${reason}`, async () => (await credentialsCondition(namespace, name))?.status === 'False');
    const condition = (await credentialsCondition(namespace, name))!;
    assert.equal(condition.reason, reason, condition.message);
    await eventually(`${name}: the Warning Event ${reason}`, async () => (await linkEvents(env, namespace, name)).some((e) => e.type === 'Warning' && e.reason === reason));
    const event = (await linkEvents(env, namespace, name)).find((e) => e.reason === reason)!;
    assert.ok(event.message.includes(condition.message.replace(/; the Link is not served$/, '')), `the Event says what the condition says: ${event.message}`);
    return condition.message;
}

/** A loopback TCP listener that counts connections and keeps every byte it is sent. */
async function listener(): Promise<{ server: Server; port: number; connections: number; received: () => string }> {
    const chunks: Buffer[] = [];
    const state = { connections: 0 };
    const server = createServer((socket) => {
        state.connections++;
        socket.on('data', (chunk: Buffer) => chunks.push(chunk));
        socket.on('error', () => undefined);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    after(() => server.close());
    return {
        server,
        port: (server.address() as AddressInfo).port,
        get connections() {
            return state.connections;
        },
        received: () => Buffer.concat(chunks).toString('latin1'),
    };
}

describe('credentials Secrets are untrusted input', () => {
    it('serves a Link whose Secret holds the token kubeconfig `linkerd multicluster link` writes, unchanged', async () => {
        await link(strictNs, 'healthy', kubeconfig({ 'certificate-authority-data': remoteCa, server: remoteServer }, { token: remoteToken }));
        await eventually('the mirror of the healthy Link', async () => (await mirrorService(env, appNs, 'web-healthy')) !== undefined);
        await eventually('RemoteCredentialsValid=True', async () => (await credentialsCondition(strictNs, 'healthy'))?.status === 'True');
        assert.equal((await credentialsCondition(strictNs, 'healthy'))!.reason, 'Loaded');
    });

    it('never runs an exec plugin: the file it would create does not appear, and the Link says exec is refused', async () => {
        const marker = join(dir, 'exec-ran');
        const exec = { apiVersion: 'client.authentication.k8s.io/v1', command: process.execPath, args: ['-e', `require('fs').writeFileSync(${JSON.stringify(marker)}, 'ran')`], interactiveMode: 'Never' };
        await link(strictNs, 'exec', kubeconfig({ 'certificate-authority-data': remoteCa, server: remoteServer }, { exec }));
        const message = await refused(strictNs, 'exec', 'ExecNotAllowed');
        assert.match(message, /users\["linkerd-service-mirror-remote-access-default"\]\.user\.exec is refused/);
        assert.match(message, /--allow-kubeconfig-exec/);
        assert.equal(existsSync(marker), false, 'the exec plugin never ran');
        assert.equal(await mirrorService(env, appNs, 'web-exec'), undefined, 'the Link is not served');
        // `check` loads the Secret the same way, says so in the same words, and runs nothing either.
        const checked = await cli('check', '--kubeconfig', env.local.state.kubeconfig, '-n', strictNs, '-o', 'json');
        const reach = (JSON.parse(checked.stdout) as { results: { category: string; description: string; status: string; detail?: string }[] }).results.find(
            (r) => r.category === `Link ${strictNs}/exec` && r.description.includes('reachable'),
        );
        assert.deepEqual([reach?.status, reach?.detail], ['fail', message.replace(/; the Link is not served$/, '')]);
        assert.equal(existsSync(marker), false);
    });

    it('never reads or sends a tokenFile: a loopback listener at its server hears nothing', async () => {
        const heard = await listener();
        const tokenFile = join(dir, 'token');
        writeFileSync(tokenFile, 'the-controllers-own-token');
        await link(strictNs, 'token-file', kubeconfig({ 'certificate-authority-data': remoteCa, server: `https://127.0.0.1:${heard.port}` }, { tokenFile }));
        assert.match(await refused(strictNs, 'token-file', 'TokenFileNotAllowed'), /\.user\.tokenFile is refused/);
        assert.equal(heard.connections, 0, 'nothing connected to the server the kubeconfig names');
        assert.equal(heard.received().includes('the-controllers-own-token'), false);
    });

    it('refuses an http:// server: its listener hears nothing, the token never crosses in clear', async () => {
        const heard = await listener();
        await link(strictNs, 'plain', kubeconfig({ server: `http://127.0.0.1:${heard.port}` }, { token: 'inline-token' }));
        assert.match(await refused(strictNs, 'plain', 'PlainHTTPServerNotAllowed'), /clusters\["remote"\]\.cluster\.server is refused: http:\/\/127\.0\.0\.1:\d+ is plain http/);
        assert.equal(heard.connections, 0);
    });

    it('refuses insecure-skip-tls-verify: true without the flag', async () => {
        await link(strictNs, 'skip-verify', kubeconfig({ server: remoteServer, 'insecure-skip-tls-verify': true }, { token: remoteToken }));
        await refused(strictNs, 'skip-verify', 'InsecureSkipTLSVerifyNotAllowed');
        assert.equal(await mirrorService(env, appNs, 'web-skip-verify'), undefined);
    });

    it('keeps serving the healthy Link meanwhile: a new export is mirrored by it', async () => {
        await createRemoteService(env, appNs, 'api');
        await eventually('the new mirror of the healthy Link', async () => (await mirrorService(env, appNs, 'api-healthy')) !== undefined);
        for (const name of ['exec', 'token-file', 'plain', 'skip-verify']) assert.equal(await mirrorService(env, appNs, `api-${name}`), undefined, name);
    });

    it('serves a refused Link once its Secret holds inline material, and says so', async () => {
        const path = objectPath(Secrets, strictNs, 'cluster-credentials-exec');
        const current = await env.local.admin.get<{ metadata: { resourceVersion: string } }>(path);
        await env.local.admin.replace(path, {
            metadata: { name: 'cluster-credentials-exec', resourceVersion: current.metadata.resourceVersion },
            type: 'mirror.linkerd.io/remote-kubeconfig',
            data: { kubeconfig: Buffer.from(kubeconfig({ 'certificate-authority-data': remoteCa, server: remoteServer }, { token: remoteToken })).toString('base64') },
        });
        await eventually('the mirror of the fixed Link', async () => (await mirrorService(env, appNs, 'web-exec')) !== undefined);
        await eventually('RemoteCredentialsValid=True', async () => (await credentialsCondition(strictNs, 'exec'))?.status === 'True');
    });

    it('refuses the same after the service mirror stops and a new one starts: the condition as written, nothing run', async () => {
        const before = (await credentialsCondition(strictNs, 'token-file'))!;
        await strict.stop();
        await runServiceMirror(env, strictNs);
        await createRemoteService(env, appNs, 'db');
        await eventually('the healthy Link served by the new process', async () => (await mirrorService(env, appNs, 'db-healthy')) !== undefined);
        assert.deepEqual(await credentialsCondition(strictNs, 'token-file'), before);
        assert.equal(await mirrorService(env, appNs, 'db-token-file'), undefined);
        assert.equal(existsSync(join(dir, 'exec-ran')), false);
    });

    it('accepts insecure-skip-tls-verify and an http:// server with --allow-insecure-remote-tls', async () => {
        await link(allowingNs, 'skip-ok', kubeconfig({ server: remoteServer, 'insecure-skip-tls-verify': true }, { token: remoteToken }));
        await eventually('the mirror of the insecure Link', async () => (await mirrorService(env, appNs, 'web-skip-ok')) !== undefined);
        assert.equal((await credentialsCondition(allowingNs, 'skip-ok'))?.status, 'True');

        const requests: IncomingMessage[] = [];
        const http = createHttpServer((req, res) => {
            requests.push(req);
            res.writeHead(503).end();
        });
        await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
        after(() => http.close());
        await link(allowingNs, 'plain-ok', kubeconfig({ server: `http://127.0.0.1:${(http.address() as AddressInfo).port}` }, { token: 'inline-token' }));
        await eventually('the http server is read with the inline token', () => requests.some((r) => r.headers.authorization === 'Bearer inline-token'));
        await eventually('RemoteCredentialsValid=True', async () => (await credentialsCondition(allowingNs, 'plain-ok'))?.status === 'True');
    });
});
