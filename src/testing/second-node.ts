// The second real node of a test: a child namespace (child-namespace.ts) of the node namespace,
// with the kubelet's and containerd's fixed folders private to it, its own address and Pod CIDR,
// routed both ways over a veth: with the first node (node-namespace.ts) it makes a flat network,
// each node reaching the other's Pods by plain routing (no tunnel, no NAT), as the MCS API's own
// e2e joins its two kind clusters. A cluster started on NODE_IP is reached from it over the veth.
import { startChildNamespace } from './child-namespace.js';
import { HARD_CODED_DIRS } from './node-namespace.js';
import { childNode, type NodeHost } from './node-host.js';

export const SECOND_NODE_IP = '10.213.0.2';
export const SECOND_POD_CIDR = '10.214.1.0/24';

export async function startSecondHost(): Promise<NodeHost> {
    const namespace = await startChildNamespace({ name: 'node2', addresses: [SECOND_NODE_IP], routes: [SECOND_POD_CIDR], privateDirs: HARD_CODED_DIRS });
    return childNode(namespace, SECOND_NODE_IP, SECOND_POD_CIDR);
}
