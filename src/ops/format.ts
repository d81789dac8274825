// The table form of the operator commands' reports (-o table); -o json prints the reports as
// they are. Pure.
import type { CheckResult } from './checks.js';
import type { GatewayLine } from './gateways-report.js';
import type { GroupReport } from './groups-report.js';
import type { LinkReport } from './links-report.js';
import type { McsReport } from './mcs-report.js';
import type { WorkloadsReport } from './workloads-report.js';

/** Columns padded to their widest cell, two spaces apart. */
export function table(headers: string[], rows: string[][], indent = ''): string {
    const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
    const line = (cells: string[]) => indent + cells.map((c, i) => c.padEnd(widths[i]!)).join('  ').trimEnd();
    return [line(headers), ...rows.map(line)].join('\n');
}

export function workloadsText(report: WorkloadsReport): string {
    const parts: string[] = [];
    if (report.services.length === 0) parts.push('No Service selects an ExternalWorkload.');
    for (const svc of report.services) {
        const counts = ['ready', 'not-ready', 'left-out'].map((state) => `${svc.workloads.filter((w) => w.state === state).length} ${state}`);
        parts.push(`Service ${svc.namespace}/${svc.name}: ${counts.join(', ')}`);
        if (svc.workloads.length > 0) {
            const rows = svc.workloads.map((w) => [w.name, w.state, w.addresses.join(',') || '-', w.problems.join('; ') || '-']);
            parts.push(table(['WORKLOAD', 'STATE', 'ADDRESSES', 'PROBLEMS'], rows, '  '));
        }
        const slices = svc.slices.map((s) => [s.name, s.addressType, String(s.endpoints), String(s.ready)]);
        parts.push(slices.length > 0 ? table(['SLICE', 'FAMILY', 'ENDPOINTS', 'READY'], slices, '  ') : '  no EndpointSlices');
    }
    if (report.malformed.length > 0) {
        parts.push('Malformed ExternalWorkloads (left out of every Service):');
        parts.push(table(['WORKLOAD', 'PROBLEM'], report.malformed.map((m) => [`${m.namespace}/${m.name}`, m.problem]), '  '));
    }
    return parts.join('\n');
}

export function linksText(reports: readonly LinkReport[], namespace: string): string {
    if (reports.length === 0) return `No Link in namespace ${namespace}.`;
    const parts: string[] = [];
    for (const link of reports) {
        if (link.invalid) {
            parts.push(`Link ${link.namespace}/${link.name}: invalid, not served: ${link.invalid}`);
            continue;
        }
        parts.push(`Link ${link.namespace}/${link.name}: cluster ${link.targetClusterName}, ${remoteSummary(link)}, ${gatewaySummary(link)}, probe ${probeSummary(link)}`);
        if (link.gatewayNames.length > 0) {
            const rows = link.gatewayNames.map((n) => [
                n.name,
                n.addresses.join(',') || '(none)',
                n.ttlSeconds === undefined ? '-' : `${n.ttlSeconds}s`,
                n.resolvedAt ?? '-',
                n.lastError ? `${n.lastError}${n.lastErrorAt ? ` (at ${n.lastErrorAt})` : ''}` : '-',
            ]);
            parts.push(table(['GATEWAY NAME', 'ADDRESSES', 'TTL', 'RESOLVED AT', 'LAST ERROR'], rows, '  '));
        }
        if (link.summary) parts.push(`  ${mirrorsSummary(link.summary)}`);
        if (link.mirrors.length === 0) parts.push('  no mirrored Services');
        else {
            const rows = link.mirrors.map((m) => [
                m.remote,
                m.local ?? '-',
                m.mirrored ? `${m.mirrored.status === 'True' ? 'yes' : 'no'}${m.mirrored.status === 'True' ? '' : ` (${m.mirrored.reason}: ${m.mirrored.message})`}` : 'unknown',
                `${m.ready}/${m.endpoints}`,
            ]);
            parts.push(table(['REMOTE SERVICE', 'MIRROR', 'MIRRORED', 'READY ENDPOINTS'], rows, '  '));
        }
    }
    return parts.join('\n');
}

function mirrorsSummary(summary: NonNullable<LinkReport['summary']>): string {
    const counts = `${summary.mirrored} of ${summary.services} exported remote Services mirrored`;
    if (summary.notMirrored === 0) return counts;
    const reasons = summary.notMirroredByReason.map((r) => `${r.services} ${r.reason}`).join(', ');
    return `${counts}; not mirrored: ${reasons}${summary.notListed > 0 ? ` (${summary.notListed} not listed below: see the Link's Events)` : ''}`;
}

function remoteSummary(link: LinkReport): string {
    if (!link.remote) return 'remote not read yet';
    return link.remote.readable ? 'remote readable' : `remote NOT readable since ${link.remote.since} (${link.remote.reason}: ${link.remote.message})`;
}

function gatewaySummary(link: LinkReport): string {
    return link.gatewayPort === undefined ? 'no gateway' : `gateway port ${link.gatewayPort}`;
}

function probeSummary(link: LinkReport): string {
    const p = link.probe;
    if (p.state === 'not-probed') return 'not configured';
    const where = p.spec ? ` (${p.spec.path} on port ${p.spec.port})` : '';
    if (p.since === undefined) return `alive${where}, no failure reported`;
    return `${p.state}${where} since ${p.since}`;
}

export function gatewaysText(lines: readonly GatewayLine[], namespace: string): string {
    if (lines.length === 0) return `No Link in namespace ${namespace}.`;
    const rows = lines.map((l) => [
        l.cluster || l.link,
        l.alive,
        l.latencyMs === undefined ? '-' : `${l.latencyMs}ms`,
        l.addresses.join(',') || '(none)',
        String(l.mirroredServices),
        l.detail ?? '-',
    ]);
    return table(['CLUSTER', 'ALIVE', 'LATENCY', 'ADDRESSES', 'MIRRORED', 'DETAIL'], rows);
}

const marks = { ok: '✔', warn: '‼', fail: '✖' } as const;

/** Grouped by category in the order given, as `linkerd check` prints them. */
export function checksText(results: readonly CheckResult[]): string {
    const parts: string[] = [];
    let category: string | undefined;
    for (const r of results) {
        if (r.category !== category) {
            category = r.category;
            if (parts.length > 0) parts.push('');
            parts.push(r.category, '-'.repeat(r.category.length));
        }
        parts.push(`${marks[r.status]} ${r.description}${r.detail ? `: ${r.detail}` : ''}`);
        if (r.hint && r.status !== 'ok') parts.push(`    hint: ${r.hint}`);
    }
    const failed = results.filter((r) => r.status === 'fail').length;
    const warned = results.filter((r) => r.status === 'warn').length;
    parts.push('', failed > 0 ? `Status check results are ${marks.fail} (${failed} failed, ${warned} warnings)` : `Status check results are ${marks.ok}${warned > 0 ? ` (${warned} warnings)` : ''}`);
    return parts.join('\n');
}

export function mcsText(report: McsReport): string {
    const parts: string[] = [];
    if (report.exports.length === 0) parts.push('No ServiceExport in this cluster.');
    else {
        const condition = (e: McsReport['exports'][number], type: string) => {
            const c = e.conditions.find((x) => x.type === type);
            return c ? `${c.status}${c.status === (type === 'Conflict' ? 'False' : 'True') ? '' : ` (${c.reason}: ${c.message})`}` : '-';
        };
        const rows = report.exports.map((e) => [`${e.namespace}/${e.name}`, condition(e, 'Valid'), condition(e, 'Ready'), condition(e, 'Conflict')]);
        parts.push(table(['SERVICE EXPORT', 'VALID', 'READY', 'CONFLICT'], rows));
    }
    parts.push('');
    if (report.imports.length === 0) parts.push('No ServiceImport in this cluster.');
    else {
        const rows = report.imports.map((i) => [
            `${i.namespace}/${i.name}`,
            i.type,
            i.ips.join(',') || '-',
            i.clusters.join(',') || '-',
            i.sources.map((s) => `${s.cluster} ${s.ready}/${s.endpoints}`).join(', ') || '-',
        ]);
        parts.push(table(['SERVICE IMPORT', 'TYPE', 'IPS', 'CLUSTERS', 'READY ENDPOINTS PER SOURCE CLUSTER'], rows));
    }
    return parts.join('\n');
}

export function groupsText(reports: readonly GroupReport[]): string {
    if (reports.length === 0) return 'No ExternalWorkloadGroup.';
    const parts: string[] = [];
    for (const g of reports) {
        if (g.invalid) {
            parts.push(`Group ${g.namespace}/${g.name}: invalid, not served: ${g.invalid}`);
            continue;
        }
        const s = g.status;
        parts.push(`Group ${g.namespace}/${g.name}: ${s.registered ?? 0} registered, ${s.ready ?? 0} ready, ${s.expired ?? 0} lapsed, ${s.current ?? 0} current, ${s.refusedAddresses ?? 0} addresses refused`);
        if (g.registrations.length === 0) parts.push('  no VM registered');
        else {
            const seconds = (ms: number | undefined) => (ms === undefined ? '-' : `${Math.round(ms / 1000)}s`);
            const rows = g.registrations.map((r) => [
                r.vm,
                r.addresses.join(',') || '-',
                r.refused.join(',') || '-',
                r.heartbeat,
                seconds(r.heartbeatAgeMs),
                r.deletesInMs === undefined ? '-' : `in ${seconds(r.deletesInMs)}`,
                r.ready,
            ]);
            parts.push(table(['VM', 'ADDRESSES', 'REFUSED', 'HEARTBEAT', 'AGE', 'DELETED', 'READY'], rows, '  '));
        }
    }
    return parts.join('\n');
}
