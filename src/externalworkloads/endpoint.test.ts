import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { desiredGroupsForService } from './desired.js';
import { makeService, makeWorkload } from './testkit.js';
import type { ExternalWorkload } from './types.js';

function onlyEndpoint(service: ReturnType<typeof makeService>, workload: ExternalWorkload) {
    const result = desiredGroupsForService(service, [workload]);
    assert.equal(result.groups.length, 1);
    assert.equal(result.groups[0]!.endpoints.length, 1);
    return { endpoint: result.groups[0]!.endpoints[0]!, problems: result.problems };
}

describe('the endpoint of a workload', () => {
    it('holds the address, all three conditions and a targetRef to the workload', () => {
        const { endpoint } = onlyEndpoint(makeService(), makeWorkload('vm-1', { ips: ['192.0.2.7'] }));
        assert.deepEqual(endpoint, {
            addresses: ['192.0.2.7'],
            conditions: { ready: true, serving: true, terminating: false },
            targetRef: { apiVersion: 'workload.linkerd.io/v1beta1', kind: 'ExternalWorkload', namespace: 'shop', name: 'vm-1', uid: 'uid-vm-1' },
        });
    });

    it('takes its zone from the workload’s topology.kubernetes.io/zone label, and has none without it', () => {
        const zoned = makeWorkload('a', { labels: { app: 'web', 'topology.kubernetes.io/zone': 'zone-b' } });
        assert.equal(onlyEndpoint(makeService(), zoned).endpoint.zone, 'zone-b');
        assert.equal('zone' in onlyEndpoint(makeService(), makeWorkload('a')).endpoint, false);
    });

    it('publishes a workload that is not ready as neither ready nor serving', () => {
        const { endpoint } = onlyEndpoint(makeService(), makeWorkload('a', { ready: false }));
        assert.deepEqual(endpoint.conditions, { ready: false, serving: false, terminating: false });
    });

    it('publishes a workload without any condition as not ready', () => {
        const workload = makeWorkload('a');
        delete workload.status;
        assert.deepEqual(onlyEndpoint(makeService(), workload).endpoint.conditions, { ready: false, serving: false, terminating: false });
    });

    it('publishes a ready workload that is being deleted as terminating: serving but not ready', () => {
        const { endpoint } = onlyEndpoint(makeService(), makeWorkload('a', { deleting: true }));
        assert.deepEqual(endpoint.conditions, { ready: false, serving: true, terminating: true });
    });

    it('marks every endpoint ready when the Service sets publishNotReadyAddresses, keeping serving and terminating truthful', () => {
        const service = makeService({ publishNotReadyAddresses: true });
        assert.deepEqual(onlyEndpoint(service, makeWorkload('a', { ready: false })).endpoint.conditions, {
            ready: true,
            serving: false,
            terminating: false,
        });
        assert.deepEqual(onlyEndpoint(service, makeWorkload('a', { deleting: true })).endpoint.conditions, {
            ready: true,
            serving: true,
            terminating: true,
        });
    });

    it('keeps two workloads that share an IP as two endpoints', () => {
        const result = desiredGroupsForService(makeService(), [makeWorkload('a', { ips: ['192.0.2.5'] }), makeWorkload('b', { ips: ['192.0.2.5'] })]);
        assert.deepEqual(result.groups[0]!.endpoints.map((e) => [e.targetRef?.name, e.addresses[0]]), [
            ['a', '192.0.2.5'],
            ['b', '192.0.2.5'],
        ]);
    });
});

describe('hostnames for headless Services', () => {
    const headless = makeService({ clusterIP: 'None', ipFamilies: ['IPv4'] });

    it('names the endpoint after the workload for a headless Service', () => {
        assert.equal(onlyEndpoint(headless, makeWorkload('vm-1')).endpoint.hostname, 'vm-1');
    });

    it('gives no hostname for a Service with a ClusterIP', () => {
        assert.equal('hostname' in onlyEndpoint(makeService(), makeWorkload('vm-1')).endpoint, false);
    });

    it('accepts a workload name of exactly 63 characters as hostname', () => {
        const name = 'a'.repeat(63);
        assert.equal(onlyEndpoint(headless, makeWorkload(name)).endpoint.hostname, name);
    });

    for (const [why, name] of [
        ['has dots', 'vm-1.example'],
        ['is longer than 63 characters', 'a'.repeat(64)],
    ] as const) {
        it(`publishes the endpoint without hostname, with an InvalidHostname problem, when the workload name ${why}`, () => {
            const { endpoint, problems } = onlyEndpoint(headless, makeWorkload(name));
            assert.equal('hostname' in endpoint, false);
            assert.deepEqual(endpoint.targetRef?.name, name);
            assert.deepEqual(
                problems.map((p) => [p.workload, p.reason]),
                [[{ namespace: 'shop', name, uid: `uid-${name}` }, 'InvalidHostname']],
            );
            assert.match(problems[0]!.message, /shop\/web/);
        });
    }

    it('does not complain about a dotted name for a Service with a ClusterIP, which sets no hostname', () => {
        assert.deepEqual(onlyEndpoint(makeService(), makeWorkload('vm-1.example')).problems, []);
    });
});
