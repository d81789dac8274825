import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1EndpointSlice } from '@kubernetes/client-node';
import type { ServiceExport, ServiceImport } from '../servicemirror/mcs/types.js';
import { mcsChecks, mcsReport } from './mcs-report.js';

const exp = (name: string, conditions: [string, string, string?][] = []): ServiceExport => ({
    metadata: { name, namespace: 'shop' },
    status: { conditions: conditions.map(([type, status, reason]) => ({ type, status, reason: reason ?? type, message: `${type} says ${status}` }) as never) },
});

const slice = (cluster: string, ready: boolean[]): V1EndpointSlice => ({
    metadata: { namespace: 'shop', labels: { 'multicluster.kubernetes.io/service-name': 'hello', 'multicluster.kubernetes.io/source-cluster': cluster } },
    addressType: 'IPv4',
    endpoints: ready.map((r, i) => ({ addresses: [`10.0.0.${i + 1}`], conditions: { ready: r } })),
});

const hello: ServiceImport = { metadata: { name: 'hello', namespace: 'shop' }, spec: { type: 'ClusterSetIP', ips: ['10.96.0.7'], ports: [] }, status: { clusters: [{ cluster: 'east' }, { cluster: 'west' }] } };

describe('status and check: MCS', () => {
    it('lists each import with its IPs, clusters and endpoints per source cluster', () => {
        const report = mcsReport({ exports: [exp('hello', [['Valid', 'True']])], imports: [hello], slices: [slice('west', [true, false]), slice('east', [true]), slice('east', [true])] });
        assert.deepEqual(report.imports, [
            {
                namespace: 'shop',
                name: 'hello',
                type: 'ClusterSetIP',
                ips: ['10.96.0.7'],
                clusters: ['east', 'west'],
                sources: [
                    { cluster: 'east', endpoints: 2, ready: 2 },
                    { cluster: 'west', endpoints: 2, ready: 1 },
                ],
            },
        ]);
        assert.deepEqual(report.exports[0]!.conditions.map((c) => `${c.type}=${c.status}`), ['Valid=True']);
    });

    it('check says why MCS is not served: no CRDs, no cluster name', () => {
        assert.match(mcsChecks({ crdsInstalled: false, clusterName: undefined, report: undefined })[0]!.detail!, /not served/);
        const noName = mcsChecks({ crdsInstalled: true, clusterName: undefined, report: undefined });
        assert.deepEqual(noName.map((r) => r.status), ['ok', 'warn']);
        assert.match(noName[1]!.detail!, /--cluster-name/);
    });

    it('check fails an invalid export, warns on a conflict or an unserved export, passes the rest', () => {
        const report = mcsReport({
            exports: [exp('a', [['Valid', 'False', 'InvalidServiceType']]), exp('b', [['Valid', 'True'], ['Conflict', 'True', 'PortConflict']]), exp('c'), exp('d', [['Valid', 'True'], ['Conflict', 'False'], ['Ready', 'True']])],
            imports: [],
            slices: [],
        });
        const results = mcsChecks({ crdsInstalled: true, clusterName: 'east', report });
        assert.deepEqual(results.map((r) => `${r.description} ${r.status}`), [
            'the ServiceExport and ServiceImport CRDs are installed ok',
            'this cluster has a name in the clusterset ok',
            'ServiceExport shop/a fail',
            'ServiceExport shop/b warn',
            'ServiceExport shop/c warn',
            'ServiceExport shop/d ok',
        ]);
    });
});
