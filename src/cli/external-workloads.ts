// `mesh-endpoints external-workloads`: the external-workloads controller in one process,
// one Lease among its replicas.
import type { Command } from 'commander';
import { DEFAULT_MANAGED_BY, ExternalWorkloadsController, LEASE_NAME } from '../externalworkloads/controller.js';
import { controllerOptions, durationOption, fail, intFlag, runController, type ControllerFlags } from './common.js';

interface Flags extends ControllerFlags {
    watchNamespace?: string;
    maxEndpointsPerSlice: number;
    managedBy: string;
    batchPeriod: number;
    leaseName: string;
}

export function externalWorkloadsCommand(program: Command): void {
    const command = program
        .command('external-workloads')
        .description('publish ExternalWorkloads as EndpointSlices of the Services that select them');
    controllerOptions(command, { namespace: 'mesh-endpoints', adminAddr: '0.0.0.0:9990' }, "the controller's own namespace (where its Lease lives)")
        .option('--watch-namespace <ns>', 'serve only this namespace (default: all)')
        .option('--max-endpoints-per-slice <n>', 'endpoints per EndpointSlice (1-1000)', intFlag(1, 1000), 100)
        .option('--managed-by <value>', 'endpointslice.kubernetes.io/managed-by value of our slices', DEFAULT_MANAGED_BY)
        .addOption(durationOption('--batch-period <duration>', 'workload changes to a Service within this window of its last sync share one sync (a lone change syncs at once)', 500))
        .option('--lease-name <name>', 'Lease used for leader election', LEASE_NAME)
        .action((flags: Flags) =>
            runController(flags, flags.leaseName, 'mesh-endpoints-external-workloads', (deps) =>
                new ExternalWorkloadsController({
                    ...deps,
                    namespace: flags.watchNamespace,
                    managedBy: flags.managedBy,
                    maxEndpointsPerSlice: flags.maxEndpointsPerSlice,
                    batchPeriodMs: flags.batchPeriod,
                }),
            ).catch(fail),
        );
}
