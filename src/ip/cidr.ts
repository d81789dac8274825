// Address ranges: "10.20.0.0/16", "fd00:20::/64". Where a range decides who may claim an
// address (an ExternalWorkloadGroup's spec.addressRanges), parsing is as strict as the
// apiserver's CEL cidr(): the address part canonical enough for net.isIP (no "010.0.0.0"),
// the prefix length a plain decimal within the family's bits, and no host bits set
// ("10.0.0.1/8" is refused: it reads as a mistake, and CEL's cidr().masked() would hide it).
// An IPv4-mapped IPv6 address is the IPv4 address (parseIP), so "::ffff:10.0.0.1" is in
// 10.0.0.0/8 and never in an IPv6 range. Pure.
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';
import { parseIP } from './address.js';

export interface Cidr {
    /** As written, for messages. */
    text: string;
    range: [ipaddr.IPv4 | ipaddr.IPv6, number];
}

export type ParsedCidr = { ok: true; cidr: Cidr } | { ok: false; why: string };

export function parseCidr(text: string): ParsedCidr {
    const slash = typeof text === 'string' ? text.indexOf('/') : -1;
    const address = slash < 0 ? '' : text.slice(0, slash);
    const bits = slash < 0 ? '' : text.slice(slash + 1);
    if (isIP(address) === 0 || !/^\d{1,3}$/.test(bits)) return { ok: false, why: `${JSON.stringify(text)} is not a CIDR such as 10.0.0.0/8 or fd00::/8` };
    let range: [ipaddr.IPv4 | ipaddr.IPv6, number];
    try {
        range = ipaddr.parseCIDR(text);
    } catch (err) {
        return { ok: false, why: `${JSON.stringify(text)}: ${(err as Error).message}` };
    }
    const network = range[0].kind() === 'ipv4' ? ipaddr.IPv4.networkAddressFromCIDR(text) : ipaddr.IPv6.networkAddressFromCIDR(text);
    if (network.toString() !== range[0].toString()) return { ok: false, why: `${JSON.stringify(text)} has host bits set (the range is ${network.toString()}/${range[1]})` };
    return { ok: true, cidr: { text, range } };
}

/** Whether `address` (an IP literal, any spelling parseIP accepts) lies in one of `ranges`. */
export function inRanges(address: string, ranges: readonly Cidr[]): boolean {
    const parsed = parseIP(address);
    if (!parsed.ok) return false;
    const ip = ipaddr.parse(parsed.address);
    return ranges.some((cidr) => cidr.range[0].kind() === ip.kind() && ip.match(cidr.range));
}
