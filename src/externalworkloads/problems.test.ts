import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { usableEndpointIP } from '../ip/address.js';
import { desiredGroupsForService } from './desired.js';
import { isDNS1123Label } from '../endpointslice/names.js';
import { makeService, makeWorkload } from './testkit.js';

const dualStack = makeService({ ipFamilies: ['IPv4', 'IPv6'] });
const published = (result: ReturnType<typeof desiredGroupsForService>) =>
    result.groups.flatMap((g) => g.endpoints.map((e) => `${e.targetRef?.name} ${e.addresses.join(',')}`));

describe('bad input never blocks the other endpoints', () => {
    const cases: Array<[string, string[], string, string]> = [
        ['an address that is not an IP', ['192.0.2.300'], 'InvalidIP', 'is not an IP address'],
        ['a name instead of an IP', ['vm.example.org'], 'InvalidIP', 'is not an IP address'],
        ['an IPv4 address with a leading zero', ['010.0.0.1'], 'InvalidIP', 'is not an IP address'],
        ['an IPv6 address with a zone', ['fe80::1%eth0'], 'InvalidIP', 'zone'],
        ['an empty address', [''], 'InvalidIP', 'is empty'],
        ['an IPv4 loopback address', ['127.0.0.1'], 'UnusableIP', 'loopback'],
        ['the IPv6 loopback address', ['::1'], 'UnusableIP', 'loopback'],
        ['an IPv4 link-local address', ['169.254.10.1'], 'UnusableIP', 'link-local'],
        ['an IPv6 link-local address', ['fe80::1'], 'UnusableIP', 'link-local'],
        ['an IPv4 multicast address', ['239.1.2.3'], 'UnusableIP', 'multicast'],
        ['an IPv6 multicast address', ['ff05::2'], 'UnusableIP', 'multicast'],
        ['the IPv4 unspecified address', ['0.0.0.0'], 'UnusableIP', 'unspecified'],
        ['the IPv6 unspecified address', ['::'], 'UnusableIP', 'unspecified'],
        ['the broadcast address', ['255.255.255.255'], 'UnusableIP', 'broadcast'],
        ['a second IPv4 address where the IPv6 one belongs', ['192.0.2.1', '192.0.2.2'], 'DuplicateIPFamily', 'second IPv4'],
        ['a second IPv6 address', ['2001:db8::1', '2001:db8::2'], 'DuplicateIPFamily', 'second IPv6'],
    ];
    for (const [what, ips, reason, text] of cases) {
        it(`leaves out ${what} with a ${reason} problem, and still publishes every other endpoint`, () => {
            const workloads = [makeWorkload('bad', { ips }), makeWorkload('good', { ips: ['192.0.2.50', '2001:db8::50'] })];
            const result = desiredGroupsForService(dualStack, workloads);
            const kept = ips.length === 2 ? [`bad ${ips[0]}`] : [];
            assert.deepEqual(published(result).sort(), [...kept, 'good 192.0.2.50', 'good 2001:db8::50'].sort());
            assert.deepEqual(result.problems.map((p) => [p.workload, p.reason]), [[{ namespace: 'shop', name: 'bad', uid: 'uid-bad' }, reason]]);
            assert.ok(result.problems[0]!.message.includes(text), result.problems[0]!.message);
            assert.ok(result.problems[0]!.message.includes(`workloadIPs[${ips.length - 1}].ip`), result.problems[0]!.message);
        });
    }

    it('publishes the good address of a workload whose other address is bad', () => {
        const result = desiredGroupsForService(dualStack, [makeWorkload('half', { ips: ['127.0.0.1', '2001:db8::9'] })]);
        assert.deepEqual(published(result), ['half 2001:db8::9']);
        assert.deepEqual(result.problems.map((p) => p.reason), ['UnusableIP']);
    });

    it('lets a usable address fill the family slot an unusable one left empty', () => {
        const result = desiredGroupsForService(dualStack, [makeWorkload('w', { ips: ['127.0.0.1', '192.0.2.3'] })]);
        assert.deepEqual(published(result), ['w 192.0.2.3']);
        assert.deepEqual(result.problems.map((p) => p.reason), ['UnusableIP']);
    });

    it('reports a bad address even when the Service does not serve its family, since it is the workload’s fault', () => {
        const result = desiredGroupsForService(makeService(), [makeWorkload('w', { ips: ['192.0.2.3', '::1'] })]);
        assert.deepEqual(published(result), ['w 192.0.2.3']);
        assert.deepEqual(result.problems.map((p) => p.reason), ['UnusableIP']);
    });

    it('gives the same groups and problems whatever the order of the workloads', () => {
        const workloads = [
            makeWorkload('c', { ips: ['192.0.2.3', 'junk'] }),
            makeWorkload('a', { ips: ['2001:db8::1'] }),
            makeWorkload('b', { ips: ['127.0.0.2', '192.0.2.2'] }),
        ];
        const forward = desiredGroupsForService(dualStack, workloads);
        const backward = desiredGroupsForService(dualStack, [...workloads].reverse());
        assert.deepEqual(backward, forward);
        assert.deepEqual(forward.problems.map((p) => `${p.workload.name} ${p.reason}`), ['b UnusableIP', 'c InvalidIP']);
    });

    it('keeps one endpoint for a workload name given twice', () => {
        const result = desiredGroupsForService(makeService(), [makeWorkload('a'), makeWorkload('a')]);
        assert.deepEqual(published(result), ['a 192.0.2.1']);
    });

    it('never publishes anything an EndpointSlice cannot hold, whatever the workload IPs and name', () => {
        const anyIP = fc.oneof(
            fc.ipV4(),
            fc.ipV6(),
            fc.ipV4Extended(),
            fc.string({ maxLength: 20 }),
            fc.constantFrom('::ffff:10.0.0.1', 'fe80::1%1', '0.0.0.0', 'ff02::1', '224.0.0.1', '::'),
        );
        const anyName = fc.oneof(fc.domain(), fc.stringMatching(/^[a-z0-9][a-z0-9.-]{0,70}$/));
        const headlessDual = makeService({ clusterIP: 'None', ipFamilies: ['IPv4', 'IPv6'] });
        fc.assert(
            fc.property(fc.array(fc.tuple(anyName, fc.array(anyIP, { maxLength: 3 })), { maxLength: 5 }), (specs) => {
                const workloads = specs.map(([name, ips], i) => makeWorkload(`${name}-${i}`.slice(-253), { ips }));
                const result = desiredGroupsForService(headlessDual, workloads);
                for (const group of result.groups) {
                    for (const endpoint of group.endpoints) {
                        assert.equal(endpoint.addresses.length, 1);
                        const address = endpoint.addresses[0]!;
                        assert.deepEqual(usableEndpointIP(address), { usable: true, address, family: group.addressType });
                        if (endpoint.hostname !== undefined) assert.ok(isDNS1123Label(endpoint.hostname));
                    }
                }
            }),
            { numRuns: 200, seed: 20260101 },
        );
    });
});
