// A real node joined to a local cluster: containerd and runc (Debian packages), the kubelet
// built from the same k8s.io/kubernetes module as kube-apiserver (hack/node/build.sh), a pause
// image built here, the CNI bridge and host-local plugins (Debian's containernetworking-plugins),
// and local images imported into containerd (no registry: Pods use IfNotPresent or Never).
// It must run inside the namespace of src/testing/node-namespace.ts (the first node) or a child
// namespace of it (second-node.ts), with the cluster started there on NODE_IP; with its data plane
// it also runs kube-proxy (kube-proxy.ts) and CoreDNS (coredns.ts), as a real node's add-ons.
// The settings come from a probe on this kind of machine
// (shared/reference/local-node.md), each for a trap it met:
// - cgroup v1: the kubelet refuses it unless failCgroupV1 is false; cgroupfs on both sides.
// - root here lacks CAP_SYS_RESOURCE, so runc cannot lower oom_score_adj for sandboxes:
//   containerd's restrict_oom_score_adj clamps the scores to its own.
// - the kubelet refuses a loopback node IP: NODE_IP on the namespace's loopback.
// - kube-apiserver must reach the kubelet by InternalIP, not by resolving its name.
// - the node is NotReady until containerd finds a CNI config at start.
// - paths: volumePluginDir, the runc root, netns mounts under containerd's state and no
//   iptables util chains keep the kubelet and containerd in the node's folder; what they
//   write elsewhere lands on the namespace's private tmpfs mounts.
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { get as httpsGet } from 'node:https';
import { join } from 'node:path';
import { KubeRest } from '../kube/rest.js';
import { unmountUnder, type ClusterState } from './cluster.js';
import { startCoreDns } from './coredns.js';
import { kubeConfigFor } from './harness.js';
import { startKubeProxy } from './kube-proxy.js';
import { FIRST_NODE, type NodeHost } from './node-host.js';
import { killNodeCgroups, NODE_IP } from './node-namespace.js';
import { buildScript, signalGroup, startProcess, waitFor } from './processes.js';

export interface NodeOptions {
    /** Where it runs (FIRST_NODE by default). */
    host?: NodeHost;
    /**
     * kube-proxy and CoreDNS too (kube-proxy.ts, coredns.ts), CoreDNS as the Pods' nameserver:
     * Service cluster IPs and names work in the node's Pods. Needs the MCS CRDs installed.
     */
    dataPlane?: boolean;
}

/** kube-apiserver flags a real node needs (UpOptions.extraApiserverArgs). */
export const NODE_APISERVER_ARGS = [
    // kubectl logs/exec and the probe of nodes/proxy reach the kubelet at its InternalIP.
    '--kubelet-preferred-address-types=InternalIP',
    // Webhooks (the conversion webhook) are called at a Pod's address from its Service's
    // endpoints: nothing here routes cluster IPs but the kubernetes Service's.
    '--enable-aggregator-routing=true',
    // Pods get their ServiceAccount's token mounted (kube-controller-manager publishes the
    // namespaces' default ServiceAccounts and kube-root-ca.crt).
    '--disable-admission-plugins=',
];

/** An image archive (OCI layout as a tar) and the name containerd gives it (its tag comes from the archive). */
export interface NodeImage {
    archive: string;
    baseName: string;
}

export interface RealNode {
    name: string;
    dir: string;
    /** Stops the kubelet, every container and containerd, and unmounts what they mounted. */
    stop(): Promise<void>;
    /** `ctr images import` into the node's containerd. */
    importImage(image: NodeImage): Promise<void>;
    kubeletLog: string;
}

/** The folder holding kubelet, pause and pause-oci.tar, built once per machine. */
let built: Promise<string> | undefined;

function containerdConfig(dir: string): string {
    return `version = 2
root = "${dir}/containerd/root"
state = "${dir}/containerd/state"
[grpc]
  address = "${dir}/containerd/containerd.sock"
[ttrpc]
  address = "${dir}/containerd/containerd.sock.ttrpc"
[debug]
  address = "${dir}/containerd/debug.sock"
  level = "info"
[metrics]
  address = ""
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "registry.k8s.io/pause:3.10.1"
  enable_selinux = false
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = "${dir}/containerd/runc"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "${dir}/cni/bin"
    conf_dir = "${dir}/cni/conf"
  [plugins."io.containerd.grpc.v1.cri".registry]
    config_path = "${dir}/containerd/certs.d"
`;
}

function cniConfig(dir: string, podCidr: string): string {
    return JSON.stringify({
        cniVersion: '1.0.0',
        name: 'mesh-endpoints-node',
        plugins: [
            {
                type: 'bridge',
                bridge: 'cni0',
                // The bridge's address as the Pods' default route: they reach the node's address and cluster IPs through it.
                isGateway: true,
                isDefaultGateway: true,
                ipMasq: false,
                hairpinMode: true,
                ipam: { type: 'host-local', ranges: [[{ subnet: podCidr }]], dataDir: join(dir, 'cni/ipam') },
            },
        ],
    });
}

function kubeletConfig(dir: string, host: NodeHost, clusterDns: boolean): string {
    return `apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failCgroupV1: false
cgroupDriver: cgroupfs
cgroupRoot: /${host.cgroup}
failSwapOn: false
address: ${host.ip}
port: 10250
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 10248
authentication:
  anonymous:
    enabled: true
  webhook:
    enabled: false
authorization:
  mode: AlwaysAllow
containerRuntimeEndpoint: unix://${dir}/containerd/containerd.sock
imageServiceEndpoint: unix://${dir}/containerd/containerd.sock
podLogsDir: ${dir}/kubelet/logs
resolvConf: ""
${clusterDns ? `clusterDNS: [${host.ip}]\nclusterDomain: cluster.local\n` : ''}syncFrequency: 10s
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard:
  memory.available: "50Mi"
  nodefs.available: "1%"
  imagefs.available: "1%"
  nodefs.inodesFree: "1%"
protectKernelDefaults: false
serializeImagePulls: false
# The suite's Pods run sh as PID 1, which ignores SIGTERM: each lingers for its grace period.
maxPods: 110
volumePluginDir: ${dir}/kubelet/volume-plugins
makeIPTablesUtilChains: false
`;
}

/** The kubernetes Service's address (its cluster IP, port 443) led to kube-apiserver, as kube-proxy would: the Pods' in-cluster config uses it. */
async function routeKubernetesService(cluster: ClusterState, admin: KubeRest, host: NodeHost): Promise<void> {
    const svc = await admin.get<{ spec: { clusterIP: string } }>('/api/v1/namespaces/default/services/kubernetes');
    const apiserver = `${cluster.address ?? NODE_IP}:${cluster.apiserverPort}`;
    await host.exec('iptables', ['-t', 'nat', '-A', 'PREROUTING', '-d', `${svc.spec.clusterIP}/32`, '-p', 'tcp', '--dport', '443', '-j', 'DNAT', '--to-destination', apiserver]);
}

async function nodeReady(admin: KubeRest, name: string): Promise<boolean> {
    try {
        const node = await admin.get<{ status?: { conditions?: { type: string; status: string }[] } }>(`/api/v1/nodes/${name}`);
        return node.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
    } catch {
        return false;
    }
}

/** containerd's shims for this node (they leave containerd's process group). */
function shimPids(socket: string): number[] {
    return readdirSync('/proc')
        .filter((p) => /^\d+$/.test(p))
        .filter((p) => {
            try {
                return readFileSync(`/proc/${p}/cmdline`, 'utf8').includes(socket);
            } catch {
                return false;
            }
        })
        .map(Number);
}

/** A container's log, as `kubectl logs` reads it: kube-apiserver asks the kubelet. */
export function podLog(cluster: ClusterState, namespace: string, pod: string, container?: string): Promise<string> {
    const query = container ? `?container=${container}` : '';
    return new Promise((done, fail) => {
        const req = httpsGet(
            `${cluster.server}/api/v1/namespaces/${namespace}/pods/${pod}/log${query}`,
            { ca: readFileSync(join(cluster.dir, 'pki', 'apiserver.crt')), headers: { authorization: `Bearer ${cluster.adminToken}` }, timeout: 10_000 },
            (res) => {
                let text = '';
                res.setEncoding('utf8');
                res.on('data', (chunk: string) => (text += chunk));
                res.on('end', () => (res.statusCode === 200 ? done(text) : fail(new Error(`log of ${namespace}/${pod}: ${res.statusCode} ${text}`))));
            },
        );
        req.on('error', fail);
        req.on('timeout', () => req.destroy(new Error(`log of ${namespace}/${pod}: timed out`)));
    });
}

/**
 * Starts containerd and the kubelet as node `name` of `cluster` (started on the host's address
 * with NODE_APISERVER_ARGS), imports the pause image and `images`, and waits for Ready; with
 * `dataPlane`, kube-proxy and CoreDNS after it.
 */
export async function startNode(cluster: ClusterState, name: string, images: NodeImage[] = [], opts: NodeOptions = {}): Promise<RealNode> {
    const host = opts.host ?? FIRST_NODE;
    const bin = await (built ??= buildScript('hack/node/build.sh'));
    const dir = join(cluster.dir, 'node');
    for (const sub of ['containerd/certs.d', 'cni/bin', 'cni/conf', 'cni/ipam', 'kubelet/root', 'kubelet/pki', 'kubelet/logs', 'kubelet/volume-plugins']) {
        mkdirSync(join(dir, sub), { recursive: true });
    }
    for (const plugin of ['bridge', 'host-local', 'loopback']) cpSync(`/usr/lib/cni/${plugin}`, join(dir, 'cni/bin', plugin));
    writeFileSync(join(dir, 'containerd/config.toml'), containerdConfig(dir));
    // Before containerd starts: it does not pick up a CNI config written later.
    writeFileSync(join(dir, 'cni/conf/10-mesh-endpoints-node.conflist'), cniConfig(dir, host.podCidr));
    writeFileSync(join(dir, 'kubelet/config.yaml'), kubeletConfig(dir, host, !!opts.dataPlane));
    // The kubelet checks that its cgroup root exists in every hierarchy.
    for (const hierarchy of readdirSync('/sys/fs/cgroup')) mkdirSync(join('/sys/fs/cgroup', hierarchy, host.cgroup), { recursive: true });

    const socket = join(dir, 'containerd/containerd.sock');
    const containerdLog = join(dir, 'containerd.log');
    const kubeletLog = join(dir, 'kubelet.log');
    const pids: number[] = [];
    const admin = new KubeRest(kubeConfigFor(cluster));
    const stop = async () => {
        for (const pid of pids.reverse()) signalGroup(pid, 'SIGKILL');
        killNodeCgroups(host.cgroup);
        for (const pid of shimPids(socket)) signalGroup(pid, 'SIGKILL');
        // A child namespace's mounts go with it; the node namespace's stay until unmounted.
        if (!host.namespace) await unmountUnder(dir);
    };
    const importImage = async (image: NodeImage) => {
        await host.exec('ctr', ['-a', socket, '-n', 'k8s.io', 'images', 'import', '--base-name', image.baseName, image.archive]);
    };
    try {
        pids.push(await startProcess(...host.run('containerd', ['--config', join(dir, 'containerd/config.toml')]), containerdLog));
        await waitFor('containerd', async () => existsSync(socket), pids[0]!, containerdLog, 30_000);
        await importImage({ archive: join(bin, 'pause-oci.tar'), baseName: 'registry.k8s.io/pause' });
        for (const image of images) await importImage(image);
        await routeKubernetesService(cluster, admin, host);
        pids.push(
            await startProcess(
                ...host.run(join(bin, 'kubelet'), [
                    `--config=${join(dir, 'kubelet/config.yaml')}`,
                    // The admin's token: the probe's choice; a node identity would need the Node authorizer.
                    `--kubeconfig=${cluster.kubeconfig}`,
                    `--root-dir=${join(dir, 'kubelet/root')}`,
                    `--cert-dir=${join(dir, 'kubelet/pki')}`,
                    `--hostname-override=${name}`,
                    `--node-ip=${host.ip}`,
                    '--v=1',
                ]),
                kubeletLog,
            ),
        );
        await waitFor(`node ${name} Ready`, () => nodeReady(admin, name), pids[1]!, kubeletLog, 120_000);
        if (opts.dataPlane) {
            pids.push(await startKubeProxy(bin, cluster, name, host, dir));
            pids.push(await startCoreDns(cluster, host, dir));
        }
    } catch (err) {
        await stop();
        throw err;
    } finally {
        admin.close();
    }
    return { name, dir, stop, importImage, kubeletLog };
}
