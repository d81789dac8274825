// The one loader of kubeconfigs we did not write (a Link's credentials Secret): every field
// that would run a command, read a local file or expose the token is refused with a reason
// naming it, unless the operator's flag allows it; inline material, as `linkerd multicluster
// link` and `mesh-endpoints link` write it, loads as before.
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { parse, stringify } from 'yaml';
import { loadUntrustedKubeconfig, STRICT_POLICY, type KubeconfigPolicy } from './untrusted-kubeconfig.js';

const dir = mkdtempSync(join(tmpdir(), 'untrusted-kubeconfig-'));
after(() => rmSync(dir, { recursive: true, force: true }));
const CA = Buffer.from('-----BEGIN CERTIFICATE-----\nnot a real one\n-----END CERTIFICATE-----\n').toString('base64');

/** A kubeconfig in the shape client-go's clientcmd.Write gives (what Linkerd's link writes), with overrides. */
function kubeconfig(cluster: Record<string, unknown> = {}, user: Record<string, unknown> = { token: 'not-a-secret' }): string {
    return stringify({
        apiVersion: 'v1',
        clusters: [{ cluster: { 'certificate-authority-data': CA, server: 'https://127.0.0.1:6443', ...cluster }, name: 'east' }],
        contexts: [{ context: { cluster: 'east', user: 'linkerd-service-mirror-remote-access-default' }, name: 'east' }],
        'current-context': 'east',
        kind: 'Config',
        preferences: {},
        users: [{ name: 'linkerd-service-mirror-remote-access-default', user }],
    });
}

const USER = 'users["linkerd-service-mirror-remote-access-default"].user';
const CLUSTER = 'clusters["east"].cluster';
const marker = join(dir, 'exec-ran');
const exec = { apiVersion: 'client.authentication.k8s.io/v1', command: process.execPath, args: ['-e', `require('fs').writeFileSync(${JSON.stringify(marker)}, 'ran')`], interactiveMode: 'Never' };

/** Every field refused by default: the reason, the field it names, and the flag that allows it (none: never). */
const REFUSED: { name: string; cluster?: Record<string, unknown>; user?: Record<string, unknown>; reason: string; field: string; allowedBy?: keyof KubeconfigPolicy }[] = [
    { name: 'an exec plugin', user: { exec }, reason: 'ExecNotAllowed', field: `${USER}.exec`, allowedBy: 'allowExec' },
    { name: 'an auth provider', user: { 'auth-provider': { name: 'gcp', config: { 'cmd-path': '/bin/true' } } }, reason: 'AuthProviderNotAllowed', field: `${USER}.auth-provider`, allowedBy: 'allowExec' },
    { name: 'a tokenFile', user: { tokenFile: '/var/run/secrets/kubernetes.io/serviceaccount/token' }, reason: 'TokenFileNotAllowed', field: `${USER}.tokenFile`, allowedBy: 'allowExec' },
    { name: "client-node's token-file", user: { 'token-file': '/etc/passwd' }, reason: 'TokenFileNotAllowed', field: `${USER}.token-file`, allowedBy: 'allowExec' },
    { name: 'a client-certificate file', user: { 'client-certificate': '/etc/cert.pem', 'client-key-data': 'eA==' }, reason: 'ClientCertificateFileNotAllowed', field: `${USER}.client-certificate`, allowedBy: 'allowExec' },
    { name: 'a client-key file', user: { 'client-certificate-data': 'eA==', 'client-key': '/etc/key.pem' }, reason: 'ClientKeyFileNotAllowed', field: `${USER}.client-key`, allowedBy: 'allowExec' },
    { name: 'a certificate-authority file', cluster: { 'certificate-authority': '/etc/ca.pem' }, reason: 'CertificateAuthorityFileNotAllowed', field: `${CLUSTER}.certificate-authority`, allowedBy: 'allowExec' },
    { name: 'insecure-skip-tls-verify: true', cluster: { 'insecure-skip-tls-verify': true }, reason: 'InsecureSkipTLSVerifyNotAllowed', field: `${CLUSTER}.insecure-skip-tls-verify`, allowedBy: 'allowInsecureTls' },
    { name: 'an http:// server', cluster: { server: 'http://127.0.0.1:8080' }, reason: 'PlainHTTPServerNotAllowed', field: `${CLUSTER}.server`, allowedBy: 'allowInsecureTls' },
    { name: 'a proxy-url', cluster: { 'proxy-url': 'http://127.0.0.1:3128' }, reason: 'ProxyURLNotAllowed', field: `${CLUSTER}.proxy-url` },
];

describe('loading an untrusted kubeconfig', () => {
    for (const c of REFUSED) {
        it(`refuses ${c.name} (${c.reason}, naming ${c.field})${c.allowedBy ? `, unless ${c.allowedBy}` : ', whatever the flags'}`, () => {
            const yaml = kubeconfig(c.cluster, { token: 't', ...c.user });
            const refused = loadUntrustedKubeconfig(yaml, STRICT_POLICY);
            assert.ok('refused' in refused, JSON.stringify(refused));
            assert.deepEqual(refused.refused.map((r) => [r.reason, r.field]), [[c.reason, c.field]]);
            assert.ok(refused.refused[0]!.message.startsWith(`${c.field} is refused: `), refused.refused[0]!.message);
            const other: KubeconfigPolicy = { allowExec: c.allowedBy !== 'allowExec', allowInsecureTls: c.allowedBy !== 'allowInsecureTls' };
            assert.ok('refused' in loadUntrustedKubeconfig(yaml, other), 'the other flag does not allow it');
            const all = loadUntrustedKubeconfig(yaml, { allowExec: true, allowInsecureTls: true });
            assert.equal('kubeConfig' in all, c.allowedBy !== undefined, JSON.stringify(all));
        });
    }

    it('names every refused field at once, the first one as the reason', () => {
        const refused = loadUntrustedKubeconfig(kubeconfig({ 'insecure-skip-tls-verify': true }, { exec, tokenFile: '/x' }));
        assert.ok('refused' in refused);
        assert.deepEqual(refused.refused.map((r) => r.reason), ['InsecureSkipTLSVerifyNotAllowed', 'ExecNotAllowed', 'TokenFileNotAllowed']);
    });

    it('never hands refused material to client-node: the exec plugin does not run', async () => {
        const refused = loadUntrustedKubeconfig(kubeconfig({}, { exec }));
        assert.ok('refused' in refused);
        assert.equal(existsSync(marker), false);
        // The same kubeconfig allowed does run it: the test above would see it if it had.
        const allowed = loadUntrustedKubeconfig(kubeconfig({}, { exec }), { allowExec: true, allowInsecureTls: false });
        assert.ok('kubeConfig' in allowed);
        await allowed.kubeConfig.applyToHTTPSOptions({}).catch(() => undefined);
        assert.equal(existsSync(marker), true);
        rmSync(marker);
    });

    it("reads a tokenFile only when allowed, through client-node's tokenFile provider", async () => {
        const file = join(dir, 'token');
        writeFileSync(file, 'from-the-file');
        const allowed = loadUntrustedKubeconfig(kubeconfig({}, { tokenFile: file }), { allowExec: true, allowInsecureTls: false });
        assert.ok('kubeConfig' in allowed);
        const opts: { headers?: Record<string, string> } = {};
        await allowed.kubeConfig.applyToHTTPSOptions(opts);
        assert.equal(opts.headers?.Authorization, 'Bearer from-the-file');
    });

    it('loads the token kubeconfig `linkerd multicluster link` writes, unchanged: server, CA and token only', async () => {
        const loaded = loadUntrustedKubeconfig(kubeconfig());
        assert.ok('kubeConfig' in loaded, JSON.stringify(loaded));
        assert.equal(loaded.server.href, 'https://127.0.0.1:6443/');
        const cluster = loaded.kubeConfig.getCurrentCluster()!;
        assert.deepEqual([cluster.server, cluster.caData, cluster.skipTLSVerify], ['https://127.0.0.1:6443', CA, false]);
        const opts: { headers?: Record<string, string>; ca?: Buffer; rejectUnauthorized?: boolean } = {};
        await loaded.kubeConfig.applyToHTTPSOptions(opts);
        assert.equal(opts.headers?.Authorization, 'Bearer not-a-secret');
        assert.equal(opts.ca?.toString('base64'), CA);
        assert.notEqual(opts.rejectUnauthorized, false);
    });

    it('loads client certificate and key data, and a tls-server-name', () => {
        const loaded = loadUntrustedKubeconfig(kubeconfig({ 'tls-server-name': 'kubernetes' }, { 'client-certificate-data': 'Y2VydA==', 'client-key-data': 'a2V5' }));
        assert.ok('kubeConfig' in loaded);
        const user = loaded.kubeConfig.getCurrentUser()!;
        assert.deepEqual([user.certData, user.keyData, user.exec, user.authProvider], ['Y2VydA==', 'a2V5', undefined, undefined]);
        assert.equal(loaded.kubeConfig.getCurrentCluster()!.tlsServerName, 'kubernetes');
    });

    it('looks only at the current context: other users and clusters never reach client-node', () => {
        const doc = parse(kubeconfig()) as { users: object[]; clusters: object[] };
        doc.users.push({ name: 'other', user: { exec } });
        doc.clusters.push({ name: 'elsewhere', cluster: { server: 'http://127.0.0.1:1', 'insecure-skip-tls-verify': true } });
        const loaded = loadUntrustedKubeconfig(stringify(doc));
        assert.ok('kubeConfig' in loaded);
        assert.deepEqual(loaded.kubeConfig.getUsers().map((u) => u.name), ['linkerd-service-mirror-remote-access-default']);
        assert.deepEqual(loaded.kubeConfig.getClusters().map((c) => c.name), ['east']);
    });

    it('says what is wrong with a kubeconfig it cannot use', () => {
        const invalid = (yaml: string) => {
            const result = loadUntrustedKubeconfig(yaml);
            return 'invalid' in result ? result.invalid : `loaded: ${JSON.stringify(result)}`;
        };
        assert.match(invalid('{'), /^not YAML/);
        assert.match(invalid('apiVersion: v1\nkind: Config\n'), /current-context/);
        assert.match(invalid(kubeconfig().replace('current-context: east', 'current-context: west')), /names no context/);
        assert.match(invalid(kubeconfig({ server: 'file:///etc/passwd' })), /must be an https:\/\/ URL, not file:/);
        assert.match(invalid(kubeconfig({ server: 'not a url' })), /is not a URL/);
        assert.match(invalid(kubeconfig({ 'insecure-skip-tls-verify': 'yes' })), /insecure-skip-tls-verify/);
        // An alias bomb is refused by the parser, not expanded.
        const bomb = ['a: &a [x, x, x, x, x, x, x, x, x, x]', ...Array.from({ length: 12 }, (_, i) => `${'b'.repeat(i + 1)}: &${'b'.repeat(i + 1)} [${Array(10).fill(i === 0 ? '*a' : `*${'b'.repeat(i)}`).join(', ')}]`)].join('\n');
        assert.match(invalid(bomb), /^not YAML|alias/i);
    });
});
