// `mesh-endpoints workload-group`: `list` a group's registrations with their heartbeat age,
// and `bootstrap` one VM (its ServiceAccount and rights, its token, the agent's systemd unit).
import { Option, type Command } from 'commander';
import { GROUP_LABEL } from '../externalworkloads/groups/types.js';
import { collectionPath, ExternalWorkloadGroups, ExternalWorkloads, Leases, objectPath } from '../kube/resources.js';
import type { KubeRest } from '../kube/rest.js';
import { groupsText } from '../ops/format.js';
import { groupsReport, type GroupReport } from '../ops/groups-report.js';
import { fail } from './common.js';
import { bootstrapManifests, bootstrapText } from './group-bootstrap.js';
import { print, withClient } from './operator-options.js';
import { getIfExists, listAll, listIfServed } from './read.js';
import { systemClock } from '../time/clock.js';

interface Flags {
    kubeconfig?: string;
    namespace?: string;
    output: string;
}

const common = (command: Command, formats: [string, ...string[]], namespaceHelp = 'the groups’ namespace (default: all)') =>
    command
        .option('--kubeconfig <path>', 'kubeconfig file (default: in-cluster, then $KUBECONFIG or ~/.kube/config)')
        .option('-n, --namespace <ns>', namespaceHelp)
        .addOption(new Option('-o, --output <format>', 'output format').choices(formats).default(formats[0]));

export function workloadGroupCommand(program: Command): void {
    const group = program.command('workload-group').description('ExternalWorkloadGroups: the VMs that register themselves');
    common(group.command('list').description('each group’s registrations: addresses, heartbeat age, Ready'), ['table', 'json'])
        .option('--group <name>', 'this group only')
        .action((flags: Flags & { group?: string }) =>
            withClient({ ...flags, namespace: flags.namespace ?? '' }, async (rest) => {
                const reports = (await readGroups(rest, flags.namespace)) ?? [];
                const shown = reports.filter((r) => flags.group === undefined || r.name === flags.group);
                print({ ...flags, namespace: '' }, shown, () => groupsText(shown));
            }).catch(fail),
        );
    common(group.command('bootstrap').description('print what one VM needs to register: its ServiceAccount and rights, its token, the agent’s systemd unit'), ['text', 'manifests'], 'the group’s namespace (default: default)')
        .requiredOption('--group <name>', 'the ExternalWorkloadGroup')
        .requiredOption('--vm <id>', 'the VM’s id, a DNS label (its ServiceAccount is <group>.<id>)')
        .option('--server <url>', 'the apiserver as the VM reaches it (default: the kubeconfig’s)')
        .option('--cluster-role <name>', 'the agents’ ClusterRole the chart installs', 'mesh-endpoints-workload-agent')
        .option('--token-duration <duration>', 'lifetime of the token kubectl create token makes', '24h')
        .action((flags: Flags & { group: string; vm: string; server?: string; clusterRole: string; tokenDuration: string }) =>
            withClient({ ...flags, namespace: flags.namespace ?? 'default' }, async (rest) => {
                const namespace = flags.namespace ?? 'default';
                if (!/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(flags.vm)) throw new Error(`--vm ${flags.vm}: a VM id is a DNS label (lower-case letters, digits, '-')`);
                if (!(await getIfExists(rest, objectPath(ExternalWorkloadGroups, namespace, flags.group)))) throw new Error(`no ExternalWorkloadGroup ${namespace}/${flags.group}`);
                const input = { namespace, group: flags.group, vm: flags.vm, server: flags.server ?? rest.server.origin, clusterRole: flags.clusterRole, tokenDuration: flags.tokenDuration };
                process.stdout.write(flags.output === 'manifests' ? bootstrapManifests(input) : `${bootstrapText(input)}\n`);
            }).catch(fail),
        );
}

/** Every group (of a namespace) with its registrations, or undefined when the group CRD is not installed. */
export async function readGroups(rest: KubeRest, namespace?: string): Promise<GroupReport[] | undefined> {
    const groups = await listIfServed<unknown>(rest, collectionPath(ExternalWorkloadGroups, namespace));
    if (groups === undefined) return undefined;
    if (groups.length === 0) return [];
    const [leases, workloads] = await Promise.all([
        listAll<unknown>(rest, collectionPath(Leases, namespace), { labelSelector: GROUP_LABEL }),
        listAll<unknown>(rest, collectionPath(ExternalWorkloads, namespace), { labelSelector: GROUP_LABEL }),
    ]);
    return groupsReport({ groups, leases, workloads, now: systemClock.now() });
}
