// The service-mirror part of `make demo`: a second cluster whose gateway has only a LoadBalancer
// hostname (the EKS case), `mesh-endpoints link` against it, its output applied locally, and
// `mesh-endpoints service-mirror` following the gateway name through a real DNS server on
// loopback as its record changes and then fails. Every connection stays on 127.0.0.1: DNS
// goes to our server, probes to our probe server (--probe-address-override).
import type { V1EndpointSlice, V1Service } from '@kubernetes/client-node';
import { parseAllDocuments } from 'yaml';
import { KubeRest } from '../kube/rest.js';
import { collectionPath, EndpointSlices, Events, Links, objectPath, Secrets, Services } from '../kube/resources.js';
import type { LinkStatus } from '../servicemirror/api/link.js';
import { MIRROR_SLICE_MANAGED_BY } from '../servicemirror/api/keys.js';
import { down, up, type ClusterState } from '../testing/cluster.js';
import { TestDnsServer } from '../testing/dns-server.js';
import { eventually, kubeConfigFor } from '../testing/harness.js';
import { metricTotals, runCli, startController, type RunningController } from './cli.js';
import { createExportedService, createHostnameGateway, ensureNamespace, GATEWAY_NAMESPACE, startProbeServer, type ProbeServer } from './mirror-remote.js';
import { say, seconds, step } from './narrate.js';
import { mirrorSlicesTable, resolutionTable, table } from './table.js';
import { systemClock } from '../time/clock.js';

const REMOTE = 'demo-remote';
const GATEWAY_HOST = 'gateway.demo-remote.example.test';
const TTL_SECONDS = 2;
const APP_NAMESPACE = 'shop';
const MIRROR = `web-${REMOTE}`;
const WRITES = 'mesh_endpoints_service_mirror_slice_writes_total';
const RESOLUTIONS = 'mesh_endpoints_service_mirror_dns_resolutions_total';

/** What the demo reads back from the local cluster. */
class LocalView {
    constructor(private readonly rest: KubeRest) {}

    async slices(): Promise<V1EndpointSlice[]> {
        const list = await this.rest.get<{ items: V1EndpointSlice[] }>(collectionPath(EndpointSlices, APP_NAMESPACE), {
            labelSelector: `kubernetes.io/service-name=${MIRROR},endpointslice.kubernetes.io/managed-by=${MIRROR_SLICE_MANAGED_BY}`,
        });
        return list.items;
    }

    /** "192.0.2.10 ready,..." sorted: what a step waits for. */
    async endpoints(): Promise<string> {
        return (await this.slices())
            .flatMap((s) => (s.endpoints ?? []).map((e) => `${e.addresses.join('+')} ${e.conditions?.ready ? 'ready' : 'not-ready'}`))
            .sort()
            .join(',');
    }

    async resolution() {
        const link = await this.rest.get<{ status?: LinkStatus }>(objectPath(Links, GATEWAY_NAMESPACE, REMOTE));
        return link.status?.gatewayResolution ?? [];
    }

    async mirrorServiceTable(): Promise<string> {
        const svc = await this.rest.get<V1Service>(objectPath(Services, APP_NAMESPACE, MIRROR));
        const labels = svc.metadata?.labels ?? {};
        return table(
            ['SERVICE', 'PORTS', 'LABELS (mirror)', 'REMOTE'],
            [[
                `${APP_NAMESPACE}/${svc.metadata?.name}`,
                (svc.spec?.ports ?? []).map((p) => `${p.name}:${p.port}`).join(','),
                Object.entries(labels).filter(([k]) => k.startsWith('mirror.linkerd.io/')).map(([k, v]) => `${k}=${v}`).join(','),
                svc.metadata?.annotations?.['mirror.linkerd.io/remote-svc-fq-name'] ?? '',
            ]],
        );
    }

    async linkEventsTable(): Promise<string> {
        type KubeEvent = { type: string; reason: string; message: string; lastTimestamp?: string; involvedObject: { kind: string; name: string } };
        const list = await this.rest.get<{ items: KubeEvent[] }>(collectionPath(Events, GATEWAY_NAMESPACE));
        const rows = list.items
            .filter((e) => e.involvedObject.kind === 'Link' && e.involvedObject.name === REMOTE)
            .sort((a, b) => (a.lastTimestamp ?? '').localeCompare(b.lastTimestamp ?? ''))
            .map((e) => [e.lastTimestamp?.slice(11) ?? '-', e.type, e.reason, e.message]);
        return table(['LAST SEEN', 'TYPE', 'REASON', 'MESSAGE'], rows);
    }
}

/** Expects our CRDs installed on the local cluster. */
export async function serviceMirrorDemo(local: ClusterState, localRest: KubeRest): Promise<void> {
    const startedAt = systemClock.now();
    step(`starting a second cluster, "${REMOTE}", next to "${local.name}" (the local one)`);
    await down(REMOTE);
    const remoteState = await up(REMOTE);
    say(`kube-apiserver ${remoteState.server}, kubeconfig ${remoteState.kubeconfig}`);
    const remote = new KubeRest(kubeConfigFor(remoteState));
    const view = new LocalView(localRest);
    let dns: TestDnsServer | undefined;
    let probe: ProbeServer | undefined;
    let controller: RunningController | undefined;
    try {
        step(`on ${REMOTE}: the multicluster gateway, whose load balancer published only a hostname (as an AWS ELB does on EKS)`);
        say(await createHostnameGateway(remote, GATEWAY_HOST));

        step(`on ${REMOTE}: Service ${APP_NAMESPACE}/web, exported, with a ready endpoint`);
        say(await createExportedService(remote, APP_NAMESPACE, 'web'));

        dns = await TestDnsServer.start();
        dns.setRecords(GATEWAY_HOST, { A: [{ address: '192.0.2.10', ttl: TTL_SECONDS }, { address: '192.0.2.11', ttl: TTL_SECONDS }] });
        step(`a DNS server on ${dns.address} (UDP and TCP) answers for the gateway name`);
        say(table(['NAME', 'TYPE', 'ADDRESS', 'TTL'], ['192.0.2.10', '192.0.2.11'].map((a) => [GATEWAY_HOST, 'A', a, `${TTL_SECONDS}s`])));

        step(`mesh-endpoints link --remote-kubeconfig ${remoteState.kubeconfig} --cluster-name ${REMOTE}`);
        const linked = await runCli('link', '--remote-kubeconfig', remoteState.kubeconfig, '--cluster-name', REMOTE);
        const docs = parseAllDocuments(linked.stdout).map((d) => d.toJS() as { kind: string; metadata: { name: string; namespace: string }; spec?: Record<string, unknown>; type?: string });
        say(table(
            ['KIND', 'NAME', 'WHAT'],
            docs.map((d) => [
                d.kind,
                `${d.metadata.namespace}/${d.metadata.name}`,
                d.kind === 'Link' ? `gatewayAddress: ${String(d.spec?.gatewayAddress)}, gatewayPort: ${String(d.spec?.gatewayPort)}` : `type: ${d.type} (a kubeconfig with a read-only token)`,
            ]),
        ));
        say(`(${linked.stdout.split('\n').length} lines of YAML; on stderr: ${linked.stderr.trim()})`);

        step(`applying it to "${local.name}" (mesh-endpoints link ... | kubectl apply -f -), and creating namespace ${APP_NAMESPACE} there`);
        await ensureNamespace(localRest, GATEWAY_NAMESPACE);
        await ensureNamespace(localRest, APP_NAMESPACE);
        for (const doc of docs) {
            const resource = doc.kind === 'Secret' ? Secrets : Links;
            // Linkerd destination's Secret goes to its control-plane namespace (linkerd).
            await ensureNamespace(localRest, doc.metadata.namespace);
            await localRest.create(collectionPath(resource, doc.metadata.namespace), doc);
            say(`${doc.kind.toLowerCase()}/${doc.metadata.name} created`);
        }

        probe = await startProbeServer();
        const flags = ['--admin-addr', '127.0.0.1:0', '--dns-servers', dns.address, '--dns-min-ttl', '1s', '--dns-stale-window', '30s', '--probe-address-override', probe.address];
        step(`mesh-endpoints service-mirror --kubeconfig ${local.kubeconfig} --namespace ${GATEWAY_NAMESPACE} ${flags.join(' ')}`);
        controller = await startController('service-mirror', '--kubeconfig', local.kubeconfig, '--namespace', GATEWAY_NAMESPACE, ...flags, '--log-level', 'error');
        await eventually('the mirror slices with both resolved addresses', async () => (await view.endpoints()) === '192.0.2.10 ready,192.0.2.11 ready');
        say(await view.mirrorServiceTable());
        say('');
        say(mirrorSlicesTable(await view.slices()));
        await eventually('the gateway resolution in the Link status', async () => (await view.resolution()).some((r) => r.addresses.length === 2));
        say(`\nLink ${REMOTE} status.gatewayResolution:`);
        say(resolutionTable(await view.resolution()));
        await eventually('a gateway probe', () => probe!.probes > 0, 5000);
        say(`gateway probes answered by ${probe.address} so far: ${probe.probes}`);

        await showSteadyState(controller);
        await showRecordChange(dns, view);
        await showNameFailing(dns, view);
    } finally {
        if (controller) {
            step('stopping mesh-endpoints service-mirror (SIGTERM)');
            say(`exit code ${await controller.stop()}`);
        }
        await probe?.close();
        await dns?.close();
        remote.close();
        if (process.env.KEEP_CLUSTER) say(`\nremote cluster kept running: KUBECONFIG=${remoteState.kubeconfig}`);
        else {
            step(`stopping the remote cluster "${REMOTE}"`);
            await down(REMOTE);
        }
        say(`(service-mirror part: ${seconds(systemClock.now() - startedAt)})`);
    }
}

/** Same answers on every refresh: the controller resolves again and writes nothing. */
async function showSteadyState(controller: RunningController): Promise<void> {
    step(`steady state: the name is re-resolved every ${TTL_SECONDS} s (its TTL) with the same answers`);
    const before = await metricTotals(controller.admin, WRITES, RESOLUTIONS);
    const since = systemClock.now();
    await eventually('three more resolutions', async () => (await metricTotals(controller.admin, RESOLUTIONS))[RESOLUTIONS]! >= before[RESOLUTIONS]! + 3, 15_000);
    const after = await metricTotals(controller.admin, WRITES, RESOLUTIONS);
    say(`over ${seconds(systemClock.now() - since)}: ${after[RESOLUTIONS]! - before[RESOLUTIONS]!} resolutions, ${after[WRITES]! - before[WRITES]!} EndpointSlice writes (${WRITES})`);
}

/** One address replaced in DNS: the slice follows within the TTL (plus the write). */
async function showRecordChange(dns: TestDnsServer, view: LocalView): Promise<void> {
    step('the DNS record changes: 192.0.2.11 is replaced by 192.0.2.12');
    dns.setRecords(GATEWAY_HOST, { A: [{ address: '192.0.2.10', ttl: TTL_SECONDS }, { address: '192.0.2.12', ttl: TTL_SECONDS }] });
    const changedAt = systemClock.now();
    let followedAt = 0;
    await eventually(
        'the slice to follow the record',
        async () => {
            const done = (await view.endpoints()) === '192.0.2.10 ready,192.0.2.12 ready';
            followedAt ||= done ? systemClock.now() : 0;
            return done;
        },
        (TTL_SECONDS + 5) * 1000,
    );
    const ms = followedAt - changedAt;
    say(mirrorSlicesTable(await view.slices()));
    say(`record change -> updated slice: ${(ms / 1000).toFixed(2)} s (TTL ${TTL_SECONDS} s; bound TTL + 1 s = ${TTL_SECONDS + 1} s: ${ms <= (TTL_SECONDS + 1) * 1000 ? 'within' : 'OVER'})`);
    await eventually('the new address in the Link status', async () => (await view.resolution()).some((r) => r.addresses.includes('192.0.2.12')), 5000);
    say(resolutionTable(await view.resolution()));
}

/** SERVFAIL: the error shows in the status while the last good addresses stay ready; then DNS recovers. */
async function showNameFailing(dns: TestDnsServer, view: LocalView): Promise<void> {
    step(`the gateway name fails: the DNS server answers SERVFAIL for ${GATEWAY_HOST}`);
    dns.setBehaviour(GATEWAY_HOST, 'servfail');
    const failedAt = systemClock.now();
    await eventually('the error in the Link status', async () => (await view.resolution()).some((r) => r.lastError), (TTL_SECONDS + 5) * 1000);
    say(`after ${seconds(systemClock.now() - failedAt)}, Link ${REMOTE} status.gatewayResolution:`);
    say(resolutionTable(await view.resolution()));
    say('\nthe mirror keeps the last good addresses, ready, for the stale window (--dns-stale-window 30s), retrying with backoff:');
    say(mirrorSlicesTable(await view.slices()));

    step('the DNS server answers again');
    dns.setBehaviour(GATEWAY_HOST, 'normal');
    const answeredAt = systemClock.now();
    await eventually('the error cleared from the Link status', async () => (await view.resolution()).every((r) => !r.lastError), 15_000);
    say(`after ${seconds(systemClock.now() - answeredAt)} (the next retry), the error is gone:`);
    say(resolutionTable(await view.resolution()));
    say(`\nEvents on Link ${REMOTE}:`);
    say(await view.linkEventsTable());
}
