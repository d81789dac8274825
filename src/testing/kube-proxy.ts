// kube-proxy on a real node (node.ts): built from cmd/kube-proxy of the same k8s.io/kubernetes
// module as the kubelet (hack/node/build.sh), run in the node's network namespace as a real node
// runs it, so that Service cluster IPs route to their EndpointSlices' endpoints there: ours, the
// mirrors', the MCS imports'. Mode iptables: the mode kind and the MCS API's own e2e run, with
// the kernel's xt matches (recent for ClientIP affinity, statistic for balancing) built in here
// (nftables would work too, but needs Debian's nft beside it and is the less travelled path).
// Traps of this machine:
// - nf_conntrack_max is read-only in a new network namespace: maxPerCore 0 and min 0 leave it
//   alone, and the TCP timeouts 0s leave theirs (kube-proxy fails at start writing them);
// - two nodes of two clusters on one machine: its health and metrics servers on the node
//   namespace's own loopback, and each kube-proxy only sees its own namespace's tables;
// - clusterCIDR is the node's own Pod CIDR: traffic from the other cluster's Pods (a flat
//   network) is then not masqueraded, so a Pod answering sees the real client.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ClusterState } from './cluster.js';
import { healthyOn, type NodeHost } from './node-host.js';
import { startProcess, waitFor } from './processes.js';

export async function startKubeProxy(bin: string, cluster: ClusterState, nodeName: string, host: NodeHost, dir: string): Promise<number> {
    const config = join(dir, 'kube-proxy.yaml');
    writeFileSync(
        config,
        `apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
mode: iptables
clientConnection:
  kubeconfig: ${cluster.kubeconfig}
hostnameOverride: ${nodeName}
bindAddress: ${host.ip}
clusterCIDR: ${host.podCidr}
detectLocalMode: ClusterCIDR
healthzBindAddress: 127.0.0.1:10256
metricsBindAddress: 127.0.0.1:10249
conntrack:
  maxPerCore: 0
  min: 0
  tcpEstablishedTimeout: 0s
  tcpCloseWaitTimeout: 0s
iptables:
  localhostNodePorts: false
  syncPeriod: 30s
  minSyncPeriod: 0s
`,
    );
    const log = join(dir, 'kube-proxy.log');
    const pid = await startProcess(...host.run(join(bin, 'kube-proxy'), [`--config=${config}`, '--v=1']), log);
    // Healthy once it has programmed the node's rules for the first time.
    await waitFor(`kube-proxy on ${nodeName}`, () => healthyOn(host, 'http://127.0.0.1:10256/healthz'), pid, log, 60_000);
    return pid;
}
