// `mesh-endpoints external-workloads`: the external-workloads controller in one process,
// one Lease among its replicas.
import type { Command } from 'commander';
import { DEFAULT_MANAGED_BY, ExternalWorkloadsController } from '../externalworkloads/controller.js';
import { EventRecorder } from '../kube/events.js';
import { defaultIdentity } from '../kube/leaderelection.js';
import { logFn, newLogger } from '../kube/log.js';
import { Manager } from '../kube/manager.js';
import { KubeRest } from '../kube/rest.js';
import { WorkQueueMetrics } from '../kube/workqueue-metrics.js';
import { METRICS_PREFIX } from '../kube/manager.js';
import { durationFlag, fail, intFlag, loadKubeConfig } from './common.js';

interface Flags {
    kubeconfig?: string;
    namespace: string;
    watchNamespace?: string;
    identity: string;
    adminAddr: string;
    maxEndpointsPerSlice: number;
    managedBy: string;
    batchPeriod: number;
    leaseName: string;
    leaseDuration: number;
    renewDeadline: number;
    retryPeriod: number;
    logLevel: string;
}

export function externalWorkloadsCommand(program: Command): void {
    program
        .command('external-workloads')
        .description('publish ExternalWorkloads as EndpointSlices of the Services that select them')
        .option('--kubeconfig <path>', 'kubeconfig file (default: in-cluster, then $KUBECONFIG or ~/.kube/config)')
        .option('--namespace <ns>', "the controller's own namespace (where its Lease lives)", process.env.POD_NAMESPACE ?? 'mesh-endpoints')
        .option('--watch-namespace <ns>', 'serve only this namespace (default: all)')
        .option('--identity <id>', 'leader election identity', process.env.POD_NAME ?? defaultIdentity())
        .option('--admin-addr <host:port>', 'serve /metrics, /healthz and /readyz here (port 0: pick one)', '0.0.0.0:9990')
        .option('--max-endpoints-per-slice <n>', 'endpoints per EndpointSlice (1-1000)', intFlag(1, 1000), 100)
        .option('--managed-by <value>', 'endpointslice.kubernetes.io/managed-by value of our slices', DEFAULT_MANAGED_BY)
        .option('--batch-period <duration>', 'workload changes within this window produce one sync', durationFlag, 500)
        .option('--lease-name <name>', 'Lease used for leader election', 'mesh-endpoints-external-workloads')
        .option('--lease-duration <duration>', 'leader election lease duration', durationFlag, 15_000)
        .option('--renew-deadline <duration>', 'leader election renew deadline', durationFlag, 10_000)
        .option('--retry-period <duration>', 'leader election retry period', durationFlag, 2_000)
        .option('--log-level <level>', 'trace, debug, info, warn or error', 'info')
        .action((flags: Flags) => run(flags).catch(fail));
}

async function run(flags: Flags): Promise<void> {
    const logger = newLogger(flags.logLevel);
    const rest = new KubeRest(loadKubeConfig(flags.kubeconfig));
    const manager = new Manager({
        rest,
        logger,
        adminAddr: flags.adminAddr,
        leaderElection: {
            namespace: flags.namespace,
            name: flags.leaseName,
            identity: flags.identity,
            leaseDurationMs: flags.leaseDuration,
            renewDeadlineMs: flags.renewDeadline,
            retryPeriodMs: flags.retryPeriod,
        },
    });
    const controller = new ExternalWorkloadsController({
        rest,
        logger,
        registry: manager.registry,
        queueMetrics: new WorkQueueMetrics(manager.registry, METRICS_PREFIX.replace(/_$/, '')),
        events: new EventRecorder(rest, 'mesh-endpoints-external-workloads', logFn(logger.child({ component: 'events' }))),
        isLeader: manager.isLeader,
        namespace: flags.watchNamespace,
        managedBy: flags.managedBy,
        maxEndpointsPerSlice: flags.maxEndpointsPerSlice,
        batchPeriodMs: flags.batchPeriod,
    });
    manager.add(controller);
    manager.handleSignals();
    await manager.start();
    if (manager.admin) process.stderr.write(`admin endpoint listening on ${manager.admin.address}\n`);
}
