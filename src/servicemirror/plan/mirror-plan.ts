// planMirror: what one sync of one remote Service's mirror will do, decided before any write
// from what the caches hold (the Link, the remote Service and slices, the local Service under
// the mirror's name). write/mirror-sync.ts applies it. The mirror's slices are planned after
// the Service is written (desiredMirrorGroups, then planSlices): they need its uid and the IP
// families the local apiserver gave it.
import type { V1EndpointSlice, V1Service } from '@kubernetes/client-node';
import type { Link } from '../api/link.js';
import { buildHeadlessMirrorService, mirrorsAsHeadless } from './headless.js';
import {
    buildMirrorService,
    exportMode,
    mirrorOwnerProblem,
    mirrorProblem,
    mirrorServiceName,
    planMirrorService,
    remoteEndpointWarnings,
    type OwnerCheck,
    type ServicePlan,
} from './mirror.js';
import type { MirrorWarning } from './status.js';

export interface MirrorPlanInput {
    link: Link;
    /** The remote Service's namespace and name (the mirror's namespace is the same). */
    namespace: string;
    remoteName: string;
    /** The remote Service as the Link's cache holds it; undefined when it is not there. */
    remote: V1Service | undefined;
    /** The remote Service's EndpointSlices. */
    remoteSlices: readonly V1EndpointSlice[];
    /** Whether the Link's --max-mirrors-per-link admits this export. */
    admitted: boolean;
    /** The local Service stored under a name, as the cache holds it. */
    stored: (name: string) => V1Service | undefined;
    /** Linkerd's --enable-headless-services. */
    enableHeadlessServices: boolean;
}

export type MirrorPlan = (
    /** Not exported and no mirror could exist under its name: nothing to do or say. */
    | { action: 'none' }
    /** Exported, but no Service may have the mirror's name: nothing to delete, `refused` is told. */
    | { action: 'refuse'; refused: string }
    /**
     * No mirror: this Link's mirror under `name` (slices first, then its endpoint mirrors and
     * the Service) is deleted; `refused`, when set, is why, for the Link status.
     */
    | { action: 'delete'; name: string; refused?: string }
    /** The mirror `desired` under `name`; `service` is what that asks of the Service stored there now. */
    | { action: 'mirror'; name: string; mode: 'mirror' | 'remote-discovery'; headless: boolean; desired: V1Service; service: ServicePlan }
) & {
    /** Remote addresses no slice will hold, told whatever becomes of the mirror. */
    warnings: MirrorWarning[];
    /** Which local Services are this Link's mirror (never another Link's, nor an endpoint mirror). */
    owner: OwnerCheck;
};

export function planMirror(input: MirrorPlanInput): MirrorPlan {
    const { link, remote } = input;
    const mode = remote ? exportMode(remote, link) : 'none';
    const owner: OwnerCheck = (svc) => mirrorOwnerProblem(svc, link);
    const warnings: MirrorWarning[] =
        mode === 'none' ? [] : remoteEndpointWarnings(input.remoteSlices).map((message) => ({ reason: 'RemoteEndpointsRefused', message }));
    const named = mirrorServiceName(input.remoteName, link.spec.targetClusterName);
    if ('error' in named) return mode === 'none' ? { action: 'none', warnings, owner } : { action: 'refuse', refused: named.error, warnings, owner };
    const name = named.name;
    if (mode === 'none') return { action: 'delete', name, warnings, owner };
    const problem = mirrorProblem(remote!, link);
    if (problem !== null) return { action: 'delete', name, refused: problem, warnings, owner };
    // Past --max-mirrors-per-link the youngest exports are not mirrored, nor listed one by one
    // (there may be 100 000): the Link's MirrorLimitReached condition counts them.
    if (!input.admitted) return { action: 'delete', name, warnings, owner };
    const existing = input.stored(name);
    const ours = existing && owner(existing) === null ? existing : undefined;
    const headless = input.enableHeadlessServices && mode === 'mirror' && mirrorsAsHeadless(remote!, input.remoteSlices, ours);
    const desired = headless ? buildHeadlessMirrorService(remote!, link) : buildMirrorService(remote!, link);
    return { action: 'mirror', name, mode, headless, desired, service: planMirrorService(existing, desired, owner), warnings, owner };
}
