// A test oracle: Kubernetes v1.35.4's EndpointSlice validation written out a second time,
// straight from the Go source and on purpose without src/ (no src/ip, no src/endpointslice,
// no net.isIP, no ipaddr.js), so that the writer's check and this one can only agree by both
// being right. Sources, in k8s.io/kubernetes@v1.35.4 unless said:
//   pkg/apis/discovery/validation/validation.go  ValidateEndpointSlice, validateEndpoints,
//                                                validatePorts, validateAddressType, validateHints
//   pkg/apis/core/validation/validation.go       ValidateEndpointIP, IsValidIPForLegacyField,
//                                                ValidateDNS1123Label, ValidateQualifiedName
//   apimachinery pkg/api/validation/objectmeta.go, generic.go; pkg/util/validation/ip.go,
//   validation.go; pkg/api/validate/content/kube.go, dns.go; k8s.io/utils/net ParseIPSloppy
//   (Go 1.16's net.ParseIP, which allows leading zeros); Go's net.IP methods.
import type { V1EndpointSlice } from '@kubernetes/client-node';

export interface OracleOptions {
    /** The StrictIPCIDRValidation feature gate: alpha, off by default in v1.35. */
    strictIP: boolean;
}

// ---- Go's IP parsing -------------------------------------------------------------------

type Bytes = number[];
const V4_IN_V6 = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff];

/** Go 1.16 parseIPv4: four dot-separated decimal fields ≤ 255, leading zeros allowed when sloppy. */
function parseV4(s: string, sloppy: boolean): Bytes | null {
    const fields = s.split('.');
    if (fields.length !== 4) return null;
    const out: Bytes = [];
    for (const f of fields) {
        if (!/^[0-9]+$/.test(f)) return null;
        if (!sloppy && f.length > 1 && f[0] === '0') return null;
        const n = Number.parseInt(f, 10);
        if (n > 255) return null;
        out.push(n);
    }
    return out;
}

/** parseIPv6 (Go): hex groups (any length ≤ 0xffff when sloppy, 1–4 digits in netip), one "::", an IPv4 tail. */
function parseV6(s: string, sloppy: boolean): Bytes | null {
    if (s.includes('%')) return null; // ParseIPSloppy has no zones
    const halves = s.split('::');
    if (halves.length > 2) return null;
    const groupsOf = (part: string): number[] | null => {
        if (part === '') return [];
        const items = part.split(':');
        const out: number[] = [];
        for (let i = 0; i < items.length; i++) {
            const item = items[i]!;
            if (i === items.length - 1 && item.includes('.')) {
                const v4 = parseV4(item, sloppy);
                if (!v4) return null;
                out.push((v4[0]! << 8) | v4[1]!, (v4[2]! << 8) | v4[3]!);
                continue;
            }
            if (!/^[0-9a-fA-F]+$/.test(item) || (!sloppy && item.length > 4)) return null;
            const n = Number.parseInt(item, 16);
            if (n > 0xffff) return null;
            out.push(n);
        }
        return out;
    };
    const head = groupsOf(halves[0]!);
    const tail = halves.length === 2 ? groupsOf(halves[1]!) : [];
    if (!head || !tail) return null;
    // An IPv4 tail only at the very end of the text.
    if (halves.length === 2 && halves[0]!.includes('.')) return null;
    let groups: number[];
    if (halves.length === 2) {
        const missing = 8 - head.length - tail.length;
        if (missing < 1) return null;
        groups = [...head, ...Array<number>(missing).fill(0), ...tail];
    } else groups = head;
    if (groups.length !== 8) return null;
    return groups.flatMap((g) => [g >> 8, g & 0xff]);
}

/** 16 bytes, as net.IP holds any parsed address; null when Go would not parse it. */
function parseGoIP(s: string, sloppy: boolean): Bytes | null {
    if (s.includes(':')) return parseV6(s, sloppy);
    const v4 = parseV4(s, sloppy);
    return v4 ? [...V4_IN_V6, ...v4] : null;
}

const isMapped = (ip: Bytes) => V4_IN_V6.every((b, i) => ip[i] === b);
const to4 = (ip: Bytes): Bytes | null => (isMapped(ip) ? ip.slice(12) : null);

/** net.IP.String() for a 16-byte address: dotted for IPv4, RFC 5952 otherwise. */
function goString(ip: Bytes): string {
    const v4 = to4(ip);
    if (v4) return v4.join('.');
    const groups = Array.from({ length: 8 }, (_, i) => (ip[2 * i]! << 8) | ip[2 * i + 1]!);
    let bestStart = -1;
    let bestLen = 0;
    for (let i = 0; i < 8; ) {
        if (groups[i] !== 0) {
            i++;
            continue;
        }
        let j = i;
        while (j < 8 && groups[j] === 0) j++;
        if (j - i > bestLen && j - i >= 2) {
            bestStart = i;
            bestLen = j - i;
        }
        i = j;
    }
    const hex = (gs: number[]) => gs.map((g) => g.toString(16)).join(':');
    if (bestStart < 0) return hex(groups);
    return `${hex(groups.slice(0, bestStart))}::${hex(groups.slice(bestStart + bestLen))}`;
}

/** apimachinery ip.go parseIP: sloppy parse, then (strict) netip's rules: no leading 0s, not 4-in-6. */
function ipErrors(value: string, strict: boolean): { ip: Bytes | null; errors: string[] } {
    const ip = parseGoIP(value, true);
    if (!ip) return { ip, errors: ['must be a valid IP address'] };
    const errors: string[] = [];
    if (strict) {
        if (!parseGoIP(value, false)) errors.push('must not have leading 0s');
        if (value.includes(':') && isMapped(ip)) errors.push('must not be an IPv4-mapped IPv6 address');
    }
    return { ip, errors };
}

/** ValidateEndpointIP, with Go's IsUnspecified, IsLoopback, IsLinkLocalUnicast, IsLinkLocalMulticast. */
function endpointIPErrors(ip: Bytes): string[] {
    const v4 = to4(ip);
    const errors: string[] = [];
    if (v4) {
        if (v4.every((b) => b === 0)) errors.push('may not be unspecified');
        if (v4[0] === 127) errors.push('may not be in the loopback range');
        if (v4[0] === 169 && v4[1] === 254) errors.push('may not be in the link-local range');
        if (v4[0] === 224 && v4[1] === 0 && v4[2] === 0) errors.push('may not be in the link-local multicast range');
        return errors;
    }
    if (ip.every((b) => b === 0)) errors.push('may not be unspecified');
    if (ip.slice(0, 15).every((b) => b === 0) && ip[15] === 1) errors.push('may not be in the loopback range');
    if (ip[0] === 0xfe && (ip[1]! & 0xc0) === 0x80) errors.push('may not be in the link-local range');
    if (ip[0] === 0xff && (ip[1]! & 0x0f) === 0x02) errors.push('may not be in the link-local multicast range');
    return errors;
}

/** validateEndpoints' IPv4 and IPv6 branches for one address. */
export function addressErrors(address: string, addressType: string, opts: OracleOptions): string[] {
    if (addressType === 'IPv4') {
        const { ip, errors } = ipErrors(address, opts.strictIP); // IsValidIPForLegacyField
        if (errors.length > 0 || !ip) return errors;
        return [...(to4(ip) ? [] : ['must be an IPv4 address']), ...endpointIPErrors(ip)];
    }
    if (addressType === 'IPv6') {
        const { ip, errors } = ipErrors(address, true); // IsValidIP is always strict
        if (errors.length > 0 || !ip) return errors;
        if (address !== goString(ip)) return [`must be in canonical form (${goString(ip)})`];
        return [...(to4(ip) ? ['must be an IPv6 address'] : []), ...endpointIPErrors(ip)];
    }
    return [];
}

// ---- names -----------------------------------------------------------------------------

const LABEL = '[a-z0-9]([-a-z0-9]*[a-z0-9])?';
const dns1123Label = (v: string) => v.length <= 63 && new RegExp(`^${LABEL}$`).test(v);
const dns1123Subdomain = (v: string) => v.length <= 253 && new RegExp(`^${LABEL}(\\.${LABEL})*$`).test(v);
const KEY_NAME = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;
function qualifiedName(v: string): boolean {
    const parts = v.split('/');
    if (parts.length > 2) return false;
    if (parts.length === 2 && (parts[0] === '' || !dns1123Subdomain(parts[0]!))) return false;
    const name = parts[parts.length - 1]!;
    return name.length > 0 && name.length <= 63 && KEY_NAME.test(name);
}
const labelValue = (v: string) => v.length <= 63 && (v === '' || KEY_NAME.test(v));
/** NameIsDNSSubdomain(prefix=true): maskTrailingDash drops the last two characters for "a". */
const generateNamePrefix = (v: string) => dns1123Subdomain(v.length > 1 && v.endsWith('-') ? `${v.slice(0, v.length - 2)}a` : v);
const utf8Length = (s: string) => new TextEncoder().encode(s).length;

// ---- the slice -------------------------------------------------------------------------

/**
 * Every error the apiserver would give the slice on a create (or on an update whose endpoints
 * changed), after defaulting; a create's name is generated as names.SimpleNameGenerator does.
 */
export function validateEndpointSlice(slice: V1EndpointSlice, opts: OracleOptions = { strictIP: true }): string[] {
    const errs: string[] = [];
    const meta = slice.metadata ?? {};
    // ValidateObjectMetaAccessor
    const generateName = meta.generateName ?? '';
    const name = meta.name || (generateName ? `${generateName.slice(0, 58)}bcdfg` : '');
    if (generateName && !generateNamePrefix(generateName)) errs.push('metadata.generateName');
    if (!name) errs.push('metadata.name: Required');
    else if (!dns1123Subdomain(name)) errs.push('metadata.name');
    if (!meta.namespace) errs.push('metadata.namespace: Required');
    else if (!dns1123Label(meta.namespace)) errs.push('metadata.namespace');
    if ((meta.generation ?? 0) < 0) errs.push('metadata.generation');
    for (const [k, v] of Object.entries(meta.labels ?? {})) {
        if (!qualifiedName(k)) errs.push(`metadata.labels key ${k}`);
        if (!labelValue(v)) errs.push(`metadata.labels value ${v}`);
    }
    let size = 0;
    for (const [k, v] of Object.entries(meta.annotations ?? {})) {
        if (!qualifiedName(k.toLowerCase())) errs.push(`metadata.annotations key ${k}`);
        size += utf8Length(k) + utf8Length(v);
    }
    if (size > 256 * 1024) errs.push('metadata.annotations: Too long');
    let controllers = 0;
    for (const ref of meta.ownerReferences ?? []) {
        const version = (ref.apiVersion ?? '').includes('/') ? ref.apiVersion.split('/')[1] : ref.apiVersion;
        if (!version || !ref.kind || !ref.name || !ref.uid) errs.push('metadata.ownerReferences');
        if (ref.controller) controllers++;
    }
    if (controllers > 1) errs.push('metadata.ownerReferences: more than one controller');
    for (const f of meta.finalizers ?? []) if (!qualifiedName(f)) errs.push('metadata.finalizers');

    // validateAddressType
    const addressType = slice.addressType;
    if (!addressType) errs.push('addressType: Required');
    else if (!['IPv4', 'IPv6', 'FQDN'].includes(addressType)) errs.push('addressType: Unsupported value');

    // validatePorts
    const ports = slice.ports ?? [];
    if (ports.length > 20000) errs.push('ports: Too many');
    else {
        const seen: string[] = [];
        for (const p of ports) {
            const portName = p.name ?? ''; // SetDefaults_EndpointPort
            if (portName.length > 0 && !dns1123Label(portName)) errs.push(`ports name ${portName}`);
            if (seen.includes(portName)) errs.push(`ports name ${portName}: Duplicate`);
            else seen.push(portName);
            if (!['TCP', 'UDP', 'SCTP'].includes(p.protocol ?? 'TCP')) errs.push(`ports protocol ${p.protocol}`);
            if (p.appProtocol !== undefined && !qualifiedName(p.appProtocol)) errs.push(`ports appProtocol ${p.appProtocol}`);
            // No rule for the number; JSON decoding wants an int32.
            if (p.port !== undefined && !(Number.isInteger(p.port) && p.port >= -(2 ** 31) && p.port < 2 ** 31)) errs.push('ports port: not an int32');
        }
    }

    // validateEndpoints
    const endpoints = slice.endpoints ?? [];
    if (endpoints.length > 1000) errs.push('endpoints: Too many');
    else {
        for (const e of endpoints) {
            const addresses = e.addresses ?? [];
            if (addresses.length === 0) errs.push('endpoints addresses: Required');
            else if (addresses.length > 100) errs.push('endpoints addresses: Too many');
            for (const a of addresses) {
                if (addressType === 'FQDN') {
                    const fqdn = a.endsWith('.') ? a.slice(0, -1) : a;
                    if (!a || !dns1123Subdomain(fqdn) || fqdn.split('.').length < 2) errs.push(`endpoints address ${a}`);
                } else for (const m of addressErrors(a, addressType ?? '', opts)) errs.push(`endpoints address ${a}: ${m}`);
            }
            if (e.nodeName !== undefined && !dns1123Subdomain(e.nodeName)) errs.push('endpoints nodeName');
            if (e.hostname !== undefined && !dns1123Label(e.hostname)) errs.push('endpoints hostname');
            const zones = e.hints?.forZones ?? [];
            if (zones.length > 8) errs.push('endpoints hints forZones: Too many');
            else {
                const names = zones.map((z) => z.name);
                if (new Set(names).size !== names.length) errs.push('endpoints hints forZones: Duplicate');
                if (names.some((n) => !labelValue(n))) errs.push('endpoints hints forZones name');
                const nodes = (e.hints?.forNodes ?? []).map((n) => n.name);
                if (nodes.length > 8) errs.push('endpoints hints forNodes: Too many');
                else {
                    if (new Set(nodes).size !== nodes.length) errs.push('endpoints hints forNodes: Duplicate');
                    if (nodes.some((n) => !dns1123Subdomain(n))) errs.push('endpoints hints forNodes name');
                }
            }
            // JSON decoding: the conditions are booleans, the zone a string.
            for (const v of Object.values(e.conditions ?? {})) if (v !== undefined && v !== null && typeof v !== 'boolean') errs.push('endpoints conditions');
            if (e.zone !== undefined && typeof e.zone !== 'string') errs.push('endpoints zone');
        }
    }
    return errs;
}
