// The addresses a mirror Service's slices get from its Link's gateway: IP literals as
// written, plus every hostname's current answer, restricted to the Service's families.
// Pure: the name states come from the watcher.
import type { AddressType } from '../endpointslice/types.js';
import { compareAddresses, type GatewayEntry } from './gateway-address.js';
import { addressesOf, type DnsPolicy, type GatewayAddress, type NameState } from './name-state.js';

/**
 * Sorted (IPv4 first, then numerically), one entry per address. An address reached through
 * several entries is ready when any of them is: a fresh answer outweighs a stale one.
 * A hostname with no state yet (never resolved) contributes nothing, never its own text.
 */
export function mirrorGatewayAddresses(
    entries: readonly GatewayEntry[],
    states: ReadonlyMap<string, NameState>,
    families: readonly AddressType[],
    now: number,
    policy: DnsPolicy,
): GatewayAddress[] {
    const byAddress = new Map<string, GatewayAddress>();
    const add = (candidate: GatewayAddress) => {
        if (!families.includes(candidate.family)) return;
        const known = byAddress.get(candidate.address);
        byAddress.set(candidate.address, known ? { ...known, ready: known.ready || candidate.ready } : candidate);
    };
    for (const entry of entries) {
        if (entry.kind === 'ip') {
            add({ address: entry.address, family: entry.family, ready: true });
            continue;
        }
        const state = states.get(entry.name);
        if (state !== undefined) addressesOf(state, now, policy).forEach(add);
    }
    return [...byAddress.values()].sort(compareAddresses);
}
