import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1EndpointSlice } from '@kubernetes/client-node';
import { sliceProblems } from './validate.js';

const slice = (over: Partial<V1EndpointSlice> = {}): V1EndpointSlice => ({
    addressType: 'IPv4',
    endpoints: [{ addresses: ['192.0.2.1'], hostname: 'vm-1', conditions: { ready: true } }],
    ports: [{ name: 'http', port: 8080, protocol: 'TCP' }],
    ...over,
});

describe('sliceProblems', () => {
    it('finds nothing wrong with a slice the apiserver accepts', () => {
        assert.deepEqual(sliceProblems(slice()), []);
        assert.deepEqual(sliceProblems(slice({ addressType: 'IPv6', endpoints: [{ addresses: ['2001:db8::1'] }], ports: [] })), []);
        assert.deepEqual(sliceProblems(slice({ ports: [{ name: '', port: 80, protocol: 'UDP' }] })), []);
    });

    it('rejects an empty string or an FQDN where an IP belongs, and an IP of the other family', () => {
        assert.equal(sliceProblems(slice({ endpoints: [{ addresses: [''] }] })).length, 1);
        assert.equal(sliceProblems(slice({ endpoints: [{ addresses: ['gw.example.com'] }] })).length, 1);
        assert.equal(sliceProblems(slice({ endpoints: [{ addresses: ['2001:db8::1'] }] })).length, 1);
        assert.deepEqual(sliceProblems(slice({ addressType: 'FQDN' })), ['addressType "FQDN" is not IPv4 or IPv6']);
    });

    it('rejects a hostname that is not a DNS label, and an endpoint without addresses', () => {
        assert.equal(sliceProblems(slice({ endpoints: [{ addresses: ['192.0.2.1'], hostname: 'vm.dotted' }] })).length, 1);
        assert.equal(sliceProblems(slice({ endpoints: [{ addresses: [] }] })).length, 1);
    });

    it('rejects more than 1000 endpoints', () => {
        const endpoints = Array.from({ length: 1001 }, () => ({ addresses: ['192.0.2.1'] }));
        assert.deepEqual(sliceProblems(slice({ endpoints })), ['1001 endpoints, more than 1000']);
    });

    it('rejects invalid or duplicate port names, ports out of range and unknown protocols', () => {
        assert.equal(sliceProblems(slice({ ports: [{ name: 'Http', port: 80 }] })).length, 1);
        assert.equal(sliceProblems(slice({ ports: [{ name: 'a', port: 80 }, { name: 'a', port: 81 }] })).length, 1);
        assert.equal(sliceProblems(slice({ ports: [{ name: 'a', port: 0 }] })).length, 1);
        assert.equal(sliceProblems(slice({ ports: [{ name: 'a', port: 80, protocol: 'HTTP' }] })).length, 1);
    });
});
