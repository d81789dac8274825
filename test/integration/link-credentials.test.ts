// `mesh-endpoints link` writes exactly what each reader of the remote needs, on real clusters:
// the service mirror's Secret and, for remote discovery and federated Services, the Secret
// Linkerd's destination reads (control-plane namespace, cluster-name label, trust and cluster
// domain annotations), each with the token of its own remote ServiceAccount holding only what
// that reader lists and watches. `check` asks the remote (SelfSubjectAccessReview, as each
// token) and says which mode fails without a right; `unlink` removes both Secrets. `link`
// never writes a kubeconfig the service mirror would refuse. The destination's Secret is written
// only where the local cluster has Linkerd's control-plane namespace (or cannot be read), and
// every line `link` writes on stderr is a whole one.
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { parse, parseAllDocuments, stringify } from 'yaml';
import { KubeRest } from '../../src/kube/rest.js';
import { collectionPath, ConfigMaps, Links, Namespaces, objectPath, Secrets, ServiceAccounts, Services } from '../../src/kube/resources.js';
import { loadUntrustedKubeconfig } from '../../src/kube/untrusted-kubeconfig.js';
import { setUp } from '../../src/testing/harness.js';
import { cli } from './cli-support.js';
import { startMirrorEnv } from './mirror-support.js';

const env = await startMirrorEnv('lkc');
const linkNs = await setUp('a namespace for the Links', () => env.local.namespace('mc'));
await setUp("Linkerd's control-plane namespace", () => env.local.admin.create(collectionPath(Namespaces), { metadata: { name: 'linkerd' } }));
await setUp('the remote gateway and linkerd-config', async () => {
    for (const name of ['linkerd-multicluster', 'linkerd']) await env.remote.admin.create(collectionPath(Namespaces), { metadata: { name } });
    await env.remote.admin.create(collectionPath(Services, 'linkerd-multicluster'), {
        metadata: { name: 'linkerd-gateway', annotations: { 'mirror.linkerd.io/gateway-identity': 'linkerd-gateway.linkerd-multicluster.serviceaccount.identity.linkerd.east.example' } },
        spec: { type: 'LoadBalancer', ports: [{ name: 'mc-gateway', port: 4143 }, { name: 'mc-probe', port: 4191 }] },
    });
    await env.remote.admin.mergePatch(objectPath(Services, 'linkerd-multicluster', 'linkerd-gateway', 'status'), { status: { loadBalancer: { ingress: [{ ip: '192.0.2.40' }] } } });
    await env.remote.admin.create(collectionPath(ConfigMaps, 'linkerd'), { metadata: { name: 'linkerd-config' }, data: { values: 'identityTrustDomain: east.example\nclusterDomain: cluster.local\n' } });
});

type Doc = { kind: string; metadata: { name: string; namespace: string; labels?: Record<string, string>; annotations?: Record<string, string> }; type?: string; data?: { kubeconfig: string }; spec?: Record<string, unknown> };

/** `kubectl apply -f -` of what `link` printed (creates; replaces a Secret that exists). */
async function apply(stdout: string): Promise<Doc[]> {
    const docs = parseAllDocuments(stdout).map((d) => d.toJS() as Doc);
    for (const doc of docs) {
        const resource = doc.kind === 'Secret' ? Secrets : Links;
        await env.local.admin.delete(objectPath(resource, doc.metadata.namespace, doc.metadata.name)).catch(() => undefined);
        await env.local.admin.create(collectionPath(resource, doc.metadata.namespace), doc);
    }
    return docs;
}

/** A client of the remote with the kubeconfig of a Secret `link` wrote, loaded as the service mirror loads it. */
function remoteAs(secret: Doc): KubeRest {
    const loaded = loadUntrustedKubeconfig(Buffer.from(secret.data!.kubeconfig, 'base64').toString('utf8'));
    assert.ok('kubeConfig' in loaded, JSON.stringify(loaded));
    return new KubeRest(loaded.kubeConfig);
}

async function mayDo(rest: KubeRest, verb: string, resource: string, group = ''): Promise<boolean> {
    const review = await rest.create<{ status?: { allowed?: boolean } }>('/apis/authorization.k8s.io/v1/selfsubjectaccessreviews', {
        apiVersion: 'authorization.k8s.io/v1',
        kind: 'SelfSubjectAccessReview',
        spec: { resourceAttributes: { verb, group, resource } },
    } as never);
    return review.status?.allowed === true;
}

interface CheckJson {
    results: { category: string; description: string; status: string; detail?: string }[];
}

async function linkResults(): Promise<CheckJson['results']> {
    const result = await cli('check', '--kubeconfig', env.local.state.kubeconfig, '-n', linkNs, '-o', 'json');
    return (JSON.parse(result.stdout) as CheckJson).results.filter((r) => r.category === `Link ${linkNs}/east`);
}

const remoteKubeconfigWith = (change: (config: { clusters: { cluster: Record<string, unknown> }[]; users: { user: Record<string, unknown> }[] }) => void): string => {
    const config = parse(readFileSync(env.remote.state.kubeconfig, 'utf8')) as Parameters<typeof change>[0];
    change(config);
    const path = join(tmpdir(), `lkc-${process.pid}-${Math.random().toString(36).slice(2)}.kubeconfig`);
    writeFileSync(path, stringify(config), { mode: 0o600 });
    return path;
};

/** `link`'s stderr: `count` lines, each ending with a newline (kubectl's output starts on its own line). */
function assertWholeLines(stderr: string, count: number): string[] {
    assert.ok(stderr.endsWith('\n'), JSON.stringify(stderr));
    const lines = stderr.slice(0, -1).split('\n');
    assert.equal(lines.length, count, stderr);
    for (const line of lines) assert.match(line, /^link [a-z0-9-]+: \S/);
    return lines;
}

describe('link writes what each reader needs, check verifies it, unlink removes it', () => {
    let docs: Doc[] = [];

    it("writes the mirror's Secret, the destination's Secret as Linkerd's destination reads it, and the Link", async () => {
        const linked = await cli('link', '--kubeconfig', env.local.state.kubeconfig, '--remote-kubeconfig', env.remote.state.kubeconfig, '--cluster-name', 'east', '--namespace', linkNs);
        assert.equal(linked.code, 0, linked.stderr);
        assertWholeLines(linked.stderr, 2);
        docs = await apply(linked.stdout);
        assert.deepEqual(docs.map((d) => `${d.kind} ${d.metadata.namespace}/${d.metadata.name}`), [
            `Secret ${linkNs}/cluster-credentials-east`,
            'Secret linkerd/cluster-credentials-east',
            `Link ${linkNs}/east`,
        ]);
        const destination = docs[1]!;
        assert.equal(destination.type, 'mirror.linkerd.io/remote-kubeconfig');
        assert.deepEqual(destination.metadata.labels, { 'multicluster.linkerd.io/cluster-name': 'east' });
        assert.deepEqual(destination.metadata.annotations, { 'multicluster.linkerd.io/trust-domain': 'east.example', 'multicluster.linkerd.io/cluster-domain': 'cluster.local' });
        assert.match(linked.stderr, /reads that Secret only when it is created/);
        assert.ok(docs[2]!.spec!.remoteDiscoverySelector && docs[2]!.spec!.federatedServiceSelector);
    });

    it('gives each Secret the token of its own remote ServiceAccount, with only what its reader lists and watches', async () => {
        const mirror = remoteAs(docs[0]!);
        const destination = remoteAs(docs[1]!);
        try {
            for (const [rest, allowed, denied] of [
                [mirror, [['list', 'services'], ['watch', 'endpointslices', 'discovery.k8s.io']], [['list', 'pods'], ['get', 'secrets'], ['create', 'services'], ['list', 'servers', 'policy.linkerd.io']]],
                [
                    destination,
                    [['list', 'pods'], ['watch', 'pods'], ['watch', 'services'], ['list', 'endpointslices', 'discovery.k8s.io'], ['watch', 'servers', 'policy.linkerd.io'], ['list', 'replicasets', 'apps']],
                    [['get', 'secrets'], ['create', 'pods'], ['list', 'configmaps'], ['delete', 'services']],
                ],
            ] as const) {
                for (const [verb, resource, group] of allowed) assert.equal(await mayDo(rest, verb, resource, group), true, `${verb} ${resource}`);
                for (const [verb, resource, group] of denied) assert.equal(await mayDo(rest, verb, resource, group), false, `${verb} ${resource}`);
            }
            await mirror.get(collectionPath(Services));
            await assert.rejects(mirror.get(collectionPath(Secrets)), /forbidden/i);
        } finally {
            mirror.close();
            destination.close();
        }
    });

    it("check passes both Secrets and each token's rights, asked of the remote", async () => {
        const results = await linkResults();
        const by = (description: string) => results.find((r) => r.description.startsWith(description));
        assert.equal(by("the service mirror's token may list and watch")?.status, 'ok', JSON.stringify(results));
        assert.equal(by("Linkerd's destination has credentials")?.status, 'ok', JSON.stringify(results));
        assert.equal(by("Linkerd's destination's token may list and watch")?.status, 'ok', JSON.stringify(results));
    });

    it('check says which mode fails when a token lost a right, or the destination has no Secret', async () => {
        const role = '/apis/rbac.authorization.k8s.io/v1/clusterroles/mesh-endpoints-destination-remote-access';
        const current = await env.remote.admin.get<{ rules: { resources: string[] }[] }>(role);
        await env.remote.admin.replace(role, { ...current, rules: current.rules.filter((r) => !r.resources.includes('pods')) });
        const denied = (await linkResults()).find((r) => r.description.startsWith("Linkerd's destination's token"));
        assert.equal(denied?.status, 'fail');
        assert.equal(denied?.detail, 'denied: list pods (without it remote-discovery and federated Services (endpoint identities) fail); watch pods (without it remote-discovery and federated Services (endpoint identities) fail)');

        await env.local.admin.delete(objectPath(Secrets, 'linkerd', 'cluster-credentials-east'));
        const missing = (await linkResults()).find((r) => r.description.startsWith("Linkerd's destination has credentials"));
        assert.equal(missing?.status, 'fail');
        assert.equal(missing?.detail, "not found: without it Linkerd's proxies cannot resolve the remote-discovery Services and federated Services of this Link");

        // link again brings the remote RBAC back; the destination's Secret is created anew.
        const relinked = await cli('link', '--kubeconfig', env.local.state.kubeconfig, '--remote-kubeconfig', env.remote.state.kubeconfig, '--cluster-name', 'east', '--namespace', linkNs);
        assert.equal(relinked.code, 0, relinked.stderr);
        docs = await apply(relinked.stdout);
        assert.deepEqual((await linkResults()).filter((r) => r.status !== 'ok' && r.description.includes('token')), []);
    });

    it('unlink removes the Link and both Secrets', async () => {
        const printed = await cli('unlink', '--cluster-name', 'east', '--kubeconfig', env.local.state.kubeconfig, '-n', linkNs);
        assert.equal(printed.code, 0, printed.stderr);
        const names = parseAllDocuments(printed.stdout).map((d) => d.toJS() as Doc).map((d) => `${d.kind} ${d.metadata.namespace}/${d.metadata.name}`);
        assert.deepEqual(names, [`Link ${linkNs}/east`, `Secret ${linkNs}/cluster-credentials-east`, 'Secret linkerd/cluster-credentials-east']);
        const applied = await cli('unlink', '--cluster-name', 'east', '--apply', '--kubeconfig', env.local.state.kubeconfig, '-n', linkNs);
        assert.equal(applied.code, 0, applied.stderr);
        for (const [ns, name] of [[linkNs, 'cluster-credentials-east'], ['linkerd', 'cluster-credentials-east']] as const) {
            await assert.rejects(env.local.admin.get(objectPath(Secrets, ns, name)), /not found/i);
        }
    });

    it('writes no destination Secret and no destination ServiceAccount for a Link without remote discovery or federation', async () => {
        const remoteNs = 'gateway-only';
        const linked = await cli('link', '--remote-kubeconfig', env.remote.state.kubeconfig, '--cluster-name', 'west', '--namespace', remoteNs, '--remote-discovery=false', '--federated=false');
        assert.equal(linked.code, 0, linked.stderr);
        assert.deepEqual(parseAllDocuments(linked.stdout).map((d) => (d.toJS() as Doc).kind), ['Secret', 'Link']);
        await env.remote.admin.get(objectPath(ServiceAccounts, remoteNs, 'mesh-endpoints-service-mirror-remote-access'));
        await assert.rejects(env.remote.admin.get(objectPath(ServiceAccounts, remoteNs, 'mesh-endpoints-destination-remote-access')), /not found/i);
    });

    it("leaves the destination's Secret out where the local cluster has no control-plane namespace, says so, and what it prints applies", async () => {
        const ns = await env.local.namespace('mcs-only');
        const linked = await cli('link', '--kubeconfig', env.local.state.kubeconfig, '--remote-kubeconfig', env.remote.state.kubeconfig, '--cluster-name', 'plain', '--namespace', ns, '--control-plane-namespace', 'no-linkerd-here');
        assert.equal(linked.code, 0, linked.stderr);
        const printed = await apply(linked.stdout);
        assert.deepEqual(printed.map((d) => `${d.kind} ${d.metadata.namespace}/${d.metadata.name}`), [`Secret ${ns}/cluster-credentials-plain`, `Link ${ns}/plain`]);
        // The Link's modes stay: the service mirror serves remote discovery without Linkerd.
        assert.deepEqual(printed[1]!.spec!.remoteDiscoverySelector, { matchLabels: { 'mirror.linkerd.io/exported': 'remote-discovery' } });
        const lines = assertWholeLines(linked.stderr, 2);
        assert.equal(
            lines[1],
            "link plain: namespace no-linkerd-here does not exist in the local cluster, so Linkerd destination's Secret is left out (no Linkerd reads it there); if Linkerd's control plane runs in another namespace, pass it as --control-plane-namespace",
        );
        await env.remote.admin.get(objectPath(ServiceAccounts, ns, 'mesh-endpoints-service-mirror-remote-access'));
        await assert.rejects(env.remote.admin.get(objectPath(ServiceAccounts, ns, 'mesh-endpoints-destination-remote-access')), /not found/i);
    });

    it('writes the destination\'s Secret as asked when the local cluster cannot be read, and says why', async () => {
        const unreachable = join(tmpdir(), `lkc-${process.pid}-local-unreachable.kubeconfig`);
        const local = parse(readFileSync(env.local.state.kubeconfig, 'utf8')) as { clusters: { cluster: { server: string } }[] };
        local.clusters[0]!.cluster.server = 'https://127.0.0.1:1';
        writeFileSync(unreachable, stringify(local), { mode: 0o600 });
        const linked = await cli('link', '--kubeconfig', unreachable, '--remote-kubeconfig', env.remote.state.kubeconfig, '--cluster-name', 'east', '--namespace', linkNs);
        assert.equal(linked.code, 0, linked.stderr);
        assert.deepEqual(parseAllDocuments(linked.stdout).map((d) => `${(d.toJS() as Doc).kind} ${(d.toJS() as Doc).metadata.namespace}`), [`Secret ${linkNs}`, 'Secret linkerd', `Link ${linkNs}`]);
        const lines = assertWholeLines(linked.stderr, 3);
        assert.match(lines[1]!, /^link east: the local cluster could not be read \(.*ECONNREFUSED.*\), so Linkerd destination's Secret is written into namespace linkerd as asked; on a cluster without Linkerd pass --kubeconfig for it, or --remote-discovery=false --federated=false$/);
        const missing = await cli('link', '--kubeconfig', join(tmpdir(), 'no-such.kubeconfig'), '--remote-kubeconfig', env.remote.state.kubeconfig, '--cluster-name', 'east', '--namespace', linkNs);
        assert.equal(missing.code, 1);
        assert.match(missing.stderr, /^mesh-endpoints: .*no-such\.kubeconfig/);
    });

    it('writes a token kubeconfig from an exec-based --remote-kubeconfig, as the service mirror accepts it', async () => {
        const exec = remoteKubeconfigWith((config) => {
            const token = config.users[0]!.user.token as string;
            const credential = JSON.stringify({ apiVersion: 'client.authentication.k8s.io/v1', kind: 'ExecCredential', status: { token } });
            config.users[0]!.user = { exec: { apiVersion: 'client.authentication.k8s.io/v1', command: process.execPath, args: ['-e', `process.stdout.write(${JSON.stringify(credential)})`], interactiveMode: 'Never' } };
        });
        const linked = await cli('link', '--remote-kubeconfig', exec, '--cluster-name', 'north', '--namespace', linkNs);
        assert.equal(linked.code, 0, linked.stderr);
        for (const secret of parseAllDocuments(linked.stdout).map((d) => d.toJS() as Doc).filter((d) => d.kind === 'Secret')) {
            const kubeconfig = parse(Buffer.from(secret.data!.kubeconfig, 'base64').toString('utf8')) as { users: { user: Record<string, unknown> }[] };
            assert.deepEqual(Object.keys(kubeconfig.users[0]!.user), ['token']);
            assert.ok('kubeConfig' in loadUntrustedKubeconfig(Buffer.from(secret.data!.kubeconfig, 'base64').toString('utf8')));
        }
    });

    it('refuses to write credentials the service mirror would refuse, before touching the remote', async () => {
        const insecure = remoteKubeconfigWith((config) => {
            delete config.clusters[0]!.cluster['certificate-authority-data'];
            config.clusters[0]!.cluster['insecure-skip-tls-verify'] = true;
        });
        const refused = await cli('link', '--remote-kubeconfig', insecure, '--cluster-name', 'south', '--namespace', 'never-created');
        assert.equal(refused.code, 1);
        assert.equal(refused.stdout, '');
        assert.match(refused.stderr, /the credentials would be refused by the service mirror \(clusters\["south"\]\.cluster\.insecure-skip-tls-verify is refused: /);
        assert.match(refused.stderr, /--allow-insecure-remote-tls/);
        const plain = await cli('link', '--remote-kubeconfig', env.remote.state.kubeconfig, '--cluster-name', 'south', '--namespace', 'never-created', '--api-server-address', 'http://127.0.0.1:1');
        assert.equal(plain.code, 1);
        assert.match(plain.stderr, /\.cluster\.server is refused: http:\/\/127\.0\.0\.1:1 is plain http/);
        await assert.rejects(env.remote.admin.get(objectPath(Namespaces, '', 'never-created')), /not found/i);
        // With the flag, for a service mirror that runs with it.
        const allowed = await cli('link', '--remote-kubeconfig', insecure, '--cluster-name', 'south', '--namespace', linkNs, '--allow-insecure-remote-tls');
        assert.equal(allowed.code, 0, allowed.stderr);
    });
});
