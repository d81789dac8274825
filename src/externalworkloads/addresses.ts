// Turning a workload's `workloadIPs` into at most one canonical address per family.
// The apiserver rejects a whole EndpointSlice for one bad address, so every address is
// checked here and the bad ones are left out with a reason, never passed on.
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';
import type { AddressType } from '../endpointslice/types.js';
import type { ExternalWorkload, ProblemDetail } from './types.js';

export interface WorkloadAddresses {
    /** The first usable address of each family, in canonical form. */
    byFamily: Partial<Record<AddressType, string>>;
    problems: ProblemDetail[];
}

type CanonicalIP = { ok: true; family: AddressType; address: string } | { ok: false; why: string };

// What Kubernetes' ValidateEndpointIP refuses (unspecified, loopback, link-local), plus all
// multicast and the IPv4 broadcast address: none of them can be a workload's address.
const UNUSABLE: ReadonlyArray<readonly [cidr: string, what: string]> = [
    ['0.0.0.0/32', 'the unspecified address'],
    ['127.0.0.0/8', 'a loopback address'],
    ['169.254.0.0/16', 'a link-local address'],
    ['224.0.0.0/4', 'a multicast address'],
    ['255.255.255.255/32', 'the broadcast address'],
    ['::/128', 'the unspecified address'],
    ['::1/128', 'a loopback address'],
    ['fe80::/10', 'a link-local address'],
    ['ff00::/8', 'a multicast address'],
];
const UNUSABLE_RANGES = UNUSABLE.map(([cidr, what]) => ({ cidr: ipaddr.parseCIDR(cidr), what }));

/**
 * Parses an address the way the apiserver will compare it: strict dotted decimal (no
 * octal-looking leading zeros), no IPv6 zone, IPv4-mapped IPv6 folded to IPv4, and IPv6
 * printed in RFC 5952 form.
 */
export function canonicalIP(text: string): CanonicalIP {
    const version = isIP(text);
    if (version === 0) return { ok: false, why: 'is not an IP address' };
    if (text.includes('%')) return { ok: false, why: 'carries an IPv6 zone, which an endpoint cannot hold' };
    if (version === 4) return { ok: true, family: 'IPv4', address: ipaddr.IPv4.parse(text).toString() };
    const v6 = ipaddr.IPv6.parse(text);
    if (v6.isIPv4MappedAddress()) return { ok: true, family: 'IPv4', address: v6.toIPv4Address().toString() };
    return { ok: true, family: 'IPv6', address: v6.toString() };
}

/** Why an endpoint cannot use this (canonical) address, or undefined when it can. */
export function unusableBecause(address: string): string | undefined {
    const parsed = ipaddr.parse(address);
    for (const { cidr, what } of UNUSABLE_RANGES) {
        if (parsed.kind() === cidr[0].kind() && parsed.match(cidr)) return what;
    }
    return undefined;
}

/**
 * The addresses a workload can publish. A workload holds one address per family (the
 * v1beta1 description says so); a second one of a family already filled is left out, so
 * the result does not depend on which consumer reads which address of an endpoint.
 */
export function workloadAddresses(workload: ExternalWorkload): WorkloadAddresses {
    const byFamily: Partial<Record<AddressType, string>> = {};
    const filledBy: Partial<Record<AddressType, string>> = {};
    const problems: ProblemDetail[] = [];
    (workload.spec.workloadIPs ?? []).forEach((entry, index) => {
        const field = `workloadIPs[${index}].ip`;
        const text = entry.ip;
        if (typeof text !== 'string' || text === '') {
            problems.push({ reason: 'InvalidIP', message: `${field} is empty; it is left out of the endpoints` });
            return;
        }
        const parsed = canonicalIP(text);
        if (!parsed.ok) {
            problems.push({ reason: 'InvalidIP', message: `${field} ${JSON.stringify(text)} ${parsed.why}; it is left out of the endpoints` });
            return;
        }
        const unusable = unusableBecause(parsed.address);
        if (unusable !== undefined) {
            problems.push({
                reason: 'UnusableIP',
                message: `${field} ${JSON.stringify(text)} is ${unusable}, which an EndpointSlice cannot hold; it is left out of the endpoints`,
            });
            return;
        }
        const first = filledBy[parsed.family];
        if (first !== undefined) {
            problems.push({
                reason: 'DuplicateIPFamily',
                message: `${field} ${JSON.stringify(text)} is a second ${parsed.family} address after ${first}; only one address per family is published, so it is left out`,
            });
            return;
        }
        byFamily[parsed.family] = parsed.address;
        filledBy[parsed.family] = `${field} ${JSON.stringify(text)}`;
    });
    return { byFamily, problems };
}
