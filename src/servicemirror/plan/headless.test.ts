import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1Endpoint, V1EndpointSlice, V1Service } from '@kubernetes/client-node';
import { planSlices } from '../../endpointslice/reconciler.js';
import { desiredMirrorGroups } from './endpoints.js';
import {
    buildEndpointMirror,
    buildHeadlessMirrorService,
    headlessMirrorGroups,
    isEndpointMirrorOf,
    mirroredRemoteName,
    mirrorsAsHeadless,
    planHeadless,
    remoteHosts,
    type HeadlessPlanInput,
} from './headless.js';
import { mirrorServiceNeedsRecreate } from './mirror.js';
import { MIRROR_SLICE_MANAGED_BY } from '../api/keys.js';
import { testLink } from '../api/testkit.js';

// The objects of Linkerd's "create headless service and endpoints when gateway can be
// resolved" (cluster_watcher_mirroring_test.go), as slices.
const link = testLink({ gatewayAddress: '192.0.2.129', gatewayPort: '889' });

function remoteHeadless(extra: Partial<V1Service['spec']> = {}): V1Service {
    return {
        metadata: {
            name: 'service-one',
            namespace: 'ns2',
            resourceVersion: '111',
            labels: { 'mirror.linkerd.io/exported': 'true', lk: 'lv' },
            annotations: { 'config.linkerd.io/opaque-ports': '555', other: 'x' },
        },
        spec: {
            clusterIP: 'None',
            ports: [
                { name: 'port1', protocol: 'TCP', port: 555 },
                { name: 'port2', protocol: 'TCP', port: 666 },
            ],
            ipFamilies: ['IPv4'],
            ipFamilyPolicy: 'SingleStack',
            ...extra,
        },
    };
}

function endpoint(hostname: string | undefined, ip: string, ready?: boolean): V1Endpoint {
    const out: V1Endpoint = { addresses: [ip], targetRef: { kind: 'Pod', name: hostname ?? 'pod-x', namespace: 'ns2' } };
    if (hostname) out.hostname = hostname;
    if (ready !== undefined) out.conditions = { ready, serving: ready, terminating: false };
    return out;
}

function remoteSlice(name: string, endpoints: V1Endpoint[], addressType = 'IPv4', ports = [555, 666]): V1EndpointSlice {
    return {
        metadata: { name, namespace: 'ns2', labels: { 'kubernetes.io/service-name': 'service-one' } },
        addressType,
        endpoints,
        ports: ports.map((port, i) => ({ name: `port${i + 1}`, port, protocol: 'TCP' })),
    };
}

/** An endpoint mirror as the apiserver returns it: ClusterIPs allocated. */
function stored(service: V1Service, ...clusterIPs: string[]): V1Service {
    return { ...service, metadata: { ...service.metadata, uid: `uid-${service.metadata?.name}` }, spec: { ...service.spec, clusterIP: clusterIPs[0], clusterIPs } };
}

describe('remoteHosts', () => {
    const table: { name: string; slices: V1EndpointSlice[]; want: { hostname: string; ready: boolean }[] }[] = [
        { name: 'no slices', slices: [], want: [] },
        { name: 'endpoints without hostnames (a Deployment)', slices: [remoteSlice('a', [endpoint(undefined, '10.0.0.1')])], want: [] },
        {
            name: 'StatefulSet pods, sorted, nil ready counted as ready',
            slices: [remoteSlice('a', [endpoint('pod-1', '10.0.0.2', false), endpoint('pod-0', '10.0.0.1')])],
            want: [
                { hostname: 'pod-0', ready: true },
                { hostname: 'pod-1', ready: false },
            ],
        },
        {
            name: 'one pod in an IPv4 and an IPv6 slice: once, ready if either is',
            slices: [remoteSlice('a', [endpoint('pod-0', '10.0.0.1', false)]), remoteSlice('b', [endpoint('pod-0', 'fd00::1', true)], 'IPv6')],
            want: [{ hostname: 'pod-0', ready: true }],
        },
    ];
    for (const row of table) it(row.name, () => assert.deepEqual(remoteHosts(row.slices), row.want));
});

describe('mirrorsAsHeadless', () => {
    const headlessMirror = stored(buildHeadlessMirrorService(remoteHeadless(), link), 'None');
    const clusterIPMirror = stored(buildHeadlessMirrorService(remoteHeadless(), link), '10.96.0.5');
    const withHosts = [remoteSlice('a', [endpoint('pod-0', '10.0.0.1')])];
    const withoutHosts = [remoteSlice('a', [endpoint(undefined, '10.0.0.1')])];
    const empty = [remoteSlice('a', [])];
    const table: { name: string; remote: V1Service; slices: V1EndpointSlice[]; existing?: V1Service; want: boolean }[] = [
        { name: 'a ClusterIP remote never', remote: remoteHeadless({ clusterIP: '10.96.0.1' }), slices: withHosts, want: false },
        { name: 'a headless remote with hostnames', remote: remoteHeadless(), slices: withHosts, want: true },
        { name: 'hostnames appearing turn a ClusterIP mirror headless', remote: remoteHeadless(), slices: withHosts, existing: clusterIPMirror, want: true },
        { name: 'endpoints without hostnames: ClusterIP to the gateway', remote: remoteHeadless(), slices: withoutHosts, want: false },
        { name: 'endpoints without hostnames turn a headless mirror back', remote: remoteHeadless(), slices: withoutHosts, existing: headlessMirror, want: false },
        { name: 'no endpoints, no mirror yet: ClusterIP', remote: remoteHeadless(), slices: empty, want: false },
        { name: 'no endpoints keeps a headless mirror headless (scaled to 0)', remote: remoteHeadless(), slices: empty, existing: headlessMirror, want: true },
        { name: 'no slices at all keeps a headless mirror headless', remote: remoteHeadless(), slices: [], existing: headlessMirror, want: true },
    ];
    for (const row of table) it(row.name, () => assert.equal(mirrorsAsHeadless(row.remote, row.slices, row.existing), row.want));

    it('a switch either way is a recreate (clusterIP is immutable)', () => {
        const headless = buildHeadlessMirrorService(remoteHeadless(), link);
        assert.equal(mirrorServiceNeedsRecreate(clusterIPMirror, headless), true);
        const { clusterIP: _, ...plain } = headless.spec!;
        assert.equal(mirrorServiceNeedsRecreate(headlessMirror, { ...headless, spec: plain }), true);
        assert.equal(mirrorServiceNeedsRecreate(headlessMirror, headless), false);
    });
});

describe('headless mirror Service', () => {
    it('is the ordinary mirror with clusterIP None', () => {
        const mirror = buildHeadlessMirrorService(remoteHeadless(), link);
        assert.equal(mirror.metadata?.name, 'service-one-remote');
        assert.equal(mirror.spec?.clusterIP, 'None');
        assert.equal(mirror.spec?.selector, undefined);
        assert.equal(mirror.metadata?.labels?.['mirror.linkerd.io/mirrored-service'], 'true');
        assert.equal(mirror.metadata?.labels?.lk, 'lv');
        assert.equal(mirror.metadata?.annotations?.['mirror.linkerd.io/remote-svc-fq-name'], 'service-one.ns2.svc.cluster.local');
    });
});

describe('endpoint mirrors', () => {
    it('are `<hostname>-<cluster>` with the mirror labels, the headless mirror name, and only Linkerd’s annotations', () => {
        const svc = buildEndpointMirror(remoteHeadless(), link, 'pod-0');
        assert.equal(svc.metadata?.name, 'pod-0-remote');
        assert.equal(svc.metadata?.namespace, 'ns2');
        assert.deepEqual(svc.metadata?.labels, {
            lk: 'lv',
            'mirror.linkerd.io/mirrored-service': 'true',
            'mirror.linkerd.io/cluster-name': 'remote',
            'mirror.linkerd.io/headless-mirror-svc-name': 'service-one-remote',
        });
        assert.deepEqual(svc.metadata?.annotations, {
            'mirror.linkerd.io/remote-svc-fq-name': 'pod-0.service-one.ns2.svc.cluster.local',
            'mirror.linkerd.io/remote-resource-version': '111',
            'mesh-endpoints.io/link': 'linkerd-multicluster/remote',
        });
        assert.equal(svc.spec?.clusterIP, undefined, 'a ClusterIP is allocated');
        assert.deepEqual(svc.spec?.ports?.map((p) => p.port), [555, 666]);
        assert.equal(isEndpointMirrorOf(svc, 'service-one-remote', 'remote'), true);
        assert.equal(isEndpointMirrorOf(svc, 'service-two-remote', 'remote'), false);
        assert.equal(isEndpointMirrorOf(svc, 'service-one-remote', 'other'), false);
    });

    it('leave out a hostname that cannot name a Service, saying why', () => {
        const slices = [remoteSlice('a', [endpoint('pod-0', '10.0.0.1'), endpoint('0-starts-with-digit', '10.0.0.2'), endpoint(`p${'x'.repeat(60)}`, '10.0.0.3')])];
        const plan = planHeadless({ link, remote: remoteHeadless(), remoteSlices: slices, name: 'service-one-remote', endpointMirrors: [] });
        assert.deepEqual(plan.mirrors.map((m) => m.service.metadata?.name), ['pod-0-remote']);
        assert.equal(plan.problems.length, 2);
        assert.match(plan.problems[0]!, /0-starts-with-digit.*DNS-1035/);
        assert.match(plan.problems[1]!, /more than the 63/);
    });

    it('point at the gateway on the gateway port, ready as their pod is', () => {
        const mirror = stored(buildEndpointMirror(remoteHeadless(), link, 'pod-0'), '10.96.1.1');
        const input = { mirror, link, gatewayAddresses: [{ address: '192.0.2.129', family: 'IPv4' as const, ready: true }], gatewayAlive: true };
        const ready = desiredMirrorGroups({ ...input, remoteHasReadyEndpoints: true });
        assert.deepEqual(ready.groups[0]?.endpoints.map((e) => e.addresses[0]), ['192.0.2.129']);
        assert.deepEqual(ready.groups[0]?.ports.map((p) => p.port), [889, 889]);
        assert.equal(ready.annotations['mirror.linkerd.io/remote-svc-fq-name'], 'pod-0.service-one.ns2.svc.cluster.local');
        assert.equal(desiredMirrorGroups({ ...input, remoteHasReadyEndpoints: false }).groups.length, 0);
    });
});

describe('headless mirror slices', () => {
    const mirror = stored(buildHeadlessMirrorService(remoteHeadless(), link), 'None');
    const pod0 = stored(buildEndpointMirror(remoteHeadless(), link, 'pod-0'), '10.96.1.1');
    const pod1 = stored(buildEndpointMirror(remoteHeadless(), link, 'pod-1'), '10.96.1.2');
    const both = new Map([
        ['pod-0', pod0],
        ['pod-1', pod1],
    ]);

    it('carry each hostname with its endpoint mirror’s ClusterIP and the remote pods’ ports', () => {
        const result = headlessMirrorGroups({ mirror, link, remoteSlices: [remoteSlice('a', [endpoint('pod-1', '10.0.0.2'), endpoint('pod-0', '10.0.0.1')])], endpointMirrors: both });
        assert.deepEqual(result.addressTypes, ['IPv4']);
        assert.equal(result.groups.length, 1);
        assert.deepEqual(result.groups[0]!.ports, [
            { name: 'port1', port: 555, protocol: 'TCP' },
            { name: 'port2', port: 666, protocol: 'TCP' },
        ]);
        assert.deepEqual(result.groups[0]!.endpoints, [
            { addresses: ['10.96.1.1'], hostname: 'pod-0', conditions: { ready: true, serving: true, terminating: false } },
            { addresses: ['10.96.1.2'], hostname: 'pod-1', conditions: { ready: true, serving: true, terminating: false } },
        ]);
        assert.equal(result.annotations['mirror.linkerd.io/remote-svc-fq-name'], 'service-one.ns2.svc.cluster.local');
        assert.equal(result.annotations['mirror.linkerd.io/remote-gateway-identity'], 'gateway-identity');
        assert.equal(result.extraLabels['mirror.linkerd.io/cluster-name'], 'remote');
    });

    it('keep a not-ready pod with the remote’s conditions', () => {
        const result = headlessMirrorGroups({ mirror, link, remoteSlices: [remoteSlice('a', [endpoint('pod-0', '10.0.0.1', false)])], endpointMirrors: both });
        assert.deepEqual(result.groups[0]!.endpoints[0]!.conditions, { ready: false, serving: false, terminating: false });
    });

    it('leave out endpoints without a hostname and hostnames whose endpoint mirror has no ClusterIP yet', () => {
        const slices = [remoteSlice('a', [endpoint(undefined, '10.0.0.9'), endpoint('pod-0', '10.0.0.1'), endpoint('pod-1', '10.0.0.2')])];
        const result = headlessMirrorGroups({ mirror, link, remoteSlices: slices, endpointMirrors: new Map([['pod-0', pod0]]) });
        assert.deepEqual(result.groups[0]!.endpoints.map((e) => e.hostname), ['pod-0']);
        assert.equal(headlessMirrorGroups({ mirror, link, remoteSlices: slices, endpointMirrors: new Map() }).groups.length, 0);
    });

    it('list a pod once per address type even when the remote lists it per family', () => {
        const slices = [remoteSlice('a', [endpoint('pod-0', '10.0.0.1', false)]), remoteSlice('b', [endpoint('pod-0', 'fd00::1', true)], 'IPv6')];
        const result = headlessMirrorGroups({ mirror, link, remoteSlices: slices, endpointMirrors: both });
        assert.equal(result.groups.length, 1);
        assert.deepEqual(result.groups[0]!.endpoints, [{ addresses: ['10.96.1.1'], hostname: 'pod-0', conditions: { ready: true, serving: true, terminating: false } }]);
    });

    it('give a dual-stack headless mirror one group per family, from each endpoint mirror’s ClusterIPs', () => {
        const dual = stored(buildHeadlessMirrorService(remoteHeadless({ ipFamilies: ['IPv4', 'IPv6'], ipFamilyPolicy: 'PreferDualStack' }), link), 'None');
        const dual0 = stored(pod0, '10.96.1.1', 'fd00:96::1');
        const result = headlessMirrorGroups({ mirror: dual, link, remoteSlices: [remoteSlice('a', [endpoint('pod-0', '10.0.0.1')])], endpointMirrors: new Map([['pod-0', dual0], ['pod-1', pod1]]) });
        assert.deepEqual(
            result.groups.map((g) => [g.addressType, g.endpoints.map((e) => e.addresses[0])]),
            [
                ['IPv4', ['10.96.1.1']],
                ['IPv6', ['fd00:96::1']],
            ],
        );
    });

    it('keep remote port lists apart', () => {
        const slices = [remoteSlice('a', [endpoint('pod-0', '10.0.0.1')]), remoteSlice('b', [endpoint('pod-1', '10.0.0.2')], 'IPv4', [555, 777])];
        const result = headlessMirrorGroups({ mirror, link, remoteSlices: slices, endpointMirrors: both });
        assert.deepEqual(
            result.groups.map((g) => [g.ports.map((p) => p.port), g.endpoints.map((e) => e.hostname)]),
            [
                [[555, 666], ['pod-0']],
                [[555, 777], ['pod-1']],
            ],
        );
    });

    it('plan into valid slices labelled headless, and nothing to do the second time', () => {
        const result = headlessMirrorGroups({ mirror, link, remoteSlices: [remoteSlice('a', [endpoint('pod-0', '10.0.0.1')])], endpointMirrors: both });
        const owner = { name: 'service-one-remote', namespace: 'ns2', uid: 'uid-1', labels: mirror.metadata!.labels!, headless: true };
        const input = { owner, addressTypes: result.addressTypes, desired: result.groups, maxEndpointsPerSlice: 100, managedBy: MIRROR_SLICE_MANAGED_BY, extraLabels: result.extraLabels, annotations: result.annotations };
        const plan = planSlices({ ...input, existing: [] });
        assert.equal(plan.creates.length, 1);
        const created = { ...plan.creates[0]!, metadata: { ...plan.creates[0]!.metadata, name: 'service-one-remote-abcde', resourceVersion: '1' } };
        assert.equal(created.metadata.labels?.['service.kubernetes.io/headless'], '');
        assert.equal(created.endpoints[0]?.hostname, 'pod-0');
        const again = planSlices({ ...input, existing: [created] });
        assert.equal(again.creates.length + again.updates.length + again.deletes.length, 0);
    });
});

describe('planHeadless', () => {
    /** An endpoint mirror cached under `hostname`, changed by `edit` (its labels, its Link). */
    const cached = (hostname: string, edit: (svc: V1Service) => void = () => {}) => {
        const svc = stored(buildEndpointMirror(remoteHeadless(), link, hostname), '10.96.1.1');
        edit(svc);
        return svc;
    };
    const input = (overrides: Partial<HeadlessPlanInput> = {}): HeadlessPlanInput => ({
        link,
        remote: remoteHeadless(),
        remoteSlices: [remoteSlice('a', [endpoint('pod-0', '10.0.0.1'), endpoint('pod-1', '10.0.0.2', false)])],
        name: 'service-one-remote',
        endpointMirrors: [],
        ...overrides,
    });
    const names = (services: readonly { metadata?: { name?: string } }[]) => services.map((svc) => svc.metadata?.name);

    /** Each row: the input, the endpoint mirrors written (in order), those deleted, and how many hostnames are told as left out and remote slices warned of. */
    const table: Array<[string, Partial<HeadlessPlanInput>, { mirrors: string[]; deletes: string[]; problems: number; warnings: number }]> = [
        ['one endpoint mirror per hostname, ready or not, in hostname order', {}, { mirrors: ['pod-0-remote', 'pod-1-remote'], deletes: [], problems: 0, warnings: 0 }],
        ['the endpoint mirror of a hostname still there is kept', { endpointMirrors: [cached('pod-0')] }, { mirrors: ['pod-0-remote', 'pod-1-remote'], deletes: [], problems: 0, warnings: 0 }],
        ['the endpoint mirror of a hostname gone is deleted', { endpointMirrors: [cached('pod-9')] }, { mirrors: ['pod-0-remote', 'pod-1-remote'], deletes: ['pod-9-remote'], problems: 0, warnings: 0 }],
        ['as is one Linkerd wrote (no Link annotation)', { endpointMirrors: [cached('pod-9', (svc) => delete svc.metadata!.annotations!['mesh-endpoints.io/link'])] }, { mirrors: ['pod-0-remote', 'pod-1-remote'], deletes: ['pod-9-remote'], problems: 0, warnings: 0 }],
        ['but not one of another Link', { endpointMirrors: [cached('pod-9', (svc) => (svc.metadata!.annotations!['mesh-endpoints.io/link'] = 'team-b/remote'))] }, { mirrors: ['pod-0-remote', 'pod-1-remote'], deletes: [], problems: 0, warnings: 0 }],
        ['nor one of another headless mirror or cluster', { endpointMirrors: [cached('pod-8', (svc) => (svc.metadata!.labels!['mirror.linkerd.io/headless-mirror-svc-name'] = 'other-remote')), cached('pod-9', (svc) => (svc.metadata!.labels!['mirror.linkerd.io/cluster-name'] = 'west'))] }, { mirrors: ['pod-0-remote', 'pod-1-remote'], deletes: [], problems: 0, warnings: 0 }],
        ['no endpoints left: every endpoint mirror deleted', { remoteSlices: [], endpointMirrors: [cached('pod-0'), cached('pod-1')] }, { mirrors: [], deletes: ['pod-0-remote', 'pod-1-remote'], problems: 0, warnings: 0 }],
        ['a hostname that cannot name a Service: left out, told, and its old endpoint mirror deleted', { remoteSlices: [remoteSlice('a', [endpoint('pod-0', '10.0.0.1'), endpoint('0-pod', '10.0.0.2')])], endpointMirrors: [cached('pod-1')] }, { mirrors: ['pod-0-remote'], deletes: ['pod-1-remote'], problems: 1, warnings: 0 }],
        ['a remote slice whose ports no slice may hold: its hostnames left out, the slice warned of', { remoteSlices: [remoteSlice('good', [endpoint('pod-0', '10.0.0.1')]), remoteSlice('bad', [endpoint('pod-1', '10.0.0.2')], 'IPv4', [0])] }, { mirrors: ['pod-0-remote'], deletes: [], problems: 0, warnings: 1 }],
    ];
    for (const [name, overrides, want] of table) {
        it(name, () => {
            const plan = planHeadless(input(overrides));
            assert.deepEqual(
                { mirrors: names(plan.mirrors.map((m) => m.service)), deletes: names(plan.deletes), problems: plan.problems.length, warnings: plan.warnings.length },
                want,
            );
        });
    }

    it('names the remote slice whose ports were refused, and why', () => {
        const plan = planHeadless(input({ remoteSlices: [remoteSlice('bad', [endpoint('pod-1', '10.0.0.2')], 'IPv4', [0])] }));
        assert.deepEqual(plan.warnings, [{ reason: 'RemoteEndpointsRefused', message: 'remote EndpointSlice ns2/bad: left out, its ports could not be those of a slice (ports[0].port 0 is not 1 to 65535)' }]);
    });

    it('lets an endpoint mirror replace only an endpoint mirror of this headless mirror and Link', () => {
        const { owner } = planHeadless(input());
        assert.equal(owner(cached('pod-0')), null);
        assert.match(owner(cached('pod-0', (svc) => (svc.metadata!.labels!['mirror.linkerd.io/headless-mirror-svc-name'] = 'other-remote'))) ?? '', /is not an endpoint mirror of service-one-remote/);
        assert.match(owner({ metadata: { name: 'pod-0-remote', namespace: 'ns2' } }) ?? '', /not a mirror of Link/);
    });
});

describe('mirroredRemoteName', () => {
    it('maps an endpoint mirror (and its slices) to the remote of its headless mirror', () => {
        assert.equal(mirroredRemoteName('pod-0-remote', { 'mirror.linkerd.io/headless-mirror-svc-name': 'service-one-remote' }, 'remote'), 'service-one');
        assert.equal(mirroredRemoteName('service-one-remote', {}, 'remote'), 'service-one');
        assert.equal(mirroredRemoteName('service-one-other', undefined, 'remote'), null);
    });
});
