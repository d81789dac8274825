// Traffic through a hostname gateway (issue 30, item 4: the seed's own scenario, end to end):
// real requests from a Pod in the local cluster "east" reach a Pod in the remote cluster "west"
// through the remote's gateway, known to the service mirror only by the hostname its
// LoadBalancer status carries (an EKS load balancer's), which the test DNS server resolves.
// - Two clusters with a real node each (node.ts: containerd, the kubelet, kube-proxy in iptables
//   mode, CoreDNS answering cluster.local and clusterset.local), east in the node namespace and
//   west in a child namespace of it (second-node.ts), as the MCS conformance test runs them.
// - The gateway is a stand-in (src/testing/gateway.ts): a Node.js process on west's node host,
//   on an address of its own (10.216.0.x, routed from the node namespace), accepting TCP on 4143
//   and forwarding every connection to the exported Service's cluster IP (west's kube-proxy
//   leads it to the Pod), answering the mirror's probes on 4191. Linkerd's gateway is a Linkerd
//   proxy (mTLS between the clusters, routing by the request's authority), which cannot be built
//   here: this one forwards every connection to one Service, with no TLS.
// - The Link east -> west is written by `mesh-endpoints link` against west's gateway Service,
//   as a user makes it; east's service mirror is the product's own command with --dns-servers
//   (the test DNS server on the node namespace's loopback) and short DNS timings: TTL 1 s,
//   --dns-min-ttl 1s, --dns-max-ttl 3s, --dns-stale-window 30s.
// - The backend is the alpine/socat stand-in image (suite-images.ts, built from Debian packages;
//   not the upstream image) running busybox httpd, answering `web-west`.
// Everything runs inside a network namespace this file makes (it runs itself again in it).
// Timings it prints (`# ...`) are measurements, never assertions.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { after, describe, it } from 'node:test';
import type { V1EndpointSlice, V1Pod, V1Service } from '@kubernetes/client-node';
import { parseAllDocuments } from 'yaml';
import { runCli } from '../../src/demo/cli.js';
import { createHostnameGateway } from '../../src/demo/mirror-remote.js';
import { isAlreadyExists } from '../../src/kube/errors.js';
import { collectionPath, EndpointSlices, Links, objectPath, Secrets, Services } from '../../src/kube/resources.js';
import { MIRROR_SLICE_MANAGED_BY } from '../../src/servicemirror/api/keys.js';
import { TestDnsServer } from '../../src/testing/dns-server.js';
import { startGateway, type TestGateway } from '../../src/testing/gateway.js';
import { eventually, setUp } from '../../src/testing/harness.js';
import { cannotRunContainers } from '../../src/testing/image.js';
import { inNodeNamespace, NODE_IP, reexecInNodeNamespace } from '../../src/testing/node-namespace.js';
import { NODE_APISERVER_ARGS } from '../../src/testing/node.js';
import { suiteImages } from '../../src/testing/suite-images.js';
import { PodClient, type Answer, type RequestLoop } from '../../src/testing/traffic.js';
import { exportService, getImport, importedEndpoints, LINK_NS, sharedNamespace, startMcsSet, startRealNodes } from './mcs-support.js';

// Before anything starts: from here on this process runs inside the node namespace.
const unsupported = await cannotRunContainers();
if (!unsupported && !inNodeNamespace()) await reexecInNodeNamespace();

const run = promisify(execFile);
const GATEWAY_HOST = 'gateway.west.example.test';
const GATEWAY_ADDRESSES = ['10.216.0.1', '10.216.0.2'] as const;
const TTL_S = 1;
const STALE_WINDOW_S = 30;
const BACKEND_IMAGE = 'docker.io/alpine/socat:1.7.4.4';
const ANSWER = 'web-west';

function measured(what: string, ms: number): void {
    process.stderr.write(`# ${what}: ${(ms / 1000).toFixed(1)} s\n`);
}

const tally = (answers: Answer[]) => answers.reduce<Record<string, number>>((counts, a) => ({ ...counts, [a.answer]: (counts[a.answer] ?? 0) + 1 }), {});

/** The backend: one Pod app=web answering `web-west` on 8080 (busybox httpd of the socat stand-in). */
function backendPod(): V1Pod {
    return {
        metadata: { name: 'web-0', labels: { app: 'web' } },
        spec: {
            terminationGracePeriodSeconds: 0,
            containers: [{
                name: 'web',
                image: BACKEND_IMAGE,
                imagePullPolicy: 'Never',
                command: ['/bin/sh', '-c', `mkdir -p /www && echo ${ANSWER} > /www/index.html && exec httpd -f -p 8080 -h /www`],
                ports: [{ name: 'http', containerPort: 8080 }],
                readinessProbe: { tcpSocket: { port: 8080 as never }, periodSeconds: 1 },
            }],
        },
    };
}

describe('traffic through a hostname gateway, from a Pod in the local cluster to a Pod in the remote one', { skip: unsupported && `cannot run containers here: ${unsupported}` }, async () => {
    if (unsupported) return;
    const gatewayDir = mkdtempSync(join(tmpdir(), 'hostname-gateway-'));
    const gateways: TestGateway[] = [];
    const loops: RequestLoop[] = [];
    let dns: TestDnsServer | undefined;
    // Registered first, so it runs first (the nodes stop with their clusters: startRealNodes).
    after(async () => {
        for (const loop of loops) await loop.stop().catch(() => undefined);
        for (const gateway of gateways) await gateway.stop();
        await dns?.close();
        rmSync(gatewayDir, { recursive: true, force: true });
    });
    dns = await setUp('the DNS server', () => TestDnsServer.start());
    const set = await startMcsSet('hgw', {
        controllers: {},
        address: NODE_IP,
        // Single-stack, as the Pods are (mcs-conformance.test.ts says why).
        extraApiserverArgs: [...NODE_APISERVER_ARGS, '--service-cluster-ip-range=10.96.0.0/16'],
        // east's Link to west is made below by `mesh-endpoints link`, against the hostname gateway.
        unlinked: ['east'],
        controllerArgs: {
            east: ['--dns-servers', dns.address, '--dns-min-ttl', `${TTL_S}s`, '--dns-max-ttl', '3s', '--dns-stale-window', `${STALE_WINDOW_S}s`],
        },
    });
    const { east, west } = set;
    const images = await setUp("the stand-in images", () => suiteImages());
    const second = (await setUp('a real node in each cluster', () => startRealNodes(set, images))).second;

    const ns = await setUp('the namespace in both clusters', () => sharedNamespace(set, 'app'));
    const web = await setUp('the backend Pod and Service web in west', async () => {
        const admin = west.cluster.admin;
        // The namespace's default ServiceAccount comes from kube-controller-manager, shortly after the namespace.
        await eventually('Pod web-0 created', async () => {
            await admin.create(`/api/v1/namespaces/${ns}/pods`, backendPod()).catch((err: unknown) => {
                if (!isAlreadyExists(err)) throw err;
            });
            return true;
        }, 30_000);
        const svc = await admin.create<V1Service>(collectionPath(Services, ns), {
            metadata: { name: 'web', labels: { 'mirror.linkerd.io/exported': 'true' } },
            spec: { selector: { app: 'web' }, ports: [{ name: 'http', port: 80, targetPort: 8080 as never }] },
        });
        await eventually('web-0 ready', async () => {
            const pod = await admin.get<V1Pod>(`/api/v1/namespaces/${ns}/pods/web-0`);
            return !!pod.status?.containerStatuses?.every((c) => c.ready) && pod.status?.phase === 'Running';
        }, 120_000);
        return svc;
    });
    await setUp('two gateways on west\'s node host, and the gateway Service with only a hostname', async () => {
        for (const address of GATEWAY_ADDRESSES) {
            await second.namespace!.addAddress(address);
            gateways.push(await startGateway(second, gatewayDir, address, web.spec!.clusterIP!, 80));
        }
        // Through the first gateway from the node namespace: the gateway, west's kube-proxy and the Pod answer.
        await eventually('the backend through the first gateway', async () => {
            const res = await fetch(`http://${GATEWAY_ADDRESSES[0]}:4143/`, { signal: AbortSignal.timeout(2_000) });
            return (await res.text()).trim() === ANSWER;
        }, 60_000);
        dns!.setRecords(GATEWAY_HOST, { A: [{ address: GATEWAY_ADDRESSES[0], ttl: TTL_S }] });
        await createHostnameGateway(west.cluster.admin, GATEWAY_HOST);
    });
    const [gw1, gw2] = gateways as [TestGateway, TestGateway];

    const mirrorEndpoints = async () =>
        (
            await east.cluster.admin.get<{ items: V1EndpointSlice[] }>(collectionPath(EndpointSlices, ns), {
                labelSelector: `kubernetes.io/service-name=web-west,endpointslice.kubernetes.io/managed-by=${MIRROR_SLICE_MANAGED_BY}`,
            })
        ).items
            .flatMap((s) => (s.endpoints ?? []).map((e) => `${e.addresses.join('+')}:${(s.ports ?? []).map((p) => p.port).join(',')} ${e.conditions?.ready ? 'ready' : 'not-ready'}`))
            .sort()
            .join(',');
    /** Whether east's kube-proxy sends Service `svc` (`ns/svc:port`) to the gateway `address`. */
    const kubeProxySendsTo = async (svc: string, address: string) =>
        (await run('iptables-save', ['-t', 'nat'])).stdout.split('\n').some((l) => l.startsWith('-A KUBE-SVC-') && l.includes(`${ns}/${svc}:`) && l.includes(`-> ${address}:4143`));

    await setUp('the Link east -> west by mesh-endpoints link', async () => {
        const linked = await runCli(
            'link',
            '--kubeconfig', east.cluster.state.kubeconfig,
            '--remote-kubeconfig', west.cluster.state.kubeconfig,
            '--cluster-name', 'west',
            '--namespace', LINK_NS,
        );
        process.stderr.write(linked.stderr.split('\n').filter(Boolean).map((l) => `# ${l}\n`).join(''));
        const docs = parseAllDocuments(linked.stdout).map((d) => d.toJS() as { kind: string; metadata: { namespace: string }; spec?: { gatewayAddress?: string } });
        assert.deepEqual(docs.map((d) => d.kind).sort(), ['Link', 'Secret'], 'no Linkerd here: the Link and its credentials only');
        assert.equal(docs.find((d) => d.kind === 'Link')!.spec!.gatewayAddress, GATEWAY_HOST, "the Link's gateway is the hostname");
        for (const doc of docs) await east.cluster.admin.create(collectionPath(doc.kind === 'Secret' ? Secrets : Links, doc.metadata.namespace), doc);
        await eventually('the mirror web-west through the first gateway, probed ready', async () => (await mirrorEndpoints()) === `${GATEWAY_ADDRESSES[0]}:4143 ready`, 60_000);
    });
    const clientNs = await setUp('a namespace for the client in east', () => east.cluster.namespace('client'));
    const client = await setUp('the client Pod in east', () => PodClient.start(east.cluster.admin, east.cluster.kubeConfig(), clientNs, 'client'));
    const mirrorUrl = `http://web-west.${ns}.svc.cluster.local/`;

    it("a Pod in east reaches west's Service through the mirror web-west by its DNS name, through the gateway", async () => {
        const before = gw1.accepted().length;
        const started = Date.now();
        let answer = '';
        await eventually(`an answer from ${mirrorUrl}`, async () => (answer = await client.get(mirrorUrl)) === ANSWER, 60_000);
        measured('first request -> answer from west through the mirror', Date.now() - started);
        assert.equal(answer, ANSWER);
        const mirror = await east.cluster.admin.get<V1Service>(objectPath(Services, ns, 'web-west'));
        assert.deepEqual(await client.lookup(`web-west.${ns}.svc.cluster.local.`), [mirror.spec!.clusterIP], "the name is the mirror's address");
        assert.ok(gw1.accepted().length > before, 'the first gateway carried it');
        assert.equal(gw2.accepted().length, 0, 'the second gateway none');
    });

    it('the DNS record moves to a second gateway address: traffic follows, no request fails beyond the one in flight', async () => {
        const loop = client.loop(mirrorUrl, 120);
        loops.push(loop);
        await eventually('the loop answering', () => loop.answers.some((a) => a.answer === ANSWER), 30_000);
        const changed = Date.now();
        dns!.setRecords(GATEWAY_HOST, { A: [{ address: GATEWAY_ADDRESSES[1], ttl: TTL_S }] });
        // Each milestone as of the start of the poll that saw it.
        const steps: Record<string, number> = {};
        const seen = async (what: string, check: () => Promise<boolean>) => {
            const polled = Date.now();
            if (steps[what] === undefined && (await check())) steps[what] = polled - changed;
        };
        await eventually('traffic on the second gateway only', async () => {
            await seen('mirror slice on the second address', async () => (await mirrorEndpoints()) === `${GATEWAY_ADDRESSES[1]}:4143 ready`);
            await seen("kube-proxy's rules to the second address only", async () => (await kubeProxySendsTo('web-west', GATEWAY_ADDRESSES[1])) && !(await kubeProxySendsTo('web-west', GATEWAY_ADDRESSES[0])));
            // Ten connections on the second gateway since the first gateway's last.
            const lastOnFirst = Math.max(changed, ...gw1.accepted());
            return gw2.accepted().filter((t) => t > lastOnFirst).length >= 10 && Object.keys(steps).length === 2;
        }, 60_000);
        for (const [what, ms] of Object.entries(steps)) measured(`DNS record changed -> ${what}`, ms);
        const firstOnSecond = gw2.accepted().find((t) => t >= changed)!;
        const onFirst = gw1.accepted().filter((t) => t >= changed);
        measured('DNS record changed -> first connection on the second gateway (traffic moved)', firstOnSecond - changed);
        if (onFirst.length) measured('DNS record changed -> last connection on the first gateway', onFirst.at(-1)! - changed);
        else process.stderr.write('# DNS record changed -> last connection on the first gateway: none after the change\n');
        process.stderr.write(`# TTL ${TTL_S} s: traffic moved ${firstOnSecond - changed <= (TTL_S + 1) * 1000 ? 'within' : 'later than'} TTL + 1 s\n`);
        // Settled: two seconds more, nothing new on the first gateway.
        const settled = Date.now();
        await new Promise((r) => setTimeout(r, 2_000));
        const answers = loop.since(changed);
        const counts = tally(answers);
        process.stderr.write(`# requests from the DNS change until settled: ${answers.length} (${JSON.stringify(counts)})\n`);
        assert.equal(gw1.accepted().filter((t) => t >= settled).length, 0, 'no connection on the first gateway once moved');
        assert.ok(gw2.accepted().filter((t) => t >= settled).length > 0, 'the second gateway carries the traffic');
        // The loop makes one request at a time: at most one is in flight when the rules change.
        assert.ok((counts.fail ?? 0) <= 1, `no failed request beyond the one in flight: ${JSON.stringify(counts)}`);
        assert.deepEqual(Object.keys(counts).filter((a) => a !== 'fail'), [ANSWER], 'every other answer from west');
    });

    it(`a DNS outage (SERVFAIL, then no answer at all) inside the ${STALE_WINDOW_S} s stale window: traffic keeps flowing, no request fails`, async () => {
        const loop = loops[0] ?? client.loop(mirrorUrl, 120);
        if (!loops.includes(loop)) loops.push(loop);
        for (const behaviour of ['servfail', 'blackhole'] as const) {
            // A good answer first, so the stale window starts with this outage.
            await eventually('the second gateway resolved', async () => (await mirrorEndpoints()) === `${GATEWAY_ADDRESSES[1]}:4143 ready`, 30_000);
            const start = Date.now();
            const queriesBefore = dns!.queryCount(GATEWAY_HOST);
            dns!.setBehaviour(GATEWAY_HOST, behaviour);
            // 8 s: past the 1 s TTL and the 3 s --dns-max-ttl, so the mirror asks (and fails) several times.
            const samples: string[] = [];
            while (Date.now() < start + 8_000) {
                samples.push(await mirrorEndpoints());
                await new Promise((r) => setTimeout(r, 500));
            }
            dns!.setBehaviour(GATEWAY_HOST, 'normal');
            const failedQueries = dns!.queries.filter((q) => q.at >= start && q.name.replace(/\.$/, '') === GATEWAY_HOST && q.answers === 0).length;
            const answers = loop.since(start).filter((a) => a.at <= start + 8_000);
            const counts = tally(answers);
            const moved = gw2.accepted().filter((t) => t >= start && t <= start + 8_000).length;
            process.stderr.write(
                `# DNS outage (${behaviour}, 8 s): ${dns!.queryCount(GATEWAY_HOST) - queriesBefore} queries for the gateway name (${failedQueries} without an answer), ` +
                    `${answers.length} requests ${JSON.stringify(counts)}, ${moved} connections on the gateway, mirror ready in ${samples.filter((s) => s.endsWith(' ready')).length}/${samples.length} samples\n`,
            );
            assert.ok(failedQueries > 0, `the mirror asked during the ${behaviour} outage and got no answer`);
            assert.deepEqual(counts, { [ANSWER]: answers.length }, `every request answered during the ${behaviour} outage`);
            assert.ok(answers.length > 0 && moved > 0, 'traffic flowed through the gateway');
            assert.ok(samples.every((s) => s === `${GATEWAY_ADDRESSES[1]}:4143 ready`), `the mirror kept its gateway ready: ${[...new Set(samples)].join(' | ')}`);
        }
        const all = await loop.stop();
        process.stderr.write(`# the whole request loop (DNS change and outages): ${all.length} requests ${JSON.stringify(tally(all))}\n`);
    });

    it('an MCS import from the gateway-mode Link: web.<ns>.svc.clusterset.local in east reaches the Pod in west through the gateway', async () => {
        const exported = Date.now();
        await exportService(west, ns, 'web');
        await eventually('the ServiceImport web in east with its address', async () => ((await getImport(east, ns, 'web'))?.spec?.ips ?? []).length > 0, 60_000);
        await eventually('the import through the gateway', async () => (await importedEndpoints(east, ns, 'web')).join(',') === `west ${GATEWAY_ADDRESSES[1]}:4143 ready`, 60_000);
        const before = gw2.accepted().length;
        const url = `http://web.${ns}.svc.clusterset.local/`;
        let answer = '';
        await eventually(`an answer from ${url}`, async () => (answer = await client.get(url)) === ANSWER, 60_000);
        measured('ServiceExport created in west -> first answer through clusterset.local in east', Date.now() - exported);
        assert.equal(answer, ANSWER);
        const imported = (await getImport(east, ns, 'web'))!;
        assert.deepEqual(await client.lookup(`web.${ns}.svc.clusterset.local.`), imported.spec!.ips, "the name is the import's address");
        assert.ok(gw2.accepted().length > before, 'the gateway carried it');
        const answers = await Promise.all(Array.from({ length: 5 }, () => client.get(url)));
        assert.deepEqual(answers, Array(5).fill(ANSWER), 'five more requests answered from west');
    });
});
