import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { SharedValues } from '../kube/shared-values.js';
import { compactWorkload } from './compact.js';
import { desiredGroups, desiredGroupsForService } from './desired.js';
import { httpPort, ipv4, makeService, makeWorkload } from './testkit.js';

const summary = (result: ReturnType<typeof desiredGroupsForService>) =>
    result.groups.map((g) => ({ ports: g.ports, workloads: g.endpoints.map((e) => e.targetRef?.name) }));

describe('Service ports resolved against each workload', () => {
    it('uses a numeric targetPort as is, even when the workload does not declare it (as for Pods)', () => {
        const service = makeService({ ports: [httpPort({ targetPort: 9000 })] });
        const result = desiredGroupsForService(service, [makeWorkload('a', { ports: [] })]);
        assert.deepEqual(summary(result), [{ ports: [{ name: 'http', port: 9000, protocol: 'TCP' }], workloads: ['a'] }]);
        assert.deepEqual(result.problems, []);
    });

    it('uses the Service port number when targetPort is absent', () => {
        const service = makeService({ ports: [httpPort({ port: 81, targetPort: undefined })] });
        assert.deepEqual(desiredGroupsForService(service, [makeWorkload('a')]).groups[0]!.ports, [{ name: 'http', port: 81, protocol: 'TCP' }]);
    });

    it('resolves a named targetPort to the workload port of that name and protocol', () => {
        const service = makeService({ ports: [httpPort({ name: 'dns', port: 53, protocol: 'UDP', targetPort: 'dns' })] });
        const workload = makeWorkload('a', {
            ports: [
                { name: 'dns', port: 5353, protocol: 'TCP' },
                { name: 'dns', port: 5354, protocol: 'UDP' },
            ],
        });
        assert.deepEqual(desiredGroupsForService(service, [workload]).groups[0]!.ports, [{ name: 'dns', port: 5354, protocol: 'UDP' }]);
    });

    it('treats a workload port without protocol as TCP, as the CRD default does', () => {
        const service = makeService({ ports: [httpPort({ targetPort: 'http' })] });
        const workload = makeWorkload('a', { ports: [{ name: 'http', port: 8081 }] });
        assert.deepEqual(desiredGroupsForService(service, [workload]).groups[0]!.ports, [{ name: 'http', port: 8081, protocol: 'TCP' }]);
    });

    it('leaves a Service port out for a workload lacking its named targetPort, in a group of its own, with a MissingNamedPort problem', () => {
        const service = makeService({
            ports: [httpPort({ targetPort: 'http' }), httpPort({ name: 'metrics', port: 9090, targetPort: 9090 })],
        });
        const workloads = [makeWorkload('has-http'), makeWorkload('no-http', { ports: [{ name: 'admin', port: 8080, protocol: 'TCP' }] })];
        const result = desiredGroupsForService(service, workloads);
        assert.deepEqual(summary(result), [
            {
                ports: [
                    { name: 'http', port: 8080, protocol: 'TCP' },
                    { name: 'metrics', port: 9090, protocol: 'TCP' },
                ],
                workloads: ['has-http'],
            },
            { ports: [{ name: 'metrics', port: 9090, protocol: 'TCP' }], workloads: ['no-http'] },
        ]);
        assert.deepEqual(result.problems.map((p) => [p.workload.name, p.reason]), [['no-http', 'MissingNamedPort']]);
        assert.match(result.problems[0]!.message, /shop\/web port "http" targets the port named "http" \(TCP\)/);
    });

    it('treats a named port of another protocol as missing', () => {
        const service = makeService({ ports: [httpPort({ protocol: 'UDP', targetPort: 'http' })] });
        const result = desiredGroupsForService(service, [makeWorkload('a')]);
        assert.deepEqual(summary(result), [{ ports: [], workloads: ['a'] }]);
        assert.deepEqual(result.problems.map((p) => p.reason), ['MissingNamedPort']);
    });

    it('writes ports in the apiserver’s defaulted form: name "" when unnamed, protocol set, appProtocol copied', () => {
        const service = makeService({
            ports: [
                { port: 80, targetPort: 8080 },
                { name: 'grpc', port: 9000, protocol: 'TCP', appProtocol: 'kubernetes.io/h2c', targetPort: 9000 },
            ],
        });
        assert.deepEqual(desiredGroupsForService(service, [makeWorkload('a')]).groups[0]!.ports, [
            { name: '', port: 8080, protocol: 'TCP' },
            { name: 'grpc', port: 9000, protocol: 'TCP', appProtocol: 'kubernetes.io/h2c' },
        ]);
    });

    it('gives a headless Service without ports slices without ports', () => {
        const service = makeService({ clusterIP: 'None', ports: undefined });
        assert.deepEqual(summary(desiredGroupsForService(service, [makeWorkload('a')])), [{ ports: [], workloads: ['a'] }]);
    });

    it('splits 300 workloads whose named port maps to 5 numbers into 5 groups of 60', () => {
        const service = makeService({ ports: [httpPort({ targetPort: 'http' })] });
        const workloads = Array.from({ length: 300 }, (_, i) =>
            makeWorkload(`wl-${String(i).padStart(3, '0')}`, { ips: [ipv4(i)], ports: [{ name: 'http', port: 8080 + (i % 5), protocol: 'TCP' }] }),
        );
        const result = desiredGroupsForService(service, workloads);
        assert.deepEqual(
            result.groups.map((g) => [g.ports[0]!.port, g.endpoints.length]),
            [8080, 8081, 8082, 8083, 8084].map((port) => [port, 60]),
        );
        for (const group of result.groups) {
            const port = group.ports[0]!.port!;
            assert.ok(group.endpoints.every((e) => Number(e.targetRef!.name!.slice(3)) % 5 === port - 8080));
        }
    });

    it('gives every group its own port objects, so a reconciler sorting one cannot change another', () => {
        const service = makeService({ ipFamilies: ['IPv4', 'IPv6'] });
        const result = desiredGroupsForService(service, [makeWorkload('a', { ips: ['192.0.2.1', '2001:db8::1'] })]);
        assert.equal(result.groups.length, 2);
        assert.notEqual(result.groups[0]!.ports[0], result.groups[1]!.ports[0]);
    });

    it('resolves once per distinct port list, yet each workload gets its own ports and problems (port lists held once, as the controller caches them)', () => {
        const shared = new SharedValues();
        const service = makeService({ ports: [httpPort({ targetPort: 'http' }), httpPort({ name: 'admin', port: 9990, targetPort: 'admin' })] });
        const http = (port: number) => [{ name: 'http', port, protocol: 'TCP' }];
        const workloads = [
            makeWorkload('a', { ips: [ipv4(1)], ports: http(8080) }),
            makeWorkload('b', { ips: [ipv4(2)], ports: http(8081) }),
            makeWorkload('c', { ips: [ipv4(3)], ports: http(8080) }),
            makeWorkload('d', { ips: [ipv4(4)], ports: [...http(8080), { name: 'admin', port: 9000, protocol: 'TCP' }] }),
        ].map((w) => compactWorkload(w, { shared }));
        assert.equal(workloads[0]!.ports, workloads[2]!.ports, 'equal port lists are one instance');
        const result = desiredGroups(service, workloads);
        assert.deepEqual(
            result.groups.map((g) => [g.ports.map((p) => `${p.name}:${p.port}`).join(','), g.endpoints.map((e) => e.targetRef?.name).join(',')]),
            [
                ['http:8080,admin:9000', 'd'],
                ['http:8080', 'a,c'],
                ['http:8081', 'b'],
            ],
        );
        assert.deepEqual(
            result.problems.map((p) => [p.workload.name, p.reason]),
            [
                ['a', 'MissingNamedPort'],
                ['b', 'MissingNamedPort'],
                ['c', 'MissingNamedPort'],
            ],
        );
    });
});
