// The Multi-Cluster Services API as the soak sees it: the resources, the keys of the KEP and
// of our controller (docs/mcs.md), the clusters' names, and the Services the driver exports.
// Spelled out here, not imported from src/servicemirror/mcs/: the soak checks the documented
// behaviour, whatever shape the controller's code takes.
import type { V1Service } from '@kubernetes/client-node';
import type { ResourceType } from '../../src/kube/resources.js';
export { LOCAL_CLUSTER, REMOTE_CLUSTER } from './env.js';

export const ServiceExportType: ResourceType = { group: 'multicluster.x-k8s.io', version: 'v1beta1', plural: 'serviceexports', kind: 'ServiceExport', namespaced: true };
export const ServiceImportType: ResourceType = { group: 'multicluster.x-k8s.io', version: 'v1beta1', plural: 'serviceimports', kind: 'ServiceImport', namespaced: true };

/** endpointslice.kubernetes.io/managed-by of the derived Services' slices. */
export const MCS_MANAGED_BY = 'mcs.mesh-endpoints.io';
/** On MCS slices (the KEP's keys). */
export const MCS_SERVICE_NAME = 'multicluster.kubernetes.io/service-name';
export const SOURCE_CLUSTER = 'multicluster.kubernetes.io/source-cluster';
/** Ours, on the ServiceImports and derived Services the controller writes: the imported Service's name. */
export const MCS_OWNED = 'mcs.mesh-endpoints.io/service-import';
/** The managed-by of upstream's slices: the ones MCS copies a local Service's endpoints from. */
export const UPSTREAM_MANAGED_BY = 'endpointslice-controller.k8s.io';

/**
 * Ports of the local Services in the soak's app namespace: `http` is 80 in the remote Services
 * (driver.ts, REMOTE_PORTS) and 80 or 8080 here, so a Service of one name exported by both
 * clusters conflicts on it (the older export's number wins). No number is used under two names.
 */
export const LOCAL_PORTS = [
    [{ name: 'http', port: 80 }],
    [{ name: 'http', port: 8080 }],
    [{ name: 'http', port: 80 }, { name: 'grpc', port: 9000 }],
    [{ name: 'http', port: 8080 }, { name: 'tcp', port: 5432 }],
];
/** The upstream slice of every local Service: every port name any Service uses, the targets' numbers. */
export const LOCAL_SLICE_PORTS = [
    { name: 'http', port: 8080, protocol: 'TCP' },
    { name: 'grpc', port: 9000, protocol: 'TCP' },
    { name: 'tcp', port: 5432, protocol: 'TCP' },
];

export interface McsPort {
    name?: string;
    port: number;
    protocol?: string;
    appProtocol?: string;
}

export interface ServiceExport {
    metadata?: { name?: string; namespace?: string; uid?: string; creationTimestamp?: string | Date };
}

export interface ServiceImport {
    metadata?: { name?: string; namespace?: string; uid?: string; resourceVersion?: string; labels?: Record<string, string> };
    spec?: { type?: string; ports?: McsPort[]; ips?: string[] };
    status?: { clusters?: { cluster: string }[] };
}

/** A port as the checks compare it: name and protocol (what kube-proxy matches a slice port on). */
export const portName = (p: { name?: string; protocol?: string }) => `${p.name ?? ''}/${p.protocol ?? 'TCP'}`;

/** The ServiceExport's Service makes it valid (docs/mcs.md, Export): it exists and is not ExternalName. */
export function validExport(exp: unknown, service: V1Service | undefined): boolean {
    return exp !== undefined && service !== undefined && service.spec?.type !== 'ExternalName';
}

export interface McsExporter {
    cluster: string;
    created: string;
    service: V1Service;
}

function time(value: unknown): string {
    if (value instanceof Date) return value.toISOString();
    return typeof value === 'string' ? new Date(value).toISOString() : '';
}

/** The valid exporters oldest first: the first wins (creation timestamp, then cluster name). */
export function sortExporters(exporters: { cluster: string; export: ServiceExport; service: V1Service }[]): McsExporter[] {
    return exporters
        .map((e) => ({ cluster: e.cluster, created: time(e.export.metadata?.creationTimestamp), service: e.service }))
        .sort((a, b) => (a.created < b.created ? -1 : a.created > b.created ? 1 : a.cluster < b.cluster ? -1 : a.cluster > b.cluster ? 1 : 0));
}

/**
 * The import's ports (docs/mcs.md, the conflict policy): the union by name, a name taking the
 * oldest exporter's number, protocol and app protocol; a port whose number and protocol an
 * older one already uses under another name is left out.
 */
export function importPortsOf(exporters: readonly McsExporter[]): McsPort[] {
    const ports = new Map<string, McsPort>();
    const used = new Set<string>();
    for (const e of exporters) {
        for (const p of e.service.spec?.ports ?? []) {
            const name = p.name ?? '';
            if (ports.has(name)) continue;
            const number = `${p.port}/${p.protocol ?? 'TCP'}`;
            if (used.has(number)) continue;
            ports.set(name, { name: p.name, port: p.port, protocol: p.protocol ?? 'TCP', ...(p.appProtocol ? { appProtocol: p.appProtocol } : {}) });
            used.add(number);
        }
    }
    return [...ports.values()];
}

/** The ports of `service` the import has as they are (same name, number, protocol, app protocol): what its cluster's slices carry. */
export function servedPorts(service: V1Service, ports: readonly McsPort[]): NonNullable<V1Service['spec']>['ports'] & object {
    const imported = new Map(ports.map((p) => [p.name ?? '', p]));
    return (service.spec?.ports ?? []).filter((p) => {
        const port = imported.get(p.name ?? '');
        return port !== undefined && port.port === p.port && (port.protocol ?? 'TCP') === (p.protocol ?? 'TCP') && (port.appProtocol ?? '') === (p.appProtocol ?? '');
    });
}
