// `mesh-endpoints status`, `gateways`, `check` and `unlink` for Links, run as a user runs them
// (child processes), against two local clusters with the `service-mirror` command itself
// running (its own process, its Lease) and a real DNS server on loopback. Every probe, the
// service mirror's and our own, goes to a server on 127.0.0.1 (the probe address override).
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { after, describe, it } from 'node:test';
import { parseAllDocuments } from 'yaml';
import { startController } from '../../src/demo/cli.js';
import { collectionPath, Links, objectPath, Secrets, Services } from '../../src/kube/resources.js';
import type { CheckResult } from '../../src/ops/checks.js';
import type { GatewayLine } from '../../src/ops/gateways-report.js';
import type { LinkReport } from '../../src/ops/links-report.js';
import { eventually, setUp } from '../../src/testing/harness.js';
import { cli, ProbeServer } from './cli-support.js';
import { createLink, createRemoteService, endpointsOf, getLink, hasEvent, linkObject, mirrorService, pairedNamespace, startMirrorEnv } from './mirror-support.js';

const env = await startMirrorEnv('ops-link');
const linkNs = await setUp('a namespace', () => env.local.namespace('mc'));
const kubeconfig = env.local.state.kubeconfig;
const probe = await setUp('the probe server', () => ProbeServer.start());
const override = `127.0.0.1:${probe.port}`;
const GATEWAY = 'gw-east.mesh.test';

// east: a hostname gateway, probed; west: an IP gateway whose remote apiserver cannot be reached.
env.dns.setRecords(GATEWAY, { A: [{ address: '192.0.2.10', ttl: 30 }] });
await setUp('the Link east', () => createLink(env, linkNs, { name: 'east', gatewayAddress: GATEWAY, probe: { path: '/ready', port: 4191, period: '500ms', timeout: '500ms', failureThreshold: '2' } }));
const unreachable = ['apiVersion: v1', 'kind: Config', 'clusters: [{name: west, cluster: {server: "https://127.0.0.1:1"}}]', 'users: [{name: u, user: {token: t}}]', 'contexts: [{name: west, context: {cluster: west, user: u}}]', 'current-context: west', ''].join('\n');
await setUp('the Link west', () => env.local.admin.create(collectionPath(Secrets, linkNs), { metadata: { name: 'creds-west' }, type: 'mirror.linkerd.io/remote-kubeconfig', data: { kubeconfig: Buffer.from(unreachable).toString('base64') } }));
await setUp('the Link west', () => env.local.admin.create(collectionPath(Links, linkNs), linkObject({ name: 'west', gatewayAddress: '192.0.2.20' }, 'creds-west')));

const mirror = await setUp('the service-mirror process', () =>
    startController(
        'service-mirror', '--kubeconfig', kubeconfig, '--namespace', linkNs, '--admin-addr', '127.0.0.1:0', '--log-level', 'error',
        '--dns-servers', env.dns.address, '--dns-min-ttl', '1s', '--dns-max-ttl', '3s', '--dns-stale-window', '2s', '--dns-timeout', '300ms',
        '--probe-address-override', override, '--lease-duration', '4s', '--renew-deadline', '2500ms', '--retry-period', '500ms',
    ),
);
after(() => mirror.stop());

const app = await setUp('a namespace', () => pairedNamespace(env));
await setUp('a remote Service', () => createRemoteService(env, app, 'web'));
await setUp('the first mirror', () => eventually('web-east mirrored with a ready endpoint', async () => (await endpointsOf(env, app, 'web-east')).join() === 'IPv4 192.0.2.10 ready', 60_000));
await setUp('the first mirror', () => eventually('the gateway name in the Link status', async () => (await getLink(env, linkNs, 'east')).status?.gatewayResolution?.[0]?.ttlSeconds === 30, 30_000));

const json = async <T>(...args: string[]): Promise<T> => {
    const result = await cli(...args, '--kubeconfig', kubeconfig, '-n', linkNs, '-o', 'json');
    assert.equal(result.code, 0, result.stderr);
    return JSON.parse(result.stdout) as T;
};
const linkStatus = async (name: string) => (await json<{ links: LinkReport[] }>('status')).links.find((l) => l.name === name)!;
const gateways = async (...args: string[]) => json<GatewayLine[]>('gateways', ...args);

describe('status: Links', () => {
    it("shows a Link's gateway name with its addresses and TTL, its probe and its mirrored Services with their endpoints", async () => {
        const east = await linkStatus('east');
        assert.equal(east.targetClusterName, 'east');
        assert.deepEqual(east.gatewayNames.map((n) => [n.name, n.addresses, n.ttlSeconds, n.lastError]), [[GATEWAY, ['192.0.2.10'], 30, undefined]]);
        assert.equal(east.probe.state, 'alive');
        assert.equal(east.remote?.readable, true);
        assert.deepEqual(east.mirrors, [{ remote: `${app}/web`, local: `${app}/web-east`, mirrored: { status: 'True', reason: 'Mirrored', message: east.mirrors[0]!.mirrored!.message }, endpoints: 1, ready: 1 }]);

        const table = await cli('status', '--kubeconfig', kubeconfig, '-n', linkNs);
        assert.equal(table.code, 0, table.stderr);
        assert.match(table.stdout, new RegExp(`Link ${linkNs}/east: cluster east, remote readable, gateway port 4143, probe alive \\(/ready on port 4191\\)`));
        assert.match(table.stdout, new RegExp(`${GATEWAY.replace(/\./g, '\\.')} +192\\.0\\.2\\.10 +30s`));
        assert.match(table.stdout, new RegExp(`${app}/web +${app}/web-east +yes +1/1`));
    });
});

describe('gateways', () => {
    it('probes each probed gateway (through the override), and shows its addresses and mirrored Services', async () => {
        const before = probe.paths.length;
        const [east, west] = await gateways('--probe-address-override', override);
        assert.equal(east!.cluster, 'east');
        assert.equal(east!.alive, 'alive');
        assert.ok(east!.latencyMs !== undefined && east!.latencyMs >= 0);
        assert.deepEqual(east!.addresses, ['192.0.2.10']);
        assert.equal(east!.mirroredServices, 1);
        assert.equal(west!.alive, 'not-probed');
        assert.ok(probe.paths.length > before, 'our own probe reached the loopback server');
    });

    it("shows a failing gateway down at once, and after the service mirror's GatewayDown also without probing", async () => {
        probe.healthy = false;
        try {
            const [measured] = await gateways('--probe-address-override', override);
            assert.equal(measured!.alive, 'down');
            assert.match(measured!.detail!, /^503 /);
            await eventually('GatewayDown', () => hasEvent(env, linkNs, 'east', 'GatewayDown'));
            const [reported] = await gateways('--no-probe');
            assert.equal(reported!.alive, 'down');
            assert.equal(reported!.latencyMs, undefined);
            assert.equal((await linkStatus('east')).probe.state, 'down');
        } finally {
            probe.healthy = true;
        }
        await eventually('GatewayAlive', () => hasEvent(env, linkNs, 'east', 'GatewayAlive'));
        assert.equal((await linkStatus('east')).probe.state, 'alive');
    });
});

describe('check: Links', () => {
    const check = async () => {
        const result = await cli('check', '--kubeconfig', kubeconfig, '-n', linkNs, '-o', 'json');
        return { code: result.code, results: (JSON.parse(result.stdout) as { results: CheckResult[] }).results };
    };
    const find = (results: CheckResult[], category: string, description: RegExp) => results.find((r) => r.category === category && description.test(r.description));

    it("reaches each Link's remote with the Link's own credentials, sees the service mirror's leader, and fails an unreachable remote", async () => {
        const { code, results } = await check();
        assert.equal(code, 1);
        assert.equal(find(results, 'controllers', /^service-mirror/)?.status, 'ok');
        assert.equal(find(results, `Link ${linkNs}/east`, /remote cluster east is reachable/)?.status, 'ok');
        assert.equal(find(results, `Link ${linkNs}/east`, /gateway gw-east\.mesh\.test resolves/)?.status, 'ok');
        const west = find(results, `Link ${linkNs}/west`, /remote cluster west is reachable/);
        assert.equal(west?.status, 'fail');
        assert.match(west!.detail!, /ECONNREFUSED/);
        assert.match(west!.hint!, /mesh-endpoints link/);
        await eventually('the service mirror reports west unreadable', async () => (await linkStatus('west')).remote?.readable === false, 30_000);
        const mirrorView = find((await check()).results, `Link ${linkNs}/west`, /the service mirror reads remote cluster west/);
        assert.equal(mirrorView?.status, 'fail');
        assert.match(mirrorView!.detail!, /^Unreachable since /);
    });

    it('fails a gateway name that stops resolving, with the DNS error from the Link status', async () => {
        env.dns.setBehaviour(GATEWAY, 'servfail');
        try {
            await eventually('the failure in the Link status', async () => (await getLink(env, linkNs, 'east')).status?.gatewayResolution?.[0]?.lastError !== undefined, 30_000);
            const gateway = find((await check()).results, `Link ${linkNs}/east`, /gateway gw-east\.mesh\.test resolves/);
            assert.equal(gateway?.status, 'fail');
            assert.match(gateway!.detail!, /SERVFAIL/);
        } finally {
            env.dns.setBehaviour(GATEWAY, 'normal');
        }
        await eventually('resolving again', async () => (await getLink(env, linkNs, 'east')).status?.gatewayResolution?.[0]?.lastError === undefined, 30_000);
    });
});

describe('unlink', () => {
    it('prints the Link, its Secret, its mirror and slices as YAML that kubectl delete removes', async () => {
        const printed = await cli('unlink', '--cluster-name', 'east', '--kubeconfig', kubeconfig, '-n', linkNs);
        assert.equal(printed.code, 0, printed.stderr);
        const objects = parseAllDocuments(printed.stdout).map((d) => d.toJS() as { kind: string; metadata: { name: string; namespace: string } });
        assert.deepEqual(objects.slice(0, 3).map((o) => `${o.kind} ${o.metadata.namespace}/${o.metadata.name}`), [`Link ${linkNs}/east`, `Secret ${linkNs}/creds-east`, `Service ${app}/web-east`]);
        assert.ok(objects.slice(3).length >= 1 && objects.slice(3).every((o) => o.kind === 'EndpointSlice' && o.metadata.namespace === app));

        await kubectlDelete(printed.stdout);
        assert.equal(await mirrorService(env, app, 'web-east'), undefined);
        await assert.rejects(env.local.admin.get(objectPath(Links, linkNs, 'east')), /not found/);
        await assert.rejects(env.local.admin.get(objectPath(Secrets, linkNs, 'creds-east')), /not found/);
    });

    it("--apply deletes them itself, and never another namespace's mirror of the same cluster name", async () => {
        const fakeMirror = (name: string, link: string) => ({
            metadata: { name, labels: { 'mirror.linkerd.io/mirrored-service': 'true', 'mirror.linkerd.io/cluster-name': 'west' }, annotations: { 'mesh-endpoints.io/link': link } },
            spec: { ports: [{ port: 80 }] },
        });
        await env.local.admin.create(collectionPath(Services, app), fakeMirror('web-west', `${linkNs}/west`));
        await env.local.admin.create(collectionPath(Services, app), fakeMirror('api-west', 'elsewhere/west'));
        const applied = await cli('unlink', '--cluster-name', 'west', '--apply', '--kubeconfig', kubeconfig, '-n', linkNs);
        assert.equal(applied.code, 0, applied.stderr);
        assert.match(applied.stdout, new RegExp(`^link ${linkNs}/west deleted\\nsecret ${linkNs}/creds-west deleted\\nservice ${app}/web-west (deleted|already gone)\\n$`));
        assert.equal(await mirrorService(env, app, 'web-west'), undefined);
        assert.ok(await mirrorService(env, app, 'api-west'), "another namespace's mirror stays");
    });

    it('exits 1 with one line naming the Links there are when the cluster has none', async () => {
        const missing = await cli('unlink', '--cluster-name', 'north', '--kubeconfig', kubeconfig, '-n', linkNs);
        assert.equal(missing.code, 1);
        assert.equal(missing.stderr, `mesh-endpoints: no Link for cluster north in namespace ${linkNs} (Links there: none)\n`);
    });
});

async function kubectlDelete(yaml: string): Promise<void> {
    const child = spawn('kubectl', ['--kubeconfig', kubeconfig, 'delete', '--ignore-not-found', '-f', '-'], { stdio: ['pipe', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.stdin.end(yaml);
    const code = await new Promise<number | null>((done) => child.once('exit', done));
    assert.equal(code, 0, stderr);
}
