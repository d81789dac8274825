// (4) Once the faults and changes stop, every Service's slices equal what the pure planners
// compute from the objects in the clusters: external workloads from the Services and
// ExternalWorkloads; mirrors (and which mirrors exist, with which ports) from the remote
// Services, the Link and the gateway name's answer; MCS (docs/mcs.md) from the ServiceExports
// and Services of both clusters: a ServiceImport of each validly exported Service, with the
// union of the exporters' ports, IPs (the derived Service's ClusterIPs) and clusters, none of
// an unexported one, and the slices of each exporting cluster (its upstream slices copied on
// the ports it serves as imported, or the gateway for the remote). Slices are compared as
// multisets of (address type, addresses, ready, ports), never by object name.
import type { DiscoveryV1EndpointPort, V1Endpoint, V1EndpointSlice, V1Service } from '@kubernetes/client-node';
import { DEFAULT_MANAGED_BY } from '../../src/externalworkloads/controller.js';
import { desiredGroupsForService } from '../../src/externalworkloads/desired.js';
import { parseExternalWorkloads } from '../../src/externalworkloads/types.js';
import { collectionPath, EndpointSlices, ExternalWorkloads, Links, objectPath, Services } from '../../src/kube/resources.js';
import { desiredMirrorGroups, type GatewayAddress } from '../../src/servicemirror/plan/endpoints.js';
import { parseLink } from '../../src/servicemirror/api/link.js';
import { buildMirrorService, exportMode, hasReadyEndpoints, mirrorProblem } from '../../src/servicemirror/plan/mirror.js';
import { MIRROR_SLICE_MANAGED_BY, MIRRORED_SERVICE_LABEL } from '../../src/servicemirror/api/keys.js';
import { APP_NS, EW_NS, LINK, LOCAL_CLUSTER, REMOTE_CLUSTER, SYSTEM_NS, type SoakEnv } from './env.js';
import {
    importPortsOf,
    MCS_MANAGED_BY,
    MCS_OWNED,
    MCS_SERVICE_NAME,
    portName,
    servedPorts,
    ServiceExportType,
    ServiceImportType,
    sortExporters,
    SOURCE_CLUSTER,
    UPSTREAM_MANAGED_BY,
    validExport,
    type ServiceExport,
    type ServiceImport,
} from './mcs.js';

type List<T> = { items: T[] };

function line(addressType: string, endpoint: V1Endpoint, ports: readonly DiscoveryV1EndpointPort[]): string {
    const portKey = ports
        .map((p) => `${p.name ?? ''}/${p.protocol ?? 'TCP'}/${p.port ?? ''}/${p.appProtocol ?? ''}`)
        .sort()
        .join(',');
    return `${addressType} ${endpoint.addresses.join(',')} ${endpoint.conditions?.ready === true ? 'ready' : 'not-ready'} [${portKey}]`;
}

function sliceLines(slices: readonly V1EndpointSlice[]): string[] {
    return slices.flatMap((s) => (s.endpoints ?? []).map((e) => line(s.addressType, e, s.ports ?? []))).sort();
}

function byService(slices: readonly V1EndpointSlice[]): Map<string, V1EndpointSlice[]> {
    const map = new Map<string, V1EndpointSlice[]>();
    for (const s of slices) {
        const name = s.metadata?.labels?.['kubernetes.io/service-name'] ?? '';
        map.set(name, [...(map.get(name) ?? []), s]);
    }
    return map;
}

/** What differs between the slices (and mirrors) in the clusters and the planners' answer: [] when converged. */
export async function mismatches(env: SoakEnv, gateway: readonly GatewayAddress[]): Promise<string[]> {
    return [...(await externalWorkloadMismatches(env)), ...(await mirrorMismatches(env, gateway)), ...(await mcsMismatches(env, gateway))];
}

function compare(what: string, actual: string[], expected: string[]): string[] {
    const a = JSON.stringify(actual);
    const e = JSON.stringify(expected);
    return a === e ? [] : [`${what}: has ${a}, planner says ${e}`];
}

async function externalWorkloadMismatches(env: SoakEnv): Promise<string[]> {
    const admin = env.local.admin;
    const services = (await admin.get<List<V1Service>>(collectionPath(Services, EW_NS))).items;
    const { workloads } = parseExternalWorkloads((await admin.get<List<unknown>>(collectionPath(ExternalWorkloads, EW_NS))).items);
    const slices = byService(
        (await admin.get<List<V1EndpointSlice>>(collectionPath(EndpointSlices, EW_NS), { labelSelector: `endpointslice.kubernetes.io/managed-by=${DEFAULT_MANAGED_BY}` })).items,
    );
    const out: string[] = [];
    for (const svc of services) {
        const desired = desiredGroupsForService(svc, workloads);
        const expected = desired.groups.flatMap((g) => g.endpoints.map((e) => line(g.addressType, e, g.ports))).sort();
        out.push(...compare(`Service ${EW_NS}/${svc.metadata!.name}`, sliceLines(slices.get(svc.metadata!.name!) ?? []), expected));
        slices.delete(svc.metadata!.name!);
    }
    for (const [service, left] of slices) out.push(`slices of the deleted Service ${EW_NS}/${service}: ${left.map((s) => s.metadata?.name).join(', ')}`);
    return out;
}

async function mirrorMismatches(env: SoakEnv, gateway: readonly GatewayAddress[]): Promise<string[]> {
    const parsed = parseLink(await env.local.admin.get(objectPath(Links, SYSTEM_NS, LINK)));
    if ('error' in parsed) return [`the Link does not parse: ${parsed.error}`];
    const link = parsed.link;
    const remotes = (await env.remote.admin.get<List<V1Service>>(collectionPath(Services, APP_NS))).items;
    const remoteSlices = byService((await env.remote.admin.get<List<V1EndpointSlice>>(collectionPath(EndpointSlices, APP_NS))).items);
    const mirrors = new Map(
        (await env.local.admin.get<List<V1Service>>(collectionPath(Services, APP_NS), { labelSelector: `${MIRRORED_SERVICE_LABEL}=true` })).items.map((m) => [m.metadata!.name!, m]),
    );
    const slices = byService(
        (await env.local.admin.get<List<V1EndpointSlice>>(collectionPath(EndpointSlices, APP_NS), { labelSelector: `endpointslice.kubernetes.io/managed-by=${MIRROR_SLICE_MANAGED_BY}` })).items,
    );
    const out: string[] = [];
    for (const remote of remotes) {
        if (exportMode(remote, link) !== 'mirror' || mirrorProblem(remote, link) !== null) continue;
        const want = buildMirrorService(remote, link);
        const name = want.metadata!.name!;
        const mirror = mirrors.get(name);
        mirrors.delete(name);
        if (!mirror) {
            out.push(`no mirror ${APP_NS}/${name} of the exported ${remote.metadata!.name}`);
            continue;
        }
        const ports = (svc: V1Service) => (svc.spec?.ports ?? []).map((p) => `${p.name ?? ''}/${p.protocol ?? 'TCP'}/${p.port}`).sort();
        out.push(...compare(`ports of the mirror ${APP_NS}/${name}`, ports(mirror), ports(want)));
        const desired = desiredMirrorGroups({
            mirror,
            link,
            gatewayAddresses: gateway,
            remoteHasReadyEndpoints: hasReadyEndpoints(remoteSlices.get(remote.metadata!.name!) ?? []),
            gatewayAlive: true,
        });
        const expected = desired.groups.flatMap((g) => g.endpoints.map((e) => line(g.addressType, e, g.ports))).sort();
        out.push(...compare(`mirror ${APP_NS}/${name}`, sliceLines(slices.get(name) ?? []), expected));
        slices.delete(name);
    }
    for (const name of mirrors.keys()) out.push(`the mirror ${APP_NS}/${name} has no exported remote Service`);
    for (const [service, left] of slices) out.push(`mirror slices of ${APP_NS}/${service}, which should not exist: ${left.map((s) => s.metadata?.name).join(', ')}`);
    return out;
}

async function mcsMismatches(env: SoakEnv, gateway: readonly GatewayAddress[]): Promise<string[]> {
    const parsed = parseLink(await env.local.admin.get(objectPath(Links, SYSTEM_NS, LINK)));
    if ('error' in parsed) return [`the Link does not parse: ${parsed.error}`];
    const link = parsed.link;
    const byName = <T extends { metadata?: { name?: string } }>(items: T[]) => new Map(items.map((i) => [i.metadata!.name!, i]));
    const [localExports, localServices, remoteExports, remoteServices, imports, localSlices, remoteSlices] = await Promise.all([
        env.local.admin.get<List<ServiceExport>>(collectionPath(ServiceExportType, APP_NS)),
        env.local.admin.get<List<V1Service>>(collectionPath(Services, APP_NS)),
        env.remote.admin.get<List<ServiceExport>>(collectionPath(ServiceExportType, APP_NS)),
        env.remote.admin.get<List<V1Service>>(collectionPath(Services, APP_NS)),
        env.local.admin.get<List<ServiceImport>>(collectionPath(ServiceImportType, APP_NS)),
        env.local.admin.get<List<V1EndpointSlice>>(collectionPath(EndpointSlices, APP_NS)),
        env.remote.admin.get<List<V1EndpointSlice>>(collectionPath(EndpointSlices, APP_NS)),
    ]);
    const clusters = [
        { cluster: LOCAL_CLUSTER, exports: byName(localExports.items), services: byName(localServices.items) },
        { cluster: REMOTE_CLUSTER, exports: byName(remoteExports.items), services: byName(remoteServices.items) },
    ];
    const importsByName = byName(imports.items);
    const derived = new Map(localServices.items.filter((s) => s.metadata?.labels?.[MCS_OWNED] !== undefined).map((s) => [s.metadata!.labels![MCS_OWNED]!, s]));
    const upstream = byService(localSlices.items.filter((s) => s.metadata?.labels?.['endpointslice.kubernetes.io/managed-by'] === UPSTREAM_MANAGED_BY));
    const remoteBy = byService(remoteSlices.items);
    // MCS slices by imported Service, then by source cluster.
    const mcsSlices = new Map<string, Map<string, V1EndpointSlice[]>>();
    for (const s of localSlices.items.filter((s) => s.metadata?.labels?.['endpointslice.kubernetes.io/managed-by'] === MCS_MANAGED_BY)) {
        const name = s.metadata?.labels?.[MCS_SERVICE_NAME] ?? '';
        const source = s.metadata?.labels?.[SOURCE_CLUSTER] ?? '';
        const sources = mcsSlices.get(name) ?? new Map<string, V1EndpointSlice[]>();
        mcsSlices.set(name, sources);
        sources.set(source, [...(sources.get(source) ?? []), s]);
    }
    const names = new Set([...clusters.flatMap((c) => [...c.exports.keys()]), ...importsByName.keys(), ...derived.keys(), ...mcsSlices.keys()]);
    const out: string[] = [];
    for (const name of [...names].sort()) {
        const what = `MCS ${APP_NS}/${name}`;
        const exporters = sortExporters(
            clusters.flatMap((c) => {
                const exp = c.exports.get(name);
                const service = c.services.get(name);
                return exp && service && validExport(exp, service) ? [{ cluster: c.cluster, export: exp, service }] : [];
            }),
        );
        const imp = importsByName.get(name);
        const derivedService = derived.get(name);
        const sources = mcsSlices.get(name) ?? new Map<string, V1EndpointSlice[]>();
        if (exporters.length === 0) {
            if (imp) out.push(`${what}: a ServiceImport (uid ${imp.metadata?.uid}), but no cluster exports it validly`);
            if (derivedService) out.push(`${what}: the derived Service ${derivedService.metadata?.name}, but no cluster exports it validly`);
            for (const [source, slices] of sources) out.push(`${what}: slices of ${source} (${slices.map((s) => s.metadata?.name).join(', ')}), but no cluster exports it validly`);
            continue;
        }
        if (!imp) {
            out.push(`${what}: no ServiceImport, exported by ${exporters.map((e) => e.cluster).join(', ')}`);
            continue;
        }
        const ports = importPortsOf(exporters);
        const portLine = (list: readonly { name?: string; protocol?: string; port?: number }[]) => list.map((p) => `${portName(p)}/${p.port}`).sort();
        out.push(...compare(`ports of the ServiceImport ${what}`, portLine(imp.spec?.ports ?? []), portLine(ports)));
        out.push(...compare(`clusters of the ServiceImport ${what}`, (imp.status?.clusters ?? []).map((c) => c.cluster).sort(), exporters.map((e) => e.cluster).sort()));
        if (imp.spec?.type !== 'ClusterSetIP') out.push(`${what}: type ${imp.spec?.type}, not ClusterSetIP (no exported Service is headless)`);
        if (!derivedService) {
            out.push(`${what}: no derived Service`);
            continue;
        }
        const clusterIPs = derivedService.spec?.clusterIPs ?? (derivedService.spec?.clusterIP ? [derivedService.spec.clusterIP] : []);
        if (clusterIPs.length === 0) out.push(`${what}: the derived Service ${derivedService.metadata?.name} has no ClusterIP`);
        out.push(...compare(`ips of the ServiceImport ${what} (the derived Service's ClusterIPs)`, [...(imp.spec?.ips ?? [])].sort(), [...clusterIPs].sort()));
        const addressTypes = (derivedService.spec?.ipFamilies ?? ['IPv4']) as ('IPv4' | 'IPv6')[];
        for (const e of exporters) {
            const served = servedPorts(e.service, ports);
            const nothingServed = served.length === 0 && (e.service.spec?.ports ?? []).length > 0;
            let expected: string[];
            if (e.cluster === LOCAL_CLUSTER) {
                const names = new Set(served.map(portName));
                expected = nothingServed
                    ? []
                    : (upstream.get(name) ?? [])
                          .filter((s) => addressTypes.includes(s.addressType as 'IPv4' | 'IPv6'))
                          .flatMap((s) => {
                              const kept = (s.ports ?? []).filter((p) => names.has(portName(p)));
                              if ((s.ports ?? []).length > 0 && kept.length === 0) return [];
                              return (s.endpoints ?? []).filter((ep) => ep.addresses.length > 0).map((ep) => line(s.addressType, ep, kept));
                          })
                          .sort();
            } else {
                const planned = desiredMirrorGroups({
                    mirror: { metadata: {}, spec: { ports: served, ipFamilies: addressTypes } },
                    link,
                    gatewayAddresses: gateway,
                    remoteHasReadyEndpoints: hasReadyEndpoints(remoteBy.get(name) ?? []),
                    gatewayAlive: true,
                });
                expected = nothingServed ? [] : planned.groups.flatMap((g) => g.endpoints.map((ep) => line(g.addressType, ep, g.ports))).sort();
            }
            out.push(...compare(`MCS slices of ${what} from ${e.cluster}`, sliceLines(sources.get(e.cluster) ?? []), expected));
            sources.delete(e.cluster);
        }
        for (const [source, slices] of sources) out.push(`${what}: slices of ${source} (${slices.map((s) => s.metadata?.name).join(', ')}), which does not export it validly`);
    }
    return out;
}

/** What MCS left in the local cluster at the end, for the report: each import with its clusters and ports, and the MCS slices. */
export async function mcsSummary(env: SoakEnv): Promise<string> {
    const imports = (await env.local.admin.get<List<ServiceImport>>(collectionPath(ServiceImportType, APP_NS))).items;
    const slices = (await env.local.admin.get<List<V1EndpointSlice>>(collectionPath(EndpointSlices, APP_NS), { labelSelector: `endpointslice.kubernetes.io/managed-by=${MCS_MANAGED_BY}` })).items;
    const each = imports
        .map((i) => `${i.metadata?.name} from ${(i.status?.clusters ?? []).map((c) => c.cluster).join('+') || 'no cluster'} [${(i.spec?.ports ?? []).map((p) => `${p.name}:${p.port}`).join(',')}] ${(i.spec?.ips ?? []).join(',')}`)
        .sort();
    return `${imports.length} ServiceImports (${each.join('; ') || 'none'}), ${slices.length} MCS slices`;
}
