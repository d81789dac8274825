// Converges a headless mirror (--enable-headless-services): the headless Service
// `<svc>-<cluster>`, one endpoint mirror `<hostname>-<cluster>` per remote hostname with its
// slices at the gateway, endpoint mirrors of hostnames gone deleted, then the headless
// mirror's slices carrying the hostnames at the endpoint mirrors' ClusterIPs. Decisions are
// headless.ts's; the writes go through the same calls as an ordinary mirror's (MirrorWrites).
import type { V1EndpointSlice, V1Service } from '@kubernetes/client-node';
import type { GatewayAddress, MirrorGroups } from '../plan/endpoints.js';
import { desiredMirrorGroups, mirrorAddressTypes } from '../plan/endpoints.js';
import { desiredEndpointMirrors, hasValidPorts, headlessMirrorGroups, isEndpointMirrorOf } from '../plan/headless.js';
import { slicePortsProblems } from '../../endpointslice/validate.js';
import type { MirrorWarning } from '../plan/status.js';
import { linkKey, mirrorOwnerProblem, type OwnerCheck } from '../plan/mirror.js';
import { LINK_ANNOTATION } from '../api/keys.js';
import type { Link } from '../api/link.js';
import type { AddressType } from '../../endpointslice/types.js';

/** The writes a mirror sync makes; the controller's MirrorSync provides them. */
export interface MirrorWrites {
    /** Creates, updates or recreates a Service; `owner` says whether an existing one may be changed (planMirrorService). */
    ensureService(namespace: string, name: string, desired: V1Service, owner: OwnerCheck): Promise<EnsuredService>;
    /** Plans and writes the slices of a stored Service. */
    applySlices(service: V1Service, groups: MirrorGroups): Promise<void>;
    /** Deletes a mirror's slices, then the Service (only if labelled with this cluster). */
    deleteMirror(namespace: string, name: string, cluster: string, known?: V1Service, owner?: OwnerCheck, link?: string): Promise<void>;
    /** Local Services of a namespace labelled as endpoint mirrors of `headlessName`, from the cache. */
    endpointMirrorsOf(namespace: string, headlessName: string): V1Service[];
}

/** The stored Service, or why there is none: a Service of that name that is not ours is `NotOwned`. */
export type EnsuredService = { service: V1Service } | { problem: string; reason: 'MissingNamespace' | 'NotOwned' | 'Error' };

export interface HeadlessSyncInput {
    link: Link;
    remote: V1Service;
    remoteSlices: readonly V1EndpointSlice[];
    /** The stored headless mirror. */
    mirror: V1Service;
    gatewayAddresses: (families: readonly AddressType[]) => GatewayAddress[];
    gatewayAlive: boolean;
}

/** Returns the hostnames left out, and why (for the Link status message), and the endpoint mirror names taken by Services not ours. */
export async function syncHeadlessMirror(writes: MirrorWrites, input: HeadlessSyncInput): Promise<{ problems: string[]; warnings: MirrorWarning[] }> {
    const { link, remote, mirror } = input;
    const namespace = mirror.metadata!.namespace!;
    const cluster = link.spec.targetClusterName;
    const plan = desiredEndpointMirrors(remote, link, input.remoteSlices);
    const problems = [...plan.problems];
    // A remote slice whose ports ours could not hold gives no hostname (headless.ts): said, naming it.
    const warnings: MirrorWarning[] = input.remoteSlices
        .filter((slice) => !hasValidPorts(slice))
        .map((slice) => ({ reason: 'RemoteEndpointsRefused', message: `remote EndpointSlice ${slice.metadata?.namespace}/${slice.metadata?.name}: left out, its ports could not be those of a slice (${slicePortsProblems(slice.ports ?? [])[0]})` }));
    const stored = new Map<string, V1Service>();
    for (const want of plan.mirrors) {
        const name = want.service.metadata!.name!;
        const ensured = await writes.ensureService(namespace, name, want.service, (svc) => mirrorOwnerProblem(svc, link, mirror.metadata!.name!));
        if ('problem' in ensured) {
            problems.push(`hostname ${JSON.stringify(want.hostname)}: ${ensured.problem}`);
            if (ensured.reason === 'NotOwned') warnings.push({ reason: 'NotOwned', message: `hostname ${JSON.stringify(want.hostname)} has no endpoint mirror: ${ensured.problem}` });
            continue;
        }
        stored.set(want.hostname, ensured.service);
        const groups = desiredMirrorGroups({
            mirror: ensured.service,
            link,
            gatewayAddresses: input.gatewayAddresses(mirrorAddressTypes(ensured.service)),
            remoteHasReadyEndpoints: want.ready,
            gatewayAlive: input.gatewayAlive,
        });
        await writes.applySlices(ensured.service, groups);
    }
    await deleteEndpointMirrors(writes, namespace, mirror.metadata!.name!, cluster, new Set([...stored.values()].map((s) => s.metadata!.name!)), linkKey(link));
    await writes.applySlices(mirror, headlessMirrorGroups({ mirror, link, remoteSlices: input.remoteSlices, endpointMirrors: stored }));
    return { problems, warnings };
}

/**
 * Deletes the endpoint mirrors of headless mirror `headlessName` except those in `keep`, and
 * any that names a Link other than `link` (the headless mirror's, when known): another Link's.
 */
export async function deleteEndpointMirrors(
    writes: MirrorWrites,
    namespace: string,
    headlessName: string,
    cluster: string,
    keep: ReadonlySet<string> = new Set(),
    link?: string,
): Promise<void> {
    for (const svc of writes.endpointMirrorsOf(namespace, headlessName)) {
        if (keep.has(svc.metadata!.name!) || !isEndpointMirrorOf(svc, headlessName, cluster)) continue;
        const owner = svc.metadata?.annotations?.[LINK_ANNOTATION];
        if (link !== undefined && owner !== undefined && owner !== link) continue;
        await writes.deleteMirror(namespace, svc.metadata!.name!, cluster, svc);
    }
}
