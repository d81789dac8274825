// What the operator commands (status, check, gateways, unlink) share: their flags, the one
// client they read with, and printing a report as a table or as JSON.
import { Option, type Command } from 'commander';
import { KubeRest } from '../kube/rest.js';
import { loadKubeConfig } from './common.js';

export interface OperatorFlags {
    kubeconfig?: string;
    namespace: string;
    output: string;
}

/** The subcommand with --kubeconfig, -n/--namespace (the Links' namespace, the service mirror's) and -o/--output. */
export function operatorCommand(program: Command, name: string, description: string, formats: [string, ...string[]] = ['table', 'json']): Command {
    return program
        .command(name)
        .description(description)
        .option('--kubeconfig <path>', 'kubeconfig file (default: in-cluster, then $KUBECONFIG or ~/.kube/config)')
        .option('-n, --namespace <ns>', "namespace of the Links and the service mirror's Lease", 'linkerd-multicluster')
        .addOption(new Option('-o, --output <format>', 'output format').choices(formats).default(formats[0]));
}

/** Runs `body` with a client for the kubeconfig, closing it afterwards. */
export async function withClient<T>(flags: OperatorFlags, body: (rest: KubeRest) => Promise<T>): Promise<T> {
    const rest = new KubeRest(loadKubeConfig(flags.kubeconfig));
    try {
        return await body(rest);
    } finally {
        rest.close();
    }
}

export function print(flags: OperatorFlags, report: unknown, text: () => string): void {
    process.stdout.write(flags.output === 'json' ? `${JSON.stringify(report, null, 2)}\n` : `${text()}\n`);
}
