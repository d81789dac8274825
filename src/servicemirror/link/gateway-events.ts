// What a Link's users are told, as Events on the Link, when a gateway name's resolution or
// the gateway probe changes state. Pure: the controller records what these return.
import { formatDuration } from '../../time/duration.js';
import { addressesOf, type DnsPolicy, type GatewayAddress, type NameState } from '../../dns/name-state.js';

export interface LinkEvent {
    type: 'Normal' | 'Warning';
    reason: string;
    message: string;
}

/** What the controller last told about one name: its published view and error kind. */
export interface NameReport {
    addresses: GatewayAddress[];
    errorCode?: string;
    dropped: string[];
}

export function nameReport(state: NameState, published: GatewayAddress[]): NameReport {
    const report: NameReport = { addresses: published, dropped: state.dropped.map((d) => `${d.address} (${d.reason})`) };
    if (state.lastError) report.errorCode = state.lastError.code;
    return report;
}

const list = (addresses: readonly GatewayAddress[]) => addresses.map((a) => a.address).join(', ') || 'none';

/**
 * The events of one change of a gateway name, given what was reported before (undefined the
 * first time). Order: dropped answers, failure, loss of readiness, recovery, new addresses.
 */
export function gatewayNameEvents(before: NameReport | undefined, after: NameReport, state: NameState, staleWindowMs: number): LinkEvent[] {
    const name = state.name;
    const events: LinkEvent[] = [];
    const droppedNow = after.dropped.join(', ');
    if (droppedNow !== '' && droppedNow !== (before?.dropped ?? []).join(', ')) {
        events.push({
            type: 'Warning',
            reason: 'GatewayAnswerDropped',
            message: `gateway name ${name} answered ${droppedNow}: left out, Kubernetes rejects such endpoint addresses`,
        });
    }
    if (after.errorCode !== undefined && after.errorCode !== before?.errorCode) {
        const kept =
            after.addresses.length > 0
                ? `its last good addresses (${list(after.addresses)}) stay published, ready for at most ${formatDuration(staleWindowMs)}`
                : 'it has no addresses yet; mirrors get endpoints as soon as it resolves';
        events.push({
            type: 'Warning',
            reason: 'GatewayResolutionFailed',
            message: `resolving gateway name ${name} failed: ${state.lastError?.message ?? after.errorCode}; ${kept}`,
        });
    }
    const wasReady = new Set((before?.addresses ?? []).filter((a) => a.ready).map((a) => a.address));
    const lostReadiness = after.addresses.filter((a) => !a.ready && wasReady.has(a.address));
    if (lostReadiness.length > 0) {
        events.push({
            type: 'Warning',
            reason: 'GatewayAddressesNotReady',
            message: `gateway name ${name} has failed to resolve for longer than ${formatDuration(staleWindowMs)}: its addresses ${list(lostReadiness)} are not ready until it resolves again`,
        });
    }
    const recovered = before?.errorCode !== undefined && after.errorCode === undefined;
    const addressesChanged = list(before?.addresses ?? []) !== list(after.addresses);
    const ttl = state.ttlSeconds === undefined ? '' : ` (TTL ${state.ttlSeconds}s)`;
    if (recovered) {
        events.push({ type: 'Normal', reason: 'GatewayResolutionRecovered', message: `gateway name ${name} resolves again: ${list(after.addresses)}${ttl}` });
    } else if (addressesChanged && after.addresses.length > 0 && after.errorCode === undefined) {
        const reason = before === undefined || before.addresses.length === 0 ? 'GatewayResolved' : 'GatewayAddressesChanged';
        events.push({ type: 'Normal', reason, message: `gateway name ${name} resolves to ${list(after.addresses)}${ttl}` });
    }
    return events;
}

/** What was last told about each gateway name of each Link, so that every change is told once. */
export class GatewayReports {
    private readonly byLink = new Map<string, Map<string, NameReport>>();

    /** The events of a name's new state, which is remembered as told. */
    changed(link: string, state: NameState, now: number, policy: DnsPolicy): LinkEvent[] {
        let reports = this.byLink.get(link);
        if (!reports) this.byLink.set(link, (reports = new Map()));
        const report = nameReport(state, addressesOf(state, now, policy));
        const events = gatewayNameEvents(reports.get(state.name), report, state, policy.staleWindowMs);
        reports.set(state.name, report);
        return events;
    }

    /** Remembers these states as told: what a watch starts from was told by whoever learned it. */
    seed(link: string, states: ReadonlyMap<string, NameState>, now: number, policy: DnsPolicy): void {
        const reports = new Map<string, NameReport>();
        for (const state of states.values()) reports.set(state.name, nameReport(state, addressesOf(state, now, policy)));
        this.byLink.set(link, reports);
    }

    forget(link: string): void {
        this.byLink.delete(link);
    }
}

export function probeEvent(alive: boolean, detail: string, failureThreshold: number): LinkEvent {
    return alive
        ? { type: 'Normal', reason: 'GatewayAlive', message: `gateway probe succeeded (${detail}): mirror endpoints of this Link are ready again` }
        : {
              type: 'Warning',
              reason: 'GatewayDown',
              message: `gateway probe failed ${failureThreshold} times in a row (last: ${detail}): every mirror endpoint of this Link is not ready`,
          };
}

/** The gateway's every address is one probes may not go to (why): it is not probed. */
export function probeRefusedEvent(why: string): LinkEvent {
    return {
        type: 'Warning',
        reason: PROBE_REFUSED_REASON,
        message: `gateway probe not sent, the gateway is not probed and its mirror endpoints stay ready: ${why}`,
    };
}

/**
 * Where the gateway probe goes, told when it starts going somewhere new (and not with
 * --probe-address-override, the operator's own choice): the controller connects there from
 * inside the cluster, and a GatewayProbeRefused told earlier no longer holds.
 */
export function probeTargetEvent(url: string): LinkEvent {
    return { type: 'Normal', reason: PROBE_TARGET_REASON, message: `gateway probes go to ${url}` };
}

export const PROBE_REFUSED_REASON = 'GatewayProbeRefused';
export const PROBE_TARGET_REASON = 'GatewayProbeTarget';
