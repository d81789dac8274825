// `mesh-endpoints service-mirror`: the multicluster service mirror in one process. It serves
// every Link in --namespace, one Lease (mesh-endpoints-service-mirror) for the process. The
// DNS failure policy and the probe are explained to users in HELP (shown by --help).
import { InvalidArgumentError, Option, type Command } from 'commander';
import { EventRecorder } from '../kube/events.js';
import { defaultIdentity } from '../kube/leaderelection.js';
import { logFn, newLogger } from '../kube/log.js';
import { Manager, METRICS_PREFIX } from '../kube/manager.js';
import { WorkQueueMetrics } from '../kube/workqueue-metrics.js';
import { LEASE_NAME, ServiceMirrorController } from '../servicemirror/controller.js';
import { KubeRest } from '../kube/rest.js';
import { parseProbeAddressOverride, type ProbeAddressOverride } from '../servicemirror/probe.js';
import { durationFlag, fail, intFlag, loadKubeConfig } from './common.js';
import { formatDuration } from '../servicemirror/gateway-events.js';

interface Flags {
    kubeconfig?: string;
    namespace: string;
    identity: string;
    adminAddr: string;
    dnsServers?: string[];
    dnsMinTtl: number;
    dnsMaxTtl: number;
    dnsStaleWindow: number;
    dnsTimeout: number;
    probeAddressOverride?: ProbeAddressOverride;
    maxEndpointsPerSlice: number;
    leaseDuration: number;
    renewDeadline: number;
    retryPeriod: number;
    logLevel: string;
}

function dnsServersFlag(text: string): string[] {
    const servers = text.split(',').map((s) => s.trim()).filter((s) => s !== '');
    if (servers.length === 0) throw new InvalidArgumentError('expected HOST:PORT[,HOST:PORT...]');
    return servers;
}

function probeOverrideFlag(text: string): ProbeAddressOverride {
    const parsed = parseProbeAddressOverride(text);
    if (!parsed) throw new InvalidArgumentError('expected HOST, HOST:PORT or [IPv6]:PORT');
    return parsed;
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
server on 127.0.0.1).`;

/** A duration flag whose default shows as "5s" in --help, not as milliseconds. */
function duration(flags: string, description: string, defaultMs: number): Option {
    return new Option(flags, description).argParser(durationFlag).default(defaultMs, formatDuration(defaultMs));
}

export function serviceMirrorCommand(program: Command): void {
    program
        .command('service-mirror')
        .description('mirror the exported Services of every Link in a namespace, with EndpointSlices pointing at each remote gateway')
        .option('--kubeconfig <path>', 'kubeconfig of the local cluster (default: in-cluster, then $KUBECONFIG or ~/.kube/config)')
        .option('--namespace <ns>', 'namespace of the Links, their credentials Secrets and the Lease', process.env.POD_NAMESPACE ?? 'linkerd-multicluster')
        .option('--identity <id>', 'leader election identity', process.env.POD_NAME ?? defaultIdentity())
        .option('--admin-addr <host:port>', 'serve /metrics, /healthz and /readyz here (port 0: pick one)', '0.0.0.0:9999')
        .option('--dns-servers <host:port,...>', 'DNS servers for gateway hostnames (default: the system resolver configuration)', dnsServersFlag)
        .addOption(duration('--dns-min-ttl <duration>', 'never re-resolve a gateway name sooner than this, whatever its TTL', 5_000))
        .addOption(duration('--dns-max-ttl <duration>', 'always re-resolve a gateway name within this, whatever its TTL', 3_600_000))
        .addOption(duration('--dns-stale-window <duration>', "how long a failing name's last good addresses stay ready", 300_000))
        .addOption(duration('--dns-timeout <duration>', 'timeout of one DNS query try (two tries)', 2_000))
        .option(
            '--probe-address-override <host[:port]>',
            'send gateway probes here instead of to the gateway address (a local proxy to the gateway, or a test server)',
            probeOverrideFlag,
        )
        .option('--max-endpoints-per-slice <n>', 'endpoints per EndpointSlice (1-1000)', intFlag(1, 1000), 100)
        .addOption(duration('--lease-duration <duration>', 'leader election lease duration', 15_000))
        .addOption(duration('--renew-deadline <duration>', 'leader election renew deadline', 10_000))
        .addOption(duration('--retry-period <duration>', 'leader election retry period', 2_000))
        .option('--log-level <level>', 'trace, debug, info, warn or error', 'info')
        .addHelpText('after', HELP)
        .action((flags: Flags) => run(flags).catch(fail));
}

async function run(flags: Flags): Promise<void> {
    if (flags.dnsMinTtl > flags.dnsMaxTtl) throw new Error('--dns-min-ttl must not be longer than --dns-max-ttl');
    const logger = newLogger(flags.logLevel);
    const rest = new KubeRest(loadKubeConfig(flags.kubeconfig));
    const manager = new Manager({
        rest,
        logger,
        adminAddr: flags.adminAddr,
        leaderElection: {
            namespace: flags.namespace,
            name: LEASE_NAME,
            identity: flags.identity,
            leaseDurationMs: flags.leaseDuration,
            renewDeadlineMs: flags.renewDeadline,
            retryPeriodMs: flags.retryPeriod,
        },
    });
    const controller = new ServiceMirrorController({
        rest,
        logger,
        registry: manager.registry,
        queueMetrics: new WorkQueueMetrics(manager.registry, METRICS_PREFIX.replace(/_$/, '')),
        events: new EventRecorder(rest, 'mesh-endpoints-service-mirror', logFn(logger.child({ component: 'events' }))),
        isLeader: manager.isLeader,
        namespace: flags.namespace,
        dnsServers: flags.dnsServers,
        dnsPolicy: { minTtlMs: flags.dnsMinTtl, maxTtlMs: flags.dnsMaxTtl, staleWindowMs: flags.dnsStaleWindow },
        dnsTimeoutMs: flags.dnsTimeout,
        probeAddressOverride: flags.probeAddressOverride,
        maxEndpointsPerSlice: flags.maxEndpointsPerSlice,
    });
    manager.add(controller);
    manager.handleSignals();
    await manager.start();
    if (manager.admin) process.stderr.write(`admin endpoint listening on ${manager.admin.address}\n`);
}
