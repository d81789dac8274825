// The grown local control plane (UpOptions.controllers): upstream's kube-controller-manager and
// kube-scheduler with kwok's simulated nodes behave as a real cluster for everything but
// containers: a Deployment's Pods are scheduled onto kwok nodes, get IPs and become Running and
// Ready, upstream's endpointslice controller writes the slices of a Service selecting them, and
// the garbage collector deletes what an owner it outlives owned.
import type { V1EndpointSlice, V1Pod } from '@kubernetes/client-node';
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isNotFound } from '../../src/kube/errors.js';
import { collectionPath, ConfigMaps, Namespaces, objectPath, Services } from '../../src/kube/resources.js';
import { KWOK_NODE_ANNOTATION } from '../../src/testing/controllers.js';
import { eventually, startTestCluster } from '../../src/testing/harness.js';

const cluster = await startTestCluster('grown', { controllers: { kwokNodes: 2 } });
const labels = { app: 'hello' };

const podsOf = async (ns: string) => (await cluster.admin.get<{ items: V1Pod[] }>(`/api/v1/namespaces/${ns}/pods`, { labelSelector: 'app=hello' })).items;
const upstreamSlices = async (ns: string, service: string) =>
    (
        await cluster.admin.get<{ items: V1EndpointSlice[] }>(`/apis/discovery.k8s.io/v1/namespaces/${ns}/endpointslices`, {
            labelSelector: `kubernetes.io/service-name=${service},endpointslice.kubernetes.io/managed-by=endpointslice-controller.k8s.io`,
        })
    ).items;

describe('the grown local control plane', () => {
    it("runs a Deployment's Pods Ready on kwok nodes, and upstream's endpointslice controller lists their IPs", async () => {
        const ns = await cluster.namespace('deploy');
        await cluster.admin.create(`/apis/apps/v1/namespaces/${ns}/deployments`, {
            metadata: { name: 'hello' },
            spec: {
                replicas: 3,
                selector: { matchLabels: labels },
                template: { metadata: { labels }, spec: { containers: [{ name: 'hello', image: 'registry.invalid/hello:1', ports: [{ containerPort: 8080 }] }] } },
            },
        });
        await cluster.admin.create(collectionPath(Services, ns), {
            metadata: { name: 'hello' },
            spec: { selector: labels, ports: [{ name: 'http', port: 80, targetPort: 8080 }] },
        });
        let pods: V1Pod[] = [];
        await eventually('3 Pods Running and Ready', async () => {
            pods = await podsOf(ns);
            return pods.length === 3 && pods.every((p) => p.status?.phase === 'Running' && p.status.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') && p.status.podIP);
        }, 60_000);
        const nodes = new Set(pods.map((p) => p.spec!.nodeName!));
        for (const node of nodes) {
            const got = await cluster.admin.get<{ metadata: { annotations?: Record<string, string> } }>(`/api/v1/nodes/${node}`);
            assert.equal(got.metadata.annotations?.[KWOK_NODE_ANNOTATION], 'fake', `${node} is a kwok node`);
        }
        const podIPs = pods.map((p) => p.status!.podIP!).sort();
        assert.equal(new Set(podIPs).size, 3, 'an IP of its own for each Pod');
        await eventually('the EndpointSlice lists every Pod IP, ready, on port 8080', async () => {
            const slices = await upstreamSlices(ns, 'hello');
            const endpoints = slices.flatMap((s) => s.endpoints ?? []);
            const addresses = endpoints.flatMap((e) => e.addresses).sort();
            return (
                JSON.stringify(addresses) === JSON.stringify(podIPs) &&
                endpoints.every((e) => e.conditions?.ready === true && e.targetRef?.kind === 'Pod') &&
                slices.every((s) => s.ports?.[0]?.port === 8080)
            );
        }, 60_000);
    });

    it('collects what an owner owned once the owner is deleted, and finishes deleting a namespace', async () => {
        const ns = await cluster.namespace('gc');
        const owner = await cluster.admin.create<{ metadata: { name: string; uid?: string } }>(collectionPath(ConfigMaps, ns), { metadata: { name: 'owner' } });
        await cluster.admin.create(collectionPath(ConfigMaps, ns), {
            metadata: { name: 'owned', ownerReferences: [{ apiVersion: 'v1', kind: 'ConfigMap', name: 'owner', uid: owner.metadata.uid! }] },
        });
        await cluster.admin.delete(objectPath(ConfigMaps, ns, 'owner'));
        await eventually('the owned ConfigMap is collected', async () => {
            try {
                await cluster.admin.get(objectPath(ConfigMaps, ns, 'owned'));
                return false;
            } catch (err) {
                return isNotFound(err);
            }
        }, 60_000);
        await cluster.admin.delete(objectPath(Namespaces, '', ns));
        await eventually('the namespace is gone', async () => {
            try {
                await cluster.admin.get(objectPath(Namespaces, '', ns));
                return false;
            } catch (err) {
                return isNotFound(err);
            }
        }, 60_000);
    });
});
