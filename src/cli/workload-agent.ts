// `mesh-endpoints workload-agent`: run on a VM (a systemd unit; `workload-group bootstrap`
// prints one) to register it into its ExternalWorkloadGroup and keep it registered.
import { readFileSync } from 'node:fs';
import { Option, type Command } from 'commander';
import { claimedAddresses } from '../agent/addresses.js';
import { WorkloadAgent } from '../agent/agent.js';
import { newLogger } from '../kube/log.js';
import { durationFlag, fail } from './common.js';

interface Flags {
    server: string;
    certificateAuthority?: string;
    tokenFile: string;
    namespace?: string;
    group?: string;
    vmId?: string;
    addresses: string;
    heartbeatPeriod?: number;
    leaseDuration?: number;
    logLevel: string;
}

export function workloadAgentCommand(program: Command): void {
    program
        .command('workload-agent')
        .description('register this VM into an ExternalWorkloadGroup and renew its heartbeat until SIGTERM (then withdraw)')
        .requiredOption('--server <url>', 'the apiserver, e.g. https://203.0.113.10:6443')
        .option('--certificate-authority <file>', 'PEM file of the CA the apiserver’s certificate is checked against (default: the system’s roots)')
        .requiredOption('--token-file <file>', 'a token of the VM’s ServiceAccount <group>.<vm id> (a bound token: re-read before every heartbeat, so it may rotate)')
        .option('--namespace <ns>', 'the group’s namespace (default: the token’s; checked against it)')
        .option('--group <name>', 'the ExternalWorkloadGroup (default: the token’s; checked against it)')
        .option('--vm-id <id>', 'this VM’s id (default: the token’s; checked against it)')
        .option('--addresses <ips|auto>', 'the addresses this VM claims, comma-separated, or auto: the first usable address of each family on its interfaces', 'auto')
        .addOption(new Option('--heartbeat-period <duration>', 'renew this often (default: the group’s heartbeatPeriod, else 10s)').argParser(durationFlag))
        .addOption(new Option('--lease-duration <duration>', 'the Lease’s leaseDurationSeconds (default: the group’s leaseDuration, else 40s; the controller goes by the group’s)').argParser(durationFlag))
        .option('--log-level <level>', 'trace, debug, info, warn or error', 'info')
        .action((flags: Flags) => runAgent(flags).catch(fail));
}

async function runAgent(flags: Flags): Promise<void> {
    const addresses = claimedAddresses(flags.addresses);
    if (addresses.length === 0) throw new Error('no address to claim: --addresses found none (give them)');
    const logger = newLogger(flags.logLevel).child({ component: 'workload-agent' });
    const agent = new WorkloadAgent({
        server: flags.server,
        caData: flags.certificateAuthority ? readFileSync(flags.certificateAuthority, 'utf8') : undefined,
        tokenFile: flags.tokenFile,
        flags: { namespace: flags.namespace, group: flags.group, vmId: flags.vmId },
        addresses,
        heartbeatMs: flags.heartbeatPeriod,
        leaseDurationMs: flags.leaseDuration,
        logger,
    });
    const stop = new AbortController();
    for (const signal of ['SIGTERM', 'SIGINT'] as const) process.once(signal, () => stop.abort());
    await agent.run(stop.signal);
    process.exit(0);
}
