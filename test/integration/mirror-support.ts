import assert from 'node:assert/strict';
// Shared by the service-mirror integration tests: two real clusters (local and remote), a real
// DNS server on loopback, the controller in-process with a client that records its writes, and
// helpers to create remote Services, Links and read back mirrors, slices, Events and status.
// Every probe goes to 127.0.0.1 (the probe address override is always set): the documentation
// addresses in objects (192.0.2.x, 2001:db8::) are never connected to.
import type { V1EndpointSlice, V1Service } from '@kubernetes/client-node';
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import https from 'node:https';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after } from 'node:test';
import { Registry } from 'prom-client';
import { EventRecorder } from '../../src/kube/events.js';
import { logFn, newLogger } from '../../src/kube/log.js';
import { Manager } from '../../src/kube/manager.js';
import type { RequestOpts } from '../../src/kube/rest.js';
import { collectionPath, EndpointSlices, Events, Links, Namespaces, objectPath, Secrets, Services } from '../../src/kube/resources.js';
import { WorkQueueMetrics } from '../../src/kube/workqueue-metrics.js';
import { SERVICE_MIRROR_LEASE, ServiceMirrorController, type ServiceMirrorOptions } from '../../src/servicemirror/controller.js';
import type { LinkStatus } from '../../src/servicemirror/api/link.js';
import { MIRROR_SLICE_MANAGED_BY } from '../../src/servicemirror/api/keys.js';
import { KubeRest } from '../../src/kube/rest.js';
import { installCrds } from '../../src/testing/crds.js';
import { TestDnsServer } from '../../src/testing/dns-server.js';
import { setUp, startTestCluster, type TestCluster } from '../../src/testing/harness.js';

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

/** A client that remembers every write it sends (Events aside): the evidence for "writes nothing". */
export class RecordingRest extends KubeRest {
    readonly writes: { method: string; path: string; at: number }[] = [];
    override request<T>(method: string, path: string, o?: RequestOpts): Promise<T> {
        if (method !== 'GET' && !path.includes('/events')) this.writes.push({ method, path, at: Date.now() });
        return super.request<T>(method, path, o);
    }
    writesMatching(...fragments: string[]): { method: string; path: string; at: number }[] {
        return this.writes.filter((w) => fragments.some((f) => w.path.includes(f)));
    }
}

export interface MirrorEnv {
    local: TestCluster;
    remote: TestCluster;
    dns: TestDnsServer;
    /** Stopped before the clusters go down, so no watch holds an apiserver's shutdown up. */
    controllers: Set<RunningMirror>;
}

/** Call at the top level of a test file: both clusters (with the Link CRD locally) and the DNS server. */
export async function startMirrorEnv(prefix: string): Promise<MirrorEnv> {
    const controllers = new Set<RunningMirror>();
    // Registered first, so it runs before the clusters' own after() hooks.
    after(async () => {
        await Promise.all([...controllers].map((c) => c.stop()));
    });
    const [local, remote, dns] = await Promise.all([startTestCluster(`${prefix}-l`), startTestCluster(`${prefix}-r`), setUp('the DNS server', () => TestDnsServer.start())]);
    after(() => dns.close());
    await setUp('the CRDs', () => installCrds(local.admin));
    return { local, remote, dns, controllers };
}

export interface RunningMirror {
    controller: ServiceMirrorController;
    manager: Manager;
    rest: RecordingRest;
    registry: Registry;
    namespace: string;
    stop(): Promise<void>;
}

/** Test DNS policy: small enough to see refreshes, failures and the stale window within seconds. */
export const TEST_DNS = { minTtlMs: 1000, maxTtlMs: 3000, staleWindowMs: 2000 };

export async function runServiceMirror(
    env: MirrorEnv,
    namespace: string,
    opts: Partial<ServiceMirrorOptions> & {
        /** false: return without waiting for the caches to sync. */
        waitForSync?: boolean;
        /** Elect a leader through the controller's Lease in `namespace` (by default this process always writes). */
        leaderElection?: boolean;
    } = {},
): Promise<RunningMirror> {
    const rest = new RecordingRest(env.local.kubeConfig());
    const logger = newLogger(process.env.TEST_LOG_LEVEL ?? 'silent');
    const registry = new Registry();
    const manager = new Manager({
        rest: opts.rest ?? rest, // the client to act as (a ServiceAccount's, to prove RBAC) elects too
        logger,
        registry,
        leaderElection: opts.leaderElection
            ? { namespace, name: SERVICE_MIRROR_LEASE, leaseDurationMs: 4000, renewDeadlineMs: 2500, retryPeriodMs: 500 }
            : undefined,
    });
    const controller = new ServiceMirrorController({
        logger,
        registry,
        queueMetrics: new WorkQueueMetrics(registry, 'mesh_endpoints'),
        // No de-duplication window: tests look for every Event.
        events: new EventRecorder(manager.client, 'mesh-endpoints-service-mirror', logFn(logger), 0),
        isLeader: manager.isLeader,
        namespace,
        dnsServers: [env.dns.address],
        dnsPolicy: TEST_DNS,
        dnsTimeoutMs: 300,
        dnsTries: 1,
        probeAddressOverride: { host: '127.0.0.1' },
        linkRetryMs: 500,
        statusDelayMs: 200,
        ...opts,
        // The Manager's client, as the process has: writes only while leading.
        rest: manager.client,
    });
    manager.add(controller);
    const started = manager.start();
    if (opts.waitForSync ?? true) await started;
    const running: RunningMirror = {
        controller,
        manager,
        rest,
        registry,
        namespace,
        stop: async () => {
            env.controllers.delete(running);
            await manager.stop();
        },
    };
    env.controllers.add(running);
    return running;
}

/** The same namespace on both clusters, as mirroring expects. */
export async function pairedNamespace(env: MirrorEnv, prefix = 'app'): Promise<string> {
    const ns = await env.remote.namespace(prefix);
    await env.local.admin.create(collectionPath(Namespaces), { metadata: { name: ns } });
    return ns;
}

export interface RemoteServiceSpec {
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    ports?: { name?: string; port: number; protocol?: string }[];
    families?: ('IPv4' | 'IPv6')[];
    /** Ready endpoints in the remote's EndpointSlice; 'none' makes no slice at all. */
    endpoints?: 'ready' | 'not-ready' | 'none';
}

export const EXPORTED = { 'mirror.linkerd.io/exported': 'true' };

export async function createRemoteService(env: MirrorEnv, ns: string, name: string, spec: RemoteServiceSpec = {}): Promise<V1Service> {
    const families = spec.families;
    const svc = await env.remote.admin.create<V1Service>(collectionPath(Services, ns), {
        apiVersion: 'v1',
        kind: 'Service',
        metadata: { name, labels: spec.labels ?? EXPORTED, annotations: spec.annotations },
        spec: {
            ports: spec.ports ?? [{ name: 'http', port: 80 }],
            ...(families ? { ipFamilies: families, ipFamilyPolicy: families.length > 1 ? 'RequireDualStack' : 'SingleStack' } : {}),
        },
    });
    if ((spec.endpoints ?? 'ready') !== 'none') await setRemoteEndpoints(env, ns, name, spec.endpoints !== 'not-ready');
    return svc;
}

/** The remote Service's one EndpointSlice (there is no endpoint controller in the test clusters). */
export async function setRemoteEndpoints(env: MirrorEnv, ns: string, service: string, ready: boolean): Promise<void> {
    const path = objectPath(EndpointSlices, ns, `${service}-test`);
    const slice: V1EndpointSlice = {
        apiVersion: 'discovery.k8s.io/v1',
        kind: 'EndpointSlice',
        metadata: { name: `${service}-test`, labels: { 'kubernetes.io/service-name': service, 'endpointslice.kubernetes.io/managed-by': 'test' } },
        addressType: 'IPv4',
        endpoints: [{ addresses: ['10.1.0.1'], conditions: { ready } }],
        ports: [{ name: 'http', port: 8080, protocol: 'TCP' }],
    };
    try {
        const current = await env.remote.admin.get<V1EndpointSlice>(path);
        await env.remote.admin.replace(path, { ...slice, metadata: { ...slice.metadata, resourceVersion: current.metadata?.resourceVersion } });
    } catch {
        await env.remote.admin.create(collectionPath(EndpointSlices, ns), slice);
    }
}

export async function patchRemoteService(env: MirrorEnv, ns: string, name: string, patch: unknown): Promise<void> {
    await env.remote.admin.mergePatch(objectPath(Services, ns, name), patch);
}

export async function deleteRemoteService(env: MirrorEnv, ns: string, name: string): Promise<void> {
    await env.remote.admin.delete(objectPath(Services, ns, name));
}

export interface LinkSpec {
    name: string;
    /** targetClusterName; the Link name by default. */
    cluster?: string;
    gatewayAddress: string;
    gatewayPort?: string;
    selector?: unknown;
    federatedSelector?: unknown;
    probe?: { path: string; port: number; period: string; timeout?: string; failureThreshold?: string };
}

/** A credentials Secret holding the remote's admin kubeconfig, then the Link. */
export async function createLink(env: MirrorEnv, namespace: string, link: LinkSpec): Promise<void> {
    const secretName = `creds-${link.name}`;
    await env.local.admin.create(collectionPath(Secrets, namespace), {
        metadata: { name: secretName },
        type: 'mirror.linkerd.io/remote-kubeconfig',
        data: { kubeconfig: Buffer.from(readFileSync(env.remote.state.kubeconfig, 'utf8')).toString('base64') },
    });
    await env.local.admin.create(collectionPath(Links, namespace), linkObject(link, secretName));
}

export function linkObject(link: LinkSpec, secretName: string): object {
    return {
        apiVersion: 'multicluster.linkerd.io/v1alpha3',
        kind: 'Link',
        metadata: { name: link.name },
        spec: {
            targetClusterName: link.cluster ?? link.name,
            targetClusterDomain: 'cluster.local',
            clusterCredentialsSecret: secretName,
            gatewayAddress: link.gatewayAddress,
            gatewayPort: link.gatewayPort ?? '4143',
            gatewayIdentity: `linkerd-gateway.linkerd-multicluster.serviceaccount.identity.linkerd.${link.name}.local`,
            // No probeSpec at all: the CRD refuses an empty period, and no path means no probe.
            ...(link.probe && {
                probeSpec: {
                    path: link.probe.path,
                    port: String(link.probe.port),
                    period: link.probe.period,
                    timeout: link.probe.timeout ?? '1s',
                    failureThreshold: link.probe.failureThreshold ?? '3',
                },
            }),
            selector: link.selector === undefined ? { matchLabels: EXPORTED } : link.selector,
            ...(link.federatedSelector !== undefined && { federatedServiceSelector: link.federatedSelector }),
        },
    };
}

export interface StoredLink {
    metadata: { uid: string; resourceVersion: string; creationTimestamp: string };
    spec: Record<string, unknown>;
    status?: LinkStatus;
}

export async function getLink(env: MirrorEnv, namespace: string, name: string): Promise<StoredLink> {
    return env.local.admin.get(objectPath(Links, namespace, name));
}

export async function mirrorService(env: MirrorEnv, ns: string, name: string): Promise<V1Service | undefined> {
    return env.local.admin.get<V1Service>(objectPath(Services, ns, name)).catch(() => undefined);
}

export async function mirrorSlices(env: MirrorEnv, ns: string, service: string): Promise<V1EndpointSlice[]> {
    const list = await env.local.admin.get<{ items: V1EndpointSlice[] }>(collectionPath(EndpointSlices, ns), {
        labelSelector: `kubernetes.io/service-name=${service},endpointslice.kubernetes.io/managed-by=${MIRROR_SLICE_MANAGED_BY}`,
    });
    return list.items;
}

/** "IPv4 192.0.2.1 ready", one line per endpoint, sorted: what a test compares. */
export function endpointLines(slices: V1EndpointSlice[]): string[] {
    return slices
        .flatMap((s) => (s.endpoints ?? []).map((e) => `${s.addressType} ${e.addresses.join(',')} ${e.conditions?.ready ? 'ready' : 'not-ready'}`))
        .sort();
}

export async function endpointsOf(env: MirrorEnv, ns: string, service: string): Promise<string[]> {
    return endpointLines(await mirrorSlices(env, ns, service));
}

export interface KubeEvent {
    type: string;
    reason: string;
    message: string;
    involvedObject: { kind: string; name: string };
}

export async function linkEvents(env: MirrorEnv, namespace: string, link: string): Promise<KubeEvent[]> {
    const list = await env.local.admin.get<{ items: KubeEvent[] }>(collectionPath(Events, namespace));
    return list.items.filter((e) => e.involvedObject.kind === 'Link' && e.involvedObject.name === link);
}

export async function hasEvent(env: MirrorEnv, namespace: string, link: string, reason: string, text = ''): Promise<boolean> {
    return (await linkEvents(env, namespace, link)).some((e) => e.reason === reason && e.message.includes(text));
}

/**
 * Writes the apiserver itself counted (apiserver_request_total) to these resources: the
 * evidence for "writes nothing" that no client-side bookkeeping can fake.
 */
export async function apiserverWrites(cluster: TestCluster, resources: string[]): Promise<Record<string, number>> {
    return apiserverRequestSums(await apiserverMetrics(cluster), 'apiserver_request_total', resources);
}

/** The apiserver's own /metrics (Prometheus text). */
export async function apiserverMetrics(cluster: TestCluster): Promise<string> {
    const options: https.RequestOptions = {};
    await cluster.kubeConfig().applyToHTTPSOptions(options);
    return new Promise<string>((resolve, reject) => {
        https
            .get(`${cluster.state.server}/metrics`, options, (res) => {
                const chunks: Buffer[] = [];
                res.on('data', (c: Buffer) => chunks.push(c));
                res.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
            })
            .on('error', reject);
    });
}

/**
 * A per-request metric of the apiserver (apiserver_request_total, or the _sum or _count of
 * apiserver_request_duration_seconds) summed per "VERB resource[/subresource]", writes to these resources only.
 */
export function apiserverRequestSums(text: string, metric: string, resources: string[]): Record<string, number> {
    const sums: Record<string, number> = {};
    for (const line of text.split('\n')) {
        if (!line.startsWith(`${metric}{`)) continue;
        const labels = Object.fromEntries([...line.matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1], m[2]]));
        if (!['POST', 'PUT', 'PATCH', 'DELETE', 'APPLY'].includes(labels.verb ?? '')) continue;
        if (!resources.includes(labels.resource ?? '')) continue;
        const key = `${labels.verb} ${labels.resource}${labels.subresource ? `/${labels.subresource}` : ''}`;
        sums[key] = (sums[key] ?? 0) + Number(line.slice(line.lastIndexOf(' ') + 1));
    }
    return sums;
}

export interface MirrorProcess {
    proc: ChildProcess;
    exit: Promise<number | null>;
    stderr(): string;
}

/** `mesh-endpoints service-mirror` as a process of its own, with the test DNS policy unless `dnsArgs` say otherwise. */
export function startMirrorProcess(env: MirrorEnv, namespace: string, identity: string, dnsArgs: string[] = []): MirrorProcess {
    const proc = spawn(
        process.execPath,
        [
            '--import', 'tsx', 'src/cli/main.ts', 'service-mirror',
            '--kubeconfig', env.local.state.kubeconfig,
            '--namespace', namespace,
            '--identity', identity,
            '--admin-addr', '127.0.0.1:0',
            '--dns-servers', env.dns.address,
            '--dns-min-ttl', '1s', '--dns-max-ttl', '3s', '--dns-timeout', '300ms',
            ...dnsArgs,
            '--probe-address-override', '127.0.0.1',
            '--lease-duration', '4s', '--renew-deadline', '3s', '--retry-period', '500ms',
            '--log-level', process.env.TEST_LOG_LEVEL ?? 'warn',
        ],
        { cwd: repoRoot, stdio: ['ignore', 'ignore', 'pipe'] },
    );
    let stderr = '';
    proc.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const exit = new Promise<number | null>((done) => proc.once('exit', (code) => done(code)));
    after(() => {
        proc.kill('SIGKILL');
    });
    return { proc, exit, stderr: () => stderr };
}

/**
 * Polls the mirror's endpoints until `until` (ms since the epoch), failing at once if they are
 * ever not `expected`. Returns how many times they were checked.
 */
export async function mirrorHolds(env: MirrorEnv, ns: string, service: string, expected: string[], until: number): Promise<number> {
    let polls = 0;
    while (Date.now() < until) {
        assert.deepEqual(await endpointsOf(env, ns, service), expected, `check ${polls + 1}`);
        polls++;
        await new Promise((r) => setTimeout(r, 250));
    }
    return polls;
}
