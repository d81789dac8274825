import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1Service } from '@kubernetes/client-node';
import {
    desiredFederatedService,
    federatedMemberName,
    federatedMemberProblem,
    type FederatedInput,
    type FederatedMember,
    isFederatedService,
    type FederatedPlanInput,
    type FederationLink,
    type Membership,
    planFederated,
} from './federated.js';
import { mirrorServiceChanged } from './mirror.js';
import { testLink } from '../api/testkit.js';

function service(labels: Record<string, string> = {}, annotations: Record<string, string> = {}, port = 8080): V1Service {
    return {
        metadata: { name: 'service-one', namespace: 'ns1', labels: { 'mirror.linkerd.io/federated': 'member', ...labels }, annotations },
        spec: { clusterIP: '10.96.0.9', ports: [{ name: 'http', port, protocol: 'TCP', targetPort: port }] },
    };
}

function member(svc: V1Service, linkCreated?: string, excluded: { labels?: string[]; annotations?: string[] } = {}): Membership {
    const m: FederatedMember = { service: svc, excludedLabels: excluded.labels ?? [], excludedAnnotations: excluded.annotations ?? [] };
    if (linkCreated) m.linkCreated = linkCreated;
    return { state: 'member', member: m };
}

const absent: Membership = { state: 'absent' };
const unknown: Membership = { state: 'unknown' };

function desired(remotes: Record<string, Membership>, local: Membership = absent, existing?: V1Service): V1Service | null {
    const input: FederatedInput = { namespace: 'ns1', name: 'service-one', local, remotes: new Map(Object.entries(remotes)), existing };
    return desiredFederatedService(input);
}

const discovery = (svc: V1Service | null) =>
    svc === null
        ? null
        : {
              remote: svc.metadata?.annotations?.['multicluster.linkerd.io/remote-discovery'],
              local: svc.metadata?.annotations?.['multicluster.linkerd.io/local-discovery'],
          };

describe('federated Service membership (Linkerd’s "federated service created / joined / left")', () => {
    const t1 = '2026-01-01T00:00:00Z';
    const t2 = '2026-01-02T00:00:00Z';
    const table: { name: string; remotes: Record<string, Membership>; local?: Membership; existing?: string; existingLocal?: boolean; want: { remote?: string; local?: string } | null }[] = [
        { name: 'no member anywhere: none', remotes: { remote: absent }, want: null },
        { name: 'one remote member creates it', remotes: { remote: member(service(), t1) }, want: { remote: 'service-one@remote', local: undefined } },
        { name: 'a second member is appended', remotes: { remote: member(service(), t1), other: member(service(), t2) }, existing: 'service-one@other', want: { remote: 'service-one@other,service-one@remote', local: undefined } },
        { name: 'new members join in cluster-name order', remotes: { b: member(service(), t1), a: member(service(), t2) }, want: { remote: 'service-one@a,service-one@b', local: undefined } },
        { name: 'a member leaving is removed and the rest kept in order', remotes: { remote: absent, other: member(service(), t2), third: member(service(), t1) }, existing: 'service-one@third,service-one@remote,service-one@other', want: { remote: 'service-one@third,service-one@other', local: undefined } },
        { name: 'the last member leaving deletes it', remotes: { remote: absent }, existing: 'service-one@remote', want: null },
        { name: 'a cluster whose Link is gone has no member', remotes: {}, existing: 'service-one@gone', want: null },
        { name: 'a cluster that cannot say keeps its entry (an outage never removes a member)', remotes: { remote: unknown, other: member(service(), t1) }, existing: 'service-one@remote', want: { remote: 'service-one@remote,service-one@other', local: undefined } },
        { name: 'a cluster that cannot say and is not listed is not added', remotes: { remote: unknown, other: member(service(), t1) }, want: { remote: 'service-one@other', local: undefined } },
        { name: 'only clusters that cannot say: kept as it is', remotes: { remote: unknown }, existing: 'service-one@remote', want: { remote: 'service-one@remote', local: undefined } },
        { name: 'malformed and duplicate entries are dropped', remotes: { remote: member(service(), t1) }, existing: 'garbage,service-one@remote,,service-one@remote,a@b@c', want: { remote: 'service-one@remote', local: undefined } },
        { name: 'an entry under another name is replaced by the member’s', remotes: { remote: member(service(), t1) }, existing: 'renamed@remote', want: { remote: 'service-one@remote', local: undefined } },
        { name: 'the local member alone', remotes: {}, local: member(service()), want: { remote: undefined, local: 'service-one' } },
        { name: 'the local member joins remote ones', remotes: { other: member(service(), t1) }, local: member(service()), existing: 'service-one@other', want: { remote: 'service-one@other', local: 'service-one' } },
        { name: 'the local member leaving keeps the Service for the remote ones', remotes: { other: member(service(), t1) }, local: absent, existing: 'service-one@other', existingLocal: true, want: { remote: 'service-one@other', local: undefined } },
        { name: 'only the local member left: no empty remote-discovery (Linkerd leaves "")', remotes: { other: absent }, local: member(service()), existing: 'service-one@other', want: { remote: undefined, local: 'service-one' } },
        { name: 'a local cluster that cannot say keeps local-discovery', remotes: {}, local: unknown, existing: '', existingLocal: true, want: { remote: undefined, local: 'service-one' } },
    ];
    for (const row of table) {
        it(row.name, () => {
            let existing: V1Service | undefined;
            if (row.existing !== undefined) {
                const annotations: Record<string, string> = {};
                if (row.existing !== '') annotations['multicluster.linkerd.io/remote-discovery'] = row.existing;
                if (row.existingLocal) annotations['multicluster.linkerd.io/local-discovery'] = 'service-one';
                existing = { metadata: { name: 'service-one-federated', namespace: 'ns1', labels: { 'mirror.linkerd.io/mirrored-service': 'true' }, annotations }, spec: { ports: [{ port: 1 }] } };
            }
            assert.deepEqual(discovery(desired(row.remotes, row.local, existing)), row.want);
        });
    }
});

describe('federated Service metadata and spec', () => {
    const member1 = service({ app: 'one', 'evil.linkerd/x': 'y', evil: 'z' }, { 'config.linkerd.io/opaque-ports': '8080', 'evil.linkerd/a': 'b', note: 'one', 'service.kubernetes.io/topology-mode': 'Auto' }, 8080);
    const member2 = service({ app: 'two' }, { note: 'two' }, 9090);

    it('is `<name>-federated`, labelled mirrored-service (no cluster-name), ClusterIP, no selector, ports remapped', () => {
        const svc = desired({ remote: member(member1, '2026-01-01T00:00:00Z') })!;
        assert.equal(svc.metadata?.name, 'service-one-federated');
        assert.equal(svc.metadata?.namespace, 'ns1');
        assert.equal(svc.metadata?.labels?.['mirror.linkerd.io/mirrored-service'], 'true');
        assert.equal(svc.metadata?.labels?.['mirror.linkerd.io/cluster-name'], undefined);
        assert.equal(svc.metadata?.labels?.['mirror.linkerd.io/federated'], undefined, 'Linkerd’s own labels are never copied');
        assert.equal(svc.spec?.type, 'ClusterIP');
        assert.equal(svc.spec?.clusterIP, undefined);
        assert.equal(svc.spec?.selector, undefined);
        assert.deepEqual(svc.spec?.ports, [{ name: 'http', port: 8080, protocol: 'TCP', targetPort: 8080 }]);
        assert.equal(isFederatedService(svc), true);
    });

    it('drops the excluded labels and annotations (Linkerd’s `evil.linkerd/*,evil`), never opaque-ports', () => {
        const svc = desired({ remote: member(member1, '2026-01-01T00:00:00Z', { labels: ['evil.linkerd/*', 'evil'], annotations: ['evil.linkerd/*', 'config.linkerd.io/opaque-ports'] }) })!;
        assert.deepEqual(svc.metadata?.labels, { app: 'one', 'mirror.linkerd.io/mirrored-service': 'true' });
        assert.deepEqual(svc.metadata?.annotations, {
            'config.linkerd.io/opaque-ports': '8080',
            note: 'one',
            'multicluster.linkerd.io/remote-discovery': 'service-one@remote',
        });
    });

    it('takes metadata and ports from the member of the oldest Link, ties by cluster name', () => {
        const older = desired({ b: member(member1, '2026-01-01T00:00:00Z'), a: member(member2, '2026-02-01T00:00:00Z') })!;
        assert.equal(older.metadata?.labels?.app, 'one');
        assert.equal(older.spec?.ports?.[0]?.port, 8080);
        const tie = desired({ b: member(member1, '2026-01-01T00:00:00Z'), a: member(member2, '2026-01-01T00:00:00Z') })!;
        assert.equal(tie.metadata?.labels?.app, 'two');
    });

    it('takes them from the local member whenever there is one', () => {
        const svc = desired({ remote: member(member1, '2026-01-01T00:00:00Z') }, member(member2))!;
        assert.equal(svc.metadata?.annotations?.note, 'two');
        assert.equal(svc.spec?.ports?.[0]?.port, 9090);
    });

    it('a member’s own discovery annotations are not copied over the computed ones', () => {
        const sneaky = service({}, { 'multicluster.linkerd.io/remote-discovery': 'x@y', 'multicluster.linkerd.io/local-discovery': 'z' });
        assert.deepEqual(discovery(desired({ remote: member(sneaky, '2026-01-01T00:00:00Z') })), { remote: 'service-one@remote', local: undefined });
    });

    it('keeps the existing metadata when only clusters that cannot say remain', () => {
        const existing = desired({ remote: member(member1, '2026-01-01T00:00:00Z') })!;
        const kept = desired({ remote: unknown }, absent, existing)!;
        assert.equal(mirrorServiceChanged(existing, kept), false);
    });

    it('computing it again from the same members is no change (a restart writes nothing)', () => {
        const first = desired({ remote: member(member1, '2026-01-01T00:00:00Z'), other: member(member2, '2026-01-02T00:00:00Z') }, member(member2))!;
        const again = desired({ remote: member(member1, '2026-01-01T00:00:00Z'), other: member(member2, '2026-01-02T00:00:00Z') }, member(member2), first)!;
        assert.equal(mirrorServiceChanged(first, again), false);
    });
});

describe('federated members', () => {
    const table: { name: string; svc: V1Service; want: RegExp | null }[] = [
        { name: 'an ordinary ClusterIP Service joins', svc: service(), want: null },
        { name: 'a headless one cannot (as in Linkerd)', svc: { ...service(), spec: { clusterIP: 'None', ports: [{ port: 80 }] } }, want: /Headless service cannot join federated service/ },
        { name: 'an ExternalName one cannot', svc: { ...service(), spec: { type: 'ExternalName', externalName: 'x.example.com', ports: [{ port: 80 }] } }, want: /ExternalName/ },
        { name: 'one without ports cannot', svc: { ...service(), spec: { clusterIP: '10.96.0.9', ports: [] } }, want: /no ports/ },
        { name: 'one whose `<name>-federated` is too long cannot', svc: { ...service(), metadata: { name: 'x'.repeat(60), namespace: 'ns1' } }, want: /63/ },
    ];
    for (const row of table) {
        it(row.name, () => {
            const problem = federatedMemberProblem(row.svc);
            if (row.want === null) assert.equal(problem, null);
            else assert.match(problem ?? '', row.want);
        });
    }

    it('a federated Service names its members', () => {
        assert.equal(federatedMemberName('web-federated'), 'web');
        assert.equal(federatedMemberName('-federated'), null);
        assert.equal(federatedMemberName('web-remote'), null);
    });
});

describe('planFederated', () => {
    const selector = { matchLabels: { 'mirror.linkerd.io/federated': 'member' } };
    const linkTo = (cluster: string, svc?: V1Service): FederationLink => ({
        cluster,
        remote: { link: testLink({ targetClusterName: cluster, federatedServiceSelector: selector }), service: () => svc },
    });
    const ours = desired({ east: member(service()) })!;
    const input = (overrides: Partial<FederatedPlanInput>): FederatedPlanInput => ({ namespace: 'ns1', name: 'service-one', links: [], stored: () => undefined, ...overrides });
    const local = (svc?: V1Service) => ({ get: () => svc, excludedLabels: [], excludedAnnotations: [] });

    /** Each row: the input, then what the plan says (action, and the fields that row is about). */
    const table: Array<[string, Partial<FederatedPlanInput>, Record<string, unknown>]> = [
        ['a remote member and nothing stored: created, its cluster labels a namespace made for it', { links: [linkTo('east', service())] }, { action: 'ensure', creator: 'east', refused: [] }],
        ['a local member: the local cluster (``) labels the namespace', { links: [linkTo('east', service())], local: local(service()) }, { action: 'ensure', creator: '' }],
        ['already stored: updated, no namespace to make sure of', { links: [linkTo('east', service())], stored: () => ours }, { action: 'ensure', creator: undefined }],
        ['no member and nothing stored: nothing to delete', { links: [linkTo('east')] }, { action: 'delete', found: undefined }],
        ['the last member left: the stored one is deleted', { links: [linkTo('east')], stored: () => ours }, { action: 'delete', found: ours }],
        ['a Link that cannot say keeps its entry', { links: [{ cluster: 'east' }], stored: () => ours }, { action: 'ensure' }],
        ['a remote Service not selected is no member', { links: [linkTo('east', service({ 'mirror.linkerd.io/federated': 'no' }))] }, { action: 'delete', refused: [] }],
        ['a headless member is refused, by cluster', { links: [linkTo('east', { ...service(), spec: { clusterIP: 'None', ports: [{ port: 80 }] } })] }, { action: 'delete', refused: [{ cluster: 'east', message: 'Headless service cannot join federated service' }] }],
        ['a Service under the name that is not federated is left alone', { links: [linkTo('east', service())], stored: () => ({ metadata: { name: 'service-one-federated', namespace: 'ns1' } }) }, { action: 'refuse' }],
        ['no Service may have the name: refused, no member judged', { name: 'x'.repeat(60), links: [linkTo('east', service())] }, { action: 'refuse', refused: [] }],
    ];
    for (const [name, overrides, want] of table) {
        it(name, () => {
            const plan = planFederated(input(overrides)) as unknown as Record<string, unknown>;
            for (const [field, value] of Object.entries(want)) assert.deepEqual(plan[field], value, field);
        });
    }

    it('asks the Service written for the federated name, and lets it replace only a federated Service of these Links', () => {
        const asked: string[] = [];
        const plan = planFederated(input({ links: [linkTo('east', service())], federation: 'mc', stored: (name) => (asked.push(name), undefined) }));
        assert.deepEqual(asked, ['service-one-federated']);
        assert.equal(plan.action, 'ensure');
        if (plan.action !== 'ensure') return;
        assert.equal(plan.desired.metadata?.name, 'service-one-federated');
        assert.equal(plan.owner(ours), null);
        assert.match(plan.owner({ ...ours, metadata: { ...ours.metadata, annotations: { 'mesh-endpoints.io/federation': 'team-b' } } }) ?? '', /Links in namespace team-b/);
    });
});
