import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1EndpointSlice, V1Service } from '@kubernetes/client-node';
import type { Link } from '../api/link.js';
import { testLink } from '../api/testkit.js';
import {
    buildMirrorNamespace,
    buildMirrorService,
    exportMode,
    hasReadyEndpoints,
    isMirrorOf,
    mirrorProblem,
    mirrorServiceChanged,
    mirrorServiceName,
    mirrorServiceNeedsRecreate,
    remoteServiceName,
} from './mirror.js';

const link = (spec: Record<string, unknown> = {}): Link => testLink(spec);

function remoteService(labels: Record<string, string>, extra: Partial<V1Service['spec']> = {}, annotations: Record<string, string> = {}): V1Service {
    return {
        apiVersion: 'v1',
        kind: 'Service',
        metadata: { name: 'service-one', namespace: 'ns1', resourceVersion: '111', labels, annotations },
        spec: {
            clusterIP: '10.96.0.10',
            ports: [
                { name: 'port1', protocol: 'TCP', port: 555, targetPort: 555 },
                { name: 'port2', protocol: 'TCP', port: 666, targetPort: 'http' },
            ],
            ...extra,
        },
    };
}

const exported = { 'mirror.linkerd.io/exported': 'true' };

/** What the apiserver returns after creating `service`: defaulted and allocated fields added. */
function readBack(service: V1Service): V1Service {
    const copy = structuredClone(service);
    copy.metadata = { ...copy.metadata, uid: 'uid-1', resourceVersion: '9', creationTimestamp: new Date(0) };
    copy.spec = {
        ...copy.spec,
        clusterIP: '10.96.7.7',
        clusterIPs: ['10.96.7.7'],
        sessionAffinity: 'None',
        internalTrafficPolicy: 'Cluster',
        ipFamilies: copy.spec?.ipFamilies ?? ['IPv4'],
        ipFamilyPolicy: copy.spec?.ipFamilyPolicy ?? 'SingleStack',
        ports: (copy.spec?.ports ?? []).map((p) => ({ ...p, protocol: p.protocol ?? 'TCP', targetPort: p.targetPort ?? p.port })),
    };
    return copy;
}

describe('export selection', () => {
    it('mirrors a remote Service whose labels the Link selector matches', () => {
        assert.equal(exportMode(remoteService(exported), link()), 'mirror');
        assert.equal(exportMode(remoteService({ 'mirror.linkerd.io/exported': 'false' }), link()), 'none');
        assert.equal(exportMode(remoteService({}), link()), 'none');
    });

    it('mirrors by matchExpressions too', () => {
        const l = link({ selector: { matchExpressions: [{ key: 'tier', operator: 'In', values: ['web', 'api'] }] } });
        assert.equal(exportMode(remoteService({ tier: 'api' }), l), 'mirror');
        assert.equal(exportMode(remoteService({ tier: 'db' }), l), 'none');
    });

    it('exports nothing through an empty or absent selector', () => {
        assert.equal(exportMode(remoteService(exported), link({ selector: {} })), 'none');
        assert.equal(exportMode(remoteService({ any: 'label' }), link({ selector: {} })), 'none');
        assert.equal(exportMode(remoteService(exported), link({ selector: undefined })), 'none');
        assert.equal(exportMode(remoteService({ 'mirror.linkerd.io/exported': 'remote-discovery' }), link({ remoteDiscoverySelector: {} })), 'none');
    });

    it('exports in remote-discovery mode through remoteDiscoverySelector, even when the selector also matches', () => {
        assert.equal(exportMode(remoteService({ 'mirror.linkerd.io/exported': 'remote-discovery' }), link()), 'remote-discovery');
        const both = link({ selector: { matchLabels: { app: 'a' } }, remoteDiscoverySelector: { matchLabels: { app: 'a' } } });
        assert.equal(exportMode(remoteService({ app: 'a' }), both), 'remote-discovery');
    });

    it('exports only in remote-discovery mode through a Link without a gateway', () => {
        const noGateway = link({ gatewayAddress: '', gatewayPort: '' });
        assert.equal(exportMode(remoteService(exported), noGateway), 'none');
        assert.equal(exportMode(remoteService({ 'mirror.linkerd.io/exported': 'remote-discovery' }), noGateway), 'remote-discovery');
    });

    it('exports nothing through a local-mirror Link (empty targetClusterName)', () => {
        assert.equal(exportMode(remoteService(exported), link({ targetClusterName: '' })), 'none');
    });
});

describe('mirror names', () => {
    it('are <name>-<targetClusterName>, and map back to the remote name', () => {
        assert.deepEqual(mirrorServiceName('service-one', 'remote'), { name: 'service-one-remote' });
        assert.equal(remoteServiceName('service-one-remote', 'remote'), 'service-one');
        assert.equal(remoteServiceName('service-one-other', 'remote'), null);
        assert.equal(remoteServiceName('-remote', 'remote'), null);
    });

    it('are refused beyond 63 characters instead of producing an invalid Service', () => {
        const remote = 'a'.repeat(56);
        assert.deepEqual(mirrorServiceName(remote, 'remote'), { name: `${remote}-remote` });
        const tooLong = mirrorServiceName(`${remote}x`, 'remote');
        assert.ok('error' in tooLong);
        assert.match(tooLong.error, /64 characters, more than the 63/);
    });

    it('are refused when the cluster name makes them no DNS-1035 label', () => {
        assert.ok('error' in mirrorServiceName('svc', 'East_1'));
        assert.ok('error' in mirrorServiceName('svc', ''));
    });

    it('make a too-long mirror a problem reported instead of built', () => {
        const remote = remoteService(exported);
        remote.metadata!.name = 'b'.repeat(60);
        assert.match(mirrorProblem(remote, link()) ?? '', /more than the 63/);
        assert.throws(() => buildMirrorService(remote, link()), /not mirrorable/);
    });

    it('make a remote without ports or of type ExternalName a problem', () => {
        assert.match(mirrorProblem(remoteService(exported, { ports: [] }), link()) ?? '', /no ports/);
        assert.match(mirrorProblem(remoteService(exported, { type: 'ExternalName', externalName: 'x.example' }), link()) ?? '', /ExternalName/);
        assert.equal(mirrorProblem(remoteService(exported), link()), null);
    });
});

describe('the mirror Service', () => {
    it('is named <name>-<cluster> in the remote namespace, ClusterIP, without selector or clusterIP', () => {
        const mirror = buildMirrorService(remoteService({ ...exported, lk: 'lv' }, { selector: { app: 'x' }, type: 'LoadBalancer' }), link());
        assert.equal(mirror.metadata?.name, 'service-one-remote');
        assert.equal(mirror.metadata?.namespace, 'ns1');
        assert.equal(mirror.spec?.type, 'ClusterIP');
        assert.equal(mirror.spec?.selector, undefined);
        assert.equal(mirror.spec?.clusterIP, undefined);
    });

    it('copies remote labels except mirror.linkerd.io/* and adds mirrored-service and cluster-name', () => {
        const mirror = buildMirrorService(remoteService({ ...exported, lk: 'lv', 'mirror.linkerd.io/other': 'x' }), link());
        assert.deepEqual(mirror.metadata?.labels, {
            lk: 'lv',
            'mirror.linkerd.io/mirrored-service': 'true',
            'mirror.linkerd.io/cluster-name': 'remote',
        });
    });

    it('drops excluded labels, exact and by /* prefix', () => {
        const l = link({ excludedLabels: ['team', 'example.com/*'] });
        const mirror = buildMirrorService(
            remoteService({ ...exported, team: 'a', teams: 'b', 'example.com/owner': 'c', 'example.com.au/x': 'd', 'example.com': 'e' }),
            l,
        );
        const labels = mirror.metadata?.labels ?? {};
        assert.equal(labels.team, undefined);
        assert.equal(labels['example.com/owner'], undefined);
        assert.equal(labels.teams, 'b');
        assert.equal(labels['example.com.au/x'], 'd');
        assert.equal(labels['example.com'], 'e');
    });

    it('copies remote annotations except excluded and topology ones, and adds the fq-name, resource version and Link', () => {
        const l = link({ excludedAnnotations: ['secret.example.com/*', 'note'], targetClusterDomain: 'east.example' });
        const mirror = buildMirrorService(
            remoteService(exported, {}, {
                note: 'n',
                keep: 'k',
                'secret.example.com/token': 't',
                'service.kubernetes.io/topology-aware-hints': 'auto',
                'service.kubernetes.io/topology-mode': 'Auto',
            }),
            l,
        );
        assert.deepEqual(mirror.metadata?.annotations, {
            keep: 'k',
            'mirror.linkerd.io/remote-svc-fq-name': 'service-one.ns1.svc.east.example',
            'mirror.linkerd.io/remote-resource-version': '111',
            'mesh-endpoints.io/link': 'linkerd-multicluster/remote',
        });
    });

    it('always keeps the opaque-ports annotation, even when excluded', () => {
        const l = link({ excludedAnnotations: ['config.linkerd.io/*'] });
        const mirror = buildMirrorService(remoteService(exported, {}, { 'config.linkerd.io/opaque-ports': '5432', 'config.linkerd.io/x': 'y' }), l);
        assert.equal(mirror.metadata?.annotations?.['config.linkerd.io/opaque-ports'], '5432');
        assert.equal(mirror.metadata?.annotations?.['config.linkerd.io/x'], undefined);
    });

    it('carries the remote-discovery and remote-service labels in remote-discovery mode only', () => {
        const rd = buildMirrorService(remoteService({ 'mirror.linkerd.io/exported': 'remote-discovery' }), link());
        assert.equal(rd.metadata?.labels?.['multicluster.linkerd.io/remote-discovery'], 'remote');
        assert.equal(rd.metadata?.labels?.['multicluster.linkerd.io/remote-service'], 'service-one');
        const gw = buildMirrorService(remoteService({ ...exported, 'multicluster.linkerd.io/remote-discovery': 'elsewhere' }), link());
        assert.equal(gw.metadata?.labels?.['multicluster.linkerd.io/remote-discovery'], undefined);
    });

    it('copies the remote ports with name, protocol, port, targetPort and appProtocol, dropping nodePort', () => {
        const mirror = buildMirrorService(
            remoteService(exported, {
                type: 'NodePort',
                ports: [
                    { name: 'http', port: 80, targetPort: 8080, nodePort: 30080, appProtocol: 'http' },
                    { name: 'dns', port: 53, protocol: 'UDP' },
                ],
            }),
            link(),
        );
        assert.deepEqual(mirror.spec?.ports, [
            { name: 'http', port: 80, protocol: 'TCP', targetPort: 8080, appProtocol: 'http' },
            { name: 'dns', port: 53, protocol: 'UDP', targetPort: 53 },
        ]);
    });

    it('mirrors a headless remote as an ordinary ClusterIP Service', () => {
        const mirror = buildMirrorService(remoteService(exported, { clusterIP: 'None', clusterIPs: ['None'] }), link());
        assert.equal(mirror.spec?.clusterIP, undefined);
        assert.equal(mirror.spec?.type, 'ClusterIP');
    });

    it('follows the remote IP families, asking for dual-stack rather than requiring it', () => {
        const single = buildMirrorService(remoteService(exported, { ipFamilies: ['IPv6'], ipFamilyPolicy: 'SingleStack' }), link());
        assert.deepEqual([single.spec?.ipFamilies, single.spec?.ipFamilyPolicy], [['IPv6'], 'SingleStack']);
        const dual = buildMirrorService(remoteService(exported, { ipFamilies: ['IPv4', 'IPv6'], ipFamilyPolicy: 'RequireDualStack' }), link());
        assert.deepEqual([dual.spec?.ipFamilies, dual.spec?.ipFamilyPolicy], [['IPv4', 'IPv6'], 'PreferDualStack']);
    });

    it('is recognised as this Link’s mirror by its labels', () => {
        const mirror = buildMirrorService(remoteService(exported), link());
        assert.equal(isMirrorOf(mirror, link()), true);
        assert.equal(isMirrorOf(mirror, link({ targetClusterName: 'other' })), false);
        assert.equal(isMirrorOf(remoteService(exported), link()), false);
    });
});

describe('mirrorServiceChanged', () => {
    const desired = buildMirrorService(remoteService(exported, { ports: [{ name: 'a', port: 80 }, { name: 'b', port: 81, targetPort: 'web' }] }), link());

    it('is false for the apiserver’s defaulted read-back of the same mirror', () => {
        assert.equal(mirrorServiceChanged(readBack(desired), desired), false);
        const unnamed = buildMirrorService(remoteService(exported, { ports: [{ port: 80 }] }), link());
        const stored = readBack(unnamed);
        delete stored.spec!.ports![0]!.name;
        assert.equal(mirrorServiceChanged(stored, unnamed), false);
    });

    it('is false when PreferDualStack kept only the primary family on a single-stack cluster', () => {
        const dual = buildMirrorService(remoteService(exported, { ipFamilies: ['IPv4', 'IPv6'], ipFamilyPolicy: 'PreferDualStack' }), link());
        const stored = readBack(dual);
        stored.spec!.ipFamilies = ['IPv4'];
        assert.equal(mirrorServiceChanged(stored, dual), false);
        stored.spec!.ipFamilies = ['IPv6'];
        assert.equal(mirrorServiceChanged(stored, dual), true);
    });

    it('is true when a label or annotation was added, changed or removed', () => {
        const added = readBack(desired);
        added.metadata!.labels = { ...added.metadata!.labels, extra: 'x' };
        assert.equal(mirrorServiceChanged(added, desired), true);
        const removed = readBack(desired);
        delete removed.metadata!.labels!['mirror.linkerd.io/cluster-name'];
        assert.equal(mirrorServiceChanged(removed, desired), true);
        const newVersion = buildMirrorService({ ...remoteService(exported), metadata: { ...remoteService(exported).metadata, resourceVersion: '112' } }, link());
        assert.equal(mirrorServiceChanged(readBack(desired), newVersion), true);
    });

    it('is true when a port was added, renumbered or changed protocol', () => {
        const stored = readBack(desired);
        for (const change of [
            (s: V1Service) => s.spec!.ports!.push({ name: 'c', port: 82, protocol: 'TCP', targetPort: 82 }),
            (s: V1Service) => void (s.spec!.ports![0]!.port = 8080),
            (s: V1Service) => void (s.spec!.ports![0]!.protocol = 'UDP'),
            (s: V1Service) => void (s.spec!.ports![1]!.targetPort = 8081),
        ]) {
            const changed = structuredClone(stored);
            change(changed);
            assert.equal(mirrorServiceChanged(changed, desired), true);
        }
    });

    it('is true when someone gave the mirror a selector or another type', () => {
        const withSelector = readBack(desired);
        withSelector.spec!.selector = { app: 'x' };
        assert.equal(mirrorServiceChanged(withSelector, desired), true);
        const nodePort = readBack(desired);
        nodePort.spec!.type = 'NodePort';
        assert.equal(mirrorServiceChanged(nodePort, desired), true);
    });
});

describe('mirrorServiceNeedsRecreate', () => {
    it('is true for a headless mirror or a changed primary family, which an update cannot fix', () => {
        const desired = buildMirrorService(remoteService(exported, { ipFamilies: ['IPv6'], ipFamilyPolicy: 'SingleStack' }), link());
        const same = readBack(desired);
        assert.equal(mirrorServiceNeedsRecreate(same, desired), false);
        const headless = readBack(desired);
        headless.spec!.clusterIP = 'None';
        assert.equal(mirrorServiceNeedsRecreate(headless, desired), true);
        const v4 = readBack(desired);
        v4.spec!.ipFamilies = ['IPv4'];
        assert.equal(mirrorServiceNeedsRecreate(v4, desired), true);
    });
});

describe('hasReadyEndpoints', () => {
    const slice = (...ready: (boolean | undefined)[]): V1EndpointSlice => ({
        addressType: 'IPv4',
        endpoints: ready.map((r, i) => ({ addresses: [`10.0.0.${i + 1}`], conditions: r === undefined ? {} : { ready: r } })),
    });

    it('is true when any endpoint of any slice is ready, counting an unknown state as ready', () => {
        assert.equal(hasReadyEndpoints([slice(false), slice(false, true)]), true);
        assert.equal(hasReadyEndpoints([slice(undefined)]), true);
    });

    it('is false with no slices, empty slices or only not-ready endpoints', () => {
        assert.equal(hasReadyEndpoints([]), false);
        assert.equal(hasReadyEndpoints([{ addressType: 'IPv4', endpoints: [] }, { addressType: 'IPv6' } as V1EndpointSlice]), false);
        assert.equal(hasReadyEndpoints([slice(false, false)]), false);
    });
});

describe('buildMirrorNamespace (--enable-namespace-creation)', () => {
    it('labels a created namespace as Linkerd does', () => {
        assert.deepEqual(buildMirrorNamespace('ns1', 'remote'), {
            apiVersion: 'v1',
            kind: 'Namespace',
            metadata: { name: 'ns1', labels: { 'mirror.linkerd.io/mirrored-service': 'true', 'mirror.linkerd.io/cluster-name': 'remote' } },
        });
    });
});
