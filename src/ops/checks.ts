// `check`: preflight and health in the style of `linkerd check`. Each function here turns
// objects (or the answer of one request) into check results; the command reads, runs them in
// order and prints ✔/‼/✖ with a hint. Pure: `now` is passed in.
import type { GatewayNameStatus } from '../dns/resolution-status.js';
import { LINK_GROUP, LINK_STORAGE_VERSION } from '../servicemirror/api/link.js';
import type { RemoteRight } from '../servicemirror/link/remote-access.js';
import { GROUP_API_GROUP } from '../externalworkloads/groups/types.js';
import { WORKLOAD_GROUP } from '../externalworkloads/types.js';
import type { LinkReport } from './links-report.js';

export type CheckStatus = 'ok' | 'warn' | 'fail';

export interface CheckResult {
    category: string;
    description: string;
    status: CheckStatus;
    /** What was found, when it is not simply "as expected". */
    detail?: string;
    /** What to do about a warning or failure. */
    hint?: string;
}

/** The CRDs and versions this release serves and stores (charts/mesh-endpoints/crds/; a unit test keeps them equal). */
export const EXPECTED_CRDS = [
    { name: `externalworkloads.${WORKLOAD_GROUP}`, served: ['v1alpha1', 'v1beta1'], storage: 'v1beta1' },
    { name: `links.${LINK_GROUP}`, served: ['v1alpha1', 'v1alpha2', 'v1alpha3'], storage: LINK_STORAGE_VERSION },
    { name: `externalworkloadgroups.${GROUP_API_GROUP}`, served: ['v1alpha1'], storage: 'v1alpha1' },
] as const;

export interface CrdObject {
    metadata?: { name?: string };
    spec?: { versions?: { name: string; served?: boolean; storage?: boolean }[] };
    status?: { conditions?: { type: string; status: string }[] };
}

const CRD_HINT = 'apply charts/mesh-endpoints/crds/ of this release (kubectl apply -f charts/mesh-endpoints/crds/), or install the chart';

/** One check per expected CRD; `found` holds the CRDs that exist (absent ones are missing). */
export function crdChecks(found: readonly CrdObject[]): CheckResult[] {
    return EXPECTED_CRDS.map((expected) => {
        const result = { category: 'CRDs', description: `${expected.name} is installed at the expected versions` };
        const crd = found.find((c) => c.metadata?.name === expected.name);
        if (!crd) return { ...result, status: 'fail', detail: 'not installed', hint: CRD_HINT };
        const versions = crd.spec?.versions ?? [];
        const served = versions.filter((v) => v.served).map((v) => v.name);
        const missing = expected.served.filter((v) => !served.includes(v));
        const storage = versions.find((v) => v.storage)?.name;
        const problems: string[] = [];
        if (missing.length > 0) problems.push(`does not serve ${missing.join(', ')} (serves ${served.join(', ') || 'nothing'})`);
        if (storage !== expected.storage) problems.push(`stores ${storage ?? 'no version'}, expected ${expected.storage}`);
        if (!crd.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True')) problems.push('is not Established');
        if (problems.length > 0) return { ...result, status: 'fail', detail: problems.join('; '), hint: CRD_HINT };
        return { ...result, status: 'ok' };
    });
}

export interface LeaseObject {
    metadata?: { name?: string; namespace?: string };
    spec?: { holderIdentity?: string | null; leaseDurationSeconds?: number; renewTime?: string | null };
}

/**
 * A controller runs when its Lease has a holder that renewed it within the lease duration:
 * a Lease has at most one holder, so that is exactly one leader. `required: false` (no Link,
 * so no service mirror is needed) turns a missing Lease into a warning.
 */
export function leaseCheck(controller: string, ref: { namespace: string; name: string }, lease: LeaseObject | undefined, now: number, required: boolean): CheckResult {
    const result = { category: 'controllers', description: `${controller} has exactly one live leader (Lease ${ref.namespace}/${ref.name})` };
    const hint = `start the ${controller} controller (the chart, or \`mesh-endpoints ${controller} --namespace ${ref.namespace}\`) and look at its logs`;
    if (!lease) return { ...result, status: required ? 'fail' : 'warn', detail: 'the Lease does not exist: the controller never ran here', hint };
    const holder = lease.spec?.holderIdentity ?? '';
    if (holder === '') return { ...result, status: 'fail', detail: 'the Lease has no holder: the last leader released it and no replica took it', hint };
    const renewed = Date.parse(lease.spec?.renewTime ?? '');
    const durationMs = (lease.spec?.leaseDurationSeconds ?? 15) * 1000;
    if (Number.isNaN(renewed)) return { ...result, status: 'fail', detail: `holder ${holder} never renewed the Lease`, hint };
    const age = now - renewed;
    // A holder that stopped renewing is gone: a standby takes over once the duration has passed.
    if (age > durationMs) {
        return { ...result, status: 'fail', detail: `holder ${holder} last renewed ${seconds(age)} ago, longer than the ${seconds(durationMs)} lease duration`, hint };
    }
    return { ...result, status: 'ok', detail: `leader ${holder}, renewed ${seconds(Math.max(0, age))} ago` };
}

function seconds(ms: number): string {
    return `${Math.round(ms / 1000)}s`;
}

/** A right the operator commands need, asked of the apiserver as a SelfSubjectAccessReview. */
export interface AccessNeed {
    verb: string;
    group: string;
    resource: string;
    /** Absent: in every namespace (or cluster-scoped). */
    namespace?: string;
    /** Which command needs it. */
    usedBy: string;
}

/** What status, gateways and check read; and, apart, what unlink --apply deletes. */
export function accessNeeds(linkNamespace: string, controllerNamespace: string, controlPlaneNamespace = 'linkerd'): { read: AccessNeed[]; unlink: AccessNeed[] } {
    const read: AccessNeed[] = [
        { verb: 'list', group: '', resource: 'services', usedBy: 'status' },
        { verb: 'list', group: 'discovery.k8s.io', resource: 'endpointslices', usedBy: 'status' },
        { verb: 'list', group: WORKLOAD_GROUP, resource: 'externalworkloads', usedBy: 'status' },
        { verb: 'list', group: LINK_GROUP, resource: 'links', namespace: linkNamespace, usedBy: 'status, gateways, check' },
        { verb: 'list', group: '', resource: 'events', namespace: linkNamespace, usedBy: 'status, gateways' },
        { verb: 'get', group: '', resource: 'secrets', namespace: linkNamespace, usedBy: 'check (remote reachable)' },
        { verb: 'get', group: '', resource: 'secrets', namespace: controlPlaneNamespace, usedBy: "check, unlink (the destination's Secret)" },
        { verb: 'get', group: 'coordination.k8s.io', resource: 'leases', namespace: controllerNamespace, usedBy: 'check' },
        { verb: 'get', group: 'coordination.k8s.io', resource: 'leases', namespace: linkNamespace, usedBy: 'check' },
        { verb: 'get', group: 'apiextensions.k8s.io', resource: 'customresourcedefinitions', usedBy: 'check' },
        { verb: 'list', group: 'multicluster.x-k8s.io', resource: 'serviceexports', usedBy: 'status, check' },
        { verb: 'list', group: 'multicluster.x-k8s.io', resource: 'serviceimports', usedBy: 'status, check' },
    ];
    const unlink: AccessNeed[] = [
        { verb: 'delete', group: LINK_GROUP, resource: 'links', namespace: linkNamespace, usedBy: 'unlink --apply' },
        { verb: 'delete', group: '', resource: 'secrets', namespace: linkNamespace, usedBy: 'unlink --apply' },
        { verb: 'delete', group: '', resource: 'secrets', namespace: controlPlaneNamespace, usedBy: 'unlink --apply' },
        { verb: 'delete', group: '', resource: 'services', usedBy: 'unlink --apply' },
        { verb: 'delete', group: 'discovery.k8s.io', resource: 'endpointslices', usedBy: 'unlink --apply' },
    ];
    return { read: dedupe(read), unlink };
}

function dedupe(needs: AccessNeed[]): AccessNeed[] {
    const seen = new Set<string>();
    return needs.filter((n) => {
        const key = `${n.verb} ${n.group} ${n.resource} ${n.namespace ?? ''}`;
        if (seen.has(key)) return false;
        seen.add(key);
        return true;
    });
}

/** "list services", "watch endpointslices.discovery.k8s.io". */
function describeRight(r: { verb: string; group: string; resource: string }): string {
    return `${r.verb} ${r.group ? `${r.resource}.${r.group}` : r.resource}`;
}

function describeNeed(need: AccessNeed): string {
    return `${describeRight(need)} ${need.namespace ? `in ${need.namespace}` : 'cluster-wide'}`;
}

/** One check for a set of rights: which were denied, and for which command. `required: false` makes it a warning. */
export function accessCheck(description: string, answers: readonly { need: AccessNeed; allowed: boolean }[], required: boolean): CheckResult {
    const denied = answers.filter((a) => !a.allowed);
    const result = { category: 'RBAC', description };
    if (denied.length === 0) return { ...result, status: 'ok' };
    return {
        ...result,
        status: required ? 'fail' : 'warn',
        detail: `denied: ${denied.map((d) => `${describeNeed(d.need)} (${d.need.usedBy})`).join('; ')}`,
        hint: 'grant these to the user or ServiceAccount of your kubeconfig (kubectl auth can-i shows the same answers)',
    };
}

/** The outcome of reaching a Link's remote apiserver with the Link's own credentials. */
export type RemoteProbe = { ok: true; detail: string } | { ok: false; error: string; refused?: boolean };

/** The checks of one Link: valid, its remote reachable, each gateway name resolving. */
export function linkChecks(report: LinkReport, remote: RemoteProbe | undefined): CheckResult[] {
    const category = `Link ${report.namespace}/${report.name}`;
    if (report.invalid) {
        return [{ category, description: 'the Link is valid', status: 'fail', detail: report.invalid, hint: 'fix the Link (mesh-endpoints link prints a valid one)' }];
    }
    const results: CheckResult[] = [];
    const reach = { category, description: `remote cluster ${report.targetClusterName} is reachable with the Link's credentials` };
    if (remote === undefined || remote.ok) results.push({ ...reach, status: 'ok', ...(remote ? { detail: remote.detail } : {}) });
    else {
        results.push({
            ...reach,
            status: 'fail',
            detail: remote.error,
            hint: remote.refused
                ? 'the service mirror refuses these credentials too (RemoteCredentialsValid=False) and does not serve the Link: run `mesh-endpoints link` again for a token kubeconfig'
                : 'check the credentials Secret (spec.clusterCredentialsSecret): run `mesh-endpoints link` again for a fresh token, and that the remote apiserver is reachable from here',
        });
    }
    if (report.remote && !report.remote.readable) {
        results.push({
            category,
            description: `the service mirror reads remote cluster ${report.targetClusterName}`,
            status: 'fail',
            detail: `${report.remote.reason} since ${report.remote.since}: ${report.remote.message}`,
            hint: 'the mirrors stay as they are meanwhile; see the RemoteClusterUnreachable Events on the Link and the service mirror\'s logs',
        });
    }
    if (report.gatewayNames.length === 0) {
        results.push({ category, description: 'gateway', status: 'ok', detail: 'no gatewayAddress: only remote-discovery Services are mirrored' });
    }
    for (const name of report.gatewayNames) results.push(gatewayNameCheck(category, name));
    if (report.summary) results.push(mirrorsCheck(category, report.summary));
    return results;
}

function mirrorsCheck(category: string, summary: NonNullable<LinkReport['summary']>): CheckResult {
    const result = { category, description: 'every exported remote Service is mirrored' };
    if (summary.notMirrored === 0) return { ...result, status: 'ok', detail: `${summary.mirrored} mirrored` };
    const reasons = summary.notMirroredByReason.map((r) => `${r.services} ${r.reason}`).join(', ');
    return {
        ...result,
        status: 'warn',
        detail: `${summary.notMirrored} of ${summary.services} not mirrored (${reasons})`,
        hint: "`mesh-endpoints status` lists them (status.mirrorServices), and the Link's Warning Events say why",
    };
}

function gatewayNameCheck(category: string, name: GatewayNameStatus): CheckResult {
    const result = { category, description: `gateway ${name.name} resolves` };
    if (name.lastError !== undefined) {
        const kept = name.addresses.length > 0 ? `; last good addresses kept: ${name.addresses.join(', ')}` : '';
        return {
            ...result,
            status: 'fail',
            detail: `${name.lastError}${name.lastErrorAt ? ` (since ${name.lastErrorAt})` : ''}${kept}`,
            hint: "check the name in the Link's gatewayAddress and the DNS servers of the service mirror (--dns-servers)",
        };
    }
    if (name.addresses.length === 0) {
        return {
            ...result,
            status: 'fail',
            detail: 'no addresses in the Link status yet',
            hint: 'the service mirror writes status.gatewayResolution once it serves the Link: is it running and leading (see the controllers checks)?',
        };
    }
    return { ...result, status: 'ok', detail: `${name.addresses.join(', ')}${name.ttlSeconds !== undefined ? ` (TTL ${name.ttlSeconds}s)` : ''}` };
}

/** One right of a remote reader, asked of the remote with that reader's own token (SelfSubjectAccessReview). */
export interface RemoteAccessAnswer {
    right: RemoteRight;
    verb: 'list' | 'watch';
    allowed: boolean;
}

/** Whether a reader's token may list and watch all it reads there; each denial says which mode fails without it. */
export function remoteAccessCheck(category: string, reader: string, answers: readonly RemoteAccessAnswer[]): CheckResult {
    const result = { category, description: `${reader}'s token may list and watch what it reads in the remote cluster` };
    const denied = answers.filter((a) => !a.allowed);
    if (denied.length === 0) return { ...result, status: 'ok', detail: [...new Set(answers.map((a) => a.right.resource))].join(', ') };
    return {
        ...result,
        status: 'fail',
        detail: `denied: ${denied.map((d) => `${describeRight({ ...d.right, verb: d.verb })} (without it ${d.right.neededFor} fail)`).join('; ')}`,
        hint: "run `mesh-endpoints link` again: it brings each remote ServiceAccount's ClusterRole back to what its reader needs",
    };
}

/** Linkerd destination's Secret for a Link's cluster, as found. */
export type DestinationCredentials =
    | { found: 'no'; secret: string }
    | { found: 'unusable'; secret: string; error: string }
    | { found: 'yes'; secret: string; answers: readonly RemoteAccessAnswer[] };

/**
 * The modes of a Link that Linkerd's destination resolves itself in the remote cluster, and
 * so need its Secret: none, and the destination's Secret is not looked for.
 */
export function destinationModes(link: unknown): string[] {
    const spec = (link as { spec?: Record<string, { matchLabels?: object; matchExpressions?: unknown[] } | undefined> }).spec ?? {};
    const selects = (selector: { matchLabels?: object; matchExpressions?: unknown[] } | undefined) =>
        selector !== undefined && (Object.keys(selector.matchLabels ?? {}).length > 0 || (selector.matchExpressions ?? []).length > 0);
    return [
        ...(selects(spec.remoteDiscoverySelector) ? ['remote-discovery Services'] : []),
        ...(selects(spec.federatedServiceSelector) ? ['federated Services'] : []),
    ];
}

export function destinationChecks(category: string, modes: readonly string[], credentials: DestinationCredentials | undefined): CheckResult[] {
    if (modes.length === 0 || credentials === undefined) return [];
    const result = { category, description: `Linkerd's destination has credentials for the remote cluster (Secret ${credentials.secret})` };
    const without = `without it Linkerd's proxies cannot resolve the ${modes.join(' and ')} of this Link`;
    const hint = 'run `mesh-endpoints link` again with --control-plane-namespace set to where Linkerd runs, and apply its output (delete the old Secret first: the destination reads it only when it is created)';
    if (credentials.found === 'no') return [{ ...result, status: 'fail', detail: `not found: ${without}`, hint }];
    if (credentials.found === 'unusable') return [{ ...result, status: 'fail', detail: `${credentials.error}: ${without}`, hint }];
    return [{ ...result, status: 'ok' }, remoteAccessCheck(category, "Linkerd's destination", credentials.answers)];
}

export function anyFailed(results: readonly CheckResult[]): boolean {
    return results.some((r) => r.status === 'fail');
}
