import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import type { V1Service } from '@kubernetes/client-node';
import { parseAllDocuments } from 'yaml';
import { desiredGroupsForService } from './desired.js';
import { parseExternalWorkload, type ExternalWorkload } from './types.js';

interface Manifest {
    kind: string;
    metadata: { name: string; namespace?: string; uid?: string };
}

// kubectl puts namespace-less objects in the context's namespace ("default" here).
function loadExample(file: string): Manifest[] {
    const text = readFileSync(new URL(`../../examples/${file}`, import.meta.url), 'utf8');
    return parseAllDocuments(text).map((doc) => {
        const object = doc.toJS() as Manifest;
        object.metadata.namespace ??= 'default';
        return object;
    });
}

function exampleObjects(): { service: V1Service; workload: ExternalWorkload } {
    const objects = loadExample('nginx.yaml');
    const service = objects.find((o) => o.kind === 'Service') as V1Service;
    const parsed = parseExternalWorkload(objects.find((o) => o.kind === 'ExternalWorkload'));
    assert.ok(parsed.ok);
    return { service, workload: parsed.workload };
}

const expectedGroups = [
    {
        addressType: 'IPv4',
        ports: [{ name: 'http', port: 80, protocol: 'TCP' }],
        endpoints: [
            {
                addresses: ['192.0.2.0'],
                conditions: { ready: false, serving: false, terminating: false },
                targetRef: { apiVersion: 'workload.linkerd.io/v1beta1', kind: 'ExternalWorkload', namespace: 'default', name: 'test' },
            },
        ],
    },
];

describe('examples/nginx.yaml', () => {
    it('gives nginx-svc exactly one IPv4 group: 192.0.2.0 on port http 80/TCP, targeting the workload', () => {
        const { service, workload } = exampleObjects();
        const result = desiredGroupsForService(service, [workload]);
        assert.equal(result.selected, true);
        assert.deepEqual(result.groups, expectedGroups);
        assert.deepEqual(result.problems, []);
    });

    it('gives the same group once the apiserver has defaulted the Service and given the workload a uid', () => {
        const { service, workload } = exampleObjects();
        service.spec = { ...service.spec, type: 'ClusterIP', clusterIP: '10.96.0.20', ipFamilies: ['IPv4'] };
        service.spec.ports = service.spec.ports!.map((p) => ({ ...p, targetPort: p.port }));
        workload.metadata.uid = 'ba2f6de1-24dd-4f56-a4d3-067ab891273c';
        const result = desiredGroupsForService(service, [workload]);
        assert.deepEqual(result.addressTypes, ['IPv4']);
        assert.deepEqual(result.groups, [
            {
                ...expectedGroups[0],
                endpoints: [{ ...expectedGroups[0]!.endpoints[0], targetRef: { ...expectedGroups[0]!.endpoints[0]!.targetRef, uid: workload.metadata.uid } }],
            },
        ]);
    });
});
