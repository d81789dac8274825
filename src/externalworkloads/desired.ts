// externalworkloads/desired.ts: the pure source adapter of the external-workloads
// controller. It owns turning one Service and the ExternalWorkloads of its namespace into
// the desired slice groups (one per address family and resolved port list) plus the
// problems worth a Warning Event. It must not read the cluster, write slices, record
// Events or keep state: the controller does those with what this returns, and the shared
// reconciler (endpointslice/) turns the groups into creates, updates and deletes.
//
// Bad input never blocks: an unusable address, port or hostname is left out of the one
// endpoint it concerns and reported; every other endpoint of the Service is still desired.
import type { V1Service } from '@kubernetes/client-node';
import { portMapKey } from '../endpointslice/index.js';
import { completed, type Steps } from '../endpointslice/steps.js';
import type { AddressType, DesiredGroup } from '../endpointslice/types.js';
import { compactWorkload, type CompactWorkload } from './compact.js';
import { hostnameFor, workloadEndpoint } from './endpoint.js';
import { resolvePorts } from './ports.js';
import { addressTypesForService, selectsWorkload, serviceName, servesService } from './selection.js';
import type { ExternalWorkload, ProblemDetail, WorkloadProblem } from './types.js';

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
    return completed(desiredGroupsSteps(service, workloads.map((w) => compactWorkload(w))));
}

/** The planning itself, in steps of one workload for a caller that pauses between them (endpointslice/steps.ts); it reads only the compact form. */
export function* desiredGroupsSteps(service: V1Service, workloads: readonly CompactWorkload[]): Steps<DesiredForService> {
    if (!servesService(service)) return { selected: false, addressTypes: [], groups: [], problems: [] };
    const addressTypes = addressTypesForService(service);
    const groups = new Map<string, DesiredGroup>();
    const problems: WorkloadProblem[] = [];

    for (const workload of yield* selectedInOrder(service, workloads)) {
        yield;
        const { namespace, name, uid } = workload.metadata;
        const report = (detail: ProblemDetail) => problems.push({ workload: { namespace, name, uid: uid ?? '' }, ...detail });
        // Address problems are about the workload alone, so they are reported whatever the
        // Service's families; port and hostname problems only when they change what is published.
        workload.addressProblems.forEach(report);
        const published = addressTypes.flatMap((type) => {
            const address = workload.addresses[type];
            return address === undefined ? [] : [{ addressType: type, address }];
        });
        if (published.length === 0) continue;

        const { ports, missing } = resolvePorts(service, workload);
        for (const m of missing) {
            report({
                reason: 'MissingNamedPort',
                message: `Service ${serviceName(service)} port ${m.servicePort} targets the port named "${m.targetPort}" (${m.protocol}), which the workload does not declare; the workload is published without that port`,
            });
        }
        const { hostname, problem } = hostnameFor(service, workload);
        if (problem) report(problem);

        const key = portMapKey(ports);
        for (const { addressType, address } of published) {
            const groupKey = `${addressType} ${key}`;
            let group = groups.get(groupKey);
            if (!group) {
                // Each group owns its port objects: the reconciler may sort or copy them.
                group = { addressType, ports: ports.map((port) => ({ ...port })), endpoints: [] };
                groups.set(groupKey, group);
            }
            group.endpoints.push(workloadEndpoint(service, workload, address, hostname));
        }
    }

    return { selected: true, addressTypes, groups: orderedGroups(groups, addressTypes), problems: distinct(problems) };
}

/** Selected workloads by name, one per name: a name is an endpoint's identity in a slice. In steps too: 10 000 of them take a good 10 ms. */
function* selectedInOrder(service: V1Service, workloads: readonly CompactWorkload[]): Steps<CompactWorkload[]> {
    const byName = new Map<string, CompactWorkload>();
    for (const workload of workloads) {
        yield;
        if (selectsWorkload(service, workload) && !byName.has(workload.metadata.name)) {
            byName.set(workload.metadata.name, workload);
        }
    }
    return [...byName.values()].sort((a, b) => compare(a.metadata.name, b.metadata.name));
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
