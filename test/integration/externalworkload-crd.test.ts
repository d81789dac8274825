// The ExternalWorkload CRD as a real kube-apiserver serves it: Linkerd-style manifests
// apply unchanged, and the CEL rules we add refuse at create time, with a message a user
// can act on, what the controller could never publish.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { parseAllDocuments } from 'yaml';
import { ApiError } from '../../src/kube/errors.js';
import { collectionPath, Services } from '../../src/kube/resources.js';
import { installCrds } from '../../src/testing/crds.js';
import { setUp, startTestCluster } from '../../src/testing/harness.js';

const cluster = await startTestCluster('ewcrd');
await setUp('the CRDs', () => installCrds(cluster.admin));
const ns = await setUp('a namespace', () => cluster.namespace());

type Version = 'v1alpha1' | 'v1beta1';
const path = (version: Version, name?: string) => `/apis/workload.linkerd.io/${version}/namespaces/${ns}/externalworkloads${name ? `/${name}` : ''}`;

interface Workload {
    apiVersion?: string;
    kind?: string;
    metadata: { name: string; labels?: Record<string, string> };
    spec: Record<string, unknown>;
    status?: { conditions?: Array<Record<string, string>> };
}

let counter = 0;
/** A valid workload of that version, with `spec` fields replaced. */
function workload(version: Version, spec: Record<string, unknown> = {}): Workload {
    const tls = { identity: 'vm.ns.serviceaccount.identity.linkerd.cluster.local', serverName: 'vm.ns.svc' };
    return {
        apiVersion: `workload.linkerd.io/${version}`,
        kind: 'ExternalWorkload',
        metadata: { name: `vm-${++counter}` },
        spec: { [version === 'v1beta1' ? 'meshTLS' : 'meshTls']: tls, workloadIPs: [{ ip: '192.0.2.1' }], ports: [{ name: 'http', port: 8080 }], ...spec },
    };
}

const create = (w: Workload, version: Version = w.apiVersion!.endsWith('v1alpha1') ? 'v1alpha1' : 'v1beta1') => cluster.admin.create<Workload>(path(version), w);

/** The apiserver's message for a create it refused as invalid. */
async function refusal(w: Workload): Promise<string> {
    try {
        await create(w);
    } catch (err) {
        assert.ok(err instanceof ApiError, String(err));
        assert.equal(err.code, 422, err.message);
        assert.equal(err.reason, 'Invalid');
        return err.message;
    }
    assert.fail(`${JSON.stringify(w.spec)} was accepted`);
}

describe('the ExternalWorkload CRD on a real apiserver', () => {
    it('applies the Linkerd-style v1alpha1 example as written, and serves it in both versions', async () => {
        for (const doc of parseAllDocuments(readFileSync('examples/nginx.yaml', 'utf8'))) {
            const obj = doc.toJS() as Workload;
            if (obj.kind === 'Service') await cluster.admin.create(collectionPath(Services, ns), obj);
            else await create(obj, 'v1alpha1');
        }
        // Only what publishing needs is checked: v1beta1 is the stored version and, as with
        // Linkerd's CRD, there is no conversion, so the apiserver prunes v1alpha1's meshTls.
        const alpha = await cluster.admin.get<Workload>(path('v1alpha1', 'test'));
        assert.deepEqual(alpha.metadata.labels, { app: 'nginx' });
        assert.deepEqual(alpha.spec.workloadIPs, [{ ip: '192.0.2.0' }]);
        assert.deepEqual(alpha.spec.ports, [{ port: 80, protocol: 'TCP' }], 'protocol defaults to TCP');
        const beta = await cluster.admin.get<Workload>(path('v1beta1', 'test'));
        assert.equal(beta.apiVersion, 'workload.linkerd.io/v1beta1');
        assert.deepEqual(beta.spec.workloadIPs, alpha.spec.workloadIPs);
        assert.deepEqual(beta.spec.ports, alpha.spec.ports);

        // The status patch the example's comment suggests.
        const ready = await cluster.admin.mergePatch<Workload>(`${path('v1beta1', 'test')}/status`, { status: { conditions: [{ type: 'Ready', status: 'True' }] } });
        assert.deepEqual(ready.status?.conditions, [{ type: 'Ready', status: 'True' }]);
    });

    it('applies a v1beta1 workload with one IPv4 and one IPv6 address, and takes its Ready condition through the status subresource', async () => {
        const w = workload('v1beta1', {
            workloadIPs: [{ ip: '192.0.2.1' }, { ip: '2001:db8::1' }],
            ports: [{ name: 'http', port: 8080 }, { name: 'dns', port: 53, protocol: 'UDP' }, { port: 9100 }, { port: 9101 }],
        });
        const created = await create({ ...w, status: { conditions: [{ type: 'Ready', status: 'True' }] } });
        assert.equal(created.status, undefined, 'status is written through its subresource only');
        const condition = { type: 'Ready', status: 'True', reason: 'HealthCheckPassed', lastTransitionTime: '2024-01-01T00:00:00Z' };
        const updated = await cluster.admin.mergePatch<Workload>(`${path('v1beta1', w.metadata.name)}/status`, { status: { conditions: [condition] } });
        assert.deepEqual(updated.status?.conditions, [condition]);
        assert.deepEqual(updated.spec.workloadIPs, w.spec.workloadIPs);
    });

    it('refuses an address that is not an IP, naming the field', async () => {
        for (const version of ['v1alpha1', 'v1beta1'] as const) {
            for (const ip of ['192.0.2.300', 'vm-1.example.org', '']) {
                const message = await refusal(workload(version, { workloadIPs: [{ ip }] }));
                assert.match(message, /spec\.workloadIPs\[0\]\.ip/, message);
                assert.match(message, /must be an IPv4 or IPv6 address/, message);
            }
        }
    });

    it('refuses an address no endpoint can hold: loopback, link-local, multicast, unspecified, broadcast', async () => {
        for (const ip of ['127.0.0.1', '::1', '169.254.0.1', 'fe80::1', '224.0.0.251', 'ff02::1', '0.0.0.0', '::', '255.255.255.255']) {
            const message = await refusal(workload('v1beta1', { workloadIPs: [{ ip }] }));
            assert.match(message, /spec\.workloadIPs\[0\]\.ip/, `${ip}: ${message}`);
            assert.match(message, /must be a unicast address usable as an endpoint/, `${ip}: ${message}`);
        }
    });

    it('refuses two addresses of one family, saying which family', async () => {
        let message = await refusal(workload('v1beta1', { workloadIPs: [{ ip: '192.0.2.1' }, { ip: '192.0.2.2' }] }));
        assert.match(message, /spec\.workloadIPs/);
        assert.match(message, /at most one IPv4 address/);
        message = await refusal(workload('v1beta1', { workloadIPs: [{ ip: '2001:db8::1' }, { ip: '2001:db8::2' }] }));
        assert.match(message, /at most one IPv6 address/);
        message = await refusal(workload('v1beta1', { workloadIPs: [{ ip: '192.0.2.1' }, { ip: '2001:db8::1' }, { ip: '2001:db8::2' }] }));
        assert.match(message, /spec\.workloadIPs: Too many/);
        message = await refusal(workload('v1alpha1', { workloadIPs: [{ ip: '192.0.2.1' }, { ip: '2001:db8::1' }] }));
        assert.match(message, /spec\.workloadIPs: Too many/, 'v1alpha1 holds one address, as in Linkerd');
    });

    it('refuses a port name used twice, and accepts unnamed ports side by side', async () => {
        for (const version of ['v1alpha1', 'v1beta1'] as const) {
            const message = await refusal(workload(version, { ports: [{ name: 'http', port: 8080 }, { name: 'http', port: 8081, protocol: 'UDP' }] }));
            assert.match(message, /spec\.ports/, message);
            assert.match(message, /port names must be unique/, message);
            await create(workload(version, { ports: [{ port: 8080 }, { port: 8081 }, { name: 'http', port: 80 }] }));
        }
    });

    it('refuses a port out of range and a workload without its mesh identity', async () => {
        let message = await refusal(workload('v1beta1', { ports: [{ name: 'http', port: 0 }] }));
        assert.match(message, /spec\.ports\[0\]\.port/);
        message = await refusal(workload('v1beta1', { ports: [{ name: 'http', port: 65536 }] }));
        assert.match(message, /spec\.ports\[0\]\.port/);
        message = await refusal(workload('v1beta1', { meshTLS: { serverName: 'vm.ns.svc' } }));
        assert.match(message, /spec\.meshTLS\.identity: Required value/);
        message = await refusal(workload('v1alpha1', { meshTls: undefined }));
        assert.match(message, /spec\.meshTls: Required value/);
    });
});
