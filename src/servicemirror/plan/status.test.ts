import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { parseGatewayAddress } from '../../dns/gateway-address.js';
import { initialNameState, onAnswer, onFailure, type DnsPolicy, type NameState } from '../../dns/name-state.js';
import { gatewayResolutionStatus as gatewayResolution } from '../../dns/resolution-status.js';
import {
    canonicalJson,
    desiredLinkStatus,
    linkStatusDiffers,
    linkStatusPatch,
    mirrorServiceStatus,
    mirrorsReport,
    sameJson,
    sameServiceStatus,
    servicesMirroredCondition,
    type MirrorOutcome,
} from './status.js';

const T0 = Date.UTC(2026, 0, 1, 12, 0, 0);
const policy: DnsPolicy = { minTtlMs: 1000, maxTtlMs: 3000, staleWindowMs: 2000, retryInitialMs: 1000, retryMaxMs: 30_000 };
const none = mirrorsReport([]);
const mirrored: MirrorOutcome = { namespace: 'app', remoteName: 'web', mirrored: true, reason: 'Mirrored', message: 'mirrored as app/web-east', localName: 'web-east' };

describe('Link status: mirrorServices', () => {
    it('writes one Mirrored condition per remote Service, with refs in the CRD defaulted form', () => {
        assert.deepEqual(mirrorServiceStatus(mirrored, undefined, T0), {
            controllerName: 'mesh-endpoints.io/service-mirror',
            remoteRef: { group: 'core', kind: 'Service', name: 'web', namespace: 'app' },
            conditions: [
                {
                    type: 'Mirrored',
                    status: 'True',
                    lastTransitionTime: '2026-01-01T12:00:00Z',
                    reason: 'Mirrored',
                    message: 'mirrored as app/web-east',
                    localRef: { group: 'core', kind: 'Service', name: 'web-east', namespace: 'app' },
                },
            ],
        });
    });

    it('keeps the transition time while the status stays the same, so a resync changes nothing', () => {
        const first = mirrorServiceStatus(mirrored, undefined, T0);
        const again = mirrorServiceStatus(mirrored, first, T0 + 60_000);
        assert.deepEqual(again, first);
        const failed = mirrorServiceStatus({ ...mirrored, mirrored: false, reason: 'MissingNamespace', message: 'no namespace', localName: undefined }, first, T0 + 60_000);
        assert.equal(failed.conditions![0]!.lastTransitionTime, '2026-01-01T12:01:00Z');
        assert.equal(failed.conditions![0]!.localRef, undefined);
        assert.ok(!sameServiceStatus(first, failed));
        assert.ok(sameServiceStatus(first, mirrorServiceStatus(mirrored, undefined, T0 + 5000)), 'the time alone is no news');
    });

});

describe('Link status: the mirrors, counted and the not-mirrored ones listed', () => {
    const failing = (namespace: string, remoteName: string, reason: MirrorOutcome['reason'] = 'InvalidService') =>
        mirrorServiceStatus({ namespace, remoteName, mirrored: false, reason, message: 'no ports' }, undefined, T0);
    const ok = (remoteName: string) => mirrorServiceStatus({ ...mirrored, remoteName }, undefined, T0);
    const keys = (entries: { remoteRef: { namespace: string; name: string } }[] | undefined) => entries?.map((s) => `${s.remoteRef.namespace}/${s.remoteRef.name}`);

    it('counts mirrored ones and lists only the others, sorted by namespace and name', () => {
        const report = mirrorsReport([ok('a'), failing('app', 'b'), failing('a', 'z', 'MissingNamespace'), ok('c')]);
        assert.deepEqual(keys(report.listed), ['a/z', 'app/b']);
        assert.deepEqual(report.summary, {
            services: 4,
            mirrored: 2,
            notMirrored: 2,
            notMirroredByReason: [
                { reason: 'InvalidService', services: 1 },
                { reason: 'MissingNamespace', services: 1 },
            ],
            notListed: 0,
        });
        assert.deepEqual(desiredLinkStatus(report, undefined).mirrorServices, report.listed);
    });

    it('stays the same size however many mirrors there are: past the limit, not-mirrored ones are counted, not listed', () => {
        const entries = [...Array.from({ length: 5000 }, (_, i) => ok(`ok-${i}`)), ...Array.from({ length: 7 }, (_, i) => failing('app', `bad-${6 - i}`))];
        const report = mirrorsReport(entries, 3);
        assert.deepEqual(keys(report.listed), ['app/bad-0', 'app/bad-1', 'app/bad-2']);
        assert.equal(report.summary.notListed, 4);
        assert.ok(JSON.stringify(desiredLinkStatus(report, undefined)).length < 2000);
    });

    it('has a ServicesMirrored condition that says how many are not mirrored and why, its time kept while its status is', () => {
        const all = servicesMirroredCondition(mirrorsReport([ok('a'), ok('b')]).summary, undefined, T0);
        assert.deepEqual(all, { type: 'ServicesMirrored', status: 'True', lastTransitionTime: '2026-01-01T12:00:00Z', reason: 'AllMirrored', message: 'all 2 exported remote Services are mirrored' });
        assert.equal(servicesMirroredCondition(mirrorsReport([ok('a')]).summary, all, T0 + 60_000).lastTransitionTime, all.lastTransitionTime);
        const some = servicesMirroredCondition(mirrorsReport([ok('a'), failing('app', 'b'), failing('app', 'c'), failing('app', 'd', 'Error')], 2).summary, all, T0 + 60_000);
        assert.equal(some.status, 'False');
        assert.equal(some.reason, 'NotAllMirrored');
        assert.equal(some.lastTransitionTime, '2026-01-01T12:01:00Z');
        assert.equal(
            some.message,
            "3 of 4 exported remote Services are not mirrored (Error: 1, InvalidService: 2); the first 2 are listed in status.mirrorServices, and the Link's Warning Events say why",
        );
        assert.equal(servicesMirroredCondition(mirrorsReport([]).summary, undefined, T0).message, 'no remote Service is exported through this Link');
    });
});

describe('Link status: gatewayResolution', () => {
    const entries = parseGatewayAddress('gw.example.test, 192.0.2.9').entries;

    function states(state: NameState): Map<string, NameState> {
        return new Map([[state.name, state]]);
    }

    it('shows every gatewayAddress part in spec order, an IP literal as itself', () => {
        const state = onAnswer(initialNameState('gw.example.test', T0), [{ address: '192.0.2.1', ttl: 0 }], [], T0, policy).state;
        const status = gatewayResolution(entries, states(state), T0, policy);
        assert.deepEqual(status.map((s) => s.name), ['gw.example.test', '192.0.2.9']);
        assert.deepEqual(status[1], { name: '192.0.2.9', addresses: ['192.0.2.9'] });
        assert.deepEqual(status[0]!.addresses, ['192.0.2.1']);
        assert.equal(status[0]!.ttlSeconds, 0);
    });

    it('lists the addresses of a failing name past its stale window as not ready', () => {
        const good = onAnswer(initialNameState('gw.example.test', T0), [{ address: '192.0.2.1', ttl: 30 }], [], T0, policy).state;
        const failed = onFailure(good, { code: 'SERVFAIL', message: 'A gw.example.test: SERVFAIL (ESERVFAIL)' }, T0 + 1000, policy).state;
        const within = gatewayResolution(entries, states(failed), T0 + 2000, policy)[0]!;
        assert.match(within.lastError ?? '', /SERVFAIL/);
        assert.equal(within.notReadyAddresses, undefined);
        assert.deepEqual(within.staleSince, { IPv4: '2026-01-01T12:00:01Z' });
        const past = gatewayResolution(entries, states(failed), T0 + 1000 + policy.staleWindowMs + 1, policy)[0]!;
        assert.deepEqual(past.notReadyAddresses, ['192.0.2.1']);
        assert.deepEqual(past.addresses, ['192.0.2.1'], 'the last good address stays published');
    });
});

describe('Link status: when to write', () => {
    const at = (ms: number) => new Date(ms).toISOString().replace('.000Z', 'Z');
    const named = (resolvedAt: number, ttlSeconds = 30) =>
        desiredLinkStatus(none, [{ name: 'gw.example.test', addresses: ['192.0.2.1'], ttlSeconds, resolvedAt: at(resolvedAt), nextRefreshAt: at(resolvedAt + 30_000) }]);

    it('does not write a gateway name again only because it resolved again with the same answer', () => {
        assert.equal(linkStatusDiffers(named(T0), named(T0 + 10_000, 29), 60_000), false);
    });

    it('writes the time of the last good answer again once the recorded one is older than the record interval', () => {
        assert.equal(linkStatusDiffers(named(T0), named(T0 + 60_000), 60_000), true);
    });

    it('writes at once when the addresses change', () => {
        const moved = desiredLinkStatus(none, [{ name: 'gw.example.test', addresses: ['192.0.2.2'], resolvedAt: at(T0 + 1000) }]);
        assert.equal(linkStatusDiffers(named(T0), moved, 60_000), true);
    });

    const status = desiredLinkStatus(mirrorsReport([mirrorServiceStatus(mirrored, undefined, T0)]), [{ name: '192.0.2.9', addresses: ['192.0.2.9'] }]);

    it('sees no difference in the same status read back with keys in another order', () => {
        const readBack = JSON.parse(canonicalJson(status)) as unknown;
        assert.equal(linkStatusDiffers(readBack, status), false);
        assert.equal(canonicalJson({ b: 1, a: { d: 1, c: undefined } }), '{"a":{"d":1},"b":1}');
    });

    it('ignores fields that are not ours, and sees a change in ours', () => {
        assert.equal(linkStatusDiffers({ ...status, federatedServices: [] }, status), false);
        assert.equal(linkStatusDiffers({ ...status, gatewayResolution: [] }, status), true);
        assert.equal(linkStatusDiffers(undefined, status), true);
    });

    it('patches our fields, and removes gatewayResolution from a Link without a gateway', () => {
        const summary = { services: 0, mirrored: 0, notMirrored: 0, notMirroredByReason: [], notListed: 0 };
        assert.deepEqual(linkStatusPatch(desiredLinkStatus(none, undefined)), { status: { mirrorServices: [], mirrorSummary: summary, gatewayResolution: null } });
    });
});

describe('sameJson: canonicalJson equality without the strings', () => {
    it('ignores key order and undefined properties, not array order, types or values', () => {
        assert.equal(sameJson({ a: 1, b: { c: [1, 2], d: undefined } }, { b: { c: [1, 2] }, a: 1 }), true);
        assert.equal(sameJson({ c: [1, 2] }, { c: [2, 1] }), false);
        assert.equal(sameJson({ a: 1 }, { a: '1' }), false);
        assert.equal(sameJson({ a: null }, {}), false);
        assert.equal(sameJson([], {}), false);
        assert.equal(sameJson({ a: { b: 1 } }, { a: { b: 1, c: 2 } }), false);
        assert.equal(sameJson(undefined, undefined), true);
    });

    it('agrees with comparing canonicalJson, for any JSON and a copy with keys in another order', () => {
        const reversedKeys = (v: unknown): unknown =>
            Array.isArray(v) ? v.map(reversedKeys) : v !== null && typeof v === 'object' ? Object.fromEntries(Object.entries(v).reverse().map(([k, x]) => [k, reversedKeys(x)])) : v;
        fc.assert(
            fc.property(fc.jsonValue(), fc.jsonValue(), (a, b) => {
                assert.equal(sameJson(a, b), canonicalJson(a) === canonicalJson(b));
                assert.equal(sameJson(a, reversedKeys(a)), true);
            }),
        );
    });
});
