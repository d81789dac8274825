// The addresses a VM claims: given, or found on its interfaces (`auto`): the first address of
// each family an endpoint may hold (src/ip: never loopback, link-local or the like).
import { networkInterfaces } from 'node:os';
import { usableEndpointIP } from '../ip/address.js';
import type { AddressType } from '../ip/family.js';

/** `--addresses`: a comma-separated list, or `auto`. */
export function claimedAddresses(flag: string): string[] {
    if (flag.trim() !== 'auto') return flag.split(',').map((a) => a.trim()).filter(Boolean);
    const byFamily = new Map<AddressType, string>();
    for (const entries of Object.values(networkInterfaces())) {
        for (const entry of entries ?? []) {
            const ip = usableEndpointIP(entry.address);
            if (ip.usable && !entry.internal && !byFamily.has(ip.family)) byFamily.set(ip.family, ip.address);
        }
    }
    return [...byFamily.values()];
}
