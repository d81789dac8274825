// Builders for the ops/ unit tests: a Link as the apiserver serves it (with the status the
// service mirror writes), its mirror Services and slices, and the probe Events.
import type { V1EndpointSlice, V1Service } from '@kubernetes/client-node';
import type { GatewayNameStatus } from '../dns/resolution-status.js';
import type { MirrorSummary } from '../servicemirror/api/link.js';
import type { LinkEventObject } from './links-report.js';

export const LINK_NS = 'linkerd-multicluster';

export interface LinkOptions {
    name?: string;
    cluster?: string;
    gatewayAddress?: string;
    probePath?: string;
    resolution?: GatewayNameStatus[];
    mirrored?: { ns: string; name: string; ok: boolean; reason?: string; message?: string }[];
    /** The RemoteReadable condition the service mirror writes. */
    remote?: { readable: boolean; reason: string; message: string };
    /** status.mirrorSummary, as the service mirror writes it along with the not-mirrored entries. */
    summary?: MirrorSummary;
}

export function rawLink(o: LinkOptions = {}): Record<string, unknown> {
    const name = o.name ?? 'east';
    const cluster = o.cluster ?? name;
    return {
        apiVersion: 'multicluster.linkerd.io/v1alpha3',
        kind: 'Link',
        metadata: { name, namespace: LINK_NS, uid: `uid-${name}` },
        spec: {
            targetClusterName: cluster,
            clusterCredentialsSecret: `cluster-credentials-${cluster}`,
            gatewayAddress: o.gatewayAddress ?? 'gw.example.com',
            gatewayPort: '4143',
            gatewayIdentity: 'gw-identity',
            probeSpec: { path: o.probePath ?? '/ready', port: '4191', period: '3s', timeout: '30s', failureThreshold: '3' },
        },
        status: {
            ...(o.remote && {
                conditions: [
                    { type: 'RemoteReadable', status: o.remote.readable ? 'True' : 'False', lastTransitionTime: '2026-01-01T00:00:00Z', reason: o.remote.reason, message: o.remote.message },
                ],
            }),
            gatewayResolution: o.resolution ?? [],
            ...(o.summary && { mirrorSummary: o.summary }),
            mirrorServices: (o.mirrored ?? []).map((m) => ({
                controllerName: 'mesh-endpoints.io/service-mirror',
                remoteRef: { group: 'core', kind: 'Service', name: m.name, namespace: m.ns },
                conditions: [
                    {
                        type: 'Mirrored',
                        status: m.ok ? 'True' : 'False',
                        lastTransitionTime: '2026-01-01T00:00:00Z',
                        reason: m.reason ?? (m.ok ? 'Mirrored' : 'InvalidService'),
                        message: m.message ?? '',
                        ...(m.ok ? { localRef: { group: 'core', kind: 'Service', name: `${m.name}-${cluster}`, namespace: m.ns } } : {}),
                    },
                ],
            })),
        },
    };
}

export function mirrorService(ns: string, name: string, cluster: string, link: string | null = `${LINK_NS}/${cluster}`): V1Service {
    return {
        metadata: {
            name,
            namespace: ns,
            labels: { 'mirror.linkerd.io/mirrored-service': 'true', 'mirror.linkerd.io/cluster-name': cluster },
            annotations: link === null ? {} : { 'mesh-endpoints.io/link': link },
        },
    };
}

export function mirrorSlice(ns: string, name: string, service: string, ready: boolean[]): V1EndpointSlice {
    return {
        metadata: { name, namespace: ns, labels: { 'kubernetes.io/service-name': service, 'endpointslice.kubernetes.io/managed-by': 'service-mirror.mesh-endpoints.io' } },
        addressType: 'IPv4',
        endpoints: ready.map((r) => ({ addresses: ['192.0.2.10'], conditions: { ready: r } })),
    };
}

export function probeEvent(link: string, reason: 'GatewayDown' | 'GatewayAlive' | 'GatewayProbeRefused' | 'GatewayProbeTarget', at: string, resourceVersion = '1', uid = `uid-${link}`): LinkEventObject {
    return { metadata: { resourceVersion }, involvedObject: { kind: 'Link', name: link, uid }, reason, message: `${reason} message`, lastTimestamp: at };
}
