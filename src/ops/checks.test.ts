import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { readCrds } from '../testing/crds.js';
import { DESTINATION_RIGHTS, MIRROR_RIGHTS } from '../servicemirror/link/remote-access.js';
import { accessCheck, accessNeeds, crdChecks, destinationChecks, destinationModes, EXPECTED_CRDS, leaseCheck, linkChecks, remoteAccessCheck, type CrdObject } from './checks.js';
import { linkReport } from './links-report.js';
import { rawLink, type LinkOptions } from './testkit.js';

const established = { conditions: [{ type: 'Established', status: 'True' }] };
const chartCrds = (): CrdObject[] => (readCrds() as CrdObject[]).map((crd) => ({ ...crd, status: established }));

describe('check: CRDs', () => {
    it("expects exactly the versions the chart's CRDs serve and store", () => {
        for (const crd of readCrds() as CrdObject[]) {
            const expected = EXPECTED_CRDS.find((e) => e.name === crd.metadata?.name);
            assert.ok(expected, `${crd.metadata?.name} is checked`);
            const versions = crd.spec?.versions ?? [];
            assert.deepEqual(versions.filter((v) => v.served).map((v) => v.name), [...expected.served]);
            assert.equal(versions.find((v) => v.storage)?.name, expected.storage);
        }
        assert.equal(readCrds().length, EXPECTED_CRDS.length);
    });

    it("passes for the chart's CRDs once established", () => {
        assert.deepEqual(crdChecks(chartCrds()).map((r) => r.status), ['ok', 'ok', 'ok']);
    });

    it('fails a missing CRD, one without a served version, one storing another version, one not established, each with a hint', () => {
        const named = (name: string) => chartCrds().find((c) => c.metadata?.name?.startsWith(name))!;
        const [workloads, links] = [named('externalworkloads.'), named('links.')];
        const older = { ...links!, spec: { versions: links!.spec!.versions!.filter((v) => v.name !== 'v1alpha3').map((v) => ({ ...v, storage: v.name === 'v1alpha2' })) } };
        const cases: Array<[string, CrdObject[], RegExp]> = [
            ['missing', [workloads!], /not installed/],
            ['an older Link CRD', [workloads!, older], /does not serve v1alpha3 \(serves v1alpha1, v1alpha2\); stores v1alpha2, expected v1alpha3/],
            ['not established', [workloads!, { ...links!, status: {} }], /is not Established/],
        ];
        for (const [what, found, detail] of cases) {
            const result = crdChecks(found)[1]!;
            assert.equal(result.status, 'fail', what);
            assert.match(result.detail!, detail, what);
            assert.match(result.hint!, /charts\/mesh-endpoints\/crds/);
        }
    });
});

describe('check: controllers', () => {
    const ref = { namespace: 'mesh-endpoints', name: 'mesh-endpoints-external-workloads' };
    const now = Date.parse('2026-01-01T00:01:00Z');
    const lease = (holder: string | null, renewTime: string | null) => ({ spec: { holderIdentity: holder, leaseDurationSeconds: 15, renewTime } });
    const cases: Array<[string, Parameters<typeof leaseCheck>[2], boolean, string, RegExp]> = [
        ['a holder that renewed within the lease duration is the one live leader', lease('pod-a', '2026-01-01T00:00:55.000000Z'), true, 'ok', /leader pod-a, renewed 5s ago/],
        ['a holder that stopped renewing is gone', lease('pod-a', '2026-01-01T00:00:30.000000Z'), true, 'fail', /last renewed 30s ago, longer than the 15s lease duration/],
        ['a released Lease has no leader', lease(null, '2026-01-01T00:00:59.000000Z'), true, 'fail', /no holder/],
        ['a missing Lease of a needed controller fails', undefined, true, 'fail', /never ran here/],
        ['a missing Lease of a controller not needed warns', undefined, false, 'warn', /never ran here/],
    ];
    for (const [what, found, required, status, detail] of cases) {
        it(what, () => {
            const result = leaseCheck('external-workloads', ref, found, now, required);
            assert.equal(result.status, status);
            assert.match(result.detail!, detail);
        });
    }
});

describe('check: RBAC', () => {
    it('asks for what the commands read, each right once, and apart for what unlink --apply deletes', () => {
        const needs = accessNeeds('linkerd-multicluster', 'mesh-endpoints');
        assert.equal(needs.read.filter((n) => n.resource === 'leases').length, 2);
        assert.ok(needs.read.every((n) => n.verb === 'get' || n.verb === 'list'));
        assert.ok(needs.unlink.every((n) => n.verb === 'delete'));
    });

    it('names every denied right and the command needing it', () => {
        const { read } = accessNeeds('lm', 'me');
        const answers = read.map((need) => ({ need, allowed: need.resource !== 'secrets' }));
        const result = accessCheck('you may read', answers, true);
        assert.equal(result.status, 'fail');
        assert.equal(result.detail, "denied: get secrets in lm (check (remote reachable)); get secrets in linkerd (check, unlink (the destination's Secret))");
        assert.equal(accessCheck('you may delete', answers, false).status, 'warn');
        assert.equal(accessCheck('you may read', read.map((need) => ({ need, allowed: true })), true).status, 'ok');
    });
});

describe('check: Links', () => {
    const report = (resolution: LinkOptions['resolution']) => linkReport({ link: rawLink({ resolution }), services: [], slices: [], events: [] });

    it('passes a reachable remote and a resolved gateway', () => {
        const results = linkChecks(report([{ name: 'gw.example.com', addresses: ['192.0.2.1'], ttlSeconds: 60 }]), { ok: true, detail: 'https://127.0.0.1:6443 lists Services' });
        assert.deepEqual(results.map((r) => [r.description, r.status, r.detail]), [
            ['remote cluster east is reachable with the Link\'s credentials', 'ok', 'https://127.0.0.1:6443 lists Services'],
            ['gateway gw.example.com resolves', 'ok', '192.0.2.1 (TTL 60s)'],
        ]);
    });

    it('fails an unreachable remote and a failing or unresolved gateway name, with hints', () => {
        const results = linkChecks(report([{ name: 'gw.example.com', addresses: ['192.0.2.1'], lastError: 'SERVFAIL: server failure', lastErrorAt: '2026-01-01T00:00:00Z' }]), {
            ok: false,
            error: 'connect ECONNREFUSED 127.0.0.1:1',
        });
        assert.deepEqual(results.map((r) => r.status), ['fail', 'fail']);
        assert.match(results[1]!.detail!, /SERVFAIL: server failure \(since 2026-01-01T00:00:00Z\); last good addresses kept: 192.0.2.1/);
        assert.ok(results.every((r) => r.hint));
        const unresolved = linkChecks(report([]), undefined);
        assert.equal(unresolved[1]!.status, 'fail');
        assert.match(unresolved[1]!.detail!, /no addresses in the Link status yet/);
    });

    it('fails a Link whose credentials the service mirror refuses, in the words of its condition', () => {
        const message = 'credentials Secret linkerd-multicluster/cluster-credentials-east: users["u"].user.exec is refused: a credential plugin';
        const results = linkChecks(report([{ name: 'gw.example.com', addresses: ['192.0.2.1'] }]), { ok: false, error: message, refused: true });
        assert.deepEqual([results[0]!.status, results[0]!.detail], ['fail', message]);
        assert.match(results[0]!.hint!, /RemoteCredentialsValid=False/);
    });

    it("fails a Link whose remote the service mirror cannot read, though it is reachable from here", () => {
        const link = rawLink({ resolution: [{ name: 'gw.example.com', addresses: ['192.0.2.1'] }], remote: { readable: false, reason: 'Forbidden', message: 'access revoked' } });
        const results = linkChecks(linkReport({ link, services: [], slices: [], events: [] }), { ok: true, detail: 'lists Services' });
        const mirror = results.find((r) => r.description === 'the service mirror reads remote cluster east');
        assert.equal(mirror?.status, 'fail');
        assert.equal(mirror?.detail, 'Forbidden since 2026-01-01T00:00:00Z: access revoked');
    });

    it('fails an invalid Link in one line', () => {
        const link = rawLink();
        (link.spec as Record<string, unknown>).gatewayPort = '0';
        const results = linkChecks(linkReport({ link, services: [], slices: [], events: [] }), undefined);
        assert.equal(results.length, 1);
        assert.equal(results[0]!.status, 'fail');
    });
});

describe("check: each remote reader's token", () => {
    const answers = (rights: typeof MIRROR_RIGHTS, denied: string[]) =>
        rights.flatMap((right) => right.verbs.map((verb) => ({ right, verb, allowed: !denied.includes(`${verb} ${right.resource}`) })));

    it("fails a token that may not watch what its reader reads, saying which mode fails without it", () => {
        assert.equal(remoteAccessCheck('Link mc/east', 'the service mirror', answers(MIRROR_RIGHTS, [])).status, 'ok');
        const denied = remoteAccessCheck('Link mc/east', 'the service mirror', answers(MIRROR_RIGHTS, ['watch endpointslices']));
        assert.equal(denied.status, 'fail');
        assert.equal(denied.detail, 'denied: watch endpointslices.discovery.k8s.io (without it gateway mirrors (ready endpoints) and headless mirrors (hostnames) fail)');
    });

    it("looks for the destination's Secret only when the Link enables remote discovery or federation", () => {
        const link = (spec: object) => ({ spec });
        assert.deepEqual(destinationModes(link({})), []);
        assert.deepEqual(destinationModes(link({ remoteDiscoverySelector: { matchLabels: {} } })), []);
        assert.deepEqual(destinationModes(link({ remoteDiscoverySelector: { matchLabels: { a: 'b' } }, federatedServiceSelector: { matchExpressions: [{ key: 'k', operator: 'Exists' }] } })), [
            'remote-discovery Services',
            'federated Services',
        ]);
        assert.deepEqual(destinationChecks('Link mc/east', [], { found: 'no', secret: 'linkerd/cluster-credentials-east' }), []);
    });

    it("fails a missing or unusable destination Secret, and a destination token without its rights, naming the modes that fail", () => {
        const modes = ['remote-discovery Services', 'federated Services'];
        const [missing] = destinationChecks('Link mc/east', modes, { found: 'no', secret: 'linkerd/cluster-credentials-east' });
        assert.equal(missing!.status, 'fail');
        assert.equal(missing!.detail, "not found: without it Linkerd's proxies cannot resolve the remote-discovery Services and federated Services of this Link");
        const [unusable] = destinationChecks('Link mc/east', modes.slice(0, 1), { found: 'unusable', secret: 's', error: 'it has no multicluster.linkerd.io/trust-domain annotation' });
        assert.match(unusable!.detail!, /^it has no multicluster.linkerd.io\/trust-domain annotation: without it Linkerd's proxies cannot resolve the remote-discovery Services of this Link$/);
        const found = destinationChecks('Link mc/east', modes, { found: 'yes', secret: 's', answers: answers(DESTINATION_RIGHTS, ['list servers']) });
        assert.deepEqual(found.map((r) => r.status), ['ok', 'fail']);
        assert.match(found[1]!.detail!, /^denied: list servers.policy.linkerd.io \(without it remote-discovery and federated Services \(opaque ports\) fail\)$/);
    });
});
