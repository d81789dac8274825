// Parsing of a Link's spec.gatewayAddress. Which IPs may become endpoint addresses is
// src/ip/'s to say. Pure: no DNS, no clocks.
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';
import type { AddressType } from '../endpointslice/types.js';
import { parseIP, usableEndpointIP } from '../ip/address.js';

export type { UnusableReason } from '../ip/address.js';

export type GatewayEntry =
    | { kind: 'ip'; address: string; family: AddressType }
    | { kind: 'hostname'; name: string };

export interface ParsedGatewayAddress {
    /** Distinct entries in the order written; an entry repeated later is ignored. */
    entries: GatewayEntry[];
    /** One sentence per rejected entry; a rejected entry never becomes an address. */
    errors: string[];
    /**
     * IP literals rejected because no endpoint may hold them (loopback, link-local, ...),
     * canonical: still the gateway's own, so its probe may go there if the operator allows it.
     */
    unpublishedIPs: string[];
}

const MAX_NAME_LENGTH = 253;
const LABEL = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;

export function parseGatewayAddress(text: string): ParsedGatewayAddress {
    const entries: GatewayEntry[] = [];
    const errors: string[] = [];
    const unpublishedIPs: string[] = [];
    const seen = new Set<string>();
    text.split(',').forEach((raw, index) => {
        const item = raw.trim();
        const result = parseEntry(item);
        if ('error' in result) {
            errors.push(`gateway address entry ${index + 1} ${JSON.stringify(item)}: ${result.error}`);
            const ip = isIP(item) !== 0 ? parseIP(item) : undefined;
            if (ip?.ok && !unpublishedIPs.includes(ip.address)) unpublishedIPs.push(ip.address);
            return;
        }
        const key = result.kind === 'ip' ? result.address : result.name;
        if (seen.has(key)) return;
        seen.add(key);
        entries.push(result);
    });
    return { entries, errors, unpublishedIPs };
}

function parseEntry(item: string): GatewayEntry | { error: string } {
    if (item === '') return { error: 'is empty' };
    if (isIP(item) !== 0) return parseIpLiteral(item);
    const nameError = dnsNameError(item);
    if (nameError !== undefined) return { error: nameError };
    return { kind: 'hostname', name: normalizeName(item) };
}

function parseIpLiteral(item: string): GatewayEntry | { error: string } {
    // A literal is never resolved, so an unusable one would only make every slice write fail.
    const ip = usableEndpointIP(item);
    if (!ip.usable) return { error: ip.why };
    return { kind: 'ip', address: ip.address, family: ip.family };
}

/** Lowercase without the trailing root dot, the form names are keyed and queried by. */
export function normalizeName(name: string): string {
    return name.toLowerCase().replace(/\.$/, '');
}

function dnsNameError(item: string): string | undefined {
    const name = normalizeName(item);
    if (name === '') return 'is not a DNS name';
    if (name.length > MAX_NAME_LENGTH) return `is longer than ${MAX_NAME_LENGTH} characters`;
    const labels = name.split('.');
    const bad = labels.find((label) => !LABEL.test(label));
    if (bad !== undefined) {
        return bad === ''
            ? 'has an empty DNS label'
            : `has DNS label ${JSON.stringify(bad)}, which is not an RFC 1123 label (a-z, 0-9, "-", at most 63)`;
    }
    // "1.2.3" or "010.1.2.3" would otherwise be sent to DNS; an all-numeric TLD is never a real name.
    if (/^[0-9]+$/.test(labels[labels.length - 1] ?? '')) return 'looks like an IP address but is not a valid one';
    return undefined;
}

/** Family first (IPv4 before IPv6), then numeric order of the address bytes. */
export function compareAddresses(
    a: { address: string; family: AddressType },
    b: { address: string; family: AddressType },
): number {
    if (a.family !== b.family) return a.family === 'IPv4' ? -1 : 1;
    const x = ipaddr.parse(a.address).toByteArray();
    const y = ipaddr.parse(b.address).toByteArray();
    for (let i = 0; i < Math.min(x.length, y.length); i++) {
        const d = (x[i] ?? 0) - (y[i] ?? 0);
        if (d !== 0) return d;
    }
    return x.length - y.length;
}
