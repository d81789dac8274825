// `mesh-endpoints check`: preflight and health, as `linkerd check`: the CRDs at the expected
// versions, one live leader per controller Lease, the caller's rights (SelfSubjectAccessReview),
// for every Link its remote reachable with its own credentials, what each remote reader's
// token may do there (the service mirror's, and Linkerd destination's when the Link enables
// remote discovery or federated Services), and its gateway resolving, and whether MCS is
// served here (its CRDs, this cluster's name) and what each ServiceExport says.
// Prints ✔/‼/✖ per check with a hint, and exits 1 when any check fails.
import type { Command } from 'commander';
import { EXTERNAL_WORKLOADS_LEASE } from '../externalworkloads/controller.js';
import { KubeRest } from '../kube/rest.js';
import { collectionPath, EndpointSlices, Leases, objectPath, Secrets, Services, ClusterProperties } from '../kube/resources.js';
import { ALLOW_EXEC_FLAG, ALLOW_INSECURE_TLS_FLAG, type KubeconfigPolicy } from '../kube/untrusted-kubeconfig.js';
import type { KubeConfig } from '../kube/kubeconfig.js';
import { credentialsFromSecret, readLinkCredentials } from '../servicemirror/link/credentials.js';
import { CREDENTIALS_SECRET_TYPE } from '../servicemirror/api/link.js';
import {
    DESTINATION_CLUSTER_DOMAIN_ANNOTATION,
    DESTINATION_CLUSTER_NAME_LABEL,
    DESTINATION_RIGHTS,
    DESTINATION_TRUST_DOMAIN_ANNOTATION,
    MIRROR_RIGHTS,
    type RemoteRight,
} from '../servicemirror/link/remote-access.js';
import { credentialsSecretName } from './link-gen.js';
import {
    accessCheck,
    accessNeeds,
    anyFailed,
    crdChecks,
    destinationChecks,
    destinationModes,
    EXPECTED_CRDS,
    leaseCheck,
    linkChecks,
    remoteAccessCheck,
    type AccessNeed,
    type CheckResult,
    type CrdObject,
    type DestinationCredentials,
    type LeaseObject,
    type RemoteAccessAnswer,
    type RemoteProbe,
} from '../ops/checks.js';
import { checksText } from '../ops/format.js';
import { SERVICE_MIRROR_LEASE } from '../servicemirror/controller.js';
import { durationOption, fail } from './common.js';
import { operatorCommand, print, withClient, type OperatorFlags } from './operator-options.js';
import { getIfExists, listAll, readLinks, readMcs } from './read.js';
import { readGroups } from './workload-group.js';
import { groupChecks } from '../ops/groups-report.js';
import { mcsChecks } from '../ops/mcs-report.js';
import { CLUSTER_ID_PROPERTY } from '../servicemirror/mcs/types.js';
import { systemClock } from '../time/clock.js';

interface Flags extends OperatorFlags {
    controllerNamespace: string;
    externalWorkloadsLease: string;
    remoteTimeout: number;
    controlPlaneNamespace: string;
    allowKubeconfigExec?: boolean;
    allowInsecureRemoteTls?: boolean;
}

export function checkCommand(program: Command): void {
    operatorCommand(program, 'check', 'check the CRDs, the controllers, your rights and every Link; exit 1 if a check fails')
        .option('--controller-namespace <ns>', "namespace of the external-workloads controller's Lease", 'mesh-endpoints')
        .option('--external-workloads-lease <name>', "the external-workloads controller's Lease (its --lease-name)", EXTERNAL_WORKLOADS_LEASE)
        .addOption(durationOption('--remote-timeout <duration>', "how long to wait for each Link's remote apiserver", 5_000))
        .option('--control-plane-namespace <ns>', "Linkerd's control-plane namespace, where the destination's Secret of each Link's cluster is", 'linkerd')
        .option(ALLOW_EXEC_FLAG, "accept (and run) what the service mirror accepts with the same flag in a Link's credentials: exec plugins, auth providers, local files")
        .option(ALLOW_INSECURE_TLS_FLAG, "accept what the service mirror accepts with the same flag in a Link's credentials: insecure-skip-tls-verify, http:// servers")
        .action((flags: Flags) =>
            run(flags)
                .then((failed) => process.exit(failed ? 1 : 0))
                .catch(fail),
        );
}

const CRD_PATH = '/apis/apiextensions.k8s.io/v1/customresourcedefinitions';

/** Runs every check and prints them; true when one failed. */
async function run(flags: Flags): Promise<boolean> {
    return withClient(flags, async (rest) => {
        const results: CheckResult[] = [];
        // A read the caller may not make is a failed check (the RBAC check says which right is
        // missing), not the end of the command.
        const read = async <T>(category: string, what: string, body: () => Promise<T>): Promise<T | undefined> => {
            try {
                return await body();
            } catch (err) {
                results.push({ category, description: `${what} can be read`, status: 'fail', detail: (err as Error).message, hint: 'see the RBAC check' });
                return undefined;
            }
        };
        const crds = await read('CRDs', 'the CRDs', () => Promise.all(EXPECTED_CRDS.map((c) => getIfExists<CrdObject>(rest, `${CRD_PATH}/${c.name}`))));
        if (crds) results.push(...crdChecks(crds.filter((c): c is CrdObject => c !== undefined)));

        const view = await read('Links', `the Links of ${flags.namespace}`, () => readLinks(rest, flags.namespace));
        const leases = [
            { controller: 'external-workloads', ref: { namespace: flags.controllerNamespace, name: flags.externalWorkloadsLease }, required: true },
            // Without a Link there is nothing to mirror: a missing service mirror is only worth a warning.
            { controller: 'service-mirror', ref: { namespace: flags.namespace, name: SERVICE_MIRROR_LEASE }, required: (view?.links?.length ?? 0) > 0 },
        ];
        for (const { controller, ref, required } of leases) {
            const path = objectPath(Leases, ref.namespace, ref.name);
            const lease = await read('controllers', `Lease ${ref.namespace}/${ref.name}`, () => getIfExists<LeaseObject>(rest, path).then((l) => ({ l })));
            if (lease) results.push(leaseCheck(controller, ref, lease.l, systemClock.now(), required));
        }

        const needs = accessNeeds(flags.namespace, flags.controllerNamespace, flags.controlPlaneNamespace);
        results.push(accessCheck('you may read what status, gateways and check read', await review(rest, needs.read), true));
        results.push(accessCheck('you may delete what unlink --apply deletes', await review(rest, needs.unlink), false));

        const policy = { allowExec: flags.allowKubeconfigExec === true, allowInsecureTls: flags.allowInsecureRemoteTls === true };
        for (const [i, report] of (view?.reports ?? []).entries()) {
            const link = view!.links![i];
            if (report.invalid) {
                results.push(...linkChecks(report, undefined));
                continue;
            }
            const category = `Link ${report.namespace}/${report.name}`;
            const mirror = await probeRemote(rest, flags.namespace, link, flags.remoteTimeout, policy);
            results.push(...linkChecks(report, mirror.probe));
            if (mirror.kubeConfig) results.push(await accessOfReader(category, 'the service mirror', mirror.kubeConfig, MIRROR_RIGHTS, flags.remoteTimeout));
            const modes = destinationModes(link);
            if (modes.length > 0) {
                const found = await destinationCredentials(rest, flags.controlPlaneNamespace, report.targetClusterName, policy, flags.remoteTimeout);
                results.push(...destinationChecks(category, modes, found));
            }
        }
        const mcs = await read('Multi-Cluster Services', 'the ServiceExports and ServiceImports', () => readMcs(rest));
        const property = await read('Multi-Cluster Services', `ClusterProperty ${CLUSTER_ID_PROPERTY}`, () =>
            getIfExists<{ spec?: { value?: string } }>(rest, objectPath(ClusterProperties, undefined, CLUSTER_ID_PROPERTY)),
        );
        results.push(...mcsChecks({ crdsInstalled: mcs !== undefined, clusterName: property?.spec?.value, report: mcs }));
        const groups = await read('workload groups', 'the ExternalWorkloadGroups, their Leases and workloads', () => readGroups(rest));
        if (groups && groups.length > 0) {
            const policies = await read('workload groups', 'the ValidatingAdmissionPolicies', () =>
                listAll<unknown>(rest, '/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies', { labelSelector: 'app.kubernetes.io/component=workload-agent' }),
            );
            results.push(...groupChecks(groups, policies?.length ?? 0));
        }
        print(flags, { ok: !anyFailed(results), results }, () => checksText(results));
        return anyFailed(results);
    });
}

/** Whether the client's own credentials may do this (a SelfSubjectAccessReview). */
async function allowed(rest: KubeRest, resourceAttributes: { verb: string; group: string; resource: string; namespace?: string }, opts: { timeoutMs?: number } = {}): Promise<boolean> {
    const review = await rest.request<{ status?: { allowed?: boolean } }>('POST', '/apis/authorization.k8s.io/v1/selfsubjectaccessreviews', {
        body: { apiVersion: 'authorization.k8s.io/v1', kind: 'SelfSubjectAccessReview', spec: { resourceAttributes } },
        ...opts,
    });
    return review.status?.allowed === true;
}

async function review(rest: KubeRest, needs: AccessNeed[]): Promise<{ need: AccessNeed; allowed: boolean }[]> {
    return Promise.all(needs.map(async (need) => ({ need, allowed: await allowed(rest, { verb: need.verb, group: need.group, resource: need.resource, namespace: need.namespace }) })));
}

/**
 * Lists one Service and one EndpointSlice of the remote cluster, what the service mirror
 * watches there, with the kubeconfig in the Link's credentials Secret, loaded as the service
 * mirror loads it (a refused one is reported in the words of its RemoteCredentialsValid
 * condition, and never used): credentials made by Linkerd's own `link` may lack the EndpointSlices.
 */
async function probeRemote(rest: KubeRest, namespace: string, link: unknown, timeoutMs: number, policy: KubeconfigPolicy): Promise<{ probe: RemoteProbe; kubeConfig?: KubeConfig }> {
    const secretName = (link as { spec?: { clusterCredentialsSecret?: string } }).spec?.clusterCredentialsSecret ?? '';
    const credentials = await readLinkCredentials(rest, namespace, secretName, policy).catch((err: Error) => err);
    if (credentials instanceof Error) return { probe: { ok: false, error: `reading credentials Secret ${namespace}/${secretName}: ${credentials.message}` } };
    if ('problem' in credentials) return { probe: { ok: false, error: credentials.problem.message, refused: credentials.problem.refused !== undefined } };
    const remote = new KubeRest(credentials.kubeConfig);
    try {
        for (const resource of [Services, EndpointSlices]) await remote.request('GET', collectionPath(resource), { query: { limit: 1 }, timeoutMs });
        return { probe: { ok: true, detail: `${remote.server.origin} lists Services and EndpointSlices` }, kubeConfig: credentials.kubeConfig };
    } catch (err) {
        return { probe: { ok: false, error: `${remote.server.origin}: ${(err as Error).message}` } };
    } finally {
        remote.close();
    }
}

/** Asks the remote, as the reader's own token, whether it may list and watch each of its rights (cluster-wide). */
async function reviewRights(kubeConfig: KubeConfig, rights: readonly RemoteRight[], timeoutMs: number): Promise<RemoteAccessAnswer[]> {
    const remote = new KubeRest(kubeConfig);
    try {
        const asks = rights.flatMap((right) => right.verbs.map((verb) => ({ right, verb })));
        return await Promise.all(asks.map(async ({ right, verb }) => ({ right, verb, allowed: await allowed(remote, { verb, group: right.group, resource: right.resource }, { timeoutMs }) })));
    } catch (err) {
        throw new Error(`asking ${remote.server.origin} what the token may do: ${(err as Error).message}`);
    } finally {
        remote.close();
    }
}

async function accessOfReader(category: string, reader: string, kubeConfig: KubeConfig, rights: readonly RemoteRight[], timeoutMs: number): Promise<CheckResult> {
    try {
        return remoteAccessCheck(category, reader, await reviewRights(kubeConfig, rights, timeoutMs));
    } catch (err) {
        return { category, description: `${reader}'s token may list and watch what it reads in the remote cluster`, status: 'fail', detail: (err as Error).message };
    }
}

/**
 * Linkerd destination's Secret for the cluster: as its cluster store wants it (type, cluster
 * name label, trust and cluster domain annotations), loaded as our own loader loads a
 * kubeconfig, and its token's rights asked of the remote.
 */
async function destinationCredentials(rest: KubeRest, namespace: string, cluster: string, policy: KubeconfigPolicy, timeoutMs: number): Promise<DestinationCredentials> {
    const name = credentialsSecretName(cluster);
    const secretRef = `${namespace}/${name}`;
    type Secret = { type?: string; metadata?: { labels?: Record<string, string>; annotations?: Record<string, string> }; data?: Record<string, string> };
    const secret = await getIfExists<Secret>(rest, objectPath(Secrets, namespace, name)).catch((err: Error) => err);
    if (secret instanceof Error) return { found: 'unusable', secret: secretRef, error: `reading it: ${secret.message}` };
    if (!secret) return { found: 'no', secret: secretRef };
    const problems = [
        ...(secret.type === CREDENTIALS_SECRET_TYPE ? [] : [`its type is ${secret.type ?? 'none'}, not ${CREDENTIALS_SECRET_TYPE}`]),
        ...(secret.metadata?.labels?.[DESTINATION_CLUSTER_NAME_LABEL] === cluster ? [] : [`it is not labelled ${DESTINATION_CLUSTER_NAME_LABEL}=${cluster}`]),
        ...[DESTINATION_TRUST_DOMAIN_ANNOTATION, DESTINATION_CLUSTER_DOMAIN_ANNOTATION].filter((a) => !secret.metadata?.annotations?.[a]).map((a) => `it has no ${a} annotation`),
    ];
    if (problems.length > 0) return { found: 'unusable', secret: secretRef, error: `the destination skips it: ${problems.join(', ')}` };
    const credentials = credentialsFromSecret(namespace, name, secret, policy);
    if ('problem' in credentials) return { found: 'unusable', secret: secretRef, error: credentials.problem.message };
    try {
        return { found: 'yes', secret: secretRef, answers: await reviewRights(credentials.kubeConfig, DESTINATION_RIGHTS, timeoutMs) };
    } catch (err) {
        return { found: 'unusable', secret: secretRef, error: (err as Error).message };
    }
}
