// `mesh-endpoints service-mirror`: the multicluster service mirror in one process. It serves
// every Link in --namespace, one Lease (mesh-endpoints-service-mirror) for the process. The
// DNS failure policy and the probe are explained to users in HELP (shown by --help).
import { InvalidArgumentError, Option, type Command } from 'commander';
import { KubeRest } from '../kube/rest.js';
import { SERVICE_MIRROR_LEASE, ServiceMirrorController } from '../servicemirror/controller.js';
import { DEFAULT_MAX_MIRRORS_PER_LINK } from '../servicemirror/plan/mirror-limit.js';
import { DEFAULT_MCS_WORKERS } from '../servicemirror/mcs/controller.js';
import type { ProbeAddressOverride } from '../net/probe.js';
import { type LabelSelector, parseLabelSelector } from '../servicemirror/api/selector.js';
import { ALLOW_EXEC_FLAG, ALLOW_INSECURE_TLS_FLAG } from '../kube/untrusted-kubeconfig.js';
import type { ProbeCidr } from '../ip/probe-target.js';
import { boolFlag, controllerOptions, durationOption, fail, intFlag, numberFlag, PROBE_ALLOW_CIDRS_HELP, probeAllowCidrsFlag, probeOverrideFlag, runController, type ControllerFlags } from './common.js';

interface Flags extends ControllerFlags {
    dnsServers?: string[];
    dnsMinTtl: number;
    dnsMaxTtl: number;
    dnsStaleWindow: number;
    dnsTimeout: number;
    probeAddressOverride?: ProbeAddressOverride;
    probeAllowCidrs?: ProbeCidr[];
    maxEndpointsPerSlice: number;
    maxMirrorsPerLink: number;
    enableHeadlessServices: boolean;
    enableNamespaceCreation: boolean;
    federatedServiceSelector: LabelSelector;
    excludedLabels: string[];
    excludedAnnotations: string[];
    allowKubeconfigExec: boolean;
    allowInsecureRemoteTls: boolean;
    mcs: boolean;
    clusterName?: string;
    mcsWorkers: number;
    mcsApiQps: number;
    mcsApiBurst: number;
}

// MCS's own share of the client rate limit, apart from --kube-api-qps (the mirrors' and the
// rest's): a burst of exports is 4 writes per import in every cluster, 5 where the export lives,
// and at the process's 20 per second 1 000 exports would take over 4 minutes however fast the
// apiserver is; at 100 per second the limiter still set the pace of a burst on this 2-core
// machine, whose apiservers took ~210 writes/s each (bench/mcs-scale.ts). 500 leaves a burst to
// the apiserver's pace; what keeps MCS from flooding it is the bound on writes in flight (twice
// --mcs-workers), and a steady state writes nothing.
const DEFAULT_MCS_API_QPS = 500;
const DEFAULT_MCS_API_BURST = 1_000;

/** What Linkerd's chart passes its local service mirror (its flag's own default is the bare key). */
const DEFAULT_LOCAL_FEDERATED_SELECTOR = 'mirror.linkerd.io/federated=member';

function selectorFlag(text: string): LabelSelector {
    const parsed = parseLabelSelector(text);
    if ('error' in parsed) throw new InvalidArgumentError(parsed.error);
    return parsed;
}

/** Linkerd's form: split on commas, no trimming of keys; "" is no key at all. */
function keyListFlag(text: string): string[] {
    return text.split(',').filter((key) => key !== '');
}

function dnsServersFlag(text: string): string[] {
    const servers = text.split(',').map((s) => s.trim()).filter((s) => s !== '');
    if (servers.length === 0) throw new InvalidArgumentError('expected HOST:PORT[,HOST:PORT...]');
    return servers;
}

const HELP = `
Gateway hostnames are resolved by this process (A and AAAA, with their TTLs) and re-resolved
when the shortest TTL runs out, clamped to [--dns-min-ttl, --dns-max-ttl]. Unchanged answers
write nothing. When a name fails (NXDOMAIN, SERVFAIL, timeout, empty answer) its last good
addresses stay ready for --dns-stale-window, then stay published with ready: false until DNS
answers again; other names of the Link are unaffected. Loopback, link-local, multicast and
unspecified answers are dropped. Every change is an Event on the Link and shows in its
status.gatewayResolution.

A Link with probeSpec.path is probed (HTTP GET on the gateway's probe port); after
failureThreshold failures every mirror endpoint of the Link is not ready until a probe passes.
--probe-address-override sends the probes elsewhere (a local proxy to the gateway, or a test
server on 127.0.0.1). A probe never goes to a loopback, link-local (cloud metadata), unspecified
or multicast gateway address unless --probe-allow-cidrs lists it: such a gateway is not probed
(a GatewayProbeRefused Event) and its mirror endpoints stay ready. Probes follow no redirect
and read no body.

Linkerd's other modes, with its object names, labels and annotations:
--enable-headless-services  a remote headless Service whose endpoints have hostnames (a
    StatefulSet) is mirrored as a headless <svc>-<cluster> plus one <hostname>-<cluster> per
    pod pointing at the gateway, so <hostname>.<svc>-<cluster>.<ns>.svc resolves. Without it a
    headless remote is mirrored as an ordinary ClusterIP mirror.
Federated services: remote Services a Link's spec.federatedServiceSelector selects, and local
    ones --federated-service-selector selects, become one <name>-federated Service (no
    endpoints of its own) whose multicluster.linkerd.io/remote-discovery and local-discovery
    annotations Linkerd's destination reads. Its metadata comes from the local member, else from
    the member of the oldest Link. --excluded-labels and --excluded-annotations (KEY or PREFIX/*)
    apply to the local member, as Linkerd's flags do; a Link's own spec.excludedLabels and
    spec.excludedAnnotations apply to its mirrors and members.
--enable-namespace-creation  a mirror whose namespace is missing here gets the namespace
    created (labelled mirror.linkerd.io/mirrored-service and cluster-name; needs the right to
    create namespaces, which the chart grants with serviceMirror.enableNamespaceCreation)
    instead of waiting for it.

Remote credentials: a Link's credentials Secret may hold only inline material (server, CA
data, token, client certificate and key data). exec, auth-provider, tokenFile, file paths,
proxy-url, insecure-skip-tls-verify and http:// servers are refused: the Link gets
RemoteCredentialsValid=False naming the field and a Warning Event, and is not served; every
other Link goes on. --allow-kubeconfig-exec and --allow-insecure-remote-tls loosen this, each
at the risk its help states. Redirects from a remote apiserver are never followed.

The Multi-Cluster Services API (KEP-1645; docs/mcs.md): a ServiceExport here or in a cluster a
Link points at becomes a ServiceImport here, with a derived Service derived-<hash> (its
ClusterIP is the import's) and EndpointSlices per source cluster: the remote's gateway, or its
own endpoints for a Link without a gateway or a remote-discovery Service, and this cluster's
own. Needs this cluster's name: --cluster-name, else the ClusterProperty
cluster.clusterset.k8s.io. --mcs=false turns it off.`;

export function serviceMirrorCommand(program: Command): void {
    const command = program
        .command('service-mirror')
        .description('mirror the exported Services of every Link in a namespace, with EndpointSlices pointing at each remote gateway');
    controllerOptions(command, { namespace: 'linkerd-multicluster', adminAddr: '0.0.0.0:9999' }, 'namespace of the Links, their credentials Secrets and the Lease')
        .option('--dns-servers <host:port,...>', 'DNS servers for gateway hostnames (default: the system resolver configuration)', dnsServersFlag)
        .addOption(durationOption('--dns-min-ttl <duration>', 'never re-resolve a gateway name sooner than this, whatever its TTL', 5_000))
        .addOption(durationOption('--dns-max-ttl <duration>', 'always re-resolve a gateway name within this, whatever its TTL', 3_600_000))
        .addOption(durationOption('--dns-stale-window <duration>', "how long a failing name's last good addresses stay ready", 300_000))
        .addOption(durationOption('--dns-timeout <duration>', 'timeout of one DNS query try (two tries)', 2_000))
        .option(
            '--probe-address-override <host[:port]>',
            'send gateway probes here instead of to the gateway address (a local proxy to the gateway, or a test server)',
            probeOverrideFlag,
        )
        .option('--probe-allow-cidrs <cidrs>', PROBE_ALLOW_CIDRS_HELP, probeAllowCidrsFlag)
        .option('--max-endpoints-per-slice <n>', 'endpoints per EndpointSlice (1-1000)', intFlag(1, 1000), 100)
        .option(
            '--max-mirrors-per-link <n>',
            'mirror at most this many remote Services per Link, the oldest; past it the Link says MirrorLimitReached',
            intFlag(0, 1_000_000),
            DEFAULT_MAX_MIRRORS_PER_LINK,
        )
        .option('--enable-headless-services [bool]', 'mirror headless Services with hostnames as headless mirrors plus one endpoint mirror per hostname', boolFlag, false)
        .option('--enable-namespace-creation [bool]', 'create the namespace of a mirror when it is missing here', boolFlag, false)
        .addOption(
            new Option('--federated-service-selector <selector>', 'local Services that join their federated Service as the local member ("" for none)')
                .argParser(selectorFlag)
                .default(selectorFlag(DEFAULT_LOCAL_FEDERATED_SELECTOR), DEFAULT_LOCAL_FEDERATED_SELECTOR),
        )
        .addOption(new Option('--excluded-labels <key,...>', 'labels of local federated members not copied (KEY or PREFIX/*)').argParser(keyListFlag).default([], 'none'))
        .addOption(new Option('--excluded-annotations <key,...>', 'annotations of local federated members not copied (KEY or PREFIX/*)').argParser(keyListFlag).default([], 'none'))
        .option(
            `${ALLOW_EXEC_FLAG} [bool]`,
            "let a Link's credentials kubeconfig run exec plugins and auth providers and name local files (tokenFile, certificate-authority, client-certificate, client-key): whoever may write a Secret in --namespace could then run commands as this controller and send its files (its own ServiceAccount token) anywhere",
            boolFlag,
            false,
        )
        .option(
            `${ALLOW_INSECURE_TLS_FLAG} [bool]`,
            "let a Link's credentials kubeconfig skip TLS verification (insecure-skip-tls-verify: true) or use an http:// server: the remote token then goes to whoever sits on the path",
            boolFlag,
            false,
        )
        .option('--mcs [bool]', 'serve the Multi-Cluster Services API (ServiceExport, ServiceImport) whenever its CRDs are installed', boolFlag, true)
        .option('--cluster-name <name>', "this cluster's name in the clusterset (default: the ClusterProperty cluster.clusterset.k8s.io)")
        .option('--mcs-workers <n>', 'imports each of the two MCS reconcilers converges at once (each with at most one write in flight)', intFlag(1, 1_000), DEFAULT_MCS_WORKERS)
        .option('--mcs-api-qps <n>', "MCS's own client-side limit of requests per second to this cluster's apiserver, apart from --kube-api-qps (0: none)", numberFlag(0, 10_000, false), DEFAULT_MCS_API_QPS)
        .option('--mcs-api-burst <n>', 'MCS requests allowed at once above --mcs-api-qps', intFlag(1, 100_000), DEFAULT_MCS_API_BURST)
        .addHelpText('after', HELP)
        .action((flags: Flags) => run(flags).catch(fail));
}

async function run(flags: Flags): Promise<void> {
    if (flags.dnsMinTtl > flags.dnsMaxTtl) throw new Error('--dns-min-ttl must not be longer than --dns-max-ttl');
    await runController(flags, SERVICE_MIRROR_LEASE, 'mesh-endpoints-service-mirror', (deps) =>
        new ServiceMirrorController({
            ...deps,
            namespace: flags.namespace,
            dnsServers: flags.dnsServers,
            dnsPolicy: { minTtlMs: flags.dnsMinTtl, maxTtlMs: flags.dnsMaxTtl, staleWindowMs: flags.dnsStaleWindow },
            dnsTimeoutMs: flags.dnsTimeout,
            probeAddressOverride: flags.probeAddressOverride,
            probeAllowCidrs: flags.probeAllowCidrs,
            maxEndpointsPerSlice: flags.maxEndpointsPerSlice,
            maxMirrorsPerLink: flags.maxMirrorsPerLink,
            // Remote clusters see who reads them, with the same request deadline as the local one.
            newRemoteRest: (kubeConfig) => new KubeRest(kubeConfig, { component: 'service-mirror', timeoutMs: deps.rest.settings.timeoutMs }),
            credentialsPolicy: { allowExec: flags.allowKubeconfigExec, allowInsecureTls: flags.allowInsecureRemoteTls },
            enableHeadlessServices: flags.enableHeadlessServices,
            enableNamespaceCreation: flags.enableNamespaceCreation,
            mcs: flags.mcs ? { clusterName: flags.clusterName, workers: flags.mcsWorkers, qps: flags.mcsApiQps, burst: flags.mcsApiBurst } : undefined,
            localFederation: {
                selector: flags.federatedServiceSelector,
                excludedLabels: flags.excludedLabels,
                excludedAnnotations: flags.excludedAnnotations,
            },
        }),
    );
}
