// What a VM may write, enforced by the apiserver: the chart's agent ClusterRole and
// ValidatingAdmissionPolicies (admissionregistration.k8s.io/v1, CEL over request.userInfo and
// the groups as params), applied as rendered, against a real kube-apiserver. Each refused write
// is made with a real ServiceAccount token of a VM, and refused with a message that says why.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { collectionPath, Leases, objectPath } from '../../src/kube/resources.js';
import type { KubeRest } from '../../src/kube/rest.js';
import { installCrds } from '../../src/testing/crds.js';
import { eventually, setUp, startTestCluster } from '../../src/testing/harness.js';
import { createGroup, installAgentPolicies, leaseBody, vmCredentials, writeLease, type LeaseBody } from './group-support.js';

const cluster = await startTestCluster('agent-admission');
await setUp('the CRDs', () => installCrds(cluster.admin));
const role = await setUp('the chart’s agent rules', () => installAgentPolicies(cluster.admin));
const ns = await setUp('a namespace', () => cluster.namespace('vms'));
const other = await setUp('another namespace', () => cluster.namespace('vms'));
await setUp('two groups', async () => {
    await createGroup(cluster.admin, ns, 'web', { addressRanges: ['10.20.0.0/16'] });
    await createGroup(cluster.admin, ns, 'db', { addressRanges: ['10.30.0.0/16'] });
    await createGroup(cluster.admin, other, 'web', { addressRanges: ['10.20.0.0/16'] });
});
const vm1 = await setUp('VM web.vm-1', () => vmCredentials(cluster, ns, 'web', 'vm-1', role));
const vm2 = await setUp('VM web.vm-2', () => vmCredentials(cluster, ns, 'web', 'vm-2', role));
await setUp('the policies in force', () =>
    eventually('a Lease of another VM refused', async () => {
        try {
            await vm1.rest.create(collectionPath(Leases, ns), leaseBody(ns, 'web', 'vm-2', ['10.20.0.2'], { holder: vm1.username }) as never);
            await cluster.admin.delete(objectPath(Leases, ns, 'web.vm-2'));
            return false;
        } catch (err) {
            return /ValidatingAdmissionPolicy/.test(String(err));
        }
    }, 30_000),
);

const create = (rest: KubeRest, namespace: string, body: LeaseBody) => rest.create(collectionPath(Leases, namespace), body as never);

describe('a VM writes its own registration Lease and nothing else', () => {
    it('its own Lease: created and renewed', async () => {
        await writeLease(vm1.rest, ns, leaseBody(ns, 'web', 'vm-1', ['10.20.0.1'], { holder: vm1.username }));
        await writeLease(vm1.rest, ns, leaseBody(ns, 'web', 'vm-1', ['10.20.0.1'], { holder: vm1.username }));
    });

    it('refuses another VM’s Lease', async () => {
        await assert.rejects(create(vm1.rest, ns, leaseBody(ns, 'web', 'vm-2', ['10.20.0.2'], { holder: vm1.username })), /may write only its own Lease, .*\/web\.vm-1, not .*\/web\.vm-2/);
    });

    it('refuses to take over a Lease another VM registered', async () => {
        await writeLease(vm2.rest, ns, leaseBody(ns, 'web', 'vm-2', ['10.20.0.2'], { holder: vm2.username }));
        await assert.rejects(writeLease(vm1.rest, ns, leaseBody(ns, 'web', 'vm-2', ['10.20.0.2'], { holder: vm1.username })), /may write only its own Lease/);
    });

    it('refuses another group’s Lease', async () => {
        // An address its own group allows: only the own-Lease rule refuses it (the apiserver runs
        // the policies in no set order, so two refusals would make the message a toss-up).
        const body = leaseBody(ns, 'db', 'vm-1', ['10.20.0.1'], { holder: vm1.username });
        await assert.rejects(create(vm1.rest, ns, body), /may write only its own Lease, .*\/web\.vm-1, not .*\/db\.vm-1/);
    });

    it('refuses its own Lease in another namespace', async () => {
        await assert.rejects(create(vm1.rest, other, leaseBody(other, 'web', 'vm-1', ['10.20.0.1'], { holder: vm1.username })), /forbidden|may write only its own Lease/i);
    });

    it('refuses a holder that is not the caller', async () => {
        const body = leaseBody(ns, 'web', 'vm-1', ['10.20.0.1'], { holder: vm2.username });
        await assert.rejects(writeLease(vm1.rest, ns, body), new RegExp(`holderIdentity of the Lease must be its writer, ${vm1.username}`));
    });

    it('refuses a group label that is not its group', async () => {
        const body = leaseBody(ns, 'web', 'vm-1', ['10.20.0.1'], { holder: vm1.username });
        body.metadata.labels = { 'mesh-endpoints.io/workload-group': 'db' };
        await assert.rejects(writeLease(vm1.rest, ns, body), /must carry the label mesh-endpoints.io\/workload-group: web/);
    });

    it('refuses an address outside the group’s ranges', async () => {
        const body = leaseBody(ns, 'web', 'vm-1', ['10.20.0.1', '10.30.0.1'], { holder: vm1.username });
        await assert.rejects(writeLease(vm1.rest, ns, body), /addresses 10\.30\.0\.1 are outside the addressRanges of group web \(10\.20\.0\.0\/16\)/);
    });

    it('refuses a delete, of its own Lease too: RBAC grants none, and the policy refuses one granted by mistake', async () => {
        await assert.rejects(vm1.rest.delete(objectPath(Leases, ns, 'web.vm-1')), /cannot delete resource "leases"/);
        await cluster.admin.create(`/apis/rbac.authorization.k8s.io/v1/namespaces/${ns}/roles`, { metadata: { name: 'too-much' }, rules: [{ apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['delete'] }] } as never);
        await cluster.admin.create(`/apis/rbac.authorization.k8s.io/v1/namespaces/${ns}/rolebindings`, {
            metadata: { name: 'too-much' },
            roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'too-much' },
            subjects: [{ kind: 'ServiceAccount', name: 'web.vm-1', namespace: ns }],
        } as never);
        await eventually('the delete refused by the policy', async () => {
            const err = await vm1.rest.delete(objectPath(Leases, ns, 'web.vm-2')).then(() => undefined, (e: unknown) => String(e));
            assert.ok(err !== undefined, 'a delete went through');
            return /workload agent web\.vm-1 deletes nothing/.test(err);
        });
    });

    it('refuses everything else: ExternalWorkloads, other groups’ objects, Secrets', async () => {
        await assert.rejects(vm1.rest.create(`/apis/workload.linkerd.io/v1beta1/namespaces/${ns}/externalworkloads`, { metadata: { name: 'x' } } as never), /forbidden/i);
        await assert.rejects(vm1.rest.get(`/api/v1/namespaces/${ns}/secrets`), /forbidden/i);
        await assert.rejects(vm1.rest.mergePatch(`/apis/mesh-endpoints.io/v1alpha1/namespaces/${ns}/externalworkloadgroups/web`, { spec: { addressRanges: ['0.0.0.0/0'] } }), /forbidden/i);
    });

    it('leaves other callers’ Leases alone, in namespaces with groups and without: the policies match workload agents only', async () => {
        const elsewhere = await cluster.namespace('system');
        for (const namespace of [ns, elsewhere]) {
            const leader = { metadata: { name: 'some-controller' }, spec: { holderIdentity: 'pod-1' } };
            await cluster.admin.create(collectionPath(Leases, namespace), leader as never);
            await cluster.admin.delete(objectPath(Leases, namespace, 'some-controller'));
        }
        const someone = await cluster.serviceAccountClient(elsewhere, 'controller');
        await cluster.admin.create(`/apis/rbac.authorization.k8s.io/v1/namespaces/${elsewhere}/rolebindings`, {
            metadata: { name: 'controller' },
            roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: role },
            subjects: [{ kind: 'ServiceAccount', name: 'controller', namespace: elsewhere }],
        } as never);
        await eventually('a ServiceAccount’s leader election works', async () => {
            await someone.create(collectionPath(Leases, elsewhere), { metadata: { name: 'its-lease' }, spec: { holderIdentity: 'pod-2' } } as never);
            return true;
        });
    });
});
