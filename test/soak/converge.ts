// (4) Once the faults and changes stop, every Service's slices equal what the pure planners
// compute from the objects in the clusters: external workloads from the Services and
// ExternalWorkloads; mirrors (and which mirrors exist, with which ports) from the remote
// Services, the Link and the gateway name's answer. Slices are compared as multisets of
// (address type, addresses, ready, ports), never by object name.
import type { DiscoveryV1EndpointPort, V1Endpoint, V1EndpointSlice, V1Service } from '@kubernetes/client-node';
import { DEFAULT_MANAGED_BY } from '../../src/externalworkloads/controller.js';
import { desiredGroupsForService } from '../../src/externalworkloads/desired.js';
import { parseExternalWorkloads } from '../../src/externalworkloads/types.js';
import { collectionPath, EndpointSlices, ExternalWorkloads, Links, objectPath, Services } from '../../src/kube/resources.js';
import { desiredMirrorGroups, type GatewayAddress } from '../../src/servicemirror/plan/endpoints.js';
import { parseLink } from '../../src/servicemirror/api/link.js';
import { buildMirrorService, exportMode, hasReadyEndpoints, mirrorProblem } from '../../src/servicemirror/plan/mirror.js';
import { MIRROR_SLICE_MANAGED_BY, MIRRORED_SERVICE_LABEL } from '../../src/servicemirror/api/keys.js';
import { APP_NS, EW_NS, LINK, SYSTEM_NS, type SoakEnv } from './env.js';

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
    return [...(await externalWorkloadMismatches(env)), ...(await mirrorMismatches(env, gateway))];
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
