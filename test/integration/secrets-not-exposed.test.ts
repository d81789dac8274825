// The admin endpoint and the logs expose nothing secret (issue 22), on real clusters and real
// processes at debug level: a service mirror that served a Link with a token kubeconfig, refused
// one with an exec plugin, read one that is not YAML and was refused by the remote for a bad
// token; an external-workloads replica that issued its webhook certificate into a Secret. Its
// /metrics, /healthz and /readyz answers and every line it printed are searched for each
// token, each kubeconfig (as text and as the Secret's base64) and the private key.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { parse, stringify } from 'yaml';
import { collectionPath, Links, objectPath, Secrets } from '../../src/kube/resources.js';
import { freePort } from '../../src/testing/cluster.js';
import { eventually } from '../../src/testing/harness.js';
import { kubeconfigFile } from './cli-support.js';
import { createRemoteService, getLink, linkObject, mirrorService, pairedNamespace, startMirrorEnv } from './mirror-support.js';
import { ControllerProcess } from './process-support.js';

const env = await startMirrorEnv('secrets');

/** Everything the admin endpoint of `process` answers. */
async function adminAnswers(process: ControllerProcess): Promise<string> {
    const address = await process.adminAddress();
    const texts = await Promise.all(['/metrics', '/healthz', '/readyz'].map(async (path) => (await fetch(`http://${address}${path}`)).text()));
    return texts.join('\n');
}

function leaks(haystacks: string[], secrets: Record<string, string>): string[] {
    return Object.entries(secrets).flatMap(([what, secret]) => haystacks.filter((h) => h.includes(secret)).map((h) => `${what} in ${h.slice(0, 200)}`));
}

describe('nothing secret on the admin endpoint or in the logs', () => {
    it('the service mirror: tokens and kubeconfigs of served, refused, unreadable and unauthorized Links never appear', async () => {
        const linkNs = await env.local.namespace('linkerd-multicluster');
        const ns = await pairedNamespace(env);
        await createRemoteService(env, ns, 'web');
        const admin = parse(readFileSync(env.remote.state.kubeconfig, 'utf8')) as {
            clusters: { cluster: { server: string; 'certificate-authority-data': string } }[];
            users: { user: { token: string } }[];
        };
        const cluster = admin.clusters[0]!.cluster;
        const kubeconfig = (user: Record<string, unknown>) =>
            stringify({
                apiVersion: 'v1',
                kind: 'Config',
                clusters: [{ name: 'remote', cluster }],
                contexts: [{ name: 'remote', context: { cluster: 'remote', user: 'mirror' } }],
                'current-context': 'remote',
                users: [{ name: 'mirror', user }],
            });
        const execToken = 'exec-link-token-4f1d0c9b7a';
        const wrongToken = 'unauthorized-link-token-9c2e77d1';
        const garbageToken = 'garbage-link-token-31be8a60';
        const kubeconfigs = {
            served: kubeconfig({ token: admin.users[0]!.user.token }),
            exec: kubeconfig({ token: execToken, exec: { apiVersion: 'client.authentication.k8s.io/v1', command: '/bin/true', args: [`--token=${execToken}`] } }),
            garbage: `{{ not yaml token: ${garbageToken}`,
            unauthorized: kubeconfig({ token: wrongToken }),
        };
        for (const [name, text] of Object.entries(kubeconfigs)) {
            await env.local.admin.create(collectionPath(Secrets, linkNs), {
                metadata: { name: `creds-${name}` },
                type: 'mirror.linkerd.io/remote-kubeconfig',
                data: { kubeconfig: Buffer.from(text).toString('base64') },
            });
            await env.local.admin.create(collectionPath(Links, linkNs), linkObject({ name, gatewayAddress: '192.0.2.40' }, `creds-${name}`));
        }

        const output: string[] = [];
        const mirror = new ControllerProcess(
            ['service-mirror', '--kubeconfig', kubeconfigFile(env.local.admin, 'secrets-local'), '--namespace', linkNs, '--admin-addr', '127.0.0.1:0', '--log-level', 'debug'],
            output,
        );
        const condition = async (link: string, type: string) => (await getLink(env, linkNs, link)).status?.conditions?.find((c) => c.type === type);
        let answers = '';
        try {
            await eventually('the served Link mirrored', async () => (await mirrorService(env, ns, 'web-served')) !== undefined, 60_000);
            await eventually('the exec Link refused', async () => (await condition('exec', 'RemoteCredentialsValid'))?.status === 'False');
            await eventually('the garbage Link refused', async () => (await condition('garbage', 'RemoteCredentialsValid'))?.status === 'False');
            await eventually('the unauthorized Link unreadable', async () => (await condition('unauthorized', 'RemoteReadable'))?.status === 'False', 30_000);
            answers = await adminAnswers(mirror);
            assert.match(answers, /mesh_endpoints_service_mirror_mirrored_services\{link="served"/, 'the metrics were read');
        } finally {
            await mirror.terminate();
        }
        assert.ok(output.length > 20, 'the process logged');
        const secrets: Record<string, string> = {
            'the served token': admin.users[0]!.user.token,
            'the exec token': execToken,
            'the unauthorized token': wrongToken,
            'the garbage token': garbageToken,
            'the local admin token': env.local.state.adminToken,
            'the remote CA data': cluster['certificate-authority-data'],
        };
        for (const [name, text] of Object.entries(kubeconfigs)) secrets[`the ${name} kubeconfig (base64)`] = Buffer.from(text).toString('base64').slice(0, 40);
        assert.deepEqual(leaks([answers, ...output], secrets), []);
    });

    it('external-workloads: the webhook private key and the token never appear', async () => {
        const controllerNs = await env.local.namespace('system');
        const port = await freePort();
        const output: string[] = [];
        const replica = new ControllerProcess(
            ['external-workloads', '--kubeconfig', env.local.state.kubeconfig, '--namespace', controllerNs, '--identity', 'secrets-a', '--admin-addr', '127.0.0.1:0',
                '--webhook-addr', `127.0.0.1:${port}`, '--webhook-hosts', '127.0.0.1', '--webhook-manage-crd=false', '--log-level', 'debug'],
            output,
        );
        let answers = '';
        let key = '';
        try {
            await eventually('ready with its webhook', () => replica.ready(), 60_000);
            const secret = await env.local.admin.get<{ data: Record<string, string> }>(objectPath(Secrets, controllerNs, 'mesh-endpoints-conversion-webhook-cert'));
            key = Buffer.from(secret.data['tls.key']!, 'base64').toString('utf8');
            answers = await adminAnswers(replica);
        } finally {
            await replica.terminate();
        }
        assert.match(key, /PRIVATE KEY/);
        const keyBody = key.split('\n').filter((l) => l && !l.startsWith('-----'))[1]!;
        assert.deepEqual(leaks([answers, ...output], { 'the private key': keyBody, 'the token': env.local.state.adminToken }), []);
    });
});
