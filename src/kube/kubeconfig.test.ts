// The KubeConfig bundle `npm run build` ships (hack/bundle-kubeconfig.ts): client-node's own
// code without its generated API, and still working credentials (a token, an exec plugin).
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { after, describe, it } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { bundleKubeConfig } from '../../hack/bundle-kubeconfig.js';
import type { KubeConfig } from './kubeconfig.js';

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
// Inside the repository, so the bundle's imports of js-yaml, node-fetch, ... resolve.
const dir = mkdtempSync(join(repoRoot, 'node_modules', '.kubeconfig-bundle-test-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const { inputs, code } = await bundleKubeConfig(false);
const file = join(dir, 'kubeconfig.js');
writeFileSync(file, code);
const { KubeConfig: BundledKubeConfig } = (await import(pathToFileURL(file).href)) as { KubeConfig: typeof KubeConfig };

function load(user: string): KubeConfig {
    const kc = new BundledKubeConfig();
    kc.loadFromString(
        [
            'apiVersion: v1',
            'kind: Config',
            'current-context: c',
            'clusters: [{name: local, cluster: {server: "https://127.0.0.1:6443", insecure-skip-tls-verify: true}}]',
            'contexts: [{name: c, context: {cluster: local, user: u}}]',
            `users: [{name: u, user: ${user}}]`,
        ].join('\n'),
    );
    return kc;
}

describe('the KubeConfig bundle', () => {
    it("is client-node's config module with its authenticators, without the generated models and API clients", () => {
        assert.ok(inputs.some((input) => input.endsWith('@kubernetes/client-node/dist/config.js')));
        assert.ok(inputs.some((input) => input.endsWith('@kubernetes/client-node/dist/exec_auth.js')));
        assert.deepEqual(
            inputs.filter((input) => /client-node\/dist\/gen\/(models|apis|types)\//.test(input)),
            [],
        );
    });

    it('applies a static token', async () => {
        const opts: { headers?: Record<string, string>; rejectUnauthorized?: boolean } = {};
        await load('{token: not-a-secret}').applyToHTTPSOptions(opts);
        assert.equal(opts.headers?.Authorization, 'Bearer not-a-secret');
        assert.equal(opts.rejectUnauthorized, false);
    });

    it('runs an exec credential plugin', async () => {
        const credential = JSON.stringify({ apiVersion: 'client.authentication.k8s.io/v1', kind: 'ExecCredential', status: { token: 'from-exec' } });
        const exec = JSON.stringify({ apiVersion: 'client.authentication.k8s.io/v1', command: process.execPath, args: ['-e', `process.stdout.write(${JSON.stringify(credential)})`], interactiveMode: 'Never' });
        const opts: { headers?: Record<string, string> } = {};
        await load(`{exec: ${exec}}`).applyToHTTPSOptions(opts);
        assert.equal(opts.headers?.Authorization, 'Bearer from-exec');
    });
});
