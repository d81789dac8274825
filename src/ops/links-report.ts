// What each Link serves, as `status` and `gateways` show it: the gateway names and what they
// resolved to (status.gatewayResolution, written by the service mirror), the probe state (the
// mirror's GatewayDown/GatewayAlive/GatewayProbeRefused Events on the Link: the Link status has no probe field),
// the mirrors' counts (status.mirrorSummary), and each mirror with its endpoint state: a local
// mirror Service, or a remote Service the status lists as not mirrored. Pure.
import type { V1EndpointSlice, V1Service } from '@kubernetes/client-node';
import { parseGatewayAddress } from '../dns/gateway-address.js';
import type { GatewayNameStatus } from '../dns/resolution-status.js';
import { LABEL_MANAGED_BY, LABEL_SERVICE_NAME } from '../endpointslice/slice.js';
import { parseLink, type Link, type LinkCondition, type MirrorSummary } from '../servicemirror/api/link.js';
import { CLUSTER_NAME_LABEL, linkKey, MIRROR_SLICE_MANAGED_BY, MIRRORED_SERVICE_LABEL, mirrorLinkKey } from '../servicemirror/api/keys.js';
import { PROBE_REFUSED_REASON, PROBE_TARGET_REASON } from '../servicemirror/link/gateway-events.js';
import { remoteServiceName } from '../servicemirror/plan/mirror.js';
import { MIRRORED_CONDITION, REMOTE_READABLE_CONDITION } from '../servicemirror/plan/status.js';
import { rfc3339 } from '../time/format.js';
import { compare } from './workloads-report.js';

/** The Event fields the report reads (core/v1 Event). */
export interface LinkEventObject {
    metadata?: { creationTimestamp?: string | Date; resourceVersion?: string };
    involvedObject?: { kind?: string; name?: string; uid?: string };
    reason?: string;
    message?: string;
    lastTimestamp?: string | Date | null;
    eventTime?: string | Date | null;
}

const PROBE_DOWN_REASON = 'GatewayDown';
const PROBE_ALIVE_REASON = 'GatewayAlive';

export interface ProbeState {
    /** not-probed: the Link has no probeSpec.path, or no address probes may go to (detail says which). alive with no `since`: no probe failure reported. */
    state: 'alive' | 'down' | 'not-probed';
    /** RFC 3339 time of the Event that said so. */
    since?: string;
    detail?: string;
    /** Where the mirror probes: "PATH on port PORT every PERIOD". */
    spec?: { path: string; port: number; periodMs: number; timeoutMs: number; failureThreshold: number };
}

export interface MirrorLine {
    /** "namespace/name" on the remote cluster. */
    remote: string;
    /** "namespace/name" of the local mirror Service, when it exists. */
    local?: string;
    /**
     * The Mirrored condition: as the Link status lists it, or, for a mirror Service the status
     * does not list while it lists every not-mirrored one, True. Absent: not known yet.
     */
    mirrored?: { status: string; reason: string; message: string };
    endpoints: number;
    ready: number;
}

/** The service mirror's RemoteReadable condition: can it read the remote cluster? */
export interface RemoteState {
    readable: boolean;
    reason: string;
    message: string;
    since: string;
}

export interface LinkReport {
    namespace: string;
    name: string;
    targetClusterName: string;
    /** Absent until the service mirror has written the condition. */
    remote?: RemoteState;
    /** Why the service mirror cannot serve this Link at all. */
    invalid?: string;
    gatewayPort?: number;
    /** One entry per gatewayAddress part, in spec order; a name not resolved yet has no addresses. */
    gatewayNames: GatewayNameStatus[];
    probe: ProbeState;
    /** The service mirror's counts (absent until it has written them). */
    summary?: MirrorSummary;
    mirrors: MirrorLine[];
}

export interface LinkReportInput {
    link: unknown;
    /** Local Services; the Link's mirrors are picked out here. */
    services: readonly V1Service[];
    /** Local EndpointSlices; those the service mirror manages are counted. */
    slices: readonly V1EndpointSlice[];
    /** Events of the Link's namespace. */
    events: readonly LinkEventObject[];
}

export function linkReport(input: LinkReportInput): LinkReport {
    const parsed = parseLink(input.link);
    const meta = (input.link as { metadata?: { name?: string; namespace?: string } }).metadata ?? {};
    if ('error' in parsed) {
        return { namespace: meta.namespace ?? '', name: meta.name ?? '', targetClusterName: '', invalid: parsed.error, gatewayNames: [], probe: { state: 'not-probed' }, mirrors: [] };
    }
    const link = parsed.link;
    const report: LinkReport = {
        namespace: link.metadata.namespace,
        name: link.metadata.name,
        targetClusterName: link.spec.targetClusterName,
        gatewayNames: gatewayNames(link),
        probe: probeState(link, input.events),
        mirrors: [],
    };
    const summary = mirrorSummary(input.link);
    if (summary) report.summary = summary;
    report.mirrors = mirrorLines(link, input.services, input.slices, summary);
    if (link.gateway) report.gatewayPort = link.gateway.port;
    const remote = remoteState(input.link);
    if (remote) report.remote = remote;
    return report;
}

/** Read from the object as stored: parseLink keeps only the status fields the mirror plans with. */
function mirrorSummary(link: unknown): MirrorSummary | undefined {
    const summary = (link as { status?: { mirrorSummary?: Partial<MirrorSummary> } }).status?.mirrorSummary;
    if (typeof summary?.services !== 'number') return undefined;
    const count = (n: unknown) => (typeof n === 'number' ? n : 0);
    const byReason = Array.isArray(summary.notMirroredByReason) ? summary.notMirroredByReason : [];
    return {
        services: summary.services,
        mirrored: count(summary.mirrored),
        notMirrored: count(summary.notMirrored),
        notMirroredByReason: byReason.map((r) => ({ reason: String(r?.reason ?? ''), services: count(r?.services) })),
        notListed: count(summary.notListed),
    };
}

function remoteState(link: unknown): RemoteState | undefined {
    const conditions = (link as { status?: { conditions?: Partial<LinkCondition>[] } }).status?.conditions;
    const condition = Array.isArray(conditions) ? conditions.find((c) => c?.type === REMOTE_READABLE_CONDITION) : undefined;
    if (!condition) return undefined;
    return { readable: condition.status === 'True', reason: condition.reason ?? '', message: condition.message ?? '', since: condition.lastTransitionTime ?? '' };
}

/**
 * The resolution status in spec order, entries named as src/dns names them; an entry the
 * status lacks shows with no addresses, and an entry src/dns rejects with why.
 */
function gatewayNames(link: Link): GatewayNameStatus[] {
    if (link.gateway === null) return [];
    const resolved = link.status.gatewayResolution ?? [];
    const parsed = parseGatewayAddress(link.spec.gatewayAddress);
    const names = parsed.entries.map((entry) => {
        const name = entry.kind === 'ip' ? entry.address : entry.name;
        return resolved.find((r) => r.name === name) ?? { name, addresses: [] };
    });
    return [...names, ...parsed.errors.map((error) => ({ name: '(invalid entry)', addresses: [], lastError: error }))];
}

function probeState(link: Link, events: readonly LinkEventObject[]): ProbeState {
    if (link.probe === null) return { state: 'not-probed' };
    const ofThisLink = events
        .filter((e) => e.involvedObject?.kind === 'Link' && e.involvedObject.name === link.metadata.name)
        .filter((e) => link.metadata.uid === undefined || e.involvedObject?.uid === undefined || e.involvedObject.uid === link.metadata.uid)
        .sort(byEventTime);
    const latestOf = (reasons: string[]) => ofThisLink.filter((e) => reasons.includes(e.reason ?? '')).at(-1);
    const spec = { ...link.probe };
    // A GatewayProbeTarget after a refusal means the gateway is probed again; it says nothing of liveness.
    const latestTarget = latestOf([PROBE_REFUSED_REASON, PROBE_TARGET_REASON]);
    const liveness = latestOf([PROBE_DOWN_REASON, PROBE_ALIVE_REASON]);
    if (latestTarget?.reason === PROBE_REFUSED_REASON && (!liveness || byEventTime(liveness, latestTarget) < 0)) {
        return { state: 'not-probed', since: eventTime(latestTarget), detail: latestTarget.message ?? '', spec };
    }
    // Linkerd starts every gateway alive: until a probe fails three times in a row, it is.
    if (!liveness) return { state: 'alive', spec };
    return { state: liveness.reason === PROBE_DOWN_REASON ? 'down' : 'alive', since: eventTime(liveness), detail: liveness.message ?? '', spec };
}

function eventTime(event: LinkEventObject): string {
    const t = event.lastTimestamp ?? event.eventTime ?? event.metadata?.creationTimestamp;
    return t instanceof Date ? rfc3339(t) : (t ?? '');
}

/** By time, then by resourceVersion: Event times have whole seconds, and a flap fits in one. */
function byEventTime(a: LinkEventObject, b: LinkEventObject): number {
    const byTime = compare(eventTime(a), eventTime(b));
    if (byTime !== 0) return byTime;
    const rv = (e: LinkEventObject) => (/^\d+$/.test(e.metadata?.resourceVersion ?? '') ? BigInt(e.metadata!.resourceVersion!) : 0n);
    const [ra, rb] = [rv(a), rv(b)];
    return ra < rb ? -1 : ra > rb ? 1 : 0;
}

/**
 * Every remote Service in the Link status, and every local mirror of this Link not (or no
 * longer) in it; a mirror belongs to the Link its annotation names, or, without the
 * annotation (written by an older mirror), to the Link's cluster name. The status lists only
 * the not-mirrored ones; when it lists all of them, a mirror it does not list is mirrored.
 */
function mirrorLines(link: Link, services: readonly V1Service[], slices: readonly V1EndpointSlice[], summary: MirrorSummary | undefined): MirrorLine[] {
    const mirrors = mirrorsOfLink({ ...link.metadata, targetClusterName: link.spec.targetClusterName }, services);
    const lines = new Map<string, MirrorLine>();
    for (const entry of link.status.mirrorServices ?? []) {
        const condition = entry.conditions?.find((c) => c.type === MIRRORED_CONDITION);
        const remote = `${entry.remoteRef.namespace}/${entry.remoteRef.name}`;
        const line: MirrorLine = { remote, endpoints: 0, ready: 0 };
        if (condition) line.mirrored = { status: condition.status, reason: condition.reason, message: condition.message };
        if (condition?.localRef) line.local = `${condition.localRef.namespace}/${condition.localRef.name}`;
        lines.set(remote, line);
    }
    for (const svc of mirrors) {
        const local = `${svc.metadata?.namespace ?? ''}/${svc.metadata?.name ?? ''}`;
        const remote = `${svc.metadata?.namespace ?? ''}/${remoteServiceName(svc.metadata?.name ?? '', link.spec.targetClusterName) ?? ''}`;
        const line = lines.get(remote) ?? { remote, endpoints: 0, ready: 0 };
        line.local = local;
        if (!line.mirrored && summary?.notListed === 0) line.mirrored = { status: 'True', reason: 'Mirrored', message: `mirrored as ${local}` };
        const endpoints = slices
            .filter((s) => s.metadata?.namespace === svc.metadata?.namespace && s.metadata?.labels?.[LABEL_SERVICE_NAME] === svc.metadata?.name)
            .filter((s) => s.metadata?.labels?.[LABEL_MANAGED_BY] === MIRROR_SLICE_MANAGED_BY)
            .flatMap((s) => s.endpoints ?? []);
        line.endpoints = endpoints.length;
        line.ready = endpoints.filter((e) => e.conditions?.ready !== false).length;
        lines.set(remote, line);
    }
    return [...lines.values()].sort((a, b) => compare(a.remote, b.remote));
}

/**
 * The local mirror Services of a Link: labelled as mirrors of its cluster and annotated with
 * this Link, or, without the annotation (written by an older mirror), of its cluster alone.
 * Another namespace's Link of the same cluster name keeps its mirrors.
 */
export function mirrorsOfLink(link: { namespace: string; name: string; targetClusterName: string }, services: readonly V1Service[]): V1Service[] {
    if (link.targetClusterName === '') return [];
    const linkRef = linkKey(link);
    return services.filter((svc) => {
        const labels = svc.metadata?.labels ?? {};
        if (labels[MIRRORED_SERVICE_LABEL] !== 'true' || labels[CLUSTER_NAME_LABEL] !== link.targetClusterName) return false;
        const owner = mirrorLinkKey(svc);
        return owner === undefined || owner === linkRef;
    });
}
