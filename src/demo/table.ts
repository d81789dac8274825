// Plain-text tables for the demo's output.
import type { V1EndpointSlice } from '@kubernetes/client-node';
import { table } from '../ops/format.js';
import type { GatewayResolutionStatus } from '../servicemirror/api/link.js';

export { table };

export function slicesTable(slices: V1EndpointSlice[]): string {
    const rows = slices.flatMap((s) => {
        const ports = (s.ports ?? []).map((p) => `${p.name || '-'}:${p.port}/${p.protocol}`).join(',') || '-';
        const endpoints = s.endpoints?.length ? s.endpoints : [undefined];
        return endpoints.map((e) => [
            s.metadata?.labels?.['kubernetes.io/service-name'] ?? '',
            s.metadata?.name ?? '',
            s.addressType,
            ports,
            e ? e.addresses.join(',') : '(none)',
            e ? String(e.conditions?.ready) : '',
            e ? String(e.conditions?.serving) : '',
            e ? String(e.conditions?.terminating) : '',
            e?.targetRef ? `${e.targetRef.kind}/${e.targetRef.name}` : '',
        ]);
    });
    return table(['SERVICE', 'SLICE', 'FAMILY', 'PORTS', 'ADDRESSES', 'READY', 'SERVING', 'TERMINATING', 'TARGET'], rows);
}

/** A mirror's slices as a user checks them: one row per address, every port on the gateway port. */
export function mirrorSlicesTable(slices: V1EndpointSlice[]): string {
    const rows = slices.flatMap((s) => {
        const ports = (s.ports ?? []).map((p) => `${p.name || '-'}->${p.port}`).join(',') || '-';
        const endpoints = s.endpoints?.length ? s.endpoints : [undefined];
        return endpoints.map((e) => [
            s.metadata?.name ?? '',
            s.addressType,
            e ? e.addresses.join(',') : '(none)',
            e ? String(e.conditions?.ready) : '',
            ports,
            s.metadata?.annotations?.['mirror.linkerd.io/remote-gateway-identity'] ?? '',
        ]);
    });
    return table(['SLICE', 'FAMILY', 'ADDRESS', 'READY', 'PORTS', 'GATEWAY IDENTITY'], rows);
}

/** A Link's status.gatewayResolution: each gateway name, what it resolved to and when. */
export function resolutionTable(resolutions: GatewayResolutionStatus[]): string {
    const clock = (iso?: string) => iso?.slice(11, 23) ?? '-';
    const rows = resolutions.map((r) => [
        r.name,
        r.addresses.join(',') || '(none)',
        r.ttlSeconds === undefined ? '-' : `${r.ttlSeconds}s`,
        clock(r.resolvedAt),
        clock(r.nextRefreshAt),
        r.lastError ? `${r.lastError} (at ${clock(r.lastErrorAt)})` : '-',
    ]);
    return table(['NAME', 'ADDRESSES', 'TTL', 'RESOLVED AT', 'NEXT REFRESH', 'LAST ERROR'], rows);
}
