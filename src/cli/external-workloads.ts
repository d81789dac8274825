// `mesh-endpoints external-workloads`: the external-workloads controller in one process,
// one Lease among its replicas, and (with --webhook-addr) the ExternalWorkload conversion
// webhook on every replica.
import { InvalidArgumentError, Option, type Command } from 'commander';
import { DEFAULT_MANAGED_BY, EXTERNAL_WORKLOADS_LEASE, ExternalWorkloadsController } from '../externalworkloads/controller.js';
import { parseProbeTarget, PROBE_ANNOTATION, type ProbeTarget } from '../externalworkloads/health/probe-spec.js';
import { DEFAULT_PROBE_CONCURRENCY } from '../externalworkloads/health/prober.js';
import type { ProbeAddressOverride } from '../net/probe.js';
import type { ControllerDeps } from '../kube/manager.js';
import type { CertificateSource } from '../webhook/certificates.js';
import { ConversionWebhook, WORKLOAD_CRD_NAME } from '../webhook/conversion-webhook.js';
import { parseWebhookService, type WebhookService } from '../webhook/crd-conversion.js';
import { boolFlag, controllerOptions, durationOption, fail, intFlag, PROBE_ALLOW_CIDRS_HELP, probeAllowCidrsFlag, probeOverrideFlag, runController, type ControllerFlags } from './common.js';
import type { ProbeCidr } from '../ip/probe-target.js';

interface Flags extends ControllerFlags {
    watchNamespace?: string;
    maxEndpointsPerSlice: number;
    managedBy: string;
    batchPeriod: number;
    leaseName: string;
    webhookAddr?: string;
    webhookCertSecret?: string;
    webhookCertDir?: string;
    webhookSelfSignedSecret: string;
    webhookHosts?: string;
    webhookManageCrd: boolean;
    webhookService?: WebhookService;
    webhookCheckInterval: number;
    healthChecks: boolean;
    defaultProbe?: ProbeTarget;
    probeConcurrency: number;
    probeAddressOverride?: ProbeAddressOverride;
    probeAllowCidrs?: ProbeCidr[];
    workloadGroups: boolean;
}

const DEFAULT_WEBHOOK_SECRET = 'mesh-endpoints-conversion-webhook-cert';

export function externalWorkloadsCommand(program: Command): void {
    const command = program
        .command('external-workloads')
        .description('publish ExternalWorkloads as EndpointSlices of the Services that select them');
    controllerOptions(command, { namespace: 'mesh-endpoints', adminAddr: '0.0.0.0:9990' }, "the controller's own namespace (where its Lease lives)")
        .option('--watch-namespace <ns>', 'serve only this namespace (default: all)')
        .option('--max-endpoints-per-slice <n>', 'endpoints per EndpointSlice (1-1000)', intFlag(1, 1000), 100)
        .option('--managed-by <value>', 'endpointslice.kubernetes.io/managed-by value of our slices', DEFAULT_MANAGED_BY)
        .addOption(durationOption('--batch-period <duration>', 'workload changes to a Service within this window of its last sync share one sync (a lone change syncs at once)', 500))
        .option('--lease-name <name>', 'Lease used for leader election', EXTERNAL_WORKLOADS_LEASE)
        .option('--webhook-addr <host:port>', 'serve the ExternalWorkload conversion webhook (HTTPS, POST /convert) here, on every replica (default: off)')
        .option('--webhook-cert-secret <name>', 'serve the certificate of this Secret of --namespace (tls.crt, tls.key, ca.crt; e.g. cert-manager’s) instead of a self-signed one')
        .option('--webhook-cert-dir <dir>', 'serve tls.crt and tls.key (and ca.crt) from this folder instead of a self-signed certificate')
        .option('--webhook-self-signed-secret <name>', 'Secret of --namespace where the self-signed CA and certificate are kept', DEFAULT_WEBHOOK_SECRET)
        .option('--webhook-hosts <names>', 'comma-separated DNS names and IPs of the self-signed certificate (default: mesh-endpoints-webhook.NAMESPACE.svc)')
        .addOption(
            new Option('--webhook-manage-crd <bool>', 'keep the CRD’s conversion caBundle in sync with the CA (false: leave the CRD alone, e.g. for cert-manager’s CA injector)')
                .argParser(boolFlag)
                .default(true, 'true'),
        )
        .option('--webhook-service <ns/name[:port]>', 'also point the CRD’s conversion at this Service (path /convert, port 443 by default) once serving', serviceFlag)
        .addOption(durationOption('--webhook-check-interval <duration>', 're-read the certificate and the CRD’s caBundle this often', 60_000))
        .addOption(
            new Option('--health-checks <bool>', `probe the workloads that ask for it (the ${PROBE_ANNOTATION} annotation, or --default-probe) and write their Ready condition (false: never probe)`)
                .argParser(boolFlag)
                .default(true, 'true'),
        )
        .option('--default-probe <probe>', `probe every workload without a ${PROBE_ANNOTATION} annotation this way, e.g. http:4191/ready (the Linkerd proxy’s readiness endpoint); default: only annotated workloads`, probeFlag)
        .option('--probe-concurrency <n>', 'workload health probes in flight at once', intFlag(1, 10_000), DEFAULT_PROBE_CONCURRENCY)
        .option('--probe-address-override <host[:port]>', 'send workload health probes here instead of to the workload’s address (a test server)', probeOverrideFlag)
        .option('--probe-allow-cidrs <cidrs>', PROBE_ALLOW_CIDRS_HELP, probeAllowCidrsFlag)
        .addOption(
            new Option('--workload-groups <bool>', 'materialise the ExternalWorkloads of VMs that register themselves into an ExternalWorkloadGroup (false: ignore groups)')
                .argParser(boolFlag)
                .default(true, 'true'),
        )
        .action((flags: Flags) =>
            runController(
                flags,
                flags.leaseName,
                'mesh-endpoints-external-workloads',
                (deps) =>
                    new ExternalWorkloadsController({
                        ...deps,
                        namespace: flags.watchNamespace,
                        managedBy: flags.managedBy,
                        maxEndpointsPerSlice: flags.maxEndpointsPerSlice,
                        batchPeriodMs: flags.batchPeriod,
                        healthChecks: healthChecks(flags),
                        workloadGroups: flags.workloadGroups,
                    }),
                (deps) => (flags.webhookAddr ? [conversionWebhook(flags, flags.webhookAddr, deps)] : []),
            ).catch(fail),
        );
}

function probeFlag(text: string): ProbeTarget {
    const parsed = parseProbeTarget(text);
    if (typeof parsed === 'string') throw new InvalidArgumentError(parsed);
    return parsed;
}

function healthChecks(flags: Flags) {
    if (!flags.healthChecks) {
        if (flags.defaultProbe) throw new Error('--default-probe needs --health-checks=true');
        return undefined;
    }
    return { defaultProbe: flags.defaultProbe, concurrency: flags.probeConcurrency, addressOverride: flags.probeAddressOverride, allowCidrs: flags.probeAllowCidrs };
}

function serviceFlag(text: string): WebhookService {
    const service = parseWebhookService(text);
    if (!service) throw new InvalidArgumentError('must be NAMESPACE/NAME or NAMESPACE/NAME:PORT');
    return service;
}

function conversionWebhook(flags: Flags, addr: string, deps: ControllerDeps): ConversionWebhook {
    if (flags.webhookService && !flags.webhookManageCrd) throw new Error('--webhook-service needs --webhook-manage-crd=true');
    if (flags.webhookCertSecret && flags.webhookCertDir) throw new Error('--webhook-cert-secret and --webhook-cert-dir exclude each other');
    const hosts = (flags.webhookHosts ?? `mesh-endpoints-webhook.${flags.namespace}.svc`).split(',').map((h) => h.trim()).filter(Boolean);
    const source: CertificateSource = flags.webhookCertSecret
        ? { kind: 'secret', secretName: flags.webhookCertSecret }
        : flags.webhookCertDir
          ? { kind: 'files', dir: flags.webhookCertDir }
          : { kind: 'self-signed', secretName: flags.webhookSelfSignedSecret, hosts };
    return new ConversionWebhook({
        ...deps,
        namespace: flags.namespace,
        addr,
        source,
        crdName: flags.webhookManageCrd ? WORKLOAD_CRD_NAME : undefined,
        service: flags.webhookService,
        checkIntervalMs: flags.webhookCheckInterval,
    });
}
