// What the exporting clusters agree on, and what the KEP's conflict policy makes of the rest:
// each export's validity, the winner (the oldest export: creation timestamp, then cluster
// name), the conflicts every exporting cluster reports, and the ServiceImport spec. Pure.
import type { V1Service } from '@kubernetes/client-node';
import type { ImportPort, MemberCluster, ServiceImportSpec } from './types.js';

export interface Exporter {
    cluster: string;
    created: string;
    service: V1Service;
    exportedLabels: Record<string, string>;
    exportedAnnotations: Record<string, string>;
}

/** Why an export is not valid (the Valid=False reason and message), or null. */
export function invalidExport(member: MemberCluster): { reason: string; message: string } | null {
    if (!member.export) return null;
    const service = member.service;
    if (!service) return { reason: 'NoService', message: `no Service ${member.export.metadata?.name} in namespace ${member.export.metadata?.namespace} of cluster ${member.name}` };
    if (service.spec?.type === 'ExternalName') return { reason: 'InvalidServiceType', message: 'an ExternalName Service cannot be exported' };
    return null;
}

/** The valid exports, oldest first (the first is the winner). */
export function exportersOf(members: readonly MemberCluster[]): Exporter[] {
    const exporters: Exporter[] = [];
    for (const member of members) {
        if (!member.known || !member.export || !member.service || invalidExport(member)) continue;
        exporters.push({
            cluster: member.name,
            created: timestamp(member.export.metadata?.creationTimestamp),
            service: member.service,
            exportedLabels: member.export.spec?.exportedLabels ?? {},
            exportedAnnotations: member.export.spec?.exportedAnnotations ?? {},
        });
    }
    return exporters.sort((a, b) => compare(a.created, b.created) || compare(a.cluster, b.cluster));
}

function timestamp(value: unknown): string {
    // Cached objects may hold a Date (client-node's deserialiser) or the RFC 3339 string.
    if (value instanceof Date) return value.toISOString();
    return typeof value === 'string' ? new Date(value).toISOString() : '';
}

const compare = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

export const isHeadless = (service: V1Service) => service.spec?.clusterIP === 'None';

/** The Service's fields as the apiserver defaults them, so an omitted default is no conflict. */
function sessionAffinityOf(service: V1Service): string {
    return service.spec?.sessionAffinity ?? 'None';
}
function sessionAffinityConfigOf(service: V1Service): string {
    if (sessionAffinityOf(service) !== 'ClientIP') return '';
    return String(service.spec?.sessionAffinityConfig?.clientIP?.timeoutSeconds ?? 10800);
}
const internalTrafficPolicyOf = (service: V1Service) => service.spec?.internalTrafficPolicy ?? 'Cluster';
const trafficDistributionOf = (service: V1Service) => service.spec?.trafficDistribution ?? '';

export function importPorts(service: V1Service): ImportPort[] {
    return (service.spec?.ports ?? []).map((p) => {
        const port: ImportPort = { port: p.port, protocol: p.protocol ?? 'TCP' };
        if (p.name) port.name = p.name;
        if (p.appProtocol) port.appProtocol = p.appProtocol;
        return port;
    });
}

const portKey = (p: ImportPort) => `${p.port}/${p.protocol}/${p.appProtocol ?? ''}`;
const portKeyNamed = (p: ImportPort) => `${p.name ?? ''}=${portKey(p)}`;
const sameMap = (a: Record<string, string>, b: Record<string, string>) => JSON.stringify(Object.entries(a).sort()) === JSON.stringify(Object.entries(b).sort());

export interface Conflict {
    /** The v1beta1 Conflict reason. */
    reason: string;
    message: string;
}

export interface Resolution {
    spec: Omit<ServiceImportSpec, 'ips' | 'ipFamilies'>;
    labels: Record<string, string>;
    annotations: Record<string, string>;
    conflicts: Conflict[];
    /** The winner's Service: the derived Service follows its headlessness and IP families. */
    winner: Exporter;
}

/**
 * The import of these exporters (oldest first): everything from the winner but the ports, which
 * are the union by name; a port another cluster gives a different number, protocol or app
 * protocol under the same name keeps the winner's (the older cluster's), and a port whose
 * number and protocol an older one already uses is left out (the derived Service could not
 * hold both). Port lists that differ at all are a PortConflict: the union serves ports some
 * exporting clusters do not.
 */
export function resolveImport(exporters: readonly Exporter[]): Resolution {
    const winner = exporters[0]!;
    const w = winner.service;
    const conflicts: Conflict[] = [];
    const conflict = (reason: string, what: string, cluster: string) => {
        const message = `${what} of cluster ${cluster} differs from cluster ${winner.cluster}'s, whose export is the oldest and wins`;
        if (!conflicts.some((c) => c.message === message)) conflicts.push({ reason, message });
    };
    const ports = new Map<string, ImportPort>();
    const used = new Set<string>();
    for (const exporter of exporters) {
        const s = exporter.service;
        for (const port of importPorts(s)) {
            const name = port.name ?? '';
            const held = ports.get(name);
            if (held) {
                if (portKey(held) !== portKey(port)) conflict('PortConflict', `port ${JSON.stringify(name)}`, exporter.cluster);
                continue;
            }
            const number = `${port.port}/${port.protocol}`;
            if (used.has(number)) {
                conflict('PortConflict', `port ${JSON.stringify(name)} (${number})`, exporter.cluster);
                continue;
            }
            ports.set(name, port);
            used.add(number);
        }
        if (exporter === winner) continue;
        // Ports the winner lacks, or lacks another's: the import serves their union, reported (the KEP, and the suite).
        const own = (svc: V1Service) => importPorts(svc).map(portKeyNamed).sort().join();
        if (own(s) !== own(w)) conflict('PortConflict', 'the port list', exporter.cluster);
        if (isHeadless(s) !== isHeadless(w)) conflict('TypeConflict', 'headlessness', exporter.cluster);
        if (sessionAffinityOf(s) !== sessionAffinityOf(w)) conflict('SessionAffinityConflict', 'sessionAffinity', exporter.cluster);
        else if (sessionAffinityConfigOf(s) !== sessionAffinityConfigOf(w)) conflict('SessionAffinityConfigConflict', 'sessionAffinityConfig', exporter.cluster);
        if (internalTrafficPolicyOf(s) !== internalTrafficPolicyOf(w)) conflict('InternalTrafficPolicyConflict', 'internalTrafficPolicy', exporter.cluster);
        if (trafficDistributionOf(s) !== trafficDistributionOf(w)) conflict('TrafficDistributionConflict', 'trafficDistribution', exporter.cluster);
        if (!sameMap(exporter.exportedLabels, winner.exportedLabels)) conflict('LabelsConflict', 'exportedLabels', exporter.cluster);
        if (!sameMap(exporter.exportedAnnotations, winner.exportedAnnotations)) conflict('AnnotationsConflict', 'exportedAnnotations', exporter.cluster);
    }
    const spec: Resolution['spec'] = {
        ports: [...ports.values()].sort((a, b) => compare(a.name ?? '', b.name ?? '')),
        type: isHeadless(w) ? 'Headless' : 'ClusterSetIP',
        sessionAffinity: sessionAffinityOf(w),
    };
    if (w.spec?.sessionAffinityConfig && sessionAffinityOf(w) === 'ClientIP') spec.sessionAffinityConfig = w.spec.sessionAffinityConfig;
    if (w.spec?.internalTrafficPolicy) spec.internalTrafficPolicy = w.spec.internalTrafficPolicy;
    if (w.spec?.trafficDistribution) spec.trafficDistribution = w.spec.trafficDistribution;
    return { spec, labels: { ...winner.exportedLabels }, annotations: { ...winner.exportedAnnotations }, conflicts, winner };
}
