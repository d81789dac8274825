// Port lists of a slice group: their apiserver-defaulted form and an order-free key.
import type { DiscoveryV1EndpointPort } from '@kubernetes/client-node';

/**
 * The form the apiserver stores (discovery/v1 defaulting: name "" and protocol TCP when absent).
 * Keying desired ports in any other form than what we later read back would make every sync
 * see a "new" port group and rewrite its slices (the perpetual-rewrite bug of Linkerd's port).
 */
export function normalisePort(port: DiscoveryV1EndpointPort): DiscoveryV1EndpointPort {
    const out: DiscoveryV1EndpointPort = { name: port.name ?? '', protocol: port.protocol ?? 'TCP' };
    // port is optional in the API: an absent port means "all ports" and must stay absent.
    if (port.port !== undefined) out.port = port.port;
    if (port.appProtocol) out.appProtocol = port.appProtocol;
    return out;
}

export function normalisePorts(ports: readonly DiscoveryV1EndpointPort[] | undefined): DiscoveryV1EndpointPort[] {
    return (ports ?? []).map(normalisePort);
}

/** The defaulted port as JSON (no raw newline can occur in it); no normalised copy is made. */
function portKey(port: DiscoveryV1EndpointPort): string {
    return JSON.stringify([port.name ?? '', port.port ?? null, port.protocol ?? 'TCP', port.appProtocol || null]);
}

/**
 * Same key for the same set of ports, whatever their order or defaulting; absent = no ports.
 * Computed for every desired group and existing slice of every sync, and most have one port.
 */
export function portMapKey(ports: readonly DiscoveryV1EndpointPort[] | undefined): string {
    // null too: the apiserver serves a slice without ports with `ports: null`.
    if (ports == null || ports.length === 0) return '';
    if (ports.length === 1) return portKey(ports[0]!);
    return ports.map(portKey).sort().join('\n');
}
