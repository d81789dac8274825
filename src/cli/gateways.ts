// `mesh-endpoints gateways`: per Link, whether its gateway is alive, how fast it answers a
// probe, its addresses and how many Services are mirrored through it. A Link with a probe
// (probeSpec.path) is probed from here, as the service mirror probes it, unless --no-probe;
// without one, or with --no-probe, the service mirror's last report (its Events) is shown.
import type { Command } from 'commander';
import { gatewaysText } from '../ops/format.js';
import { gatewayLine, probeTarget } from '../ops/gateways-report.js';
import type { ProbeAddressOverride } from '../net/probe.js';
import { probeOnce } from '../servicemirror/link/probe.js';
import { durationOption, fail, probeOverrideFlag } from './common.js';
import { operatorCommand, print, withClient, type OperatorFlags } from './operator-options.js';
import { readLinks } from './read.js';

interface Flags extends OperatorFlags {
    probe: boolean;
    probeAddressOverride?: ProbeAddressOverride;
    probeTimeout: number;
}

export function gatewaysCommand(program: Command): void {
    operatorCommand(program, 'gateways', 'show for each Link whether its gateway is alive, its probe latency, its addresses and its mirrored Services')
        .option('--no-probe', "do not probe the gateways; show the service mirror's last probe report")
        .option('--probe-address-override <host[:port]>', 'send the probes here instead of to the gateway address (a local proxy to the gateway)', probeOverrideFlag)
        .addOption(durationOption('--probe-timeout <duration>', "timeout of one probe (the Link's own probeSpec.timeout when shorter)", 5_000))
        .action((flags: Flags) => run(flags).catch(fail));
}

async function run(flags: Flags): Promise<void> {
    await withClient(flags, async (rest) => {
        const { links, reports } = await readLinks(rest, flags.namespace);
        if (links === undefined) throw new Error('the Link CRD (links.multicluster.linkerd.io) is not installed');
        const lines = await Promise.all(
            reports.map(async (report) => {
                const target = flags.probe ? probeTarget(report, flags.probeAddressOverride) : undefined;
                if (!target || report.invalid) return gatewayLine(report);
                const result = await probeOnce(target.host, target.port, target.path, Math.min(target.timeoutMs, flags.probeTimeout));
                return gatewayLine(report, result);
            }),
        );
        print(flags, lines, () => gatewaysText(lines, flags.namespace));
    });
}
