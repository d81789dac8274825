// Where a real node runs (node.ts and its add-ons, kube-proxy.ts and coredns.ts): its address,
// its Pods' CIDR, its cgroup root, and how a command runs there (the node namespace itself, or a
// child namespace of it).
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import type { ChildNamespace } from './child-namespace.js';
import { NODE_CGROUP, NODE_IP, POD_CIDR } from './node-namespace.js';

const run = promisify(execFile);

/** Where a node runs: its address, its Pods' CIDR, its cgroup root, and the namespace its processes run in. */
export interface NodeHost {
    ip: string;
    podCidr: string;
    cgroup: string;
    /** Absent: the node namespace itself (node-namespace.ts). */
    namespace?: ChildNamespace;
    /** `cmd args` as run on this host. */
    run(cmd: string, args: string[]): [string, string[]];
    /** Runs a command on this host and returns its stdout. */
    exec(cmd: string, args: string[]): Promise<string>;
}

/** Whether `url` answers 2xx within 2 s from `host` (its own loopback: a node add-on's health). */
export async function healthyOn(host: NodeHost, url: string): Promise<boolean> {
    return host.exec('curl', ['-fsS', '-m', '2', '-o', '/dev/null', url]).then(
        () => true,
        () => false,
    );
}

/** The node of the node namespace itself. */
export const FIRST_NODE: NodeHost = {
    ip: NODE_IP,
    podCidr: POD_CIDR,
    cgroup: NODE_CGROUP,
    run: (cmd, args) => [cmd, args],
    exec: async (cmd, args) => (await run(cmd, args, { maxBuffer: 16 << 20 })).stdout,
};

/** A further node in a child namespace (child-namespace.ts, made with `privateDirs: HARD_CODED_DIRS`), with its own address, Pod CIDR and cgroup. */
export function childNode(namespace: ChildNamespace, ip: string, podCidr: string): NodeHost {
    return { ip, podCidr, cgroup: `${NODE_CGROUP}-${namespace.name}`, namespace, run: namespace.command, exec: namespace.exec };
}
