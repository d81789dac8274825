// CoreDNS on a real node (node.ts), as a cluster's DNS: our own main of the coredns Go module with
// only the plugins it needs (hack/dns/), serving `cluster.local` from Services and EndpointSlices
// and, through the kubernetes plugin's `multicluster` option, `clusterset.local` from
// ServiceImports and the slices labelled multicluster.kubernetes.io/service-name. The kubelet
// gives Pods the node's address as their nameserver (clusterDNS).
// Traps of this machine:
// - no kube-dns Service, image or RBAC: it runs as a process of the node with the cluster
//   admin's kubeconfig, bound to the node's address, port 53, in the node's namespace;
// - it reads ServiceImports at v1alpha1: our MCS CRDs serve it (same schema as v1beta1), and
//   they must be installed before it starts, or its informer never syncs and it serves nothing.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ClusterState } from './cluster.js';
import { healthyOn, type NodeHost } from './node-host.js';
import { buildScript, startProcess, waitFor } from './processes.js';

let built: Promise<string> | undefined;

/** The Corefile of a cluster's DNS: docs/mcs.md shows the same one. */
export function corefile(cluster: ClusterState, bindAddress: string): string {
    return `cluster.local:53 clusterset.local:53 {
    bind ${bindAddress}
    errors
    ready 127.0.0.1:8181
    kubernetes cluster.local clusterset.local {
        kubeconfig ${cluster.kubeconfig} ${cluster.name}
        multicluster clusterset.local
        ttl 5
    }
}
`;
}

export async function startCoreDns(cluster: ClusterState, host: NodeHost, dir: string): Promise<number> {
    const bin = await (built ??= buildScript('hack/dns/build.sh'));
    const config = join(dir, 'Corefile');
    writeFileSync(config, corefile(cluster, host.ip));
    const log = join(dir, 'coredns.log');
    const pid = await startProcess(...host.run(bin, ['-conf', config]), log);
    // Ready once the kubernetes plugin has synced its caches.
    await waitFor(`CoreDNS of ${cluster.name}`, () => healthyOn(host, 'http://127.0.0.1:8181/ready'), pid, log, 60_000);
    return pid;
}
