import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1EndpointSlice } from '@kubernetes/client-node';
import { sliceProblems } from './validate.js';

const valid = (): V1EndpointSlice => ({
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: {
        generateName: 'web-',
        namespace: 'shop',
        labels: { 'kubernetes.io/service-name': 'web', 'service.kubernetes.io/headless': '' },
        annotations: { 'mirror.linkerd.io/remote-svc-fq-name': 'web.shop.svc.cluster.local' },
        ownerReferences: [{ apiVersion: 'v1', kind: 'Service', name: 'web', uid: 'u1', controller: true }],
    },
    addressType: 'IPv4',
    endpoints: [
        {
            addresses: ['192.0.2.1'],
            hostname: 'vm-1',
            nodeName: 'node-1.example',
            zone: 'any zone text at all',
            conditions: { ready: true, serving: true, terminating: false },
            hints: { forZones: [{ name: 'zone-a' }] },
        },
    ],
    ports: [
        { name: 'http', port: 8080, protocol: 'TCP', appProtocol: 'kubernetes.io/h2c' },
        { name: '', port: 53, protocol: 'UDP' },
        { name: 'admin', port: 9000 },
    ],
});

/** The valid slice with one change made to it. */
function changed(change: (s: V1EndpointSlice) => void): V1EndpointSlice {
    const slice = valid();
    change(slice);
    return slice;
}

const ep = (s: V1EndpointSlice) => s.endpoints[0]!;
const long = (n: number, c = 'a') => c.repeat(n);

describe('sliceProblems: the apiserver’s EndpointSlice validation', () => {
    it('finds nothing wrong with a slice the apiserver accepts, created or updated', () => {
        assert.deepEqual(sliceProblems(valid()), []);
        assert.deepEqual(sliceProblems(changed((s) => (s.metadata = { ...s.metadata, generateName: undefined, name: 'web-x2b4k' }))), []);
        assert.deepEqual(sliceProblems(changed((s) => ((s.addressType = 'IPv6'), (ep(s).addresses = ['2001:db8::1'])))), []);
        assert.deepEqual(sliceProblems(changed((s) => ((s.endpoints = []), (s.ports = [])))), []);
        assert.deepEqual(sliceProblems(changed((s) => (s.metadata!.generateName = `${long(252)}-`))), []); // cut to 58 by the generator
        assert.deepEqual(sliceProblems(changed((s) => (ep(s).hostname = long(63)))), []);
        assert.deepEqual(sliceProblems(changed((s) => (s.metadata!.labels![`${long(253)}/${long(63)}`] = long(63)))), []);
        assert.deepEqual(sliceProblems(changed((s) => (s.ports = Array.from({ length: 20000 }, (_, i) => ({ name: `p${i}`, port: 1 + (i % 65535) }))))), []);
        assert.deepEqual(sliceProblems(changed((s) => (s.endpoints = Array.from({ length: 1000 }, () => ({ addresses: ['192.0.2.1'] }))))), []);
    });

    // [what, change, words of the one problem expected]
    const cases: Array<[string, (s: V1EndpointSlice) => void, string]> = [
        // ValidateObjectMeta
        ['neither name nor generateName', (s) => delete s.metadata!.generateName, 'name or generateName is required'],
        ['a dotted-wrong name', (s) => (s.metadata!.name = 'web..x'), 'metadata.name'],
        ['an uppercase name', (s) => (s.metadata!.name = 'Web'), 'metadata.name'],
        ['a 254-character name', (s) => (s.metadata!.name = long(254)), 'metadata.name'],
        ['a generateName with an uppercase letter', (s) => (s.metadata!.generateName = 'Web-'), 'generateName'],
        // maskTrailingDash replaces the last two characters by "a", so "web.-" passes as a prefix
        ['a generateName that passes as a prefix but yields invalid names', (s) => (s.metadata!.generateName = 'web.-'), 'yields invalid names'],
        ['no namespace', (s) => delete s.metadata!.namespace, 'namespace is required'],
        ['a dotted namespace', (s) => (s.metadata!.namespace = 'a.b'), 'namespace'],
        ['a label key with two slashes', (s) => (s.metadata!.labels!['a/b/c'] = 'x'), 'labels: key'],
        ['a label key of 64 characters', (s) => (s.metadata!.labels![long(64)] = 'x'), 'labels: key'],
        ['a label key with an empty prefix', (s) => (s.metadata!.labels!['/x'] = 'x'), 'labels: key'],
        ['a label key with an empty name', (s) => (s.metadata!.labels!['example.com/'] = 'x'), 'labels: key'],
        ['a label key whose prefix is not a subdomain', (s) => (s.metadata!.labels!['Example.com/x'] = 'x'), 'labels: key'],
        ['a label value of 64 characters', (s) => (s.metadata!.labels!.x = long(64)), 'label value'],
        ['a label value in unicode', (s) => (s.metadata!.labels!.x = 'zürich'), 'label value'],
        ['a label value ending in "-"', (s) => (s.metadata!.labels!.x = 'a-'), 'label value'],
        ['an annotation key with a space', (s) => (s.metadata!.annotations!['a b'] = 'x'), 'annotations: key'],
        ['annotations over 256 KiB, counted in bytes', (s) => (s.metadata!.annotations!.big = long(128 * 1024 + 1, 'é')), 'bytes'],
        ['an owner reference without uid', (s) => (s.metadata!.ownerReferences![0]!.uid = ''), 'ownerReferences[0]'],
        ['an owner reference whose apiVersion has a group and no version', (s) => (s.metadata!.ownerReferences![0]!.apiVersion = 'apps/'), 'ownerReferences[0]'],
        ['a second owner reference without kind', (s) => s.metadata!.ownerReferences!.push({ apiVersion: 'v1', kind: '', name: 'b', uid: 'u2' }), 'ownerReferences[1]'],
        ['two controller owner references', (s) => s.metadata!.ownerReferences!.push({ apiVersion: 'v1', kind: 'Service', name: 'b', uid: 'u2', controller: true }), 'only one'],
        ['a finalizer that is not a qualified name', (s) => (s.metadata!.finalizers = ['a b']), 'finalizers'],
        // validateAddressType (FQDN is the apiserver's, but never ours)
        ['addressType FQDN', (s) => (s.addressType = 'FQDN'), 'not IPv4 or IPv6'],
        ['addressType IP (deprecated)', (s) => (s.addressType = 'IP'), 'not IPv4 or IPv6'],
        // validateEndpoints
        ['1001 endpoints', (s) => (s.endpoints = Array.from({ length: 1001 }, () => ({ addresses: ['192.0.2.1'] }))), 'more than 1000'],
        ['an endpoint without addresses', (s) => (ep(s).addresses = []), 'must be 1 to 100'],
        ['101 addresses', (s) => (ep(s).addresses = Array.from({ length: 101 }, () => '192.0.2.1')), 'must be 1 to 100'],
        ['an empty address', (s) => (ep(s).addresses = ['']), 'not an IP'],
        ['a loopback address in the second endpoint, named by its index', (s) => s.endpoints.push({ addresses: ['127.0.0.1'] }), 'endpoints[1].addresses'],
        ['a hostname where an IP belongs', (s) => (ep(s).addresses = ['gw.example.com']), 'not an IP'],
        ['an IPv6 address in an IPv4 slice', (s) => (ep(s).addresses = ['2001:db8::1']), 'must be an IPv4'],
        ['a loopback address', (s) => (ep(s).addresses = ['127.0.0.1']), 'loopback'],
        ['a non-canonical IPv6 address', (s) => ((s.addressType = 'IPv6'), (ep(s).addresses = ['2001:DB8::1'])), 'canonical'],
        ['a dotted hostname', (s) => (ep(s).hostname = 'vm.dotted'), 'hostname'],
        ['a 64-character hostname', (s) => (ep(s).hostname = long(64)), 'hostname'],
        ['an empty hostname', (s) => (ep(s).hostname = ''), 'hostname'],
        ['a nodeName with an underscore', (s) => (ep(s).nodeName = 'node_1'), 'nodeName'],
        ['a zone that is not a string', (s) => (ep(s).zone = 5 as unknown as string), 'zone'],
        ['a condition that is not a boolean', (s) => (ep(s).conditions = { ready: 'yes' as unknown as boolean }), 'conditions.ready'],
        ['nine zone hints', (s) => (ep(s).hints = { forZones: Array.from({ length: 9 }, (_, i) => ({ name: `z${i}` })) }), 'forZones'],
        ['a duplicate zone hint', (s) => (ep(s).hints = { forZones: [{ name: 'z' }, { name: 'z' }] }), 'duplicate zone'],
        ['a node hint that is not a subdomain', (s) => (ep(s).hints = { forNodes: [{ name: 'Node' }] }), 'forNodes'],
        // validatePorts
        ['20001 ports', (s) => (s.ports = Array.from({ length: 20001 }, (_, i) => ({ name: `p${i}`, port: 80 }))), 'more than 20000'],
        ['an uppercase port name', (s) => (s.ports![0]!.name = 'Http'), 'not a DNS label'],
        ['a 64-character port name', (s) => (s.ports![0]!.name = long(64)), 'not a DNS label'],
        ['a dotted port name', (s) => (s.ports![0]!.name = 'h.ttp'), 'not a DNS label'],
        ['two ports named alike', (s) => (s.ports![1]!.name = 'http'), 'ports[1].name "http" is used twice'],
        ['two unnamed ports (name "" defaulted)', (s) => (s.ports![2]!.name = undefined), 'used twice'],
        ['protocol HTTP', (s) => (s.ports![0]!.protocol = 'HTTP'), 'not TCP, UDP or SCTP'],
        ['lowercase protocol tcp', (s) => (s.ports![0]!.protocol = 'tcp'), 'not TCP, UDP or SCTP'],
        ['an appProtocol with a space', (s) => (s.ports![0]!.appProtocol = 'my proto'), 'appProtocol'],
        ['an appProtocol with two slashes', (s) => (s.ports![0]!.appProtocol = 'a/b/c'), 'appProtocol'],
        ['port 0', (s) => (s.ports![0]!.port = 0), 'not 1 to 65535'],
        ['port 65536', (s) => (s.ports![0]!.port = 65536), 'not 1 to 65535'],
        ['port 80.5', (s) => (s.ports![0]!.port = 80.5), 'not 1 to 65535'],
    ];
    for (const [what, change, words] of cases) {
        it(`refuses ${what}`, () => {
            const problems = sliceProblems(changed(change));
            assert.equal(problems.length, 1, problems.join('; '));
            assert.ok(problems[0]!.includes(words), problems[0]);
        });
    }

    it('returns every problem, not only the first', () => {
        const slice = changed((s) => {
            s.metadata!.namespace = 'A';
            ep(s).hostname = 'a.b';
            s.ports![0]!.protocol = 'HTTP';
        });
        assert.equal(sliceProblems(slice).length, 3);
    });
});
