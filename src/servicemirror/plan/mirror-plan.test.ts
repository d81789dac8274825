import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1EndpointSlice, V1Service } from '@kubernetes/client-node';
import { testLink } from '../api/testkit.js';
import { buildMirrorService } from './mirror.js';
import { planMirror, type MirrorPlanInput } from './mirror-plan.js';

const link = testLink();
const exported = { 'mirror.linkerd.io/exported': 'true' };

function remote(name: string, labels: Record<string, string> = exported, spec: V1Service['spec'] = {}): V1Service {
    return {
        apiVersion: 'v1',
        kind: 'Service',
        metadata: { name, namespace: 'shop', labels },
        spec: { clusterIP: '10.96.0.10', ports: [{ name: 'http', protocol: 'TCP', port: 80 }], ...spec },
    };
}

function slice(addresses: string[], hostname?: string): V1EndpointSlice {
    return {
        addressType: 'IPv4',
        metadata: { name: 'cart-abc', namespace: 'shop', labels: { 'kubernetes.io/service-name': 'cart' } },
        endpoints: [{ addresses, ...(hostname && { hostname }), conditions: { ready: true } }],
    };
}

/** A Service under the mirror's name that is no mirror at all. */
const foreign: V1Service = { metadata: { name: 'cart-remote', namespace: 'shop' }, spec: { ports: [{ port: 80 }] } };

function input(overrides: Partial<MirrorPlanInput>): MirrorPlanInput {
    return {
        link,
        namespace: 'shop',
        remoteName: 'cart',
        remote: remote('cart'),
        remoteSlices: [slice(['10.0.0.1'])],
        admitted: true,
        stored: () => undefined,
        enableHeadlessServices: false,
        ...overrides,
    };
}

const longName = 'a'.repeat(60);

/** Each row: the input, then what the plan says (action, and the fields that row is about). */
const table: Array<[string, Partial<MirrorPlanInput>, Record<string, unknown>]> = [
    ['remote Service gone: its mirror is deleted, nothing told', { remote: undefined }, { action: 'delete', name: 'cart-remote', refused: undefined }],
    ['remote Service not exported: its mirror is deleted', { remote: remote('cart', {}) }, { action: 'delete', name: 'cart-remote', refused: undefined }],
    ['not exported and no valid mirror name: nothing at all', { remoteName: longName, remote: remote(longName, {}) }, { action: 'none' }],
    ['exported with no valid mirror name: refused, nothing to delete', { remoteName: longName, remote: remote(longName) }, { action: 'refuse' }],
    ['exported ExternalName: deleted, refused for the status', { remote: remote('cart', exported, { type: 'ExternalName', externalName: 'x.example' }) }, { action: 'delete', name: 'cart-remote', refused: 'ExternalName Services have no endpoints to mirror' }],
    ['exported without ports: deleted, refused', { remote: remote('cart', exported, { ports: [] }) }, { action: 'delete', refused: 'the Service exposes no ports' }],
    ['past the mirror limit: deleted, not listed one by one', { admitted: false }, { action: 'delete', name: 'cart-remote', refused: undefined }],
    ['exported, nothing stored: created', {}, { action: 'mirror', name: 'cart-remote', mode: 'mirror', headless: false, service: { action: 'create' } }],
    ['exported, the same mirror stored: kept', { stored: () => buildMirrorService(remote('cart'), link) }, { action: 'mirror', service: { action: 'keep' } }],
    ['exported, a changed mirror stored: updated', { stored: () => buildMirrorService(remote('cart', { ...exported, team: 'a' }), link) }, { action: 'mirror', service: { action: 'update' } }],
    ['remote discovery label: mirrored in that mode', { remote: remote('cart', { 'mirror.linkerd.io/exported': 'remote-discovery' }) }, { action: 'mirror', mode: 'remote-discovery', headless: false }],
    ['headless remote with hostnames, headless off: an ordinary mirror', { remote: remote('cart', exported, { clusterIP: 'None' }), remoteSlices: [slice(['10.0.0.1'], 'web-0')] }, { action: 'mirror', headless: false }],
    ['headless remote with hostnames, headless on: a headless mirror', { remote: remote('cart', exported, { clusterIP: 'None' }), remoteSlices: [slice(['10.0.0.1'], 'web-0')], enableHeadlessServices: true }, { action: 'mirror', headless: true }],
];

describe('planMirror', () => {
    for (const [what, overrides, expected] of table) {
        it(what, () => {
            const plan = planMirror(input(overrides)) as unknown as Record<string, unknown>;
            for (const [key, value] of Object.entries(expected)) assert.deepEqual(plan[key], value, key);
        });
    }

    it('the desired mirror is the headless one exactly when the plan says headless', () => {
        const headless = planMirror(input({ remote: remote('cart', exported, { clusterIP: 'None' }), remoteSlices: [slice(['10.0.0.1'], 'web-0')], enableHeadlessServices: true }));
        assert.equal(headless.action, 'mirror');
        assert.equal(headless.action === 'mirror' && headless.desired.spec?.clusterIP, 'None');
        const plain = planMirror(input({}));
        assert.equal(plain.action === 'mirror' && plain.desired.spec?.clusterIP, undefined);
    });

    it('a Service under the mirror name that is not ours is refused, and the owner check says why', () => {
        const plan = planMirror(input({ stored: () => foreign }));
        assert.equal(plan.action, 'mirror');
        assert.equal(plan.action === 'mirror' && plan.service.action, 'refuse');
        assert.match(plan.owner(foreign) ?? '', /shop\/cart-remote exists and is not a mirror of Link remote/);
    });

    it('an empty headless remote keeps its headless mirror only while that mirror is ours', () => {
        const empty = { remote: remote('cart', exported, { clusterIP: 'None' }), remoteSlices: [], enableHeadlessServices: true };
        const ours = buildMirrorService(remote('cart'), link);
        ours.spec = { ...ours.spec, clusterIP: 'None' };
        assert.equal((planMirror(input({ ...empty, stored: () => ours })) as { headless?: boolean }).headless, true);
        assert.equal((planMirror(input({ ...empty, stored: () => ({ ...foreign, spec: { clusterIP: 'None' } }) })) as { headless?: boolean }).headless, false);
    });

    it('refused remote addresses are told whatever becomes of the mirror, never for an unexported Service', () => {
        const bad = [slice(['127.0.0.1', '10.0.0.1'])];
        for (const overrides of [{}, { admitted: false }, { remote: remote('cart', exported, { ports: [] }) }]) {
            const plan = planMirror(input({ ...overrides, remoteSlices: bad }));
            assert.equal(plan.warnings.length, 1, JSON.stringify(plan));
            assert.equal(plan.warnings[0]!.reason, 'RemoteEndpointsRefused');
            assert.match(plan.warnings[0]!.message, /shop\/cart-abc: left out "127\.0\.0\.1"/);
        }
        assert.deepEqual(planMirror(input({ remote: remote('cart', {}), remoteSlices: bad })).warnings, []);
    });
});
