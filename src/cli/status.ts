// `mesh-endpoints status`: the inventory of both controllers' work, read from the cluster:
// each Service with external workloads (workloads ready, not ready, left out and why; its
// slices), each ExternalWorkloadGroup (its VMs, their heartbeat age and Ready), each Link (gateway names, TTLs, errors, probe state, mirrored Services), and the
// MCS ServiceExports (conditions) and ServiceImports (clusters, IPs, endpoints per source cluster).
import type { V1EndpointSlice, V1Service } from '@kubernetes/client-node';
import type { Command } from 'commander';
import { LABEL_MANAGED_BY } from '../endpointslice/slice.js';
import { DEFAULT_MANAGED_BY } from '../externalworkloads/controller.js';
import { collectionPath, EndpointSlices, ExternalWorkloads, Services } from '../kube/resources.js';
import type { KubeRest } from '../kube/rest.js';
import { groupsText, linksText, mcsText, workloadsText } from '../ops/format.js';
import { workloadsReport, type WorkloadsReport } from '../ops/workloads-report.js';
import { fail } from './common.js';
import { operatorCommand, print, withClient, type OperatorFlags } from './operator-options.js';
import { listAll, listIfServed, readLinks, readMcs } from './read.js';
import { readGroups } from './workload-group.js';

interface Flags extends OperatorFlags {
    workloadNamespace?: string;
    managedBy: string;
}

export function statusCommand(program: Command): void {
    operatorCommand(program, 'status', 'show the Services with external workloads and the Links, with what each publishes and why')
        .option('--workload-namespace <ns>', 'show the Services with external workloads of this namespace only (default: all)')
        .option('--managed-by <value>', 'managed-by value of the external-workloads controller\'s slices', DEFAULT_MANAGED_BY)
        .action((flags: Flags) => run(flags).catch(fail));
}

async function run(flags: Flags): Promise<void> {
    await withClient(flags, async (rest) => {
        const [workloads, groups, links, mcs] = await Promise.all([readWorkloads(rest, flags), readGroups(rest, flags.workloadNamespace), readLinks(rest, flags.namespace), readMcs(rest)]);
        const report = { externalWorkloads: workloads ?? null, workloadGroups: groups ?? null, links: links.links === undefined ? null : links.reports, mcs: mcs ?? null };
        print(flags, report, () =>
            [
                'External workloads',
                '==================',
                workloads ? workloadsText(workloads) : 'The ExternalWorkload CRD is not installed.',
                '',
                'Workload groups (VMs that register themselves)',
                '==============================================',
                groups ? groupsText(groups) : 'The ExternalWorkloadGroup CRD is not installed.',
                '',
                'Links',
                '=====',
                links.links ? linksText(links.reports, flags.namespace) : 'The Link CRD is not installed.',
                '',
                'Multi-Cluster Services',
                '======================',
                mcs ? mcsText(mcs) : 'The ServiceExport and ServiceImport CRDs are not installed.',
            ].join('\n'),
        );
    });
}

async function readWorkloads(rest: KubeRest, flags: Flags): Promise<WorkloadsReport | undefined> {
    const ns = flags.workloadNamespace;
    const workloads = await listIfServed<unknown>(rest, collectionPath(ExternalWorkloads, ns));
    if (workloads === undefined) return undefined;
    const [services, slices] = await Promise.all([
        listAll<V1Service>(rest, collectionPath(Services, ns)),
        listAll<V1EndpointSlice>(rest, collectionPath(EndpointSlices, ns), { labelSelector: `${LABEL_MANAGED_BY}=${flags.managedBy}` }),
    ]);
    return workloadsReport({ services, workloads, slices, managedBy: flags.managedBy });
}
