// ops/: what the operator commands (status, check, gateways, unlink) tell a user, built from
// objects already read from the cluster. Pure: no I/O, no clock (callers pass `now`). The
// commands in src/cli/ read the objects and print what these functions return.
//
// workloads-report.ts: for each Service the external-workloads controller serves, which of
// its workloads are published (ready or not) and which are left out and why, and its slices.
// The decisions are the controller's own (desiredGroupsForService, parseExternalWorkloads), so
// the report cannot disagree with what the controller does.
import type { V1EndpointSlice, V1Service } from '@kubernetes/client-node';
import { LABEL_MANAGED_BY, LABEL_SERVICE_NAME } from '../endpointslice/slice.js';
import { desiredGroupsForService, selectsWorkload } from '../externalworkloads/desired.js';
import { parseExternalWorkloads, type ExternalWorkload, type WorkloadProblem } from '../externalworkloads/types.js';

export type WorkloadState = 'ready' | 'not-ready' | 'left-out';

export interface WorkloadLine {
    name: string;
    state: WorkloadState;
    /** The addresses published for this Service; none when left out. */
    addresses: string[];
    /** Why it is left out, or what is left out of its endpoint (a port, a hostname). */
    problems: string[];
}

export interface SliceLine {
    name: string;
    addressType: string;
    endpoints: number;
    ready: number;
}

export interface ServiceReport {
    namespace: string;
    name: string;
    workloads: WorkloadLine[];
    slices: SliceLine[];
}

export interface WorkloadsReport {
    services: ServiceReport[];
    /** Workloads the controller cannot parse at all: left out of every Service. */
    malformed: { namespace: string; name: string; problem: string }[];
}

export interface WorkloadsReportInput {
    services: readonly V1Service[];
    /** ExternalWorkloads as read, malformed ones included. */
    workloads: readonly unknown[];
    /** EndpointSlices; only those carrying `managedBy` count. */
    slices: readonly V1EndpointSlice[];
    managedBy: string;
}

/**
 * A Service is reported when it selects at least one workload or still has slices of ours
 * (the controller is about to delete them, or is not running). Order: namespace, then name.
 */
export function workloadsReport(input: WorkloadsReportInput): WorkloadsReport {
    const { workloads, problems: malformed } = parseExternalWorkloads(input.workloads);
    const ours = input.slices.filter((s) => s.metadata?.labels?.[LABEL_MANAGED_BY] === input.managedBy);
    const services: ServiceReport[] = [];
    for (const service of [...input.services].sort(byNamespaceAndName)) {
        const namespace = service.metadata?.namespace ?? '';
        const name = service.metadata?.name ?? '';
        const slices = ours.filter((s) => s.metadata?.namespace === namespace && s.metadata?.labels?.[LABEL_SERVICE_NAME] === name);
        const selected = workloads.filter((w) => selectsWorkload(service, w));
        if (selected.length === 0 && slices.length === 0) continue;
        services.push({ namespace, name, workloads: workloadLines(service, workloads, selected), slices: slices.map(sliceLine).sort(byName) });
    }
    return {
        services,
        malformed: malformed
            .map((p) => ({ namespace: p.workload.namespace, name: p.workload.name, problem: p.message }))
            .sort(byNamespaceAndName),
    };
}

function workloadLines(service: V1Service, all: ExternalWorkload[], selected: ExternalWorkload[]): WorkloadLine[] {
    const desired = desiredGroupsForService(service, all);
    // What the controller publishes for each workload: its addresses, and whether they are ready
    // (publishNotReadyAddresses and termination decide that, not the workload's condition alone).
    const published = new Map<string, { addresses: string[]; ready: boolean }>();
    for (const group of desired.groups) {
        for (const endpoint of group.endpoints) {
            const name = endpoint.targetRef?.name ?? '';
            const entry = published.get(name) ?? { addresses: [], ready: endpoint.conditions?.ready === true };
            entry.addresses.push(...endpoint.addresses);
            published.set(name, entry);
        }
    }
    const problemsOf = (name: string) => desired.problems.filter((p: WorkloadProblem) => p.workload.name === name).map((p) => `${p.reason}: ${p.message}`);
    const seen = new Set<string>();
    const lines: WorkloadLine[] = [];
    for (const workload of [...selected].sort((a, b) => compare(a.metadata.name, b.metadata.name))) {
        const name = workload.metadata.name;
        if (seen.has(name)) continue;
        seen.add(name);
        const endpoint = published.get(name);
        const problems = problemsOf(name);
        if (endpoint === undefined) {
            // No problem reported means the workload simply has no address of the Service's families.
            if (problems.length === 0) problems.push(`NoAddressOfServiceFamily: the Service serves ${desired.addressTypes.join(' and ')} and the workload has no such address`);
            lines.push({ name, state: 'left-out', addresses: [], problems });
        } else {
            lines.push({ name, state: endpoint.ready ? 'ready' : 'not-ready', addresses: endpoint.addresses, problems });
        }
    }
    return lines;
}

function sliceLine(slice: V1EndpointSlice): SliceLine {
    const endpoints = slice.endpoints ?? [];
    return {
        name: slice.metadata?.name ?? '',
        addressType: slice.addressType,
        endpoints: endpoints.length,
        ready: endpoints.filter((e) => e.conditions?.ready !== false).length,
    };
}

type Named = { metadata?: { namespace?: string; name?: string }; namespace?: string; name?: string };
function byNamespaceAndName(a: Named, b: Named): number {
    const key = (x: Named) => `${x.metadata?.namespace ?? x.namespace ?? ''}/${x.metadata?.name ?? x.name ?? ''}`;
    return compare(key(a), key(b));
}

function byName(a: { name: string }, b: { name: string }): number {
    return compare(a.name, b.name);
}

// Code-unit order: the output must not depend on the machine's locale.
export function compare(a: string, b: string): number {
    return a < b ? -1 : a > b ? 1 : 0;
}
