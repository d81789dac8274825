// Parsing of a Link's spec.gatewayAddress and the rules for which IPs may become
// endpoint addresses. Pure: no DNS, no clocks.
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';
import type { AddressType } from '../endpointslice/types.js';

export type GatewayEntry =
    | { kind: 'ip'; address: string; family: AddressType }
    | { kind: 'hostname'; name: string };

export interface ParsedGatewayAddress {
    /** Distinct entries in the order written; an entry repeated later is ignored. */
    entries: GatewayEntry[];
    /** One sentence per rejected entry; a rejected entry never becomes an address. */
    errors: string[];
}

/** Why Kubernetes would reject an IP as an endpoint address (ValidateEndpointIP), or 'invalid'. */
export type UnusableReason = 'loopback' | 'link-local' | 'multicast' | 'unspecified' | 'invalid';

export type Usability = { usable: true } | { usable: false; reason: UnusableReason };

const MAX_NAME_LENGTH = 253;
const LABEL = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;

export function parseGatewayAddress(text: string): ParsedGatewayAddress {
    const entries: GatewayEntry[] = [];
    const errors: string[] = [];
    const seen = new Set<string>();
    text.split(',').forEach((raw, index) => {
        const item = raw.trim();
        const result = parseEntry(item);
        if ('error' in result) {
            errors.push(`gateway address entry ${index + 1} ${JSON.stringify(item)}: ${result.error}`);
            return;
        }
        const key = result.kind === 'ip' ? result.address : result.name;
        if (seen.has(key)) return;
        seen.add(key);
        entries.push(result);
    });
    return { entries, errors };
}

function parseEntry(item: string): GatewayEntry | { error: string } {
    if (item === '') return { error: 'is empty' };
    if (isIP(item) !== 0) return parseIpLiteral(item);
    const nameError = dnsNameError(item);
    if (nameError !== undefined) return { error: nameError };
    return { kind: 'hostname', name: normalizeName(item) };
}

function parseIpLiteral(item: string): GatewayEntry | { error: string } {
    // net.isIP accepts zone ids ("fe80::1%eth0"); an endpoint address cannot carry one.
    if (item.includes('%')) return { error: 'is an IP address with a zone id' };
    const canonical = canonicalIp(item);
    if (canonical === undefined) return { error: 'is not a valid IP address' };
    // A literal is never resolved, so an unusable one would only make every slice write fail.
    const usability = isUsableAddress(canonical.address);
    if (!usability.usable) return { error: `is a ${usability.reason} address, which Kubernetes rejects in endpoints` };
    return { kind: 'ip', ...canonical };
}

/**
 * The canonical text of an IP (IPv4 dotted quad, IPv6 RFC 5952) and its family; IPv4-mapped
 * IPv6 becomes IPv4. net.isIP comes first because ipaddr.js alone accepts "1.2.3" and octal.
 */
export function canonicalIp(text: string): { address: string; family: AddressType } | undefined {
    if (isIP(text) === 0 || text.includes('%')) return undefined;
    const parsed = ipaddr.process(text);
    return { address: parsed.toString(), family: parsed.kind() === 'ipv4' ? 'IPv4' : 'IPv6' };
}

export function isUsableAddress(ip: string): Usability {
    if (isIP(ip) === 0) return { usable: false, reason: 'invalid' };
    const range = ipaddr.process(ip).range();
    switch (range) {
        case 'loopback':
        case 'multicast':
        case 'unspecified':
            return { usable: false, reason: range };
        case 'linkLocal':
            return { usable: false, reason: 'link-local' };
        default:
            return { usable: true };
    }
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
