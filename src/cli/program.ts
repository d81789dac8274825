// mesh-endpoints: one binary, one subcommand per controller, `link`, and the operator
// commands (status, check, gateways, unlink). Built here, without parsing, so docs tests can
// list every command and flag.
import { Command } from 'commander';
import { checkCommand } from './check.js';
import { externalWorkloadsCommand } from './external-workloads.js';
import { gatewaysCommand } from './gateways.js';
import { linkCommand } from './link.js';
import { serviceMirrorCommand } from './service-mirror.js';
import { statusCommand } from './status.js';
import { unlinkCommand } from './unlink.js';
import { workloadAgentCommand } from './workload-agent.js';
import { workloadGroupCommand } from './workload-group.js';

export function buildProgram(): Command {
    const program = new Command('mesh-endpoints')
        .description('EndpointSlices for ExternalWorkloads and mirrored multicluster Services')
        .showHelpAfterError();
    externalWorkloadsCommand(program);
    serviceMirrorCommand(program);
    linkCommand(program);
    unlinkCommand(program);
    statusCommand(program);
    checkCommand(program);
    gatewaysCommand(program);
    workloadAgentCommand(program);
    workloadGroupCommand(program);
    return program;
}
