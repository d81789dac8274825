// KubeConfig as the CLI bundle ships it (hack/bundle.ts): client-node's own code without its
// generated API, node-fetch and openid-client replaced by shims, no node_modules at run time;
// and every credential we support still working through it.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { pathToFileURL } from 'node:url';
import { bundle } from '../../hack/bundle.js';
import type { KubeConfig } from './kubeconfig.js';

// Outside the repository: nothing in the bundle may resolve from node_modules.
const dir = mkdtempSync(join(tmpdir(), 'mesh-endpoints-kubeconfig-bundle-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const { inputs } = await bundle('src/kube/kubeconfig.ts', dir);
const { KubeConfig: BundledKubeConfig } = (await import(pathToFileURL(join(dir, 'kube', 'kubeconfig.js')).href)) as { KubeConfig: typeof KubeConfig };

const SERVER = 'https://127.0.0.1:6443';

function load(user: string): KubeConfig {
    const kc = new BundledKubeConfig();
    kc.loadFromString(
        [
            'apiVersion: v1',
            'kind: Config',
            'current-context: c',
            `clusters: [{name: local, cluster: {server: "${SERVER}", insecure-skip-tls-verify: true}}]`,
            'contexts: [{name: c, context: {cluster: local, user: u}}]',
            `users: [{name: u, user: ${user}}]`,
        ].join('\n'),
    );
    return kc;
}

type Options = { headers?: Record<string, string>; rejectUnauthorized?: boolean; ca?: Buffer; cert?: Buffer; key?: Buffer };

describe('the KubeConfig bundle', () => {
    it("is client-node's config module with its authenticators, without the generated models and API clients", () => {
        assert.ok(inputs.some((input) => input.endsWith('@kubernetes/client-node/dist/config.js')));
        assert.ok(inputs.some((input) => input.endsWith('@kubernetes/client-node/dist/exec_auth.js')));
        assert.deepEqual(
            inputs.filter((input) => /client-node\/dist\/gen\/(models|apis|types)\//.test(input)),
            [],
        );
        // Replaced by hack/bundle-shims/ (loaded on first use, from a chunk of their own).
        assert.deepEqual(
            inputs.filter((input) => /node_modules\/(node-fetch|openid-client|oauth4webapi|jose)\//.test(input)),
            [],
        );
    });

    it('applies a static token', async () => {
        const opts: Options = {};
        await load('{token: not-a-secret}').applyToHTTPSOptions(opts);
        assert.equal(opts.headers?.Authorization, 'Bearer not-a-secret');
        assert.equal(opts.rejectUnauthorized, false);
    });

    it('applies a client certificate and key', async () => {
        const [cert, key] = ['not a real certificate', 'not a real key'];
        const opts: Options = {};
        await load(`{client-certificate-data: ${Buffer.from(cert).toString('base64')}, client-key-data: ${Buffer.from(key).toString('base64')}}`).applyToHTTPSOptions(opts);
        assert.equal(opts.cert?.toString(), cert);
        assert.equal(opts.key?.toString(), key);
        assert.equal(opts.headers?.Authorization, undefined);
    });

    it('runs an exec credential plugin', async () => {
        const credential = JSON.stringify({ apiVersion: 'client.authentication.k8s.io/v1', kind: 'ExecCredential', status: { token: 'from-exec' } });
        const exec = JSON.stringify({ apiVersion: 'client.authentication.k8s.io/v1', command: process.execPath, args: ['-e', `process.stdout.write(${JSON.stringify(credential)})`], interactiveMode: 'Never' });
        const opts: Options = {};
        await load(`{exec: ${exec}}`).applyToHTTPSOptions(opts);
        assert.equal(opts.headers?.Authorization, 'Bearer from-exec');
    });

    it("uses a Pod's service account (in-cluster)", async () => {
        const root = join(dir, 'pod');
        const accountDir = join(root, 'var/run/secrets/kubernetes.io/serviceaccount');
        mkdirSync(accountDir, { recursive: true });
        writeFileSync(join(accountDir, 'token'), 'from-the-pod');
        writeFileSync(join(accountDir, 'ca.crt'), 'the cluster CA');
        const saved = { host: process.env.KUBERNETES_SERVICE_HOST, port: process.env.KUBERNETES_SERVICE_PORT };
        process.env.KUBERNETES_SERVICE_HOST = '127.0.0.1';
        process.env.KUBERNETES_SERVICE_PORT = '6443';
        try {
            const kc = new BundledKubeConfig();
            kc.loadFromCluster(root);
            assert.equal(kc.getCurrentCluster()?.server, SERVER);
            const opts: Options = {};
            await kc.applyToHTTPSOptions(opts);
            assert.equal(opts.headers?.Authorization, 'Bearer from-the-pod');
            assert.equal(opts.ca?.toString(), 'the cluster CA');
        } finally {
            for (const [name, value] of [['KUBERNETES_SERVICE_HOST', saved.host], ['KUBERNETES_SERVICE_PORT', saved.port]] as const) {
                if (value === undefined) delete process.env[name];
                else process.env[name] = value;
            }
        }
    });

    it('hands an expired OIDC token to openid-client, loaded then (the shim)', async () => {
        const jwtPart = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');
        const expired = `${jwtPart({ alg: 'none' })}.${jwtPart({ exp: 1 })}.sig`;
        const oidc = `{auth-provider: {name: oidc, config: {id-token: "${expired}", refresh-token: r, client-id: c, idp-issuer-url: "http://127.0.0.1:9/"}}}`;
        // openid-client's own answer, before any request: client-node 1.4.0 passes the issuer as a
        // string where openid-client 6 wants a URL (unbundled the same), so its OIDC refresh fails.
        await assert.rejects(load(oidc).applyToHTTPSOptions({}), { code: 'ERR_INVALID_ARG_TYPE', message: '"server" must be an instance of URL' });
    });

    it("gives node's own Headers for fetch options (the node-fetch shim)", async () => {
        const { headers } = await load('{token: not-a-secret}').applyToFetchOptions({});
        assert.ok(headers instanceof Headers);
        assert.equal(headers.get('authorization'), 'Bearer not-a-secret');
    });
});
