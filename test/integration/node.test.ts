// A real node (src/testing/node.ts): this file runs itself again inside a network namespace of
// its own, where the cluster listens on the node's address, containerd and the kubelet join it
// as node-0, and Pods get addresses on a CNI bridge. A Pod of the image `make image` built
// runs from containerd's store (imported, never pulled) and its log is read through the
// kubelet. The chart's Pods on this node: test/integration/helm-e2e.test.ts.
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { imageRef } from '../../hack/image/config.js';
import { eventually, setUp, startLocalCluster } from '../../src/testing/harness.js';
import { cannotRunContainers, productImage } from '../../src/testing/image.js';
import { inNodeNamespace, NODE_IP, reexecInNodeNamespace } from '../../src/testing/node-namespace.js';
import { NODE_APISERVER_ARGS, podLog, startNode } from '../../src/testing/node.js';

// Before anything starts: from here on this process runs inside the node's namespace.
const unsupported = await cannotRunContainers();
if (!unsupported && !inNodeNamespace()) await reexecInNodeNamespace();

interface Pod {
    status?: { phase?: string; podIP?: string; containerStatuses?: { state?: { terminated?: { exitCode: number } } }[] };
}

describe('a real node in a network namespace of its own', { skip: unsupported && `cannot run containers here: ${unsupported}` }, async () => {
    if (unsupported) return;
    const cluster = await setUp('cluster', () => startLocalCluster('t-node', NODE_APISERVER_ARGS, { address: NODE_IP }));
    const archive = await setUp('image', () => productImage());
    const node = await setUp('node', () => startNode(cluster.state, 'node-0', [{ archive, baseName: imageRef().split(':')[0]! }]));
    after(async () => {
        await node.stop();
        await cluster.stop();
    });
    const ns = await cluster.namespace('node');
    await cluster.admin.create(`/api/v1/namespaces/${ns}/serviceaccounts`, { metadata: { name: 'default' } });

    const podPath = (name: string) => `/api/v1/namespaces/${ns}/pods/${name}`;
    const runPod = async (name: string, args: string[]) => {
        await cluster.admin.create(`/api/v1/namespaces/${ns}/pods`, {
            metadata: { name },
            spec: {
                nodeName: 'node-0',
                restartPolicy: 'Never',
                automountServiceAccountToken: false,
                securityContext: { runAsNonRoot: true, runAsUser: 65532 },
                containers: [{ name: 'c', image: imageRef(), imagePullPolicy: 'Never', args, securityContext: { readOnlyRootFilesystem: true } }],
            },
        });
        await eventually(`pod ${name} finished`, async () => ['Succeeded', 'Failed'].includes((await cluster.admin.get<Pod>(podPath(name))).status?.phase ?? ''), 90_000);
        return cluster.admin.get<Pod>(podPath(name));
    };

    it('runs the image built here, from containerd, on the CNI bridge; its log read through the kubelet', async () => {
        const pod = await runPod('help', ['--help']);
        assert.equal(pod.status?.phase, 'Succeeded');
        assert.match(pod.status?.podIP ?? '', /^10\.214\.0\.\d+$/, 'an address on the bridge');
        const log = await podLog(cluster.state, ns, 'help');
        assert.match(String(log), /^Usage: mesh-endpoints /m);
    });

});
