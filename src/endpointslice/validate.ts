// The apiserver's EndpointSlice validation, as far as our slices can break it: the last
// check before a write, so that a bug in a source adapter shows as a clear error of ours
// instead of a 422 in a retry loop. Pure; returns every problem, not just the first.
import type { V1EndpointSlice } from '@kubernetes/client-node';
import { isIPv4, isIPv6 } from 'node:net';

const MAX_ENDPOINTS = 1000;
const MAX_ADDRESSES = 100;
const MAX_PORTS = 100;
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
const PORT_NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const PROTOCOLS = new Set(['TCP', 'UDP', 'SCTP']);

export function sliceProblems(slice: V1EndpointSlice): string[] {
    const problems: string[] = [];
    const family = slice.addressType;
    const isFamily = family === 'IPv4' ? isIPv4 : family === 'IPv6' ? isIPv6 : undefined;
    if (!isFamily) problems.push(`addressType ${JSON.stringify(family)} is not IPv4 or IPv6`);
    const endpoints = slice.endpoints ?? [];
    if (endpoints.length > MAX_ENDPOINTS) problems.push(`${endpoints.length} endpoints, more than ${MAX_ENDPOINTS}`);
    endpoints.forEach((endpoint, i) => {
        const addresses = endpoint.addresses ?? [];
        if (addresses.length < 1 || addresses.length > MAX_ADDRESSES) {
            problems.push(`endpoints[${i}]: ${addresses.length} addresses, must be 1 to ${MAX_ADDRESSES}`);
        }
        for (const address of addresses) {
            if (isFamily && !isFamily(address)) problems.push(`endpoints[${i}]: ${JSON.stringify(address)} is not an ${family} address`);
        }
        if (endpoint.hostname !== undefined && !DNS_LABEL.test(endpoint.hostname)) {
            problems.push(`endpoints[${i}]: hostname ${JSON.stringify(endpoint.hostname)} is not a DNS label`);
        }
    });
    const ports = slice.ports ?? [];
    if (ports.length > MAX_PORTS) problems.push(`${ports.length} ports, more than ${MAX_PORTS}`);
    const names = new Set<string>();
    ports.forEach((port, i) => {
        const name = port.name ?? '';
        if (name !== '' && (name.length > 63 || !PORT_NAME.test(name))) problems.push(`ports[${i}]: name ${JSON.stringify(name)} is not valid`);
        if (names.has(name)) problems.push(`ports[${i}]: name ${JSON.stringify(name)} is used twice`);
        names.add(name);
        if (port.port !== undefined && !(Number.isInteger(port.port) && port.port >= 1 && port.port <= 65535)) {
            problems.push(`ports[${i}]: port ${port.port} is out of range`);
        }
        if (port.protocol !== undefined && !PROTOCOLS.has(port.protocol)) problems.push(`ports[${i}]: protocol ${port.protocol} is not TCP, UDP or SCTP`);
    });
    return problems;
}
