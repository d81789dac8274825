// `status` and `check` on the Multi-Cluster Services API: this cluster's ServiceExports with
// their conditions, and its ServiceImports with their clusters, IPs and endpoints per source
// cluster (from the derived Service's slices). Pure.
import type { V1Condition, V1EndpointSlice } from '@kubernetes/client-node';
import { LABEL_MCS_SERVICE_NAME, LABEL_SOURCE_CLUSTER, type ServiceExport, type ServiceImport } from '../servicemirror/mcs/types.js';
import type { CheckResult } from './checks.js';

export interface ExportLine {
    namespace: string;
    name: string;
    conditions: { type: string; status: string; reason?: string; message?: string }[];
}

export interface ImportLine {
    namespace: string;
    name: string;
    type: string;
    ips: string[];
    clusters: string[];
    /** Endpoints per source cluster, from the MCS slices. */
    sources: { cluster: string; endpoints: number; ready: number }[];
}

export interface McsReport {
    exports: ExportLine[];
    imports: ImportLine[];
}

const byName = (a: { namespace: string; name: string }, b: { namespace: string; name: string }) => `${a.namespace}/${a.name}`.localeCompare(`${b.namespace}/${b.name}`);

export function mcsReport(input: { exports: readonly ServiceExport[]; imports: readonly ServiceImport[]; slices: readonly V1EndpointSlice[] }): McsReport {
    const exports = input.exports.map((e) => ({
        namespace: e.metadata?.namespace ?? '',
        name: e.metadata?.name ?? '',
        conditions: (e.status?.conditions ?? []).map((c: V1Condition) => ({ type: c.type, status: c.status, reason: c.reason, message: c.message })),
    }));
    const imports = input.imports.map((si) => {
        const namespace = si.metadata?.namespace ?? '';
        const name = si.metadata?.name ?? '';
        const sources = new Map<string, { cluster: string; endpoints: number; ready: number }>();
        for (const slice of input.slices) {
            if (slice.metadata?.namespace !== namespace || slice.metadata?.labels?.[LABEL_MCS_SERVICE_NAME] !== name) continue;
            const cluster = slice.metadata.labels[LABEL_SOURCE_CLUSTER] ?? '';
            const line = sources.get(cluster) ?? { cluster, endpoints: 0, ready: 0 };
            for (const endpoint of slice.endpoints ?? []) {
                line.endpoints++;
                if (endpoint.conditions?.ready !== false) line.ready++;
            }
            sources.set(cluster, line);
        }
        return {
            namespace,
            name,
            type: si.spec?.type ?? '',
            ips: si.spec?.ips ?? [],
            clusters: (si.status?.clusters ?? []).map((c) => c.cluster),
            sources: [...sources.values()].sort((a, b) => a.cluster.localeCompare(b.cluster)),
        };
    });
    return { exports: exports.sort(byName), imports: imports.sort(byName) };
}

/**
 * `check`: whether MCS can be served here (CRDs, the cluster's name) and what each export says.
 * `clusterName` is the ClusterProperty's value, undefined when there is none: the controller then
 * needs --cluster-name, which check cannot see.
 */
export function mcsChecks(input: { crdsInstalled: boolean; clusterName: string | undefined; report: McsReport | undefined }): CheckResult[] {
    const category = 'Multi-Cluster Services';
    const crds = { category, description: 'the ServiceExport and ServiceImport CRDs are installed' };
    if (!input.crdsInstalled) {
        return [{ ...crds, status: 'warn', detail: 'not installed: MCS is not served', hint: 'install the chart with mcs.installCRDs=true, or apply charts/mesh-endpoints/files/mcs-crds/' }];
    }
    const named = { category, description: 'this cluster has a name in the clusterset' };
    const results: CheckResult[] = [
        { ...crds, status: 'ok' },
        input.clusterName
            ? { ...named, status: 'ok', detail: `ClusterProperty cluster.clusterset.k8s.io says ${input.clusterName}` }
            : {
                  ...named,
                  status: 'warn',
                  detail: 'no ClusterProperty cluster.clusterset.k8s.io: MCS is served only if the service mirror runs with --cluster-name',
                  hint: 'create the ClusterProperty (KEP-2149) or set serviceMirror.clusterName',
              },
    ];
    for (const exp of input.report?.exports ?? []) {
        const description = `ServiceExport ${exp.namespace}/${exp.name}`;
        const cond = (type: string) => exp.conditions.find((c) => c.type === type);
        const valid = cond('Valid');
        const conflict = cond('Conflict');
        if (!valid) {
            results.push({ category, description, status: 'warn', detail: 'no conditions: the service mirror has not served it', hint: 'is the service mirror running with MCS on (--mcs) and a cluster name? see its logs' });
        } else if (valid.status !== 'True') {
            results.push({ category, description, status: 'fail', detail: `not valid (${valid.reason}): ${valid.message}`, hint: 'export a ClusterIP or headless Service of that name' });
        } else if (conflict?.status === 'True') {
            results.push({ category, description, status: 'warn', detail: `conflict (${conflict.reason}): ${conflict.message}`, hint: 'make the exporting clusters agree, or accept the oldest export\'s settings' });
        } else {
            results.push({ category, description, status: 'ok', detail: cond('Ready')?.status === 'True' ? 'exported and imported' : 'exported, import pending' });
        }
    }
    return results;
}
