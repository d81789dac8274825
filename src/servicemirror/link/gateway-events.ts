// What a Link's users are told, as Events on the Link, when a gateway name's resolution or
// the gateway probe changes state. Pure: the controller records what these return.
import { formatDuration } from '../../time/duration.js';
import type { GatewayAddress, NameState, NameView } from '../../dns/name-state.js';

export interface LinkEvent {
    type: 'Normal' | 'Warning';
    reason: string;
    message: string;
}

const list = (addresses: readonly GatewayAddress[]) => addresses.map((a) => a.address).join(', ') || 'none';

/**
 * The events of one change of a gateway name's view (GatewayWatcher's onChange). Order:
 * dropped answers, failure, loss of readiness, recovery, new addresses.
 */
export function gatewayNameEvents(before: NameView, after: NameView, state: NameState, staleWindowMs: number): LinkEvent[] {
    const name = state.name;
    const events: LinkEvent[] = [];
    const droppedNow = after.dropped.join(', ');
    if (droppedNow !== '' && droppedNow !== before.dropped.join(', ')) {
        events.push({
            type: 'Warning',
            reason: 'GatewayAnswerDropped',
            message: `gateway name ${name} answered ${droppedNow}: left out, Kubernetes rejects such endpoint addresses`,
        });
    }
    if (after.errorCode !== undefined && after.errorCode !== before.errorCode) {
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
    const wasReady = new Set(before.addresses.filter((a) => a.ready).map((a) => a.address));
    const lostReadiness = after.addresses.filter((a) => !a.ready && wasReady.has(a.address));
    if (lostReadiness.length > 0) {
        events.push({
            type: 'Warning',
            reason: 'GatewayAddressesNotReady',
            message: `gateway name ${name} has failed to resolve for longer than ${formatDuration(staleWindowMs)}: its addresses ${list(lostReadiness)} are not ready until it resolves again`,
        });
    }
    const recovered = before.errorCode !== undefined && after.errorCode === undefined;
    const addressesChanged = list(before.addresses) !== list(after.addresses);
    const ttl = state.ttlSeconds === undefined ? '' : ` (TTL ${state.ttlSeconds}s)`;
    if (recovered) {
        events.push({ type: 'Normal', reason: 'GatewayResolutionRecovered', message: `gateway name ${name} resolves again: ${list(after.addresses)}${ttl}` });
    } else if (addressesChanged && after.addresses.length > 0 && after.errorCode === undefined) {
        const reason = before.addresses.length === 0 ? 'GatewayResolved' : 'GatewayAddressesChanged';
        events.push({ type: 'Normal', reason, message: `gateway name ${name} resolves to ${list(after.addresses)}${ttl}` });
    }
    return events;
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
