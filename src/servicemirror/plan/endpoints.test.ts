import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1EndpointSlice, V1Service } from '@kubernetes/client-node';
import { planSlices } from '../../endpointslice/reconciler.js';
import { desiredMirrorGroups, endpointIP, type GatewayAddress, type MirrorGroupsInput, mirrorAddressTypes, withoutReadiness } from './endpoints.js';
import type { Link } from '../api/link.js';
import { testLink } from '../api/testkit.js';
import { buildMirrorService } from './mirror.js';
import { MIRROR_SLICE_MANAGED_BY } from '../api/keys.js';

const link = (spec: Record<string, unknown> = {}): Link => testLink({ gatewayAddress: 'gateway.example.com', ...spec });

function mirror(ipFamilies?: string[], exported = 'true'): V1Service {
    return buildMirrorService(
        {
            metadata: { name: 'service-one', namespace: 'ns1', resourceVersion: '111', labels: { 'mirror.linkerd.io/exported': exported, lk: 'lv' } },
            spec: {
                ports: [
                    { name: 'port1', protocol: 'TCP', port: 555 },
                    { name: 'port2', port: 666, appProtocol: 'http' },
                ],
                ...(ipFamilies ? { ipFamilies, ipFamilyPolicy: ipFamilies.length > 1 ? 'PreferDualStack' : 'SingleStack' } : {}),
            },
        },
        link(),
    );
}

const v4 = (address: string, ready = true): GatewayAddress => ({ address, family: 'IPv4', ready });
const v6 = (address: string, ready = true): GatewayAddress => ({ address, family: 'IPv6', ready });
const mixed = [v4('192.0.2.127'), v6('2001:db8::7f'), v4('192.0.2.128')];

function groups(overrides: Partial<MirrorGroupsInput> = {}) {
    return desiredMirrorGroups({
        mirror: mirror(['IPv4']),
        link: link(),
        gatewayAddresses: mixed,
        remoteHasReadyEndpoints: true,
        gatewayAlive: true,
        ...overrides,
    });
}

function addressesOf(result: ReturnType<typeof groups>): Record<string, string[]> {
    return Object.fromEntries(result.groups.map((g) => [g.addressType, g.endpoints.flatMap((e) => e.addresses)]));
}

describe('mirror endpoints', () => {
    it('point every mirror port at the gateway port, keeping names and protocols in defaulted form', () => {
        const [group] = groups().groups;
        assert.deepEqual(group?.ports, [
            { name: 'port1', protocol: 'TCP', port: 888 },
            { name: 'port2', protocol: 'TCP', port: 888 },
        ]);
    });

    it('give an IPv4-only mirror one IPv4 group with only the IPv4 gateway addresses', () => {
        const result = groups({ mirror: mirror(['IPv4']) });
        assert.deepEqual(result.addressTypes, ['IPv4']);
        assert.deepEqual(addressesOf(result), { IPv4: ['192.0.2.127', '192.0.2.128'] });
    });

    it('give an IPv6-only mirror one IPv6 group with only the IPv6 gateway addresses', () => {
        const result = groups({ mirror: mirror(['IPv6']) });
        assert.deepEqual(result.addressTypes, ['IPv6']);
        assert.deepEqual(addressesOf(result), { IPv6: ['2001:db8::7f'] });
    });

    it('give a dual-stack mirror one group per family', () => {
        const result = groups({ mirror: mirror(['IPv6', 'IPv4']) });
        assert.deepEqual(result.addressTypes, ['IPv6', 'IPv4']);
        assert.deepEqual(addressesOf(result), { IPv6: ['2001:db8::7f'], IPv4: ['192.0.2.127', '192.0.2.128'] });
    });

    it('fall back to IPv4, or to the ClusterIP family, for a mirror without ipFamilies', () => {
        assert.deepEqual(mirrorAddressTypes(mirror()), ['IPv4']);
        const v6Cluster = mirror();
        v6Cluster.spec!.clusterIP = 'fd00:10:96::1';
        assert.deepEqual(mirrorAddressTypes(v6Cluster), ['IPv6']);
    });

    it('leave a family without gateway addresses without a group', () => {
        const result = groups({ mirror: mirror(['IPv4', 'IPv6']), gatewayAddresses: [v4('192.0.2.1')] });
        assert.deepEqual(result.addressTypes, ['IPv4', 'IPv6']);
        assert.deepEqual(addressesOf(result), { IPv4: ['192.0.2.1'] });
    });

    it('are ready and serving only where the gateway address is, and never terminating', () => {
        const result = groups({ gatewayAddresses: [v4('192.0.2.1'), v4('192.0.2.2', false)] });
        const conditions = result.groups[0]?.endpoints.map((e) => [e.addresses[0], e.conditions]);
        assert.deepEqual(conditions, [
            ['192.0.2.1', { ready: true, serving: true, terminating: false }],
            ['192.0.2.2', { ready: false, serving: false, terminating: false }],
        ]);
    });

    it('all become not ready when the gateway probe says the gateway is dead', () => {
        const result = groups({ mirror: mirror(['IPv4', 'IPv6']), gatewayAlive: false });
        const endpoints = result.groups.flatMap((g) => g.endpoints);
        assert.equal(endpoints.length, 3);
        for (const endpoint of endpoints) assert.deepEqual(endpoint.conditions, { ready: false, serving: false, terminating: false });
    });

    it('are absent while the remote Service has no ready endpoints, and come back when it has', () => {
        const empty = groups({ remoteHasReadyEndpoints: false });
        assert.deepEqual(empty.groups, []);
        assert.deepEqual(empty.addressTypes, ['IPv4'], 'the reconciler still knows which slices are ours to remove');
        assert.deepEqual(addressesOf(groups({ remoteHasReadyEndpoints: true })), { IPv4: ['192.0.2.127', '192.0.2.128'] });
    });

    it('are absent for a remote-discovery mirror', () => {
        assert.deepEqual(groups({ mirror: mirror(['IPv4'], 'remote-discovery') }).groups, []);
    });

    it('are absent for a Link without a gateway', () => {
        const noGateway = link({ gatewayAddress: '', gatewayPort: '' });
        assert.deepEqual(groups({ link: noGateway }).groups, []);
    });

    it('never hold an FQDN, an empty string or an address Kubernetes refuses', () => {
        const garbage: GatewayAddress[] = [
            v4('gateway.example.com'),
            v4(''),
            v6(''),
            v6('a1b2.elb.us-east-1.amazonaws.com'),
            v4('127.0.0.1'),
            v4('0.0.0.0'),
            v4('169.254.1.1'),
            v4('224.0.0.5'),
            v6('::1'),
            v6('fe80::1'),
            v6('fe80::1%eth0'),
            v6('ff02::1'),
            v6('::ffff:192.0.2.1'),
            v4('2001:db8::1'),
            v6('192.0.2.1'),
            v4(' 192.0.2.1'),
        ];
        const result = groups({ mirror: mirror(['IPv4', 'IPv6']), gatewayAddresses: [...garbage, v4('192.0.2.9')] });
        assert.deepEqual(addressesOf(result), { IPv4: ['192.0.2.9'] });
        assert.deepEqual(groups({ gatewayAddresses: garbage }).groups, []);
    });

    it('hold canonical IPs, one endpoint per IP even when two names resolve to it', () => {
        assert.equal(endpointIP('2001:DB8:0:0::7F', 'IPv6'), '2001:db8::7f');
        const result = groups({
            mirror: mirror(['IPv6']),
            gatewayAddresses: [v6('2001:db8::7f', false), v6('2001:DB8::7F', true)],
        });
        assert.deepEqual(result.groups[0]?.endpoints, [{ addresses: ['2001:db8::7f'], conditions: { ready: true, serving: true, terminating: false } }]);
    });

    it('label their slices with the cluster name and annotate them with what Linkerd’s destination reads', () => {
        const result = groups();
        assert.deepEqual(result.extraLabels, {
            'mirror.linkerd.io/mirrored-service': 'true',
            'mirror.linkerd.io/cluster-name': 'remote',
        });
        assert.deepEqual(result.annotations, {
            'mirror.linkerd.io/remote-svc-fq-name': 'service-one.ns1.svc.cluster.local',
            'mirror.linkerd.io/remote-gateway-identity': 'gateway-identity',
        });
        assert.equal(groups({ link: link({ gatewayIdentity: '' }) }).annotations['mirror.linkerd.io/remote-gateway-identity'], undefined);
    });

    it('plan into one slice per family of the mirror with the shared reconciler', () => {
        const m = mirror(['IPv4', 'IPv6']);
        const result = groups({ mirror: m });
        const plan = planSlices({
            owner: { name: m.metadata!.name!, namespace: 'ns1', uid: 'uid-1', labels: m.metadata!.labels!, headless: false },
            addressTypes: result.addressTypes,
            desired: result.groups,
            existing: [],
            maxEndpointsPerSlice: 100,
            managedBy: MIRROR_SLICE_MANAGED_BY,
            extraLabels: result.extraLabels,
            annotations: result.annotations,
        });
        assert.deepEqual(plan.creates.map((s) => s.addressType).sort(), ['IPv4', 'IPv6']);
        for (const slice of plan.creates) {
            assert.equal(slice.metadata?.labels?.['kubernetes.io/service-name'], 'service-one-remote');
            assert.equal(slice.metadata?.labels?.['endpointslice.kubernetes.io/managed-by'], MIRROR_SLICE_MANAGED_BY);
            assert.equal(slice.metadata?.annotations?.['mirror.linkerd.io/remote-gateway-identity'], 'gateway-identity');
            assert.ok(slice.ports?.every((p) => p.port === 888));
        }
    });
});

describe('mirrors of a Link that cannot be served, past the stale window', () => {
    const slice = (ready: boolean[]): V1EndpointSlice => ({
        addressType: 'IPv4',
        endpoints: ready.map((r, i) => ({ addresses: [`192.0.2.${i + 1}`], conditions: { ready: r, serving: r, terminating: false } })),
    });

    it('turns every endpoint not ready, keeping its address', () => {
        const out = withoutReadiness(slice([true, false]))!;
        assert.deepEqual(out.endpoints.map((e) => [e.addresses[0], e.conditions?.ready, e.conditions?.serving]), [
            ['192.0.2.1', false, false],
            ['192.0.2.2', false, false],
        ]);
    });

    it('leaves a slice with nothing ready alone (no write)', () => {
        assert.equal(withoutReadiness(slice([false, false])), undefined);
        assert.equal(withoutReadiness(slice([])), undefined);
    });
});
