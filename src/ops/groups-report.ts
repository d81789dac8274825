// What `workload-group list`, `status` and `check` say of the VMs that register themselves:
// per group, its counts (as the controller writes them in its status) and each registration:
// its addresses, its Ready condition and how long ago its heartbeat was renewed. Pure: the
// objects and the time in, computed with the controller's own rules (groups/heartbeat.ts).
import { cacheGroupWorkload } from '../externalworkloads/groups/cached.js';
import { heartbeatState } from '../externalworkloads/groups/heartbeat.js';
import { claimedAddresses } from '../externalworkloads/groups/materialise.js';
import { GROUP_LABEL, parseGroup, parseRegistrationLease, type RegistrationLease } from '../externalworkloads/groups/types.js';
import type { CheckResult } from './checks.js';

export interface RegistrationLine {
    name: string;
    vm: string;
    /** As claimed in the Lease; refused ones apart. */
    addresses: string[];
    refused: string[];
    /** live, lapsed (not ready, deleted at `deletesInMs`), or no Lease (the workload is being cleaned up). */
    heartbeat: 'live' | 'expired' | 'withdrawn' | 'invalid' | 'no-lease';
    /** Since the last renewTime; undefined without one. */
    heartbeatAgeMs?: number;
    deletesInMs?: number;
    /** The workload's Ready condition: "True", "False (HeartbeatExpired)", or "-" when it has none or does not exist. */
    ready: string;
}

export interface GroupReport {
    namespace: string;
    name: string;
    invalid?: string;
    status: { registered?: number; ready?: number; expired?: number; current?: number; refusedAddresses?: number };
    registrations: RegistrationLine[];
}

interface Obj {
    metadata?: { name?: string; namespace?: string; labels?: Record<string, string> };
    status?: GroupReport['status'];
}

export function groupsReport(input: { groups: readonly unknown[]; leases: readonly unknown[]; workloads: readonly unknown[]; now: number }): GroupReport[] {
    const reports: GroupReport[] = [];
    for (const raw of input.groups as Obj[]) {
        const namespace = raw.metadata?.namespace ?? '';
        const name = raw.metadata?.name ?? '';
        const parsed = parseGroup(raw);
        const status = raw.status ?? {};
        const mine = (o: Obj) => o.metadata?.namespace === namespace && o.metadata?.labels?.[GROUP_LABEL] === name;
        const leases = (input.leases as Obj[]).filter(mine).map((l) => parseRegistrationLease(l)).filter((l): l is RegistrationLease => l !== undefined);
        const workloads = (input.workloads as Obj[]).filter(mine).map((w) => cacheGroupWorkload(w));
        if (!parsed.ok) {
            reports.push({ namespace, name, invalid: parsed.why, status, registrations: [] });
            continue;
        }
        const group = parsed.group;
        const names = [...new Set([...leases.map((l) => l.name), ...workloads.map((w) => w.metadata.name)])].sort();
        const registrations = names.map((n): RegistrationLine => {
            const lease = leases.find((l) => l.name === n);
            const workload = workloads.find((w) => w.metadata.name === n);
            const condition = workload?.conditions.find((c) => c.type === 'Ready');
            const ready = condition ? (condition.status === 'True' ? 'True' : `${condition.status} (${condition.reason ?? '-'})`) : '-';
            if (!lease) return { name: n, vm: n.slice(n.lastIndexOf('.') + 1), addresses: [], refused: [], heartbeat: 'no-lease', ready };
            const { workloadIPs, refused } = claimedAddresses(lease.addresses, group);
            const state = heartbeatState(lease, group, input.now);
            const heartbeat = state.state === 'live' ? 'live' : state.reason === 'Withdrawn' ? 'withdrawn' : state.reason === 'InvalidHeartbeat' ? 'invalid' : 'expired';
            return {
                name: n,
                vm: lease.vm,
                addresses: workloadIPs.map((x) => x.ip),
                refused: refused.map((r) => r.address),
                heartbeat,
                heartbeatAgeMs: lease.renewTime === undefined ? undefined : input.now - lease.renewTime,
                deletesInMs: state.state === 'expired' ? Math.max(0, state.deleteAt - input.now) : undefined,
                ready,
            };
        });
        reports.push({ namespace, name, status, registrations });
    }
    return reports.sort((a, b) => `${a.namespace}/${a.name}`.localeCompare(`${b.namespace}/${b.name}`));
}

/** `check`: each group served, its template rolled out, its claims accepted; and the agents' admission policy in force. */
export function groupChecks(reports: readonly GroupReport[], agentPolicies: number): CheckResult[] {
    if (reports.length === 0) return [];
    const category = 'workload groups';
    const results: CheckResult[] = [
        agentPolicies >= 2
            ? { category, description: 'the workload agents’ admission policies are installed', status: 'ok' }
            : {
                  category,
                  description: 'the workload agents’ admission policies are installed',
                  status: 'fail',
                  detail: `${agentPolicies} of the 2 ValidatingAdmissionPolicies found: a VM's ServiceAccount could write other Leases than its own`,
                  hint: 'install the chart with externalWorkloads.workloadGroups.enabled=true',
              },
    ];
    for (const g of reports) {
        const description = `group ${g.namespace}/${g.name} is served, rolled out, its claims accepted`;
        const problems = [
            ...(g.invalid ? [`invalid: ${g.invalid}`] : []),
            ...(g.status.current !== undefined && g.status.current !== g.status.registered ? [`${g.status.current} of ${g.status.registered} workloads on the current template`] : []),
            ...(g.status.refusedAddresses ? [`${g.status.refusedAddresses} claimed addresses refused`] : []),
        ];
        const expired = g.registrations.filter((r) => r.heartbeat !== 'live').length;
        if (problems.length > 0) results.push({ category, description, status: g.invalid ? 'fail' : 'warn', detail: problems.join('; '), hint: `kubectl describe externalworkloadgroup -n ${g.namespace} ${g.name} (its Events)` });
        else results.push({ category, description, status: 'ok', detail: `${g.registrations.length - expired} live, ${expired} lapsed` });
    }
    return results;
}
