import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1EndpointSlice } from '@kubernetes/client-node';
import { makeService, makeWorkload } from '../externalworkloads/testkit.js';
import { workloadsReport } from './workloads-report.js';

const MANAGED_BY = 'external-workloads.mesh-endpoints.io';

function slice(name: string, service: string, ready: boolean[], managedBy = MANAGED_BY): V1EndpointSlice {
    return {
        metadata: { name, namespace: 'shop', labels: { 'kubernetes.io/service-name': service, 'endpointslice.kubernetes.io/managed-by': managedBy } },
        addressType: 'IPv4',
        endpoints: ready.map((r, i) => ({ addresses: [`192.0.2.${i + 1}`], conditions: { ready: r } })),
    };
}

const states = (report: ReturnType<typeof workloadsReport>) =>
    report.services.map((s) => [`${s.namespace}/${s.name}`, s.workloads.map((w) => `${w.name} ${w.state} ${w.addresses.join(',') || '-'}`)]);

describe('status: the external workloads of each Service', () => {
    it('lists every selected workload as ready, not ready, or left out, in name order', () => {
        const report = workloadsReport({
            services: [makeService()],
            workloads: [
                makeWorkload('vm-c', { ips: ['2001:db8::3'] }),
                makeWorkload('vm-b', { ips: ['192.0.2.2'], ready: false }),
                makeWorkload('vm-a', { ips: ['192.0.2.1'] }),
                makeWorkload('other', { labels: { app: 'db' } }),
            ],
            slices: [],
            managedBy: MANAGED_BY,
        });
        assert.deepEqual(states(report), [['shop/web', ['vm-a ready 192.0.2.1', 'vm-b not-ready 192.0.2.2', 'vm-c left-out -']]]);
        const leftOut = report.services[0]!.workloads[2]!;
        assert.match(leftOut.problems[0]!, /^NoAddressOfServiceFamily: the Service serves IPv4/);
    });

    it("says why a workload is left out with the controller's own problem", () => {
        const report = workloadsReport({
            services: [makeService()],
            workloads: [makeWorkload('vm-loop', { ips: ['127.0.0.1'] })],
            slices: [],
            managedBy: MANAGED_BY,
        });
        const [line] = report.services[0]!.workloads;
        assert.equal(line!.state, 'left-out');
        assert.match(line!.problems.join(), /^UnusableIP: .*loopback/);
    });

    it('keeps a published workload with a partial problem (a missing named port) and shows the problem', () => {
        const service = makeService({ ports: [{ name: 'http', port: 80, protocol: 'TCP', targetPort: 'web' as never }] });
        const report = workloadsReport({ services: [service], workloads: [makeWorkload('vm-1')], slices: [], managedBy: MANAGED_BY });
        const [line] = report.services[0]!.workloads;
        assert.equal(line!.state, 'ready');
        assert.match(line!.problems.join(), /^MissingNamedPort: /);
    });

    it('shows a terminating workload as not ready, and every workload as ready under publishNotReadyAddresses', () => {
        const workloads = [makeWorkload('vm-1', { deleting: true }), makeWorkload('vm-2', { ready: false })];
        const plain = workloadsReport({ services: [makeService()], workloads, slices: [], managedBy: MANAGED_BY });
        assert.deepEqual(states(plain)[0]![1], ['vm-1 not-ready 192.0.2.1', 'vm-2 not-ready 192.0.2.1']);
        const publishing = workloadsReport({ services: [makeService({ publishNotReadyAddresses: true })], workloads, slices: [], managedBy: MANAGED_BY });
        assert.deepEqual(states(publishing)[0]![1], ['vm-1 ready 192.0.2.1', 'vm-2 ready 192.0.2.1']);
    });

    it("lists the Service's own slices with endpoint and ready counts, and no one else's", () => {
        const report = workloadsReport({
            services: [makeService()],
            workloads: [makeWorkload('vm-1')],
            slices: [slice('web-b', 'web', [true]), slice('web-a', 'web', [true, false]), slice('web-kube', 'web', [true], 'endpointslice-controller.k8s.io'), slice('db-a', 'db', [true])],
            managedBy: MANAGED_BY,
        });
        assert.deepEqual(report.services[0]!.slices, [
            { name: 'web-a', addressType: 'IPv4', endpoints: 2, ready: 1 },
            { name: 'web-b', addressType: 'IPv4', endpoints: 1, ready: 1 },
        ]);
    });

    it('reports a Service that selects nothing but still has our slices, and leaves out Services with neither', () => {
        const report = workloadsReport({
            services: [makeService({}, { name: 'web' }), makeService({ selector: { app: 'none' } }, { name: 'idle' }), makeService({ selector: undefined }, { name: 'manual' })],
            workloads: [],
            slices: [slice('web-a', 'web', [true])],
            managedBy: MANAGED_BY,
        });
        assert.deepEqual(states(report), [['shop/web', []]]);
    });

    it('lists malformed workloads apart: they are left out of every Service', () => {
        const report = workloadsReport({
            services: [makeService()],
            workloads: [{ metadata: { name: 'broken', namespace: 'shop' }, spec: { ports: [{ port: 0 }] } }],
            slices: [],
            managedBy: MANAGED_BY,
        });
        assert.equal(report.services.length, 0);
        assert.equal(report.malformed.length, 1);
        assert.equal(report.malformed[0]!.name, 'broken');
        assert.match(report.malformed[0]!.problem, /malformed ExternalWorkload/);
    });
});
