// externalworkloads/desired.ts: the pure source adapter of the external-workloads
// controller. It owns turning one Service and the ExternalWorkloads of its namespace into
// the desired slice groups (one per address family and resolved port list) plus the
// problems worth a Warning Event. It must not read the cluster, write slices, record
// Events or keep state: the controller does those with what this returns, and the shared
// reconciler (endpointslice/) turns the groups into creates, updates and deletes.
//
// Bad input never blocks: an unusable address, port or hostname is left out of the one
// endpoint it concerns and reported; every other endpoint of the Service is still desired.
import type { DiscoveryV1EndpointPort, V1Service } from '@kubernetes/client-node';
import { portMapKey } from '../endpointslice/index.js';
import type { AddressType, DesiredGroup } from '../endpointslice/types.js';
import { compactWorkload, type CompactWorkload } from './compact.js';
import { hostnameFor, workloadEndpoint } from './endpoint.js';
import { resolvePorts, targetsNamedPorts } from './ports.js';
import { addressTypesForService, selectsWorkload, serviceName, servesService } from './selection.js';
import type { ExternalWorkload, ProblemDetail, WorkloadPort, WorkloadProblem } from './types.js';

export { addressTypesForService, selectsWorkload, servesService } from './selection.js';

export interface DesiredForService {
    /** False: the Service gets no slices from us, and the controller deletes any it has. */
    selected: boolean;
    /** The families the Service serves; slices of any other type are to be deleted. */
    addressTypes: AddressType[];
    /** Only groups with endpoints; ordered by address type, then port list; endpoints by workload name. */
    groups: DesiredGroup[];
    /** One per distinct problem, in workload-name order. */
    problems: WorkloadProblem[];
}

/**
 * `workloads` may be every workload the controller knows of: those of other namespaces or
 * not matching the selector are ignored here, so the caller need not pre-filter. Whole
 * objects (the CLI's reports, tests) go through the same compact form the controller caches.
 */
export function desiredGroupsForService(service: V1Service, workloads: readonly ExternalWorkload[]): DesiredForService {
    return desiredGroups(service, workloads.map((w) => compactWorkload(w)));
}

/** The planning itself, from the compact form the controller caches. */
export function desiredGroups(service: V1Service, workloads: readonly CompactWorkload[]): DesiredForService {
    return desiredGroupsOfSelected(service, workloads.filter((workload) => selectsWorkload(service, workload)));
}

/** desiredGroups of workloads the Service selects: planService has selected them already, for its problems too. */
export function desiredGroupsOfSelected(service: V1Service, selected: readonly CompactWorkload[]): DesiredForService {
    if (!servesService(service)) return { selected: false, addressTypes: [], groups: [], problems: [] };
    const addressTypes = addressTypesForService(service);
    const groups = new Map<string, DesiredGroup>();
    const problems: WorkloadProblem[] = [];
    const portsOf = portResolver(service);

    // Indexed loops, not for...of, in what runs per workload: the first plan of a large
    // Service runs unoptimised code, where for...of allocates an iterator and a result per step.
    const workloads = inNameOrder(selected);
    for (let w = 0; w < workloads.length; w++) {
        const workload = workloads[w]!;
        // Address problems are about the workload alone, so they are reported whatever the
        // Service's families; port and hostname problems only when they change what is published.
        if (workload.addressProblems.length > 0) for (const problem of workload.addressProblems) problems.push(problemOf(workload, problem));
        if (!hasAddressOf(workload, addressTypes)) continue;

        const resolved = portsOf(workload);
        if (resolved.problems.length > 0) for (const problem of resolved.problems) problems.push(problemOf(workload, problem));
        const { hostname, problem } = hostnameFor(service, workload);
        if (problem) problems.push(problemOf(workload, problem));

        for (let t = 0; t < addressTypes.length; t++) {
            const addressType = addressTypes[t]!;
            const address = workload.addresses[addressType];
            if (address === undefined) continue;
            const groupKey = (resolved.groupKeys[addressType] ??= `${addressType} ${resolved.key}`);
            let group = groups.get(groupKey);
            if (!group) {
                // Each group owns its port objects: the reconciler may sort or copy them.
                group = { addressType, ports: resolved.ports.map((port) => ({ ...port })), endpoints: [] };
                groups.set(groupKey, group);
            }
            group.endpoints.push(workloadEndpoint(service, workload, address, hostname));
        }
    }

    return { selected: true, addressTypes, groups: orderedGroups(groups, addressTypes), problems: problems.length > 0 ? distinct(problems) : problems };
}

function problemOf(workload: CompactWorkload, detail: ProblemDetail): WorkloadProblem {
    const { namespace, name, uid } = workload.metadata;
    return { workload: { namespace, name, uid: uid ?? '' }, ...detail };
}

interface PortsForWorkload {
    ports: DiscoveryV1EndpointPort[];
    /** portMapKey of the ports: which slice group the workload's endpoints go to. */
    key: string;
    /** The groups' keys by address type, made once per port list rather than per workload. */
    groupKeys: Partial<Record<AddressType, string>>;
    problems: ProblemDetail[];
}

/** A loop, not addressTypes.some(closure): this runs for every selected workload. */
function hasAddressOf(workload: CompactWorkload, addressTypes: readonly AddressType[]): boolean {
    for (let t = 0; t < addressTypes.length; t++) if (workload.addresses[addressTypes[t]!] !== undefined) return true;
    return false;
}

/**
 * The Service's ports resolved for a workload, once per distinct port list rather than once per
 * workload: a resolution reads only the workload's named ports, which compact.ts holds once
 * per distinct list (and most workloads declare the same), and none at all when no targetPort
 * of the Service is a name.
 */
function portResolver(service: V1Service): (workload: CompactWorkload) => PortsForWorkload {
    const resolve = (workload: CompactWorkload): PortsForWorkload => {
        const { ports, missing } = resolvePorts(service, workload);
        const problems = missing.map((m) => ({
            reason: 'MissingNamedPort' as const,
            message: `Service ${serviceName(service)} port ${m.servicePort} targets the port named "${m.targetPort}" (${m.protocol}), which the workload does not declare; the workload is published without that port`,
        }));
        return { ports, key: portMapKey(ports), groupKeys: {}, problems };
    };
    if (!targetsNamedPorts(service)) {
        let same: PortsForWorkload | undefined;
        return (workload) => (same ??= resolve(workload));
    }
    const byPortList = new Map<readonly WorkloadPort[], PortsForWorkload>();
    return (workload) => {
        let resolved = byPortList.get(workload.ports);
        if (!resolved) {
            resolved = resolve(workload);
            byPortList.set(workload.ports, resolved);
        }
        return resolved;
    };
}

/** One workload per name (the first given), by name: a name is an endpoint's identity in a slice. */
function inNameOrder(workloads: readonly CompactWorkload[]): CompactWorkload[] {
    const byName = new Map<string, CompactWorkload>();
    for (let w = 0; w < workloads.length; w++) {
        const workload = workloads[w]!;
        if (!byName.has(workload.metadata.name)) byName.set(workload.metadata.name, workload);
    }
    // The names sorted as strings (code-unit order, no comparator called back per pair), then looked up.
    return [...byName.keys()].sort().map((name) => byName.get(name)!);
}

function orderedGroups(groups: Map<string, DesiredGroup>, addressTypes: AddressType[]): DesiredGroup[] {
    return [...groups.entries()]
        .sort(([keyA, a], [keyB, b]) => addressTypes.indexOf(a.addressType) - addressTypes.indexOf(b.addressType) || compare(keyA, keyB))
        .map(([, group]) => group);
}

function distinct(problems: WorkloadProblem[]): WorkloadProblem[] {
    const seen = new Set<string>();
    return problems.filter((p) => {
        const key = JSON.stringify([p.workload.namespace, p.workload.name, p.workload.uid, p.reason, p.message]);
        if (seen.has(key)) return false;
        seen.add(key);
        return true;
    });
}

// Code-unit order, not locale order: the result must not depend on the machine's locale.
function compare(a: string, b: string): number {
    return a < b ? -1 : a > b ? 1 : 0;
}
