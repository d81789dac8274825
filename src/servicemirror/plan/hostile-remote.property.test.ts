// Hostile remote objects through the mirror's whole pure path (issue 22): a remote Service with
// names at the length limits, spoofed ownership labels, invalid metadata, thousands of ports or
// bad ones, remote slices at addresses no endpoint may hold and with awkward hostnames, and a
// local Service under the mirror's name that may or may not be ours. Every outcome is either a
// refusal with a reason, or a mirror inside the mirror's own set of objects: its name, its
// namespace, labels that say which Link made it, and slices the apiserver accepts (checked by
// the independent oracle in test/oracle/, written without src/).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { DiscoveryV1EndpointPort, V1EndpointSlice, V1Service, V1ServicePort } from '@kubernetes/client-node';
import fc from 'fast-check';
import { awkwardText, dnsLabel, invalidIP, labelSet, servicePorts, validIP } from '../../../test/oracle/adversarial.js';
import { addressErrors, validateEndpointSlice } from '../../../test/oracle/endpointslice-validation.js';
import { mirrorPlan, ownerOf } from '../../../test/oracle/pipelines.js';
import { planSlices } from '../../endpointslice/reconciler.js';
import { headlessMirrorGroups, planHeadless, mirrorsAsHeadless, buildHeadlessMirrorService } from './headless.js';
import { buildMirrorService, exportMode, hasReadyEndpoints, mirrorOwnerProblem, mirrorProblem, planMirrorService, remoteEndpointWarnings } from './mirror.js';
import { CLUSTER_NAME_LABEL, LINK_ANNOTATION, MIRROR_SLICE_MANAGED_BY, MIRRORED_SERVICE_LABEL, REMOTE_DISCOVERY_LABEL, REMOTE_SERVICE_LABEL } from '../api/keys.js';
import { testLink } from '../api/testkit.js';

const NS = 'shop';
/** The reserved keys a mirror may carry, each set by the mirror itself. */
const OWN_LABELS = new Set([MIRRORED_SERVICE_LABEL, CLUSTER_NAME_LABEL, REMOTE_DISCOVERY_LABEL, REMOTE_SERVICE_LABEL]);
const OWN_ANNOTATIONS = new Set(['mirror.linkerd.io/remote-svc-fq-name', 'mirror.linkerd.io/remote-resource-version', LINK_ANNOTATION]);
/** Written without src/: the prefixes no remote may set on a mirror. */
const reserved = (key: string) => /^([^/]*\.)?(mirror\.linkerd\.io|multicluster\.linkerd\.io|mesh-endpoints\.io|kubernetes\.io|k8s\.io)\//.test(key) && !key.startsWith('app.kubernetes.io/');

const spoofKeys = fc.constantFrom(
    MIRRORED_SERVICE_LABEL, CLUSTER_NAME_LABEL, REMOTE_DISCOVERY_LABEL, REMOTE_SERVICE_LABEL, LINK_ANNOTATION, 'mirror.linkerd.io/headless-mirror-svc-name',
    'service.kubernetes.io/service-proxy-name', 'endpointslice.kubernetes.io/skip-mirror', 'kubernetes.io/service-name', 'topology.kubernetes.io/zone',
    'app.kubernetes.io/name', 'mirror.linkerd.io/remote-svc-fq-name', 'sub.mesh-endpoints.io/x',
);
/** What only a lying apiserver sends: invalid keys and values, oversized annotations. */
const invalidMeta = fc.oneof(
    { weight: 12, arbitrary: fc.constant<Record<string, string>>({}) },
    { weight: 1, arbitrary: fc.constantFrom<Record<string, string>>({ 'bad key': 'x' }, { ok: 'v'.repeat(64) }, { ok: 'has space' }, { [`${'p'.repeat(254)}/k`]: 'x' }) },
);
const hugeAnnotation = fc.oneof({ weight: 12, arbitrary: fc.constant<Record<string, string>>({}) }, { weight: 1, arbitrary: fc.constant({ big: 'x'.repeat(270 * 1024) }) });
const hostilePorts = fc.constantFrom<V1ServicePort[]>(
    [{ port: 0 }],
    [{ port: 70000 }],
    [{ name: 'a', port: 80 }, { name: 'a', port: 81 }],
    [{ name: 'a', port: 80 }, { port: 81 }],
    [{ name: 'UPPER', port: 80 }],
    [{ name: 'http', port: 80, protocol: 'HTTP' }],
    [{ name: 'http', port: 80, targetPort: '8080' as unknown as number }],
    [{ name: 'http', port: 80, appProtocol: 'not valid!' }],
    Array.from({ length: 3000 }, (_, i) => ({ name: `p${i}`, port: 1 + i, protocol: 'TCP' })),
);
const slicePorts = fc.oneof(
    fc.constant<DiscoveryV1EndpointPort[]>([{ name: 'tcp', port: 5432, protocol: 'TCP' }]),
    fc.constantFrom<DiscoveryV1EndpointPort[]>([{ name: 'BAD', port: 0, protocol: 'HTTP' }], [{ port: 70000 }], [], Array.from({ length: 200 }, (_, i) => ({ name: `p${i}`, port: 1000 + i }))),
);
const endpoint = fc.record({
    address: fc.oneof({ weight: 3, arbitrary: validIP }, { weight: 1, arbitrary: invalidIP }, { weight: 1, arbitrary: fc.constantFrom('127.0.0.1', '169.254.169.254', '0.0.0.0', '224.0.0.1', '::1', 'fe80::1') }),
    hostname: fc.option(fc.oneof(dnsLabel.map((l) => l.slice(0, 20)), awkwardText, fc.constantFrom('pod-0', 'a-', 'x'.repeat(63))), { nil: undefined, freq: 3 }),
    ready: fc.option(fc.boolean(), { nil: undefined }),
});
const remoteSlice = fc.tuple(fc.nat(99), fc.constantFrom('IPv4', 'IPv6'), fc.array(endpoint, { maxLength: 6 }), slicePorts);
const localKind = fc.constantFrom('none', 'ours', 'users', 'other-link', 'other-cluster', 'endpoint-mirror', 'linkerds');

const input = fc.record({
    cluster: fc.oneof({ weight: 6, arbitrary: fc.constant('east') }, { weight: 1, arbitrary: fc.constantFrom('c'.repeat(40), 'e') }),
    name: fc.oneof({ weight: 4, arbitrary: fc.tuple(dnsLabel, fc.constantFrom(10, 20, 50)).map(([l, n]) => `s${l}`.slice(0, n).replace(/-+$/, '')) }, { weight: 1, arbitrary: awkwardText }, { weight: 1, arbitrary: fc.constantFrom('a'.repeat(63), 'a'.repeat(58)) }),
    export: fc.oneof({ weight: 6, arbitrary: fc.constant('true') }, { weight: 2, arbitrary: fc.constantFrom('remote-discovery', 'no') }),
    headless: fc.boolean(),
    /** 0: an ExternalName Service (one in twenty). */
    externalName: fc.nat(19),
    labels: fc.tuple(labelSet, fc.dictionary(spoofKeys, fc.constantFrom('true', 'west', 'false', ''), { maxKeys: 6 }), invalidMeta),
    annotations: fc.tuple(fc.dictionary(spoofKeys, fc.constantFrom('x', 'evil.example.com'), { maxKeys: 6 }), invalidMeta, hugeAnnotation),
    ports: fc.oneof({ weight: 8, arbitrary: servicePorts(40, 1) }, { weight: 1, arbitrary: hostilePorts }, { weight: 1, arbitrary: fc.constant<V1ServicePort[]>([]) }),
    slices: fc.array(remoteSlice, { maxLength: 3 }),
    local: localKind,
});

/** Addresses that must never count as a pod: loopback, link-local (cloud metadata), unspecified, multicast, broadcast. */
const DANGEROUS = new Set(['127.0.0.1', '127.8.9.10', '169.254.169.254', '0.0.0.0', '0.1.2.3', '224.0.0.1', '224.0.0.251', '239.255.255.250', '255.255.255.255', '::', '::1', 'fe80::1', 'febf::ffff', 'ff02::1', 'ff12::1:2', 'ff05::1:3', '::ffff:127.0.0.1', '::ffff:169.254.0.1', '::ffff:0.0.0.0', '::ffff:224.0.0.5']);
/** Some address an endpoint could hold, in any spelling (the oracle's IPv4 rule, or an IPv6 literal the oracle takes in canonical form). */
const endpointAddress = (a: string) => !DANGEROUS.has(a) && (addressErrors(a, 'IPv4', { strictIP: false }).length === 0 || (a.includes(':') && addressErrors(a, 'IPv6', { strictIP: false }).length <= 1 && !/[%\s\[\]/g-z]/i.test(a)));

type Input = typeof input extends fc.Arbitrary<infer T> ? T : never;

function remoteOf(g: Input): { remote: V1Service; slices: V1EndpointSlice[] } {
    const [labels, spoofed, bad] = g.labels;
    const exportLabel: Record<string, string> = g.export === 'no' ? {} : { 'mirror.linkerd.io/exported': g.export };
    const remote: V1Service = {
        metadata: { name: g.name, namespace: NS, resourceVersion: '41', labels: { ...labels, ...spoofed, ...bad, ...exportLabel }, annotations: Object.assign({}, ...g.annotations) },
        spec: { ports: [...g.ports], ...(g.headless && { clusterIP: 'None' }), ...(g.externalName === 0 && { type: 'ExternalName' }) },
    };
    const slices = g.slices.map(([i, addressType, endpoints, ports]): V1EndpointSlice => ({
        metadata: { name: `${g.name}-${i}`.slice(0, 253), namespace: NS, labels: { 'kubernetes.io/service-name': g.name } },
        addressType,
        endpoints: endpoints.map((e) => ({ addresses: [e.address], ...(e.hostname !== undefined && { hostname: e.hostname }), ...(e.ready !== undefined && { conditions: { ready: e.ready } }) })),
        ports,
    }));
    return { remote, slices };
}

/** The local Service under the mirror's name, as the cache or a GET would give it. */
function localOf(kind: Input['local'], desired: V1Service, cluster: string): V1Service | undefined {
    const base = { name: desired.metadata!.name, namespace: NS, uid: 'local-uid', resourceVersion: '5' };
    const mirrorLabels = { [MIRRORED_SERVICE_LABEL]: 'true', [CLUSTER_NAME_LABEL]: cluster };
    switch (kind) {
        case 'none':
            return undefined;
        case 'ours':
            return { ...desired, metadata: { ...desired.metadata, ...base } };
        case 'linkerds':
            return { metadata: { ...base, labels: mirrorLabels }, spec: { ports: [{ port: 1 }] } };
        case 'users':
            return { metadata: { ...base, labels: { app: 'mine' } }, spec: { selector: { app: 'mine' }, ports: [{ port: 8080 }] } };
        case 'other-link':
            return { metadata: { ...base, labels: mirrorLabels, annotations: { [LINK_ANNOTATION]: 'team-b/east' } }, spec: { ports: [{ port: 80 }] } };
        case 'other-cluster':
            return { metadata: { ...base, labels: { ...mirrorLabels, [CLUSTER_NAME_LABEL]: `${cluster}x` } }, spec: { ports: [{ port: 80 }] } };
        case 'endpoint-mirror':
            return { metadata: { ...base, labels: { ...mirrorLabels, 'mirror.linkerd.io/headless-mirror-svc-name': 'db-east' } }, spec: { ports: [{ port: 80 }] } };
    }
}

/** As stored: ClusterIPs allocated, a uid. */
function stored(service: V1Service, i: number): V1Service {
    const clusterIP = service.spec?.clusterIP === 'None' ? 'None' : `10.96.${i >> 8}.${i & 255}`;
    return { ...service, metadata: { ...service.metadata, uid: `uid-${i}`, resourceVersion: '1' }, spec: { ...service.spec, clusterIP, clusterIPs: [clusterIP], ipFamilies: ['IPv4'] } };
}

/** What the mirror itself says of a Service it built: independent of mirror.ts. */
function assertOwnService(service: V1Service, name: string, cluster: string, link: string, what: string) {
    assert.equal(service.metadata?.name, name, what);
    assert.equal(service.metadata?.namespace, NS, what);
    assert.match(name, /^[a-z]([-a-z0-9]*[a-z0-9])?$/, what);
    assert.ok(name.length <= 63, what);
    const labels = service.metadata?.labels ?? {};
    assert.equal(labels[MIRRORED_SERVICE_LABEL], 'true', what);
    assert.equal(labels[CLUSTER_NAME_LABEL], cluster, what);
    for (const key of Object.keys(labels)) if (reserved(key)) assert.ok(OWN_LABELS.has(key) || key === 'mirror.linkerd.io/headless-mirror-svc-name', `${what}: label ${key}`);
    const annotations = service.metadata?.annotations ?? {};
    assert.equal(annotations[LINK_ANNOTATION], link, what);
    for (const key of Object.keys(annotations)) if (reserved(key)) assert.ok(OWN_ANNOTATIONS.has(key), `${what}: annotation ${key}`);
    assert.equal(service.spec?.selector, undefined, what);
    for (const port of service.spec?.ports ?? []) assert.ok(Number.isInteger(port.port) && port.port >= 1 && port.port <= 65535, `${what}: port ${port.port}`);
}

function assertValidSlices(slices: V1EndpointSlice[], owner: V1Service, what: string) {
    for (const slice of slices) {
        assert.deepEqual(validateEndpointSlice(slice), [], `${what}: ${JSON.stringify(slice).slice(0, 400)}`);
        assert.equal(slice.metadata?.namespace, NS);
        assert.equal(slice.metadata?.labels?.['kubernetes.io/service-name'], owner.metadata?.name);
        assert.equal(slice.metadata?.labels?.['endpointslice.kubernetes.io/managed-by'], MIRROR_SLICE_MANAGED_BY);
        assert.equal(slice.metadata?.ownerReferences?.[0]?.uid, owner.metadata?.uid);
    }
}

describe('the mirror planner under hostile remote objects', () => {
    it('gives a refusal with a reason, or mirrors inside the mirror’s own set of objects that the apiserver accepts', () => {
        const seen = { notExported: 0, invalid: 0, notOwned: 0, mirrored: 0, headless: 0, slices: 0, warned: 0 };
        fc.assert(
            fc.property(input, (g) => {
                const link = testLink({ targetClusterName: g.cluster });
                const linkKey = `${link.metadata.namespace}/${link.metadata.name}`;
                const { remote, slices } = remoteOf(g);
                const mode = exportMode(remote, link);
                if (mode === 'none') {
                    seen.notExported++;
                    return;
                }
                // Every remote address an endpoint may not hold is told, naming its slice.
                const warnings = remoteEndpointWarnings(slices);
                for (const slice of slices) {
                    // What the apiserver itself refuses in either family (loopback, link-local, unspecified, junk) must be told.
                    const bad = (slice.endpoints ?? []).flatMap((e) => e.addresses).filter((a) => DANGEROUS.has(a));
                    if (bad.length > 0) {
                        seen.warned++;
                        assert.ok(warnings.some((w) => w.startsWith(`remote EndpointSlice ${NS}/${slice.metadata!.name}: left out`)), `${bad[0]} in ${slice.metadata!.name} not told`);
                    }
                }
                const problem = mirrorProblem(remote, link);
                if (problem !== null) {
                    seen.invalid++;
                    assert.ok(problem.length > 0);
                    return;
                }
                const name = `${g.name}-${g.cluster}`;
                const headless = mode === 'mirror' && mirrorsAsHeadless(remote, slices, undefined);
                const desired = headless ? buildHeadlessMirrorService(remote, link) : buildMirrorService(remote, link);
                assertOwnService(desired, name, g.cluster, linkKey, 'the mirror');
                const local = localOf(g.local, desired, g.cluster);
                const plan = planMirrorService(local, desired, (svc) => mirrorOwnerProblem(svc, link));
                if (plan.action === 'refuse') {
                    seen.notOwned++;
                    assert.ok(['users', 'other-link', 'other-cluster', 'endpoint-mirror'].includes(g.local), g.local);
                    assert.match(plan.problem, new RegExp(`^${NS}/${name} exists and is not a mirror of Link ${link.metadata.name}: `));
                    return;
                }
                assert.ok(['none', 'ours', 'linkerds'].includes(g.local), g.local);
                seen.mirrored++;
                const mirror = stored(desired, 1);
                if (!headless) {
                    const gatewayAddresses = [{ address: '192.0.2.7', family: 'IPv4' as const, ready: true }];
                    const sliced = mirrorPlan({ mirror, link, gatewayAddresses, remoteHasReadyEndpoints: hasReadyEndpoints(slices), gatewayAlive: true }, []);
                    assertValidSlices(sliced.creates, mirror, 'a mirror slice');
                    for (const slice of sliced.creates) for (const e of slice.endpoints) assert.deepEqual(e.addresses, ['192.0.2.7']);
                    if (mode === 'remote-discovery') assert.equal(sliced.creates.length, 0);
                    seen.slices += sliced.creates.length;
                    return;
                }
                seen.headless++;
                const endpointPlan = planHeadless({ link, remote, remoteSlices: slices, name: desired.metadata!.name!, endpointMirrors: [] });
                const endpointMirrors = new Map<string, V1Service>();
                for (const [i, want] of endpointPlan.mirrors.entries()) {
                    assertOwnService(want.service, `${want.hostname}-${g.cluster}`, g.cluster, linkKey, 'an endpoint mirror');
                    endpointMirrors.set(want.hostname, stored(want.service, i + 2));
                }
                const groups = headlessMirrorGroups({ mirror, link, remoteSlices: slices, endpointMirrors });
                const sliced = planSlices({ owner: ownerOf(mirror), addressTypes: groups.addressTypes, desired: groups.groups, existing: [], maxEndpointsPerSlice: 100, managedBy: MIRROR_SLICE_MANAGED_BY, extraLabels: groups.extraLabels, annotations: groups.annotations });
                assertValidSlices(sliced.creates, mirror, 'a headless mirror slice');
                // Only hostnames of remote endpoints at an address an endpoint may hold, at their endpoint mirror's ClusterIP.
                for (const slice of sliced.creates) {
                    for (const e of slice.endpoints) {
                        const remoteAt = slices.flatMap((s) => s.endpoints ?? []).filter((r) => r.hostname === e.hostname).flatMap((r) => r.addresses);
                        assert.ok(remoteAt.some(endpointAddress), `${e.hostname} at ${remoteAt}`);
                        assert.deepEqual(e.addresses, endpointMirrors.get(e.hostname!)?.spec?.clusterIPs);
                    }
                    seen.slices++;
                }
            }),
            { numRuns: 600, seed: 2222 },
        );
        // Each branch was taken, so none of the assertions above is vacuous.
        for (const [branch, n] of Object.entries(seen)) assert.ok(n > 0, `${branch} never happened: ${JSON.stringify(seen)}`);
    });
});
