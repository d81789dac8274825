// Builders shared by the servicemirror/ unit tests (not part of the public API).
import { type Link, parseLink } from './link.js';

/** A v1alpha3 Link as Linkerd writes it, parsed; `spec` overrides its fields. */
export function testLink(spec: Record<string, unknown> = {}): Link {
    const result = parseLink({
        apiVersion: 'multicluster.linkerd.io/v1alpha3',
        kind: 'Link',
        metadata: { name: 'remote', namespace: 'linkerd-multicluster' },
        spec: {
            targetClusterName: 'remote',
            targetClusterDomain: 'cluster.local',
            gatewayAddress: '192.0.2.127',
            gatewayPort: '888',
            gatewayIdentity: 'gateway-identity',
            selector: { matchLabels: { 'mirror.linkerd.io/exported': 'true' } },
            remoteDiscoverySelector: { matchLabels: { 'mirror.linkerd.io/exported': 'remote-discovery' } },
            ...spec,
        },
    });
    if ('error' in result) throw new Error(result.error);
    return result.link;
}
