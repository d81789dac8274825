// The mirror changes only what it created, and what the remote says never overrides what the
// mirror says of itself: the pure decisions (mirror.ts, headless.ts, keys.ts) on hostile input.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1EndpointSlice, V1Service } from '@kubernetes/client-node';
import { remoteHosts } from './headless.js';
import { isReservedKey } from '../api/keys.js';
import { buildMirrorService, hasReadyEndpoints, mirrorOwnerProblem, planMirrorService, remoteEndpointWarnings } from './mirror.js';
import { CLUSTER_NAME_LABEL, LINK_ANNOTATION, MIRRORED_SERVICE_LABEL } from '../api/keys.js';
import { testLink } from '../api/testkit.js';

const east = testLink({ targetClusterName: 'east' });
const remote = (labels: Record<string, string> = {}, annotations: Record<string, string> = {}): V1Service => ({
    metadata: { name: 'cart', namespace: 'shop', resourceVersion: '7', labels: { 'mirror.linkerd.io/exported': 'true', ...labels }, annotations },
    spec: { ports: [{ name: 'http', port: 80 }] },
});
const local = (labels: Record<string, string> | undefined, annotations?: Record<string, string>): V1Service => ({
    metadata: { name: 'cart-east', namespace: 'shop', uid: 'u1', resourceVersion: '3', labels, annotations },
    spec: { ports: [{ name: 'http', port: 8080 }], selector: { app: 'cart' } },
});

describe('ownership of a local Service with a mirror’s name', () => {
    const desired = buildMirrorService(remote(), east);
    const owner = (svc: V1Service) => mirrorOwnerProblem(svc, east);

    it('refuses a user’s own Service, saying which and why', () => {
        const plan = planMirrorService(local(undefined), desired, owner);
        assert.equal(plan.action, 'refuse');
        assert.match((plan as { problem: string }).problem, /^shop\/cart-east exists and is not a mirror of Link remote: it is not labelled mirror\.linkerd\.io\/mirrored-service=true/);
    });

    it('refuses a mirror of another cluster, of another Link, and an endpoint mirror of the same name', () => {
        const cases: [V1Service, RegExp][] = [
            [local({ [MIRRORED_SERVICE_LABEL]: 'true', [CLUSTER_NAME_LABEL]: 'west' }), /it mirrors cluster "west"/],
            [local({ [MIRRORED_SERVICE_LABEL]: 'true' }), /it has no mirror\.linkerd\.io\/cluster-name label/],
            [local({ [MIRRORED_SERVICE_LABEL]: 'true', [CLUSTER_NAME_LABEL]: 'east' }, { [LINK_ANNOTATION]: 'team-b/east' }), /it is a mirror of Link team-b\/east/],
            [local({ [MIRRORED_SERVICE_LABEL]: 'true', [CLUSTER_NAME_LABEL]: 'east', 'mirror.linkerd.io/headless-mirror-svc-name': 'db-east' }), /it is an endpoint mirror of db-east/],
        ];
        for (const [svc, why] of cases) {
            const plan = planMirrorService(svc, desired, owner);
            assert.equal(plan.action, 'refuse');
            assert.match((plan as { problem: string }).problem, why);
        }
    });

    it('takes over its own mirror and one Linkerd wrote for the same cluster (no Link annotation)', () => {
        const ours = { ...desired, metadata: { ...desired.metadata, uid: 'u2', resourceVersion: '5' } };
        assert.equal(planMirrorService(ours, desired, owner).action, 'keep');
        const linkerds = local({ [MIRRORED_SERVICE_LABEL]: 'true', [CLUSTER_NAME_LABEL]: 'east' });
        assert.equal(planMirrorService(linkerds, desired, owner).action, 'update');
        assert.equal(planMirrorService(undefined, desired, owner).action, 'create');
    });

    it('holds an endpoint mirror to its headless mirror', () => {
        const endpoint = local({ [MIRRORED_SERVICE_LABEL]: 'true', [CLUSTER_NAME_LABEL]: 'east', 'mirror.linkerd.io/headless-mirror-svc-name': 'db-east' });
        assert.equal(mirrorOwnerProblem(endpoint, east, 'db-east'), null);
        assert.match(mirrorOwnerProblem(endpoint, east, 'web-east') ?? '', /is not an endpoint mirror of web-east/);
        assert.match(mirrorOwnerProblem(local(undefined), east, 'db-east') ?? '', /not a mirror of Link/);
    });
});

describe('remote metadata on a mirror', () => {
    it('never copies the keys Linkerd, this product or Kubernetes interpret, and keeps the rest', () => {
        const spoofed = {
            [MIRRORED_SERVICE_LABEL]: 'false',
            [CLUSTER_NAME_LABEL]: 'west',
            'multicluster.linkerd.io/remote-discovery': 'west',
            'mesh-endpoints.io/link': 'evil/link',
            'endpointslice.kubernetes.io/skip-mirror': 'true',
            'service.kubernetes.io/service-proxy-name': 'none',
            'kubernetes.io/service-name': 'other',
            'topology.kubernetes.io/zone': 'z',
            'sub.mesh-endpoints.io/x': 'y',
            'x.k8s.io/y': 'z',
        };
        const mirror = buildMirrorService(remote({ ...spoofed, 'app.kubernetes.io/name': 'cart', team: 'a' }, { ...spoofed, note: 'kept', 'config.linkerd.io/opaque-ports': '80' }), east);
        assert.deepEqual(mirror.metadata?.labels, {
            'app.kubernetes.io/name': 'cart',
            team: 'a',
            [MIRRORED_SERVICE_LABEL]: 'true',
            [CLUSTER_NAME_LABEL]: 'east',
        });
        assert.deepEqual(mirror.metadata?.annotations, {
            note: 'kept',
            'config.linkerd.io/opaque-ports': '80',
            'mirror.linkerd.io/remote-svc-fq-name': 'cart.shop.svc.cluster.local',
            'mirror.linkerd.io/remote-resource-version': '7',
            [LINK_ANNOTATION]: 'linkerd-multicluster/remote',
        });
    });

    it('reserves whole domains and their subdomains, not look-alikes', () => {
        for (const key of ['kubernetes.io/x', 'a.kubernetes.io/x', 'k8s.io/x', 'mirror.linkerd.io/x', 'multicluster.linkerd.io/x', 'mesh-endpoints.io/x']) assert.equal(isReservedKey(key), true, key);
        for (const key of ['app.kubernetes.io/name', 'notkubernetes.io/x', 'linkerd.io/x', 'config.linkerd.io/opaque-ports', 'plain', 'example.com/kubernetes.io']) assert.equal(isReservedKey(key), false, key);
    });
});

describe('remote endpoint addresses', () => {
    const slice = (addresses: string[], hostname?: string): V1EndpointSlice => ({
        metadata: { name: 'cart-abc', namespace: 'shop', labels: { 'kubernetes.io/service-name': 'cart' } },
        addressType: 'IPv4',
        endpoints: addresses.map((a) => ({ addresses: [a], conditions: { ready: true }, ...(hostname && { hostname }) })),
    });
    const hostile = ['127.0.0.1', '169.254.169.254', '0.0.0.0', '224.0.0.1', '239.1.1.1', 'not-an-ip', '::1', 'fe80::1'];

    it('count only at addresses an endpoint may hold: a remote at loopback or metadata addresses has nothing ready', () => {
        assert.equal(hasReadyEndpoints([slice(hostile)]), false);
        assert.equal(hasReadyEndpoints([slice([...hostile, '10.1.0.1'])]), true);
    });

    it('give headless mirrors no hostname for a pod at such an address', () => {
        assert.deepEqual(remoteHosts([slice(['127.0.0.1'], 'pod-0'), slice(['10.1.0.2'], 'pod-1')]), [{ hostname: 'pod-1', ready: true }]);
    });

    it('are told per remote slice, naming it and the first addresses refused', () => {
        assert.deepEqual(remoteEndpointWarnings([slice(['10.1.0.1', '127.0.0.1', '169.254.169.254'])]), [
            'remote EndpointSlice shop/cart-abc: left out "127.0.0.1" (loopback), "169.254.169.254" (link-local)',
        ]);
        const [many] = remoteEndpointWarnings([slice(hostile)]);
        assert.equal(many, 'remote EndpointSlice shop/cart-abc: left out "127.0.0.1" (loopback), "169.254.169.254" (link-local), "0.0.0.0" (unspecified)');
        assert.deepEqual(remoteEndpointWarnings([slice(['10.1.0.1'])]), []);
    });
});
