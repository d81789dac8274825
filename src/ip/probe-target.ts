// Which addresses a health probe or a gateway probe may connect to. A probe's target comes
// from objects other people write (an ExternalWorkload's workloadIPs, a Link's
// gatewayAddress), and the controller connects from inside the cluster: without this rule,
// whoever can write one of those objects could make it reach the node's own loopback
// services or the cloud's metadata service (169.254.169.254, fd00:ec2::254), which hands out
// credentials. So these are refused unless the operator lists them in --probe-allow-cidrs;
// the operator's --probe-address-override is theirs to choose and is not checked here.
// Pure: parses and compares, no I/O.
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';
import { parseIP, REFUSAL_DESCRIPTION, type UnusableReason } from './address.js';

export type ProbeRefusal = UnusableReason | 'metadata';

/** One entry of --probe-allow-cidrs. */
export interface ProbeCidr {
    text: string;
    range: [ipaddr.IPv4 | ipaddr.IPv6, number];
}

export type ProbeTargetVerdict = { allowed: true; address: string } | { allowed: false; reason: ProbeRefusal; why: string };

/**
 * Cloud metadata services outside the link-local ranges: AWS's IPv6 IMDS endpoint (a unique
 * local address, which is otherwise a fine target) and Alibaba Cloud's (in the carrier-grade
 * NAT range). The IPv4 ones of AWS, GCP, Azure, OpenStack and Oracle are 169.254.169.254.
 */
const METADATA: readonly string[] = ['fd00:ec2::254', '100.100.100.200'];

/** ipaddr.js's range names that a probe must not reach, and the sentence for each. */
const REFUSED_RANGES: Record<string, Exclude<ProbeRefusal, 'invalid' | 'metadata'>> = {
    unspecified: 'unspecified', // 0.0.0.0/8, ::
    loopback: 'loopback', // 127.0.0.0/8, ::1
    linkLocal: 'link-local', // 169.254.0.0/16, fe80::/10
    multicast: 'multicast',
    broadcast: 'broadcast',
};

const DESCRIPTION: Record<Exclude<ProbeRefusal, 'invalid'>, string> = { ...REFUSAL_DESCRIPTION, metadata: 'a cloud metadata address' };

/** The IPv4 address a NAT64 gateway (64:ff9b::/96, RFC 6052) would connect to instead. */
const NAT64 = ipaddr.parseCIDR('64:ff9b::/96');

/** "10.0.0.0/8,fd00::/8": the parsed list, or the first bad entry. An empty text is an empty list. */
export function parseProbeAllowCidrs(text: string): { ok: true; cidrs: ProbeCidr[] } | { ok: false; error: string } {
    const cidrs: ProbeCidr[] = [];
    for (const raw of text.split(',')) {
        const item = raw.trim();
        if (item === '') continue;
        const slash = item.indexOf('/');
        const address = slash < 0 ? '' : item.slice(0, slash);
        const bits = slash < 0 ? '' : item.slice(slash + 1);
        // net.isIP first: ipaddr.js alone reads "010.0.0.0" as octal.
        if (isIP(address) === 0 || !/^\d{1,3}$/.test(bits)) return { ok: false, error: `${JSON.stringify(item)} is not a CIDR such as 10.0.0.0/8 or fd00::/8` };
        try {
            cidrs.push({ text: item, range: ipaddr.parseCIDR(item) });
        } catch (err) {
            return { ok: false, error: `${JSON.stringify(item)}: ${(err as Error).message}` };
        }
    }
    return { ok: true, cidrs };
}

/** Whether a probe may connect to `text` (an IP literal), given the operator's allowed ranges. */
export function probeTarget(text: string, allow: readonly ProbeCidr[] = []): ProbeTargetVerdict {
    const parsed = parseIP(text);
    if (!parsed.ok) return { allowed: false, reason: 'invalid', why: `${JSON.stringify(text)} ${parsed.why}` };
    const ip = ipaddr.parse(parsed.address);
    if (allow.some((cidr) => cidr.range[0].kind() === ip.kind() && ip.match(cidr.range))) return { allowed: true, address: parsed.address };
    const reason = refusalOf(ip);
    if (reason === undefined) return { allowed: true, address: parsed.address };
    return { allowed: false, reason, why: `${parsed.address} is ${DESCRIPTION[reason]}` };
}

/** The sentence for a target with no address a probe may go to: each address's reason, then the rule once. */
export function refusedTargets(verdicts: readonly ProbeTargetVerdict[]): string {
    const whys = verdicts.flatMap((v) => (v.allowed ? [] : [v.why]));
    return `${whys.join(', ')}: probes never go to loopback, link-local, unspecified, multicast or cloud metadata addresses unless --probe-allow-cidrs lists them`;
}

function refusalOf(ip: ipaddr.IPv4 | ipaddr.IPv6): Exclude<ProbeRefusal, 'invalid'> | undefined {
    if (METADATA.includes(ip.toString())) return 'metadata';
    const byRange = REFUSED_RANGES[ip.range()];
    if (byRange !== undefined) return byRange;
    if (ip.kind() === 'ipv6' && ip.match(NAT64)) {
        const embedded = ipaddr.fromByteArray((ip as ipaddr.IPv6).toByteArray().slice(12));
        return refusalOf(embedded);
    }
    return undefined;
}
