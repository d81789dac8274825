// The cached forms of Services and remote EndpointSlices (compact.ts) against the whole objects
// they came from: every decision of the mirror and every object it builds are the same from
// either, and fields the mirror does not read leave the compact form as it was.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1EndpointSlice, V1Service } from '@kubernetes/client-node';
import fc from 'fast-check';
import { anySlice, labelSet, servicePorts, validIPv4, validIPv6Text } from '../../../test/oracle/adversarial.js';
import { mirrorPlan } from '../../../test/oracle/pipelines.js';
import { SharedValues } from '../../kube/shared-values.js';
import { sameButResourceVersion, type KubeObject } from '../../kube/store.js';
import { compactRemoteSlice, compactService } from './compact.js';
import { desiredMirrorGroups, mirrorAddressTypes } from '../plan/endpoints.js';
import { federatedMemberProblem } from '../plan/federated.js';
import { buildEndpointMirror, buildHeadlessMirrorService, headlessMirrorGroups, mirrorsAsHeadless, remoteHosts } from '../plan/headless.js';
import { LAST_APPLIED_ANNOTATION } from '../api/keys.js';
import { buildMirrorService, exportMode, hasReadyEndpoints, remoteEndpointWarnings, isMirrorOf, mirrorProblem, mirrorServiceChanged, mirrorServiceNeedsRecreate } from '../plan/mirror.js';
import { testLink } from '../api/testkit.js';

const NS = 'shop';
const SERVICE_NAME = 'kubernetes.io/service-name';
/** The informer hands over a fresh copy parsed from JSON. */
const asServed = <T>(value: T): T => JSON.parse(JSON.stringify(value)) as T;
/** What an informer's transform is handed. */
const served = (value: object) => JSON.parse(JSON.stringify(value)) as KubeObject;

const links = fc.constantFrom(
    testLink(),
    testLink({ targetClusterName: 'east-1', selector: { matchLabels: { app: 'web' } } }),
    testLink({ excludedLabels: ['tier', 'example.com/*'], excludedAnnotations: ['note'] }),
    testLink({ gatewayAddress: '' }),
);

const clusterIPs = fc.oneof(
    fc.constant({ clusterIP: 'None' }),
    validIPv4.map((ip) => ({ clusterIP: ip, clusterIPs: [ip] })),
    fc.tuple(validIPv4, validIPv6Text).map(([a, b]) => ({ clusterIP: a, clusterIPs: [a, b] })),
    validIPv6Text.map((ip) => ({ clusterIP: ip })),
    fc.constant({}),
);

/** A Service as an apiserver serves it, with what nothing here reads (status, kubectl's annotation, nodePorts, ...). */
const anyService = fc
    .record({
        name: fc.constantFrom('web', 'db', 'api', `s${'v'.repeat(60)}`, 'Bad_Name'),
        labels: fc.oneof(
            labelSet,
            labelSet.map((l) => ({ ...l, 'mirror.linkerd.io/exported': 'true' })),
            fc.constant({ 'mirror.linkerd.io/exported': 'true', app: 'web', tier: 'front' }),
            fc.constant({ 'mirror.linkerd.io/exported': 'remote-discovery', app: 'web' }),
        ),
        annotations: fc.dictionary(fc.constantFrom('note', LAST_APPLIED_ANNOTATION, 'config.linkerd.io/opaque-ports', 'service.kubernetes.io/topology-mode', 'example.com/x'), fc.string({ maxLength: 30 }), { maxKeys: 4 }),
        type: fc.constantFrom(undefined, 'ClusterIP', 'NodePort', 'LoadBalancer', 'ExternalName'),
        ips: clusterIPs,
        families: fc.constantFrom<string[] | undefined>(undefined, ['IPv4'], ['IPv6'], ['IPv4', 'IPv6']),
        policy: fc.constantFrom(undefined, 'SingleStack', 'PreferDualStack', 'RequireDualStack'),
        ports: fc.oneof(servicePorts(4, 1), servicePorts(4, 1), servicePorts(0)),
        nodePorts: fc.boolean(),
        selector: fc.constantFrom<Record<string, string> | undefined>(undefined, {}, { app: 'web' }),
    })
    .map((g): V1Service => {
        const spec: V1Service['spec'] = { ...g.ips, ports: g.ports.map((p, i) => (g.nodePorts ? { ...p, nodePort: 30000 + i } : p)), sessionAffinity: 'None', internalTrafficPolicy: 'Cluster' };
        if (g.type) spec.type = g.type;
        if (g.families) spec.ipFamilies = g.families;
        if (g.policy) spec.ipFamilyPolicy = g.policy;
        if (g.selector) spec.selector = g.selector;
        return asServed<V1Service>({
            apiVersion: 'v1',
            kind: 'Service',
            metadata: { name: g.name, namespace: NS, uid: `uid-${g.name}`, resourceVersion: '42', creationTimestamp: '2026-12-01T07:00:00Z', labels: g.labels, annotations: g.annotations },
            spec,
            status: { loadBalancer: {} },
        } as unknown as V1Service);
    });

/** Remote slices of one Service, with hostnames sometimes (a StatefulSet behind a headless Service). */
const remoteSlices = fc.array(
    fc.tuple(anySlice, fc.array(fc.constantFrom(undefined, 'pod-0', 'pod-1', 'web-2'), { maxLength: 4 }), fc.nat()).map(([slice, hosts, i]) => {
        const endpoints = slice.endpoints.map((e, j) => (hosts[j] === undefined ? { ...e, hostname: undefined } : { ...e, hostname: hosts[j] }));
        return asServed({ ...slice, apiVersion: 'discovery.k8s.io/v1', kind: 'EndpointSlice', metadata: { ...slice.metadata, name: `web-${i}`, namespace: NS, resourceVersion: String(i), labels: { ...slice.metadata?.labels, [SERVICE_NAME]: 'web' } }, endpoints });
    }),
    { maxLength: 3 },
) as fc.Arbitrary<V1EndpointSlice[]>;

const compactSlices = (slices: V1EndpointSlice[], hostnames: boolean, shared = new SharedValues()) => slices.map((s) => compactRemoteSlice(served(s), hostnames, shared));

describe('the cached form of a Service the mirror builds from', () => {
    it('gives the same export decision, problems and mirror Services as the whole object', () => {
        let mirrored = 0;
        fc.assert(
            fc.property(anyService, links, remoteSlices, (whole, link, slices) => {
                const cached = compactService(served(whole), 'source', new SharedValues());
                assert.equal(exportMode(cached, link), exportMode(whole, link));
                assert.equal(mirrorProblem(cached, link), mirrorProblem(whole, link));
                assert.equal(federatedMemberProblem(cached), federatedMemberProblem(whole));
                const byHost = compactSlices(slices, true);
                assert.equal(mirrorsAsHeadless(cached, byHost, undefined), mirrorsAsHeadless(whole, slices, undefined));
                if (exportMode(whole, link) === 'none' || mirrorProblem(whole, link) !== null) return;
                assert.deepEqual(buildMirrorService(cached, link), buildMirrorService(whole, link));
                assert.deepEqual(buildHeadlessMirrorService(cached, link), buildHeadlessMirrorService(whole, link));
                assert.deepEqual(buildEndpointMirror(cached, link, 'pod-0'), buildEndpointMirror(whole, link, 'pod-0'));
                mirrored++;
            }),
            { numRuns: 300, seed: 101 },
        );
        assert.ok(mirrored > 40, `only ${mirrored} of 300 Services were mirrorable`);
    });
});

describe('the cached form of a mirror Service', () => {
    it('is judged, changed and given slices as the whole object is', () => {
        const edits = fc.record({
            labels: fc.constantFrom(undefined, {}, { extra: 'x' }),
            annotations: fc.constantFrom(undefined, { [LAST_APPLIED_ANNOTATION]: '{}' }, { note: 'hand-made' }),
            selector: fc.constantFrom(undefined, { app: 'web' }),
            ports: fc.option(servicePorts(3), { nil: undefined }),
            ips: clusterIPs,
        });
        fc.assert(
            fc.property(anyService, links, edits, (remote, link, edit) => {
                if (exportMode(remote, link) === 'none' || mirrorProblem(remote, link) !== null) return;
                const desired = buildMirrorService(remote, link);
                // As stored: the apiserver's fields, then someone's edits.
                const stored = asServed({
                    ...desired,
                    metadata: { ...desired.metadata, uid: 'mirror-uid', resourceVersion: '7', labels: { ...desired.metadata!.labels, ...edit.labels }, annotations: { ...desired.metadata!.annotations, ...edit.annotations } },
                    spec: { ...desired.spec, ...edit.ips, ports: edit.ports ?? desired.spec!.ports, selector: edit.selector, sessionAffinity: 'None' },
                    status: { loadBalancer: {} },
                }) as V1Service;
                const cached = compactService(served(stored), 'mirror', new SharedValues());
                assert.equal(isMirrorOf(cached, link), isMirrorOf(stored, link));
                assert.equal(mirrorServiceChanged(cached, desired), mirrorServiceChanged(stored, desired));
                assert.equal(mirrorServiceNeedsRecreate(cached, desired), mirrorServiceNeedsRecreate(stored, desired));
                assert.deepEqual(mirrorAddressTypes(cached), mirrorAddressTypes(stored));
                const gatewayAddresses = [{ address: '192.0.2.7', family: 'IPv4' as const, ready: true }, { address: '2001:db8::7', family: 'IPv6' as const, ready: true }];
                const input = { link, gatewayAddresses, remoteHasReadyEndpoints: true, gatewayAlive: true };
                assert.deepEqual(desiredMirrorGroups({ ...input, mirror: cached }), desiredMirrorGroups({ ...input, mirror: stored }));
                assert.deepEqual(mirrorPlan({ ...input, mirror: cached }, []), mirrorPlan({ ...input, mirror: stored }, []));
            }),
            { numRuns: 300, seed: 102 },
        );
    });
});

describe('the cached form of a remote EndpointSlice', () => {
    it('says whether the Service has a ready endpoint, and with hostnames what headless mirrors read', () => {
        fc.assert(
            fc.property(remoteSlices, clusterIPs, (slices, ips) => {
                for (const hostnames of [false, true]) {
                    assert.equal(hasReadyEndpoints(compactSlices(slices, hostnames)), hasReadyEndpoints(slices));
                    assert.deepEqual(remoteEndpointWarnings(compactSlices(slices, hostnames)), remoteEndpointWarnings(slices));
                }
                const cached = compactSlices(slices, true);
                assert.deepEqual(remoteHosts(cached), remoteHosts(slices));
                const link = testLink();
                const mirror: V1Service = { metadata: { name: 'web-remote', namespace: NS, uid: 'u' }, spec: { clusterIP: 'None', ipFamilies: ['IPv4', 'IPv6'] } };
                const endpointMirror = (host: string): V1Service => asServed({ metadata: { name: `${host}-remote`, namespace: NS }, spec: { ...ips, sessionAffinity: 'None' } });
                const hosts = remoteHosts(slices).map((h) => h.hostname);
                const whole = new Map(hosts.map((h) => [h, endpointMirror(h)]));
                const compact = new Map(hosts.map((h) => [h, compactService(served(endpointMirror(h)), 'mirror', new SharedValues())]));
                assert.deepEqual(headlessMirrorGroups({ mirror, link, remoteSlices: cached, endpointMirrors: compact }), headlessMirrorGroups({ mirror, link, remoteSlices: slices, endpointMirrors: whole }));
            }),
            { numRuns: 300, seed: 103 },
        );
    });

    it('is unchanged by what the mirror does not read: a ready Service stays one cached form', () => {
        fc.assert(
            fc.property(remoteSlices, fc.string({ maxLength: 20 }), (slices, noise) => {
                for (const slice of slices) {
                    // Other pods, nodes, zones and targets; the same readiness and hostnames.
                    const moved = asServed({
                        ...slice,
                        metadata: { ...slice.metadata, resourceVersion: '999', annotations: { noise } },
                        endpoints: slice.endpoints.map((e) => ({ ...e, nodeName: noise, zone: noise, targetRef: { kind: 'Pod', name: noise } })),
                    });
                    const shared = new SharedValues();
                    assert.ok(sameButResourceVersion(compactRemoteSlice(served(slice), true, shared), compactRemoteSlice(served(moved), true, shared)));
                    // Pods moving between usable addresses (refused ones are kept, for the Warning that names them).
                    const at = (s: V1EndpointSlice, address: string): V1EndpointSlice => ({ ...s, endpoints: s.endpoints.map((e) => ({ ...e, addresses: e.addresses.map(() => address) })) });
                    assert.ok(sameButResourceVersion(compactRemoteSlice(served(at(slice, '10.1.1.1')), false, shared), compactRemoteSlice(served(at(moved, '10.9.9.9')), false, shared)));
                }
            }),
            { numRuns: 200, seed: 104 },
        );
    });
});
