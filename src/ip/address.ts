// src/ip/: the one place that decides what an IP address is, how it is written, and which
// IPs an EndpointSlice may hold. Every adapter (external workloads, the gateway DNS filter,
// the service mirror) and the slice writer's last check ask here. Pure: no DNS, no I/O.
//
// The rules are Kubernetes v1.35.4's, read from its source:
// - k8s.io/kubernetes pkg/apis/discovery/validation/validation.go, validateEndpoints: an
//   IPv4 slice's address passes apivalidation.IsValidIPForLegacyField, then
//   netutils.IsIPv4String, then ValidateEndpointIP; an IPv6 slice's address passes
//   validation.IsValidIP (strict, canonical form), then netutils.IsIPv6String, then
//   ValidateEndpointIP.
// - k8s.io/apimachinery pkg/util/validation/ip.go, parseIP / IsValidIP /
//   IsValidIPForLegacyField: netutils.ParseIPSloppy must parse it (no zone id); "strict"
//   also wants netip.ParseAddr to parse it (no leading zeros) and refuses IPv4-mapped IPv6;
//   IsValidIP also wants the text to equal net.IP.String() (RFC 5952 for IPv6).
// - For IPv4 slices strictness follows the StrictIPCIDRValidation feature gate, which is
//   alpha and off by default in v1.35 (pkg/features/kube_features.go): such an apiserver
//   still accepts "010.1.2.3" and "::ffff:1.2.3.4" there. We always apply the strict rule,
//   so what we write is accepted with the gate on or off.
// - k8s.io/kubernetes pkg/apis/core/validation/validation.go, ValidateEndpointIP: not
//   unspecified, loopback, link-local unicast or link-local multicast, in Go's net.IP
//   sense (IsUnspecified, IsLoopback, IsLinkLocalUnicast, IsLinkLocalMulticast). It lets
//   other multicast through ("probably a bug", says its comment).
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';
import type { AddressType } from './family.js';

export interface CanonicalIP {
    /** Dotted decimal for IPv4; RFC 5952 (Go's net.IP.String) for IPv6. */
    address: string;
    family: AddressType;
}

export type ParsedIP = ({ ok: true } & CanonicalIP) | { ok: false; why: string };

/**
 * Why an address can never be an endpoint: 'invalid' (not an IP), the apiserver's
 * ValidateEndpointIP classes, and two of our own (see usableEndpointIP).
 */
export type UnusableReason = 'invalid' | 'unspecified' | 'loopback' | 'link-local' | 'multicast' | 'broadcast';

type Refusal = Exclude<UnusableReason, 'invalid'>;

export type EndpointIP = ({ usable: true } & CanonicalIP) | { usable: false; reason: UnusableReason; why: string };

/**
 * The canonical form of an IP literal, or why it is none. net.isIP comes first because it is
 * as strict as Go's netip.ParseAddr (no leading zeros, no "1.2.3"), which ipaddr.js alone is
 * not (it reads "010.1.2.3" as octal). A zone id ("fe80::1%eth0") is refused: ParseIPSloppy
 * refuses it. IPv4-mapped IPv6 ("::ffff:1.2.3.4") means the IPv4 address and becomes it.
 */
export function parseIP(text: string): ParsedIP {
    if (typeof text !== 'string') return { ok: false, why: 'is not a string' };
    if (canonicalIPv4Bytes(text) !== undefined) return { ok: true, family: 'IPv4', address: text };
    const version = isIP(text);
    if (version === 0) return { ok: false, why: 'is not an IP address' };
    if (text.includes('%')) return { ok: false, why: 'carries an IPv6 zone id, which an endpoint cannot hold' };
    if (version === 4) return { ok: true, family: 'IPv4', address: text };
    const v6 = ipaddr.IPv6.parse(withHexTail(text));
    if (v6.isIPv4MappedAddress()) return { ok: true, family: 'IPv4', address: v6.toIPv4Address().toString() };
    return { ok: true, family: 'IPv6', address: v6.toString() };
}

/**
 * "::1.2.3.4" written as "::102:304". ipaddr.js reads any "::a.b.c.d" as IPv4-mapped
 * ("::ffff:a.b.c.d"), while Go (and RFC 4291) read it as the IPv6 address ::0102:0304.
 */
function withHexTail(text: string): string {
    const tail = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
    if (!tail) return text;
    const [a, b, c, d] = tail.slice(1).map(Number) as [number, number, number, number];
    const hex = (hi: number, lo: number) => ((hi << 8) | lo).toString(16);
    return `${text.slice(0, tail.index)}${hex(a, b)}:${hex(c, d)}`;
}

/**
 * The 4 bytes of a canonical dotted-decimal IPv4 address (what net.isIP calls IPv4: four
 * decimal octets of 0 to 255 without leading zeros), read in one pass; undefined for any other
 * text. Every address of every slice we write is checked, and most are IPv4: this spares them
 * net.isIP's regular expression, a split and four Number() calls.
 */
export function canonicalIPv4Bytes(text: string): number[] | undefined {
    const bytes: number[] = [];
    let value = 0;
    let digits = 0;
    for (let i = 0; i <= text.length; i++) {
        const c = i < text.length ? text.charCodeAt(i) : 46; // the end reads as a final "."
        if (c === 46) {
            if (digits === 0 || bytes.length === 4) return undefined;
            bytes.push(value);
            value = 0;
            digits = 0;
        } else if (c >= 48 && c <= 57) {
            if (digits > 0 && value === 0) return undefined; // a leading zero
            value = value * 10 + (c - 48);
            if (++digits > 3 || value > 255) return undefined;
        } else return undefined;
    }
    return bytes.length === 4 ? bytes : undefined;
}

/** The address as 4 or 16 bytes, as Go's net.IP.To4 / To16 would hold it. */
function bytesOf(ip: CanonicalIP): number[] {
    return (ip.family === 'IPv4' && canonicalIPv4Bytes(ip.address)) || ipaddr.parse(ip.address).toByteArray();
}

/** ValidateEndpointIP (pkg/apis/core/validation/validation.go) on a canonical address. */
function apiserverRefusal(ip: CanonicalIP, b: number[]): Exclude<Refusal, 'broadcast'> | undefined {
    if (ip.family === 'IPv4') {
        if (b.every((x) => x === 0)) return 'unspecified'; // net.IP.IsUnspecified: 0.0.0.0
        if (b[0] === 127) return 'loopback'; // IsLoopback: 127.0.0.0/8
        if (b[0] === 169 && b[1] === 254) return 'link-local'; // IsLinkLocalUnicast: 169.254.0.0/16
        if (b[0] === 224 && b[1] === 0 && b[2] === 0) return 'multicast'; // IsLinkLocalMulticast: 224.0.0.0/24
        return undefined;
    }
    if (b.every((x) => x === 0)) return 'unspecified'; // ::
    if (b.slice(0, 15).every((x) => x === 0) && b[15] === 1) return 'loopback'; // ::1
    if (b[0] === 0xfe && ((b[1] ?? 0) & 0xc0) === 0x80) return 'link-local'; // fe80::/10
    if (b[0] === 0xff && ((b[1] ?? 0) & 0x0f) === 0x02) return 'multicast'; // ffX2::/16, any flags
    return undefined;
}

/**
 * Ours, beyond the apiserver: no multicast at all (224.0.0.0/4, ff00::/8), not the IPv4
 * limited broadcast, nor 0.0.0.0/8 ("this network"). None can be the destination of a
 * connection to a workload; publishing one would only send clients nowhere.
 */
function policyRefusal(ip: CanonicalIP, b: number[]): Refusal | undefined {
    if (ip.family === 'IPv4') {
        if (b[0] === 0) return 'unspecified';
        if ((b[0] ?? 0) >= 224 && (b[0] ?? 0) <= 239) return 'multicast';
        if (b.every((x) => x === 255)) return 'broadcast';
        return undefined;
    }
    return b[0] === 0xff ? 'multicast' : undefined;
}

/** Each refusal in a sentence (src/ip/probe-target.ts adds its own). */
export const REFUSAL_DESCRIPTION: Record<Refusal, string> = {
    unspecified: 'an unspecified address',
    loopback: 'a loopback address',
    'link-local': 'a link-local address',
    multicast: 'a multicast address',
    broadcast: 'the broadcast address',
};

/**
 * What every adapter asks of an address it wants to publish: its canonical form when an
 * endpoint can hold it (the apiserver's rules and ours), else the reason and a sentence.
 */
export function usableEndpointIP(text: string): EndpointIP {
    const parsed = parseIP(text);
    if (!parsed.ok) return { usable: false, reason: 'invalid', why: parsed.why };
    const ip: CanonicalIP = { address: parsed.address, family: parsed.family };
    const bytes = bytesOf(ip);
    const reason = apiserverRefusal(ip, bytes) ?? policyRefusal(ip, bytes);
    if (reason !== undefined) return { usable: false, reason, why: `is ${REFUSAL_DESCRIPTION[reason]}, which cannot be an endpoint` };
    return { usable: true, ...ip };
}

/** What sliceAddressProblems returns for an accepted address: one array for all of them. */
const ACCEPTED: readonly string[] = Object.freeze([]);

/**
 * Exactly what the apiserver says of one address of a slice of this type (validateEndpoints'
 * IPv4 and IPv6 branches, strict): empty when it accepts it. The writer's last check.
 */
export function sliceAddressProblems(address: string, addressType: AddressType): readonly string[] {
    const v4 = addressType === 'IPv4' && typeof address === 'string' ? canonicalIPv4Bytes(address) : undefined;
    if (v4 !== undefined) {
        // Canonical IPv4 in an IPv4 slice, the common case: only ValidateEndpointIP is left to ask.
        const refusal = apiserverRefusal({ family: 'IPv4', address }, v4);
        return refusal === undefined ? ACCEPTED : [`${JSON.stringify(address)} may not be ${REFUSAL_DESCRIPTION[refusal]}`];
    }
    const parsed = parseIP(address);
    if (!parsed.ok) return [`${JSON.stringify(address)} ${parsed.why}`];
    if (isIP(address) === 6 && parsed.family === 'IPv4') return [`${JSON.stringify(address)} must not be an IPv4-mapped IPv6 address`];
    if (parsed.family !== addressType) return [`${JSON.stringify(address)} must be an ${addressType} address`];
    const problems: string[] = [];
    if (parsed.address !== address) problems.push(`${JSON.stringify(address)} must be in canonical form (${JSON.stringify(parsed.address)})`);
    const refusal = apiserverRefusal(parsed, bytesOf(parsed));
    if (refusal !== undefined) problems.push(`${JSON.stringify(address)} may not be ${REFUSAL_DESCRIPTION[refusal]}`);
    return problems;
}
