import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { addressTypesForService, desiredGroupsForService, selectsWorkload } from './desired.js';
import { makeService, makeWorkload } from './testkit.js';

const names = (result: ReturnType<typeof desiredGroupsForService>) =>
    result.groups.flatMap((g) => g.endpoints.map((e) => `${g.addressType} ${e.targetRef?.name}`));

describe('which Services get slices, and from which workloads', () => {
    const notSelected = [
        { why: 'a Service without selector', service: makeService({ selector: undefined }) },
        { why: 'an ExternalName Service, even with a selector', service: makeService({ type: 'ExternalName', externalName: 'example.org' }) },
        { why: 'a Service pending deletion', service: makeService({}, { deletionTimestamp: new Date('2026-01-01T00:00:00Z') }) },
    ];
    for (const { why, service } of notSelected) {
        it(`gives ${why} nothing, so the controller deletes its slices`, () => {
            assert.deepEqual(desiredGroupsForService(service, [makeWorkload('a')]), {
                selected: false,
                addressTypes: [],
                groups: [],
                problems: [],
            });
        });
    }

    it('selects a Service whose selector matches no workload, with no groups', () => {
        const result = desiredGroupsForService(makeService(), [makeWorkload('a', { labels: { app: 'other' } })]);
        assert.equal(result.selected, true);
        assert.deepEqual(result.addressTypes, ['IPv4']);
        assert.deepEqual(result.groups, []);
    });

    it('takes only the workloads of the Service’s own namespace', () => {
        const workloads = [makeWorkload('here'), makeWorkload('there', { namespace: 'elsewhere' })];
        assert.deepEqual(names(desiredGroupsForService(makeService(), workloads)), ['IPv4 here']);
    });

    it('takes the workloads carrying every label of the selector, whatever other labels they have', () => {
        const service = makeService({ selector: { app: 'web', tier: 'front' } });
        const workloads = [
            makeWorkload('both', { labels: { app: 'web', tier: 'front', extra: 'x' } }),
            makeWorkload('one-label', { labels: { app: 'web' } }),
            makeWorkload('other-value', { labels: { app: 'web', tier: 'back' } }),
            makeWorkload('no-labels', { labels: {} }),
        ];
        assert.deepEqual(names(desiredGroupsForService(service, workloads)), ['IPv4 both']);
    });

    it('selects every workload of the namespace with an empty selector {}', () => {
        const workloads = [makeWorkload('a', { labels: {} }), makeWorkload('b', { labels: { x: 'y' } }), makeWorkload('c', { namespace: 'elsewhere' })];
        assert.deepEqual(names(desiredGroupsForService(makeService({ selector: {} }), workloads)), ['IPv4 a', 'IPv4 b']);
    });

    it('answers selectsWorkload the same way for the controller’s event handlers', () => {
        const cases: Array<[string, boolean, ReturnType<typeof makeService>, ReturnType<typeof makeWorkload>]> = [
            ['matching labels, same namespace', true, makeService(), makeWorkload('a')],
            ['empty selector', true, makeService({ selector: {} }), makeWorkload('a', { labels: {} })],
            ['other namespace', false, makeService(), makeWorkload('a', { namespace: 'elsewhere' })],
            ['label mismatch', false, makeService(), makeWorkload('a', { labels: { app: 'db' } })],
            ['no selector', false, makeService({ selector: undefined }), makeWorkload('a')],
            ['ExternalName', false, makeService({ type: 'ExternalName' }), makeWorkload('a')],
        ];
        for (const [why, expected, service, workload] of cases) assert.equal(selectsWorkload(service, workload), expected, why);
    });
});

describe('address families', () => {
    const dualStack = makeWorkload('dual', { ips: ['192.0.2.1', '2001:db8::1'] });
    const v4only = makeWorkload('v4only', { ips: ['192.0.2.2'] });
    const v6only = makeWorkload('v6only', { ips: ['2001:db8::2'] });

    it('publishes only the IPv4 addresses for an IPv4 Service', () => {
        const result = desiredGroupsForService(makeService(), [dualStack, v4only, v6only]);
        assert.deepEqual(result.groups.map((g) => [g.addressType, g.endpoints.map((e) => e.addresses)]), [
            ['IPv4', [['192.0.2.1'], ['192.0.2.2']]],
        ]);
    });

    it('publishes only the IPv6 addresses for an IPv6 Service, leaving IPv4-only workloads out without complaint', () => {
        const service = makeService({ ipFamilies: ['IPv6'], clusterIP: 'fd00::10' });
        const result = desiredGroupsForService(service, [dualStack, v4only, v6only]);
        assert.deepEqual(result.addressTypes, ['IPv6']);
        assert.deepEqual(result.groups.map((g) => [g.addressType, g.endpoints.map((e) => e.addresses)]), [
            ['IPv6', [['2001:db8::1'], ['2001:db8::2']]],
        ]);
        assert.deepEqual(result.problems, []);
    });

    it('gives a dual-stack Service one group per family, in the order of spec.ipFamilies', () => {
        const service = makeService({ ipFamilies: ['IPv6', 'IPv4'], clusterIP: 'fd00::10' });
        const result = desiredGroupsForService(service, [dualStack, v4only, v6only]);
        assert.deepEqual(result.addressTypes, ['IPv6', 'IPv4']);
        assert.deepEqual(names(result), ['IPv6 dual', 'IPv6 v6only', 'IPv4 dual', 'IPv4 v4only']);
    });

    it('gives a headless Service without families both families', () => {
        const service = makeService({ clusterIP: 'None', ipFamilies: undefined });
        const result = desiredGroupsForService(service, [dualStack]);
        assert.deepEqual(result.addressTypes, ['IPv4', 'IPv6']);
        assert.deepEqual(names(result), ['IPv4 dual', 'IPv6 dual']);
    });

    it('derives the families from spec.ipFamilies, else the ClusterIP, else both', () => {
        const cases: Array<[string, Parameters<typeof makeService>[0], string[]]> = [
            ['families as listed', { ipFamilies: ['IPv4', 'IPv6'] }, ['IPv4', 'IPv6']],
            ['IPv4 ClusterIP, no families', { ipFamilies: undefined, clusterIP: '10.96.0.10' }, ['IPv4']],
            ['IPv6 ClusterIP, no families', { ipFamilies: [], clusterIP: 'fd00::10' }, ['IPv6']],
            ['headless, no families', { ipFamilies: undefined, clusterIP: 'None' }, ['IPv4', 'IPv6']],
            ['headless with one family', { ipFamilies: ['IPv6'], clusterIP: 'None' }, ['IPv6']],
            ['ClusterIP not yet allocated', { ipFamilies: undefined, clusterIP: undefined }, ['IPv4', 'IPv6']],
        ];
        for (const [why, spec, expected] of cases) assert.deepEqual(addressTypesForService(makeService(spec)), expected, why);
    });

    it('publishes addresses in canonical form, IPv4-mapped IPv6 as IPv4', () => {
        const workloads = [makeWorkload('upper', { ips: ['2001:DB8:0:0::A'] }), makeWorkload('mapped', { ips: ['::ffff:192.0.2.9'] })];
        const service = makeService({ ipFamilies: ['IPv4', 'IPv6'] });
        const result = desiredGroupsForService(service, workloads);
        assert.deepEqual(result.groups.map((g) => [g.addressType, g.endpoints.map((e) => e.addresses[0])]), [
            ['IPv4', ['192.0.2.9']],
            ['IPv6', ['2001:db8::a']],
        ]);
    });
});
