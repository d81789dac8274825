import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { checkIdentity, identityFromToken } from './identity.js';
import { registrationLease } from './lease.js';

const jwt = (claims: object) => `e30.${Buffer.from(JSON.stringify(claims)).toString('base64url')}.sig`;

describe('identityFromToken: the VM is its ServiceAccount <group>.<vm id>', () => {
    it('reads namespace, group and VM from the sub claim', () => {
        assert.deepEqual(identityFromToken(jwt({ sub: 'system:serviceaccount:vms:web.prod.vm-7' })), {
            namespace: 'vms',
            group: 'web.prod',
            vm: 'vm-7',
            username: 'system:serviceaccount:vms:web.prod.vm-7',
        });
    });
    const refused: Array<[string, string, RegExp]> = [
        ['a token that is no JWT', 'opaque', /not a ServiceAccount token/],
        ['unreadable claims', 'a.%%%.c', /cannot be read/],
        ['a user', jwt({ sub: 'alice' }), /not a ServiceAccount's/],
        ['a ServiceAccount not named like a VM', jwt({ sub: 'system:serviceaccount:vms:default' }), /not named <group>.<vm id>/],
    ];
    for (const [what, token, why] of refused) it(`refuses ${what}`, () => assert.match(String(identityFromToken(token)), why));

    it('the flags, when given, must agree with the token', () => {
        const id = identityFromToken(jwt({ sub: 'system:serviceaccount:vms:web.vm-1' }));
        assert.ok(typeof id !== 'string');
        assert.equal(checkIdentity(id, { group: 'web', vmId: 'vm-1' }), undefined);
        assert.equal(checkIdentity(id, { group: 'db', namespace: 'other' }), "--namespace other is not the token's (vms); --group db is not the token's (web)");
    });
});

describe('registrationLease: what the agent writes', () => {
    const id = { namespace: 'vms', group: 'web', vm: 'vm-1', username: 'system:serviceaccount:vms:web.vm-1' };
    const now = new Date('2026-01-01T00:00:00.123Z');
    it('its own name, its group label, itself as holder, its addresses, renewTime now', () => {
        assert.deepEqual(registrationLease(id, ['10.20.0.1', 'fd00:20::1'], { now, leaseDurationMs: 40_000 }), {
            apiVersion: 'coordination.k8s.io/v1',
            kind: 'Lease',
            metadata: { name: 'web.vm-1', namespace: 'vms', labels: { 'mesh-endpoints.io/workload-group': 'web' }, annotations: { 'mesh-endpoints.io/addresses': '10.20.0.1,fd00:20::1' } },
            spec: { holderIdentity: id.username, leaseDurationSeconds: 40, acquireTime: '2026-01-01T00:00:00.123000Z', renewTime: '2026-01-01T00:00:00.123000Z' },
        });
    });
    it('a renewal keeps acquireTime and writes at the version read; a withdrawal says so', () => {
        const lease = registrationLease(id, ['10.20.0.1'], { now, leaseDurationMs: 3500, withdrawn: true, previous: { resourceVersion: '42', acquireTime: 'then' } });
        assert.deepEqual([lease.metadata.resourceVersion, lease.spec.acquireTime, lease.spec.leaseDurationSeconds], ['42', 'then', 4]);
        assert.equal(lease.metadata.annotations['mesh-endpoints.io/withdrawn'], '2026-01-01T00:00:00.123000Z');
    });
});
