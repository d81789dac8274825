// The writer's last check against an independent oracle of the apiserver's validation
// (test/oracle/): whatever the check lets through, the apiserver accepts; and the check
// refuses nothing the apiserver would accept, except its two declared extra rules.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1EndpointSlice } from '@kubernetes/client-node';
import fc from 'fast-check';
import { anySlice, awkwardText, dnsLabel, invalidIP, validIP } from '../../test/oracle/adversarial.js';
import { validateEndpointSlice } from '../../test/oracle/endpointslice-validation.js';
import { sliceProblems } from './validate.js';

/** The two rules where we are stricter than the apiserver (see validate.ts). */
function onlyOursRefuse(s: V1EndpointSlice): boolean {
    const portOutOfRange = (s.ports ?? []).some((p) => p.port !== undefined && !(Number.isInteger(p.port) && p.port >= 1 && p.port <= 65535));
    return s.addressType === 'FQDN' || portOutOfRange;
}

describe('the writer’s check and the apiserver oracle', () => {
    it('agree on every slice: the check passes exactly what the apiserver accepts, bar its two stricter rules', () => {
        let accepted = 0;
        fc.assert(
            fc.property(anySlice, (s) => {
                const ours = sliceProblems(s);
                const apiserver = validateEndpointSlice(s, { strictIP: true });
                if (ours.length === 0) assert.deepEqual(apiserver, [], 'the check let through what the apiserver refuses');
                else if (apiserver.length === 0) assert.ok(onlyOursRefuse(s), `the check refused a valid slice: ${ours.join('; ')}`);
                if (ours.length === 0) accepted++;
            }),
            { numRuns: 3000, seed: 424242 },
        );
        // Not a vacuous pass: valid slices came up too.
        assert.ok(accepted > 0, `only ${accepted} valid slices generated`);
    });

    it('agree slice by slice when each slice is invalid in one field only', () => {
        const valid = (): V1EndpointSlice => ({
            metadata: { generateName: 'web-', namespace: 'shop', labels: { app: 'web' } },
            addressType: 'IPv4',
            endpoints: [{ addresses: ['192.0.2.1'], hostname: 'vm-1', conditions: { ready: true } }],
            ports: [{ name: 'http', port: 80, protocol: 'TCP' }],
        });
        fc.assert(
            fc.property(fc.oneof(validIP, invalidIP), fc.constantFrom('IPv4', 'IPv6'), awkwardText, fc.oneof(dnsLabel, awkwardText), (address, addressType, hostname, portName) => {
                for (const s of [
                    { ...valid(), addressType, endpoints: [{ addresses: [address] }] },
                    { ...valid(), endpoints: [{ addresses: ['192.0.2.1'], hostname }] },
                    { ...valid(), ports: [{ name: portName, port: 80 }] },
                    { ...valid(), metadata: { name: hostname, namespace: 'shop' } },
                ]) {
                    assert.equal(sliceProblems(s).length === 0, validateEndpointSlice(s).length === 0, JSON.stringify(s));
                }
            }),
            { numRuns: 2000, seed: 7 },
        );
    });
});
