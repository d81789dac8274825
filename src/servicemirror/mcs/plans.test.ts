import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { DiscoveryV1EndpointPort, V1EndpointSlice, V1Service, V1ServicePort } from '@kubernetes/client-node';
import { LABEL_MANAGED_BY, LABEL_SERVICE_NAME } from '../../endpointslice/slice.js';
import { REMOTE_GATEWAY_IDENTITY_ANNOTATION, REMOTE_SVC_FQ_NAME_ANNOTATION } from '../api/keys.js';
import { testLink } from '../api/testkit.js';
import { writesPlan } from '../../endpointslice/reconciler.js';
import type { SlicePlan } from '../../endpointslice/types.js';
import { planDerived, planDerivedSlices, type DerivedPlan, type DerivedPlanInput } from './plan-derived.js';
import { conditionsChanged, planImport, type ImportPlan as ImportOnlyPlan, type ImportPlanInput as ImportOnlyInput } from './plan-import.js';
import { derivedServiceName, LABEL_MCS_SERVICE_NAME, LABEL_SOURCE_CLUSTER, MCS_MANAGED_BY, MCS_OWNED_LABEL, type MemberCluster, type ServiceExport, type ServiceImport } from './types.js';

const NS = 'shop';
const NAME = 'hello';
const DERIVED = derivedServiceName(NAME);
const NOW = '2026-12-02T18:00:00.000Z';

function service(overrides: Partial<NonNullable<V1Service['spec']>> = {}, annotations?: Record<string, string>): V1Service {
    return {
        metadata: { name: NAME, namespace: NS, labels: { app: 'hello' }, annotations: { 'dummy-svc': 'x', ...annotations } },
        spec: {
            type: 'ClusterIP',
            clusterIP: '10.0.0.10',
            ports: [
                { name: 'tcp', port: 42, protocol: 'TCP' },
                { name: 'udp', port: 42, protocol: 'UDP' },
            ],
            sessionAffinity: 'ClientIP',
            sessionAffinityConfig: { clientIP: { timeoutSeconds: 10 } },
            ipFamilies: ['IPv4'],
            ...overrides,
        },
    };
}

function exported(created: string, spec: ServiceExport['spec'] = {}): ServiceExport {
    return { metadata: { name: NAME, namespace: NS, creationTimestamp: created, generation: 1 } as ServiceExport['metadata'], spec };
}

function localSlice(ips: string[]): V1EndpointSlice {
    return {
        metadata: { name: 'hello-abc', namespace: NS, labels: { [LABEL_SERVICE_NAME]: NAME, [LABEL_MANAGED_BY]: 'endpointslice-controller.k8s.io' } },
        addressType: 'IPv4',
        ports: [{ name: 'tcp', port: 8042, protocol: 'TCP' }],
        endpoints: ips.map((ip) => ({ addresses: [ip], conditions: { ready: true }, targetRef: { kind: 'Pod', name: `pod-${ip}`, namespace: NS } })),
    };
}

const link = testLink({ targetClusterName: 'west' });

function local(exp?: ServiceExport, svc: V1Service | undefined = service(), slices = [localSlice(['10.1.0.1'])]): MemberCluster {
    return { name: 'east', known: true, export: exp, service: svc, endpoints: { kind: 'slices', slices } };
}

function remote(exp?: ServiceExport, svc: V1Service | undefined = service(), extra: Partial<MemberCluster> = {}): MemberCluster {
    return {
        name: 'west',
        known: true,
        export: exp,
        service: svc,
        endpoints: { kind: 'gateway', link, addresses: [{ address: '192.0.2.127', family: 'IPv4' as const, ready: true }], alive: true, hasReadyEndpoints: true },
        ...extra,
    };
}

// Both plans from one state, as the two reconcilers make them from one cache: the import's, and
// the derived Service's with its slices (planned against the derived Service as it is; one made
// now gets its slices in the next pass).
type ImportPlanInput = ImportOnlyInput & DerivedPlanInput;
type ImportPlan = ImportOnlyPlan & { derived: DerivedPlan['derived']; slices: SlicePlan };

function planBoth(i: ImportPlanInput): ImportPlan {
    const derived = planDerived(i);
    const slices = writesPlan({ deletes: derived.deletes });
    if (derived.endpoints && i.derived && derived.derived.action !== 'create') {
        const planned = planDerivedSlices(i, i.derived, derived.endpoints);
        slices.creates.push(...planned.creates);
        slices.updates.push(...planned.updates);
        slices.deletes.push(...planned.deletes);
    }
    return { ...planImport(i), derived: derived.derived, slices };
}

function input(members: MemberCluster[], rest: Partial<ImportPlanInput> = {}): ImportPlanInput {
    return { namespace: NS, name: NAME, members, slices: [], now: NOW, maxEndpointsPerSlice: 100, ...rest };
}

/** Applies a plan's object writes as the apiserver would (uids, allocated IPs), for the next pass. */
function applied(plan: ImportPlan, state: Partial<ImportPlanInput>): Partial<ImportPlanInput> {
    const next = { ...state };
    if (plan.import.action === 'create' || plan.import.action === 'update') {
        next.existingImport = { ...plan.import.object, metadata: { ...plan.import.object.metadata, uid: 'si-uid', resourceVersion: '1' }, status: next.existingImport?.status };
    }
    if (plan.import.action === 'delete') next.existingImport = undefined;
    if (plan.importStatus && next.existingImport) next.existingImport = { ...next.existingImport, status: plan.importStatus };
    if (plan.derived.action === 'create' || plan.derived.action === 'update') {
        const obj = plan.derived.object;
        const headless = obj.spec?.clusterIP === 'None';
        // As kube-apiserver of a single-stack IPv4 cluster: a cluster IP of that family; a headless
        // Service with no selector keeps the families asked for, or gets both where dual-stack is preferred.
        const dual = obj.spec?.ipFamilyPolicy === 'PreferDualStack' || obj.spec?.ipFamilyPolicy === 'RequireDualStack';
        const ipFamilies = headless ? (obj.spec?.ipFamilies ?? (dual ? ['IPv4', 'IPv6'] : ['IPv4'])) : ['IPv4'];
        next.derived = {
            ...obj,
            metadata: { ...obj.metadata, uid: 'derived-uid', resourceVersion: '1' },
            spec: { ...obj.spec, clusterIP: headless ? 'None' : '10.96.0.7', clusterIPs: headless ? ['None'] : ['10.96.0.7'], ipFamilies },
        };
    }
    if (plan.derived.action === 'delete') next.derived = undefined;
    let slices = [...(next.slices ?? [])].filter((s) => !plan.slices.deletes.includes(s));
    slices = slices.map((s) => plan.slices.updates.find((u) => u.metadata?.name === s.metadata?.name) ?? s);
    slices.push(...plan.slices.creates.map((s, i) => ({ ...s, metadata: { ...s.metadata, name: `${DERIVED}-${slices.length + i}`, uid: `slice-${i}` } })));
    next.slices = slices;
    return next;
}

/** Plans and applies until nothing is left to write (at most 5 passes), returning the last plan and state. */
function converge(members: MemberCluster[], start: Partial<ImportPlanInput> = {}): { plan: ImportPlan; state: Partial<ImportPlanInput>; passes: number } {
    let state = start;
    for (let pass = 1; pass <= 5; pass++) {
        const plan = planBoth(input(members, state));
        const writes = plan.import.action !== 'none' || plan.derived.action !== 'none' || plan.importStatus || plan.slices.creates.length + plan.slices.updates.length + plan.slices.deletes.length > 0;
        if (!writes) return { plan, state, passes: pass };
        state = applied(plan, state);
    }
    throw new Error('did not converge in 5 passes');
}

const condition = (plan: ImportPlan, cluster: string, type: string) => plan.exportConditions.get(cluster)?.find((c) => c.type === type);

describe('planImport and planDerived: one exporting cluster', () => {
    it('creates the derived Service first, with no selector, the import ports and no owner, and no ServiceImport yet', () => {
        const plan = planBoth(input([local(exported('2026-01-01T00:00:00Z')), remote()]));
        assert.equal(plan.derived.action, 'create');
        const svc = (plan.derived as { object: V1Service }).object;
        assert.equal(svc.metadata?.name, DERIVED);
        assert.match(DERIVED, /^derived-[0-9a-f]{10}$/);
        assert.equal(svc.spec?.selector, undefined);
        assert.equal(svc.metadata?.ownerReferences, undefined);
        assert.deepEqual(svc.spec?.ports?.map((p) => [p.name, p.port, p.protocol]), [['tcp', 42, 'TCP'], ['udp', 42, 'UDP']]);
        assert.equal(plan.import.action, 'none');
        // The export's conditions wait for the import too: written once, not Pending then Ready.
        assert.equal(plan.exportConditions.size, 0);
    });

    it('then the ServiceImport, with its ips complete, its status and the export Ready, all at once', () => {
        const first = planBoth(input([local(exported('2026-01-01T00:00:00Z'))]));
        const plan = planBoth(input([local(exported('2026-01-01T00:00:00Z'))], applied(first, {})));
        assert.equal(plan.import.action, 'create');
        const si = (plan.import as { object: ServiceImport }).object;
        assert.equal(si.spec?.type, 'ClusterSetIP');
        assert.deepEqual(si.spec?.ips, ['10.96.0.7']);
        assert.deepEqual(si.spec?.ports, [
            { name: 'tcp', port: 42, protocol: 'TCP' },
            { name: 'udp', port: 42, protocol: 'UDP' },
        ]);
        assert.equal(si.spec?.sessionAffinity, 'ClientIP');
        assert.deepEqual(si.spec?.sessionAffinityConfig, { clientIP: { timeoutSeconds: 10 } });
        assert.deepEqual(plan.importStatus?.clusters, [{ cluster: 'east' }]);
        assert.equal(condition(plan, 'east', 'Valid')?.status, 'True');
        assert.equal(condition(plan, 'east', 'Conflict')?.status, 'False');
        assert.equal(condition(plan, 'east', 'Ready')?.status, 'True');
        assert.equal(condition(plan, 'east', 'Valid')?.lastTransitionTime, NOW);
        assert.equal(plan.slices.creates.length, 0, 'no slice before the import is written: its ports are the import\'s');
        const next = planBoth(input([local(exported('2026-01-01T00:00:00Z'))], applied(plan, applied(first, {}))));
        assert.equal(next.slices.creates.length, 1, 'then the slice, on the ports of the import as written');
        assert.deepEqual(next.slices.creates[0]!.ports?.map((p) => p.name), ['tcp']);
    });

    it('never gives a slice a port the import does not have: the slices follow the import as written', () => {
        const members = [local(exported('2026-01-01T00:00:00Z'))];
        const { state } = converge(members);
        // The exported Service gained a port; the import does not have it yet.
        const grown = [local(exported('2026-01-01T00:00:00Z'), service({ ports: [{ name: 'tcp', port: 42, protocol: 'TCP' }, { name: 'udp', port: 42, protocol: 'UDP' }, { name: 'admin', port: 9, protocol: 'TCP' }] }))];
        const derivedOnly = planDerived(input(grown, state));
        const slicePlan = derivedOnly.endpoints && planDerivedSlices(input(grown, state), state.derived!, derivedOnly.endpoints);
        assert.deepEqual(derivedOnly.endpoints?.ports.map((p) => p.name), ['tcp', 'udp']);
        for (const slice of [...(slicePlan?.creates ?? []), ...(slicePlan?.updates ?? [])]) assert.ok(!slice.ports?.some((p) => p.name === 'admin'));
        assert.equal(converge(grown, state).state.existingImport?.spec?.ports?.length, 3, 'and once the import has it, so do they');
    });

    it('takes 4 writes in all: the derived Service, the import, its status, one slice', () => {
        let state: Partial<ImportPlanInput> = {};
        let writes = 0;
        for (let pass = 0; pass < 5; pass++) {
            const plan = planBoth(input([local(exported('2026-01-01T00:00:00Z'))], state));
            writes += [plan.derived.action !== 'none', plan.import.action !== 'none', plan.importStatus !== undefined].filter(Boolean).length;
            writes += plan.slices.creates.length + plan.slices.updates.length + plan.slices.deletes.length;
            state = applied(plan, state);
        }
        assert.equal(writes, 4);
    });

    it('ends with the ClusterIP in ips, one slice set per source cluster, and then writes nothing', () => {
        const members = [local(exported('2026-01-01T00:00:00Z')), remote(exported('2026-01-02T00:00:00Z'))];
        const { plan, state } = converge(members);
        assert.deepEqual(state.existingImport?.spec?.ips, ['10.96.0.7']);
        assert.deepEqual(state.existingImport?.spec?.ipFamilies, ['IPv4']);
        assert.deepEqual(state.existingImport?.status?.clusters, [{ cluster: 'east' }, { cluster: 'west' }]);
        const slices = state.slices!;
        const bySource = (c: string) => slices.filter((s) => s.metadata?.labels?.[LABEL_SOURCE_CLUSTER] === c);
        const east = bySource('east');
        assert.equal(east.length, 1);
        assert.deepEqual(east[0]!.endpoints?.map((e) => e.addresses), [['10.1.0.1']]);
        assert.deepEqual(east[0]!.ports, [{ name: 'tcp', port: 8042, protocol: 'TCP' }]);
        const west = bySource('west');
        assert.equal(west.length, 1);
        assert.deepEqual(west[0]!.endpoints?.map((e) => e.addresses), [['192.0.2.127']]);
        assert.deepEqual(west[0]!.ports?.map((p) => [p.name, p.port]), [['tcp', 888], ['udp', 888]]);
        assert.equal(west[0]!.metadata?.annotations?.[REMOTE_GATEWAY_IDENTITY_ANNOTATION], 'gateway-identity');
        assert.equal(west[0]!.metadata?.annotations?.[REMOTE_SVC_FQ_NAME_ANNOTATION], 'hello.shop.svc.cluster.local');
        for (const slice of slices) {
            assert.equal(slice.metadata?.labels?.[LABEL_SERVICE_NAME], DERIVED);
            assert.equal(slice.metadata?.labels?.[LABEL_MCS_SERVICE_NAME], NAME);
            assert.equal(slice.metadata?.labels?.[LABEL_MANAGED_BY], MCS_MANAGED_BY);
        }
        assert.equal(plan.import.action, 'none');
        assert.equal(condition(plan, 'east', 'Ready')?.status, 'True');
    });

    it('keeps a condition transition time while its status holds', () => {
        const exp = exported('2026-01-01T00:00:00Z');
        exp.status = { conditions: [{ type: 'Valid', status: 'True', reason: 'Valid', message: 'm', lastTransitionTime: '2026-01-01T00:00:01Z' as unknown as Date }] };
        const derivedMade = applied(planBoth(input([local(exp)])), {});
        const plan = planBoth(input([local(exp)], derivedMade));
        assert.equal(condition(plan, 'east', 'Valid')?.lastTransitionTime, '2026-01-01T00:00:01Z');
        assert.equal(conditionsChanged(exp, plan.exportConditions.get('east')!), true);
        const again = { ...exp, status: { conditions: plan.exportConditions.get('east')! } };
        assert.equal(conditionsChanged(again, planBoth(input([local(again)], derivedMade)).exportConditions.get('east')!), false);
    });

    it('carries only the exported labels and annotations of the ServiceExport, not the Service\'s', () => {
        const { state } = converge([local(exported('2026-01-01T00:00:00Z', { exportedLabels: { 'dummy-label': 'true' }, exportedAnnotations: { 'dummy-annotation': 'true' } }))]);
        assert.deepEqual(state.existingImport?.metadata?.labels, { 'dummy-label': 'true', [MCS_OWNED_LABEL]: NAME });
        assert.deepEqual(state.existingImport?.metadata?.annotations, { 'dummy-annotation': 'true' });
    });

    it('copies internalTrafficPolicy and trafficDistribution from the exported Service', () => {
        const { state } = converge([local(exported('2026-01-01T00:00:00Z'), service({ internalTrafficPolicy: 'Local', trafficDistribution: 'PreferClose' }))]);
        assert.equal(state.existingImport?.spec?.internalTrafficPolicy, 'Local');
        assert.equal(state.existingImport?.spec?.trafficDistribution, 'PreferClose');
    });

    it('makes a Headless import with no ips for a headless Service', () => {
        const { state } = converge([local(exported('2026-01-01T00:00:00Z'), service({ clusterIP: 'None' }))]);
        assert.equal(state.existingImport?.spec?.type, 'Headless');
        assert.equal(state.existingImport?.spec?.ips, undefined);
        assert.equal(state.derived?.spec?.clusterIP, 'None');
    });

    it("gives a Headless import the exported Service's own families, not both (a selectorless headless Service's default)", () => {
        // The conformance suite's headless Service: PreferDualStack in a single-stack cluster, so IPv4 only.
        const { state } = converge([local(exported('2026-01-01T00:00:00Z'), service({ clusterIP: 'None', ipFamilyPolicy: 'PreferDualStack', ipFamilies: ['IPv4'] }))]);
        assert.deepEqual(state.derived?.spec?.ipFamilies, ['IPv4']);
        assert.equal(state.derived?.spec?.ipFamilyPolicy, 'SingleStack');
        assert.deepEqual(state.existingImport?.spec?.ipFamilies, ['IPv4']);
        const dual = converge([local(exported('2026-01-01T00:00:00Z'), service({ clusterIP: 'None', ipFamilyPolicy: 'PreferDualStack', ipFamilies: ['IPv6', 'IPv4'] }))]);
        assert.deepEqual(dual.state.existingImport?.spec?.ipFamilies, ['IPv6', 'IPv4']);
        assert.equal(dual.state.derived?.spec?.ipFamilyPolicy, 'PreferDualStack');
    });

    it('asks for a dual-stack derived Service when the exported one is', () => {
        const { state } = converge([local(exported('2026-01-01T00:00:00Z'), service({ ipFamilyPolicy: 'PreferDualStack' }))]);
        assert.equal(state.derived?.spec?.ipFamilyPolicy, 'PreferDualStack');
    });

    it('gives the gateway source no endpoints while the remote Service has none ready', () => {
        const { state } = converge([remote(exported('2026-01-01T00:00:00Z'), service(), { endpoints: { kind: 'gateway', link, addresses: [{ address: '192.0.2.127', family: 'IPv4' as const, ready: true }], alive: true, hasReadyEndpoints: false } })]);
        assert.equal(state.slices!.length, 0);
        assert.ok(state.existingImport);
    });
});

describe('planImport and planDerived: invalid exports', () => {
    it('an ExternalName Service: Valid=False InvalidServiceType, and no ServiceImport', () => {
        const plan = planBoth(input([local(exported('2026-01-01T00:00:00Z'), service({ type: 'ExternalName', externalName: 'example.com', clusterIP: undefined }))]));
        assert.equal(plan.import.action, 'none');
        assert.deepEqual([condition(plan, 'east', 'Valid')?.status, condition(plan, 'east', 'Valid')?.reason], ['False', 'InvalidServiceType']);
        assert.deepEqual(plan.exporters, []);
    });

    it('a missing Service: Valid=False NoService', () => {
        const plan = planBoth(input([{ ...local(exported('2026-01-01T00:00:00Z')), service: undefined }]));
        assert.equal(condition(plan, 'east', 'Valid')?.reason, 'NoService');
        assert.equal(plan.import.action, 'none');
    });
});

describe('planImport and planDerived: conflicts (the oldest export wins)', () => {
    const older = '2026-01-01T00:00:00Z';
    const newer = '2026-01-01T00:00:05Z';

    it('ports: the union by name, a port conflicting by number keeps the oldest, Conflict=True on both', () => {
        const westSvc = service({ ports: [{ name: 'tcp', port: 43, protocol: 'TCP' }, { name: 'stcp', port: 142, protocol: 'SCTP' }] });
        const { plan, state } = converge([local(exported(older)), remote(exported(newer), westSvc)]);
        assert.deepEqual(state.existingImport?.spec?.ports, [
            { name: 'stcp', port: 142, protocol: 'SCTP' },
            { name: 'tcp', port: 42, protocol: 'TCP' },
            { name: 'udp', port: 42, protocol: 'UDP' },
        ]);
        for (const cluster of ['east', 'west']) {
            assert.equal(condition(plan, cluster, 'Conflict')?.status, 'True');
            assert.equal(condition(plan, cluster, 'Conflict')?.reason, 'PortConflict');
        }
    });

    it('ports only some clusters export: the union, and a PortConflict', () => {
        const westSvc = service({ ports: [{ name: 'tcp', port: 42, protocol: 'TCP' }, { name: 'stcp', port: 142, protocol: 'SCTP' }] });
        const { plan, state } = converge([local(exported(older)), remote(exported(newer), westSvc)]);
        assert.deepEqual(state.existingImport?.spec?.ports?.map((p) => p.name), ['stcp', 'tcp', 'udp']);
        assert.equal(condition(plan, 'east', 'Conflict')?.reason, 'PortConflict');
        assert.equal(condition(plan, 'west', 'Conflict')?.status, 'True');
    });

    it('the winner is the older export whichever cluster it is in', () => {
        const westSvc = service({ ports: [{ name: 'tcp', port: 43, protocol: 'TCP' }] });
        const { state } = converge([local(exported(newer)), remote(exported(older), westSvc)]);
        assert.deepEqual(state.existingImport?.spec?.ports?.find((p) => p.name === 'tcp')?.port, 43);
    });

    it('equal timestamps: the cluster name decides', () => {
        const westSvc = service({ sessionAffinity: 'None', sessionAffinityConfig: undefined });
        const { state, plan } = converge([remote(exported(older), westSvc), local(exported(older))]);
        assert.equal(state.existingImport?.spec?.sessionAffinity, 'ClientIP'); // east < west
        assert.equal(condition(plan, 'west', 'Conflict')?.reason, 'SessionAffinityConflict');
    });

    it('headlessness: the oldest decides the type', () => {
        const { state, plan } = converge([local(exported(older)), remote(exported(newer), service({ clusterIP: 'None' }))]);
        assert.equal(state.existingImport?.spec?.type, 'ClusterSetIP');
        assert.equal(condition(plan, 'west', 'Conflict')?.reason, 'TypeConflict');
        assert.equal(condition(plan, 'east', 'Conflict')?.status, 'True');
    });

    it('exported labels and annotations come from the winner only', () => {
        const { state, plan } = converge([
            local(exported(older, { exportedLabels: { 'dummy-label': 'true' }, exportedAnnotations: { 'dummy-annotation': 'true' } })),
            remote(exported(newer, { exportedLabels: { 'dummy-label2': 'true' }, exportedAnnotations: { 'dummy-annotation2': 'true' } })),
        ]);
        assert.deepEqual(state.existingImport?.metadata?.labels, { 'dummy-label': 'true', [MCS_OWNED_LABEL]: NAME });
        assert.deepEqual(state.existingImport?.metadata?.annotations, { 'dummy-annotation': 'true' });
        assert.match(condition(plan, 'east', 'Conflict')?.message ?? '', /exportedLabels/);
        assert.match(condition(plan, 'east', 'Conflict')?.message ?? '', /exportedAnnotations/);
    });

    it('internal traffic policy and traffic distribution', () => {
        const { plan } = converge([local(exported(older)), remote(exported(newer), service({ internalTrafficPolicy: 'Local', trafficDistribution: 'PreferClose' }))]);
        assert.match(condition(plan, 'west', 'Conflict')?.message ?? '', /internalTrafficPolicy.*trafficDistribution/);
    });

    it('defaults the apiserver fills in are no conflict', () => {
        const { plan } = converge([local(exported(older), service({ internalTrafficPolicy: 'Cluster' })), remote(exported(newer), service({ internalTrafficPolicy: undefined }))]);
        assert.equal(condition(plan, 'east', 'Conflict')?.status, 'False');
    });
});

describe('planImport and planDerived: a member\'s endpoints carry only the ports the import has (StrictPortConflict)', () => {
    const older = '2026-01-01T00:00:00Z';
    const newer = '2026-01-01T00:00:05Z';
    type Port = V1ServicePort;
    type SlicePort = DiscoveryV1EndpointPort;
    const tcp42: Port = { name: 'tcp', port: 42, protocol: 'TCP' };
    const udp42: Port = { name: 'udp', port: 42, protocol: 'UDP' };
    /** The winner (east) exports tcp 42 and udp 42; its Pods listen on 8042 and 8043. */
    const winnerSlice = slice(['10.1.0.1'], [{ name: 'tcp', port: 8042, protocol: 'TCP' }, { name: 'udp', port: 8043, protocol: 'UDP' }]);

    function slice(ips: string[], ports: SlicePort[] | null): V1EndpointSlice {
        return { ...localSlice(ips), ports: ports as SlicePort[] };
    }

    /** The newer export, in cluster west, reached through its own Pod IPs (a Link without gateway). */
    function flatWest(ports: Port[], slices: V1EndpointSlice[]): MemberCluster {
        return { name: 'west', known: true, export: exported(newer), service: service({ ports }), endpoints: { kind: 'slices', slices } };
    }

    const westPorts = (state: Partial<ImportPlanInput>, cluster = 'west') =>
        state.slices!.filter((s) => s.metadata?.labels?.[LABEL_SOURCE_CLUSTER] === cluster).map((s) => [s.endpoints!.map((e) => e.addresses[0]), (s.ports ?? []).map((p) => `${p.name}:${p.port}/${p.protocol}${p.appProtocol ? `/${p.appProtocol}` : ''}`)]);

    const table: { case: string; ports: Port[]; slices: V1EndpointSlice[]; west: unknown[] }[] = [
        {
            case: 'the same ports: every slice port is kept',
            ports: [tcp42, udp42],
            slices: [slice(['10.2.0.1'], [{ name: 'tcp', port: 9042, protocol: 'TCP' }, { name: 'udp', port: 9043, protocol: 'UDP' }])],
            west: [[['10.2.0.1'], ['tcp:9042/TCP', 'udp:9043/UDP']]],
        },
        {
            case: 'the conformance spec: tcp is 4242 (targetPort 42) in west, so its endpoints get no port and are not copied',
            ports: [{ name: 'tcp', port: 4242, protocol: 'TCP', targetPort: 42 as unknown as Port['targetPort'] }],
            slices: [slice(['10.2.0.1'], [{ name: 'tcp', port: 42, protocol: 'TCP' }])],
            west: [],
        },
        {
            case: 'tcp conflicts and udp agrees: only udp is kept',
            ports: [{ name: 'tcp', port: 4242, protocol: 'TCP' }, udp42],
            slices: [slice(['10.2.0.1'], [{ name: 'tcp', port: 42, protocol: 'TCP' }, { name: 'udp', port: 9043, protocol: 'UDP' }])],
            west: [[['10.2.0.1'], ['udp:9043/UDP']]],
        },
        {
            case: 'the same name, number and another protocol: not kept',
            ports: [{ name: 'tcp', port: 42, protocol: 'SCTP' }],
            slices: [slice(['10.2.0.1'], [{ name: 'tcp', port: 42, protocol: 'SCTP' }])],
            west: [],
        },
        {
            case: 'the same name, number and protocol with an appProtocol the import does not have: not kept',
            ports: [{ ...tcp42, appProtocol: 'http' }],
            slices: [slice(['10.2.0.1'], [{ name: 'tcp', port: 9042, protocol: 'TCP', appProtocol: 'http' }])],
            west: [],
        },
        {
            case: 'another name for a number and protocol the winner uses (left out of the import): not kept',
            ports: [{ name: 'other', port: 42, protocol: 'TCP' }],
            slices: [slice(['10.2.0.1'], [{ name: 'other', port: 9042, protocol: 'TCP' }])],
            west: [],
        },
        {
            case: 'a port name only west exports (the different-names spec): in the import, so kept',
            ports: [{ name: 'tcp2', port: 4242, protocol: 'TCP' }],
            slices: [slice(['10.2.0.1'], [{ name: 'tcp2', port: 42, protocol: 'TCP' }])],
            west: [[['10.2.0.1'], ['tcp2:42/TCP']]],
        },
        {
            case: 'two slices of one Service, one per port mapping: each keeps what agrees, an emptied one goes',
            ports: [{ name: 'tcp', port: 4242, protocol: 'TCP' }, udp42],
            slices: [slice(['10.2.0.1'], [{ name: 'tcp', port: 42, protocol: 'TCP' }]), slice(['10.2.0.2'], [{ name: 'udp', port: 9043, protocol: 'UDP' }])],
            west: [[['10.2.0.2'], ['udp:9043/UDP']]],
        },
    ];
    for (const row of table) {
        it(row.case, () => {
            const { state } = converge([local(exported(older), service(), [winnerSlice]), flatWest(row.ports, row.slices)]);
            assert.deepEqual(westPorts(state), row.west);
            assert.deepEqual(westPorts(state, 'east'), [[['10.1.0.1'], ['tcp:8042/TCP', 'udp:8043/UDP']]]);
        });
    }

    it('a headless Service with no ports: its endpoints are copied (nothing to conflict)', () => {
        const noPorts = service({ clusterIP: 'None', ports: [] });
        const members: MemberCluster[] = [
            local(exported(older), noPorts, [slice(['10.1.0.1'], null)]),
            { ...flatWest([], [slice(['10.2.0.1'], null)]), service: noPorts },
        ];
        const { state } = converge(members);
        assert.deepEqual(westPorts(state), [[['10.2.0.1'], []]]);
    });

    it('while the winner cannot be read, the loser\'s endpoints still follow the import as it is', () => {
        const west = flatWest([{ name: 'tcp', port: 4242, protocol: 'TCP' }, udp42], [slice(['10.2.0.1'], [{ name: 'tcp', port: 42, protocol: 'TCP' }, { name: 'udp', port: 9043, protocol: 'UDP' }])]);
        const { state } = converge([local(exported(older), service(), [winnerSlice]), west]);
        const moved = flatWest(west.service!.spec!.ports!, [slice(['10.2.0.9'], [{ name: 'tcp', port: 42, protocol: 'TCP' }, { name: 'udp', port: 9043, protocol: 'UDP' }])]);
        const { state: after } = converge([{ ...local(undefined), known: false }, moved], state);
        assert.deepEqual(westPorts(after), [[['10.2.0.9'], ['udp:9043/UDP']]]);
    });

    it('gateway mode: the gateway is given only the ports west serves as the import has them', () => {
        const westSvc = service({ ports: [{ name: 'tcp', port: 4242, protocol: 'TCP' }, udp42] });
        const { state } = converge([local(exported(older), service(), [winnerSlice]), remote(exported(newer), westSvc)]);
        assert.deepEqual(westPorts(state), [[['192.0.2.127'], ['udp:888/UDP']]]);
    });

    it('gateway mode: a member none of whose ports the import has gets no gateway endpoints', () => {
        const westSvc = service({ ports: [{ name: 'tcp', port: 4242, protocol: 'TCP' }] });
        const { state } = converge([local(exported(older), service(), [winnerSlice]), remote(exported(newer), westSvc)]);
        assert.deepEqual(westPorts(state), []);
    });
});

describe('planImport and planDerived: unexport, leaving, restarts', () => {
    const members = () => [local(exported('2026-01-01T00:00:00Z')), remote(exported('2026-01-02T00:00:00Z'))];

    it('unexported in one cluster: its slices go, the import stays', () => {
        const { state } = converge(members());
        const { state: after } = converge([local(exported('2026-01-01T00:00:00Z')), remote(undefined)], state);
        assert.ok(after.existingImport);
        assert.deepEqual(after.slices!.map((s) => s.metadata?.labels?.[LABEL_SOURCE_CLUSTER]), ['east']);
        assert.deepEqual(after.existingImport?.status?.clusters, [{ cluster: 'east' }]);
    });

    it('unexported everywhere: the import, the derived Service and every slice are deleted', () => {
        const { state } = converge(members());
        const plan = planBoth(input([local(undefined), remote(undefined)], state));
        assert.equal(plan.import.action, 'delete');
        assert.equal(plan.derived.action, 'delete');
        assert.equal(plan.slices.deletes.length, state.slices!.length);
    });

    it('a cluster that left the set (its Link deleted): its slices are deleted', () => {
        const { state } = converge(members());
        const plan = planBoth(input([local(exported('2026-01-01T00:00:00Z'))], state));
        assert.deepEqual(plan.slices.deletes.map((s) => s.metadata?.labels?.[LABEL_SOURCE_CLUSTER]), ['west']);
        assert.deepEqual(plan.importStatus?.clusters, [{ cluster: 'east' }]);
    });

    it('a cluster still being read (a restart) keeps its slices and its place in the import', () => {
        const { state } = converge(members());
        const plan = planBoth(input([local(exported('2026-01-01T00:00:00Z')), remote(undefined, undefined, { known: false })], state));
        assert.deepEqual(plan.slices.deletes, []);
        assert.equal(plan.importStatus, undefined);
        assert.equal(plan.import.action, 'none');
    });

    it('while a listed cluster is unknown, the import and the conflicts wait for it (a restart flips no winner)', () => {
        const members = [local(exported('2026-01-01T00:00:00Z')), remote(exported('2026-01-02T00:00:00Z'), service({ clusterIP: 'None' }))];
        const { state } = converge(members);
        assert.equal(state.existingImport?.spec?.type, 'ClusterSetIP');
        const plan = planBoth(input([{ ...local(undefined), known: false }, members[1]!], state));
        assert.equal(plan.import.action, 'none');
        assert.equal(plan.derived.action, 'none');
        assert.equal(plan.importStatus, undefined);
        assert.equal(plan.exportConditions.size, 0);
        assert.deepEqual(plan.slices.deletes, []);
    });

    it('unexported here while a member it does not list cannot be read: nothing is deleted (it may have begun exporting while no leader ran)', () => {
        const { state } = converge([local(exported('2026-01-01T00:00:00Z'))]);
        const plan = planBoth(input([local(undefined), remote(undefined, undefined, { known: false })], state));
        assert.equal(plan.import.action, 'none');
        assert.equal(plan.derived.action, 'none');
        assert.deepEqual(plan.slices.deletes, []);
        assert.equal(planBoth(input([local(undefined), remote(undefined)], state)).import.action, 'delete', 'once it can be read and exports nothing');
    });

    it('only unknown clusters export it: nothing is deleted', () => {
        const { state } = converge([remote(exported('2026-01-02T00:00:00Z'))]);
        const plan = planBoth(input([local(undefined), remote(undefined, undefined, { known: false })], state));
        assert.equal(plan.import.action, 'none');
        assert.equal(plan.derived.action, 'none');
        assert.deepEqual(plan.slices.deletes, []);
    });

    it('an import whose status was never written (its writer killed after the create) waits for the unknown clusters', () => {
        const { state } = converge([remote(exported('2026-01-02T00:00:00Z'))]);
        const created = { ...state, existingImport: { ...state.existingImport!, status: undefined } };
        const plan = planBoth(input([local(undefined), remote(undefined, undefined, { known: false })], created));
        assert.equal(plan.import.action, 'none');
        assert.equal(plan.derived.action, 'none');
        assert.deepEqual(plan.slices.deletes, []);
        // Once the cluster can be read and exports nothing, the import goes.
        assert.equal(planBoth(input([local(undefined), remote(undefined)], created)).import.action, 'delete');
    });

        it('planning again from what was written writes nothing (a restarted process)', () => {
        const { state } = converge(members());
        const plan = planBoth(input(members(), state));
        assert.equal(plan.import.action, 'none');
        assert.equal(plan.derived.action, 'none');
        assert.deepEqual([plan.slices.creates.length, plan.slices.updates.length, plan.slices.deletes.length], [0, 0, 0]);
    });

    it('the winner turning headless: the derived Service is made anew', () => {
        const { state } = converge([local(exported('2026-01-01T00:00:00Z'))]);
        const plan = planBoth(input([local(exported('2026-01-01T00:00:00Z'), service({ clusterIP: 'None' }))], state));
        // The import keeps its spec until the new derived Service exists (then one update).
        assert.equal(plan.import.action, 'none');
        assert.equal(plan.derived.action, 'delete');
        const { state: after } = converge([local(exported('2026-01-01T00:00:00Z'), service({ clusterIP: 'None' }))], state);
        assert.equal(after.derived?.spec?.clusterIP, 'None');
        assert.equal(after.existingImport?.spec?.type, 'Headless');
    });
});

describe('planImport and planDerived: never adopts what it did not create', () => {
    it('a ServiceImport without our label is left alone and reported', () => {
        const foreign: ServiceImport = { metadata: { name: NAME, namespace: NS, uid: 'x' }, spec: { type: 'ClusterSetIP', ports: [] } };
        const plan = planBoth(input([local(exported('2026-01-01T00:00:00Z'))], { existingImport: foreign }));
        assert.equal(plan.import.action, 'none');
        assert.equal(plan.derived.action, 'none');
        assert.match(plan.problems.join(), /not created by mesh-endpoints/);
        const gone = planBoth(input([local(undefined)], { existingImport: foreign }));
        assert.equal(gone.import.action, 'none');
    });

    it('a user Service with the derived name is neither updated nor deleted', () => {
        const { state } = converge([local(exported('2026-01-01T00:00:00Z'))]);
        const theirs: V1Service = { metadata: { name: DERIVED, namespace: NS, uid: 'u' }, spec: { clusterIP: '10.96.9.9', ports: [{ port: 1 }] } };
        const plan = planBoth(input([local(exported('2026-01-01T00:00:00Z'))], { ...state, derived: theirs, slices: [] }));
        assert.equal(plan.derived.action, 'none');
        assert.match(plan.problems.join(), /taken by a Service/);
        assert.equal(planBoth(input([local(undefined)], { ...state, derived: theirs })).derived.action, 'none');
    });
});
