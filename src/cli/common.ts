// What every mesh-endpoints command shares: loading a kubeconfig, parsing flag values,
// and turning a failure into a message and a non-zero exit.
import { KubeConfig } from '../kube/kubeconfig.js';
import { InvalidArgumentError, Option, type Command } from 'commander';
import { EventRecorder } from '../kube/events.js';
import { defaultIdentity } from '../kube/leaderelection.js';
import { logFn, newLogger } from '../kube/log.js';
import { Manager, METRICS_PREFIX, type ControllerDeps, type ReplicaService, type Runnable } from '../kube/manager.js';
import { KubeRest } from '../kube/rest.js';
import { WorkQueueMetrics } from '../kube/workqueue-metrics.js';
import { formatDuration, parseDurationMs } from '../time/duration.js';
import { parseProbeAddressOverride, type ProbeAddressOverride } from '../net/probe.js';
import { parseProbeAllowCidrs, type ProbeCidr } from '../ip/probe-target.js';

/** --kubeconfig, else in-cluster config, else the default kubeconfig ($KUBECONFIG, ~/.kube/config). */
export function loadKubeConfig(path?: string): KubeConfig {
    const kc = new KubeConfig();
    if (path) kc.loadFromFile(path);
    else if (process.env.KUBERNETES_SERVICE_HOST) kc.loadFromCluster();
    else kc.loadFromDefault();
    if (!kc.getCurrentCluster()) throw new Error('no cluster in the kubeconfig');
    return kc;
}

export function durationFlag(text: string): number {
    const ms = parseDurationMs(text);
    if (ms === null || ms < 0) throw new InvalidArgumentError(`"${text}" is not a duration such as 500ms, 5s, 1m or 1h`);
    return ms;
}

/** `--flag` alone is true; `--flag=false` too is accepted, as Linkerd's Go flags do. */
export function boolFlag(text: string): boolean {
    if (text === 'true') return true;
    if (text === 'false') return false;
    throw new InvalidArgumentError('expected true or false');
}

/** A number in min..max; `whole`: an integer. */
export function numberFlag(min: number, max: number, whole: boolean) {
    return (text: string): number => {
        const n = Number(text);
        if (!(whole ? Number.isInteger(n) : Number.isFinite(n)) || n < min || n > max) throw new InvalidArgumentError(`must be ${whole ? 'an integer' : 'a number'} in ${min}..${max}`);
        return n;
    };
}

export const intFlag = (min: number, max: number) => numberFlag(min, max, true);

export function fail(err: unknown): never {
    process.stderr.write(`mesh-endpoints: ${(err as Error).message ?? String(err)}\n`);
    process.exit(1);
}

/** A duration flag whose default shows as "5s" in --help, not as milliseconds. */
export function durationOption(flags: string, description: string, defaultMs: number): Option {
    return new Option(flags, description).argParser(durationFlag).default(defaultMs, formatDuration(defaultMs));
}

/** Flags every controller process has: where it runs, who it is, how it elects and logs. */
export interface ControllerFlags {
    kubeconfig?: string;
    namespace: string;
    identity: string;
    adminAddr: string;
    leaseDuration: number;
    renewDeadline: number;
    retryPeriod: number;
    resyncPeriod: number;
    kubeApiQps: number;
    kubeApiBurst: number;
    logLevel: string;
}

export function controllerOptions(command: Command, defaults: { namespace: string; adminAddr: string }, namespaceHelp: string): Command {
    return command
        .option('--kubeconfig <path>', 'kubeconfig file (default: in-cluster, then $KUBECONFIG or ~/.kube/config)')
        .option('--namespace <ns>', namespaceHelp, process.env.POD_NAMESPACE ?? defaults.namespace)
        .option('--identity <id>', 'leader election identity', process.env.POD_NAME ?? defaultIdentity())
        .option('--admin-addr <host:port>', 'serve /metrics, /healthz and /readyz here (port 0: pick one)', defaults.adminAddr)
        .addOption(durationOption('--lease-duration <duration>', 'leader election lease duration', 15_000))
        .addOption(durationOption('--renew-deadline <duration>', 'leader election renew deadline; every apiserver request times out within (renew deadline - retry period)', 10_000))
        .addOption(durationOption('--retry-period <duration>', 'leader election retry period', 2_000))
        .addOption(
            durationOption(
                '--resync-period <duration>',
                'how often each controller reconciles every key of what it caches again, in memory (a no-op sync writes nothing), and retries the keys it gave up on after their retries (0: never)',
                600_000,
            ),
        )
        .option('--kube-api-qps <n>', KUBE_API_QPS_HELP, numberFlag(0, 10_000, false), DEFAULT_KUBE_API_QPS)
        .option('--kube-api-burst <n>', 'requests to the apiserver allowed at once above --kube-api-qps', intFlag(1, 100_000), DEFAULT_KUBE_API_BURST)
        .option('--log-level <level>', 'trace, debug, info, warn or error', 'info');
}

// Chosen from `npx tsx bench/run.ts apiserver-writes`: the local kube-apiserver (etcd on the same
// 2 cores, under load) took 58-110 EndpointSlice writes per second from one client. 20 per second
// is at most a third of that, leaving the rest to kubelets, kube-controller-manager and other
// controllers, as kube-controller-manager's own default (20) does; the burst of 50 writes a
// 5 000-endpoint Service (50 slices) or a start-up's lists without waiting. Steady state needs far
// less: a no-op resync writes nothing. Requests over the limit wait; none fail.
const DEFAULT_KUBE_API_QPS = 20;
const DEFAULT_KUBE_API_BURST = 50;
const KUBE_API_QPS_HELP =
    'client-side limit of requests per second to the apiserver, for this whole process (0: none); lease calls are not limited. ' +
    'The default is a third of the EndpointSlice writes a small apiserver took in our benchmark (bench/apiserver-writes.ts)'

/** Runs one controller under a manager with leader election until SIGTERM/SIGINT. */
export async function runController(
    flags: ControllerFlags,
    leaseName: string,
    component: string,
    build: (deps: ControllerDeps) => Runnable,
    /** What runs on every replica besides the controller (a webhook). */
    services: (deps: ControllerDeps) => ReplicaService[] = () => [],
): Promise<void> {
    const logger = newLogger(flags.logLevel);
    // A request never outlives a lease term: its deadline is below the renew deadline.
    const timeoutMs = Math.max(1_000, flags.renewDeadline - flags.retryPeriod);
    const rest = new KubeRest(loadKubeConfig(flags.kubeconfig), {
        component: component.replace(/^mesh-endpoints-/, ''),
        qps: flags.kubeApiQps,
        burst: flags.kubeApiBurst,
        timeoutMs,
    });
    const manager = new Manager({
        rest,
        logger,
        adminAddr: flags.adminAddr,
        leaderElection: {
            namespace: flags.namespace,
            name: leaseName,
            identity: flags.identity,
            leaseDurationMs: flags.leaseDuration,
            renewDeadlineMs: flags.renewDeadline,
            retryPeriodMs: flags.retryPeriod,
            // Lease calls have their own client: queued writes never hold up a renew.
            rest: rest.fork({ component: `${rest.settings.component}, leader-election`, qps: 0 }),
        },
    });
    const queueMetrics = new WorkQueueMetrics(manager.registry, METRICS_PREFIX.replace(/_$/, ''));
    // Events as any write: sent only while leading.
    const events = new EventRecorder(manager.client, component, logFn(logger.child({ component: 'events' })), undefined, {
        isLeader: manager.isLeader,
        registry: manager.registry,
    });
    const deps: ControllerDeps = { rest: manager.client, logger, registry: manager.registry, queueMetrics, events, isLeader: manager.isLeader, resyncMs: flags.resyncPeriod };
    manager.add(build(deps));
    for (const service of services(deps)) manager.addService(service);
    manager.handleSignals();
    await manager.start();
    if (manager.admin) process.stderr.write(`admin endpoint listening on ${manager.admin.address}\n`);
}

/** --probe-allow-cidrs: the ranges a probe may reach although src/ip/probe-target.ts refuses them. */
export const PROBE_ALLOW_CIDRS_HELP =
    'comma-separated CIDRs probes may go to although they are loopback, link-local (cloud metadata included), unspecified or multicast, e.g. 127.0.0.0/8 for workloads on this host (default: none; see docs/security.md)';

export function probeAllowCidrsFlag(text: string): ProbeCidr[] {
    const parsed = parseProbeAllowCidrs(text);
    if (!parsed.ok) throw new InvalidArgumentError(parsed.error);
    return parsed.cidrs;
}

/** --probe-address-override: "HOST", "HOST:PORT" or "[IPv6]:PORT". */
export function probeOverrideFlag(text: string): ProbeAddressOverride {
    const parsed = parseProbeAddressOverride(text);
    if (!parsed) throw new InvalidArgumentError('expected HOST, HOST:PORT or [IPv6]:PORT');
    return parsed;
}
