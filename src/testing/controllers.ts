// The rest of a control plane, for the local clusters that ask for it (UpOptions.controllers):
// kube-controller-manager and kube-scheduler, built from the same k8s.io/kubernetes module and
// version as kube-apiserver (hack/controlplane/build.sh --controllers), and kwok
// (hack/controlplane/kwok/build.sh) simulating nodes: Pods scheduled onto them get IPs and
// become Running and Ready, though no container runs. With them, Deployments make ReplicaSets
// and Pods, upstream's endpointslice controller writes slices, the garbage collector follows
// ownerReferences and namespaces finish terminating. Clusters that do not ask pay nothing.
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { join } from 'node:path';
import { buildScript, freePort, probe, startProcess, waitFor } from './processes.js';

export interface ControllersOptions {
    /** kwok with this many simulated nodes, `kwok-node-0`…; 0 (the default): no kwok, no nodes. */
    kwokNodes?: number;
}

/** The processes of the grown control plane, kept in ClusterState.controllers. */
export interface ControllersState {
    kwokNodes: number;
    controllerManagerPid: number;
    schedulerPid: number;
    /** 0 without kwok. */
    kwokPid: number;
    controllerManagerPort: number;
    schedulerPort: number;
    /** Static tokens of the users system:kube-controller-manager and system:kube-scheduler. */
    tokens: { controllerManager: string; scheduler: string };
}

/** The annotation kwok is told to manage nodes by; a real kubelet's node never has it. */
export const KWOK_NODE_ANNOTATION = 'kwok.x-k8s.io/node';
/** Pod IPs kwok hands out (inside objects only: nothing here connects to them). */
const KWOK_POD_CIDR = '10.244.0.0/16';

/** Tokens for the components, before kube-apiserver starts (it reads its token file once). */
export function controllerTokens(): ControllersState['tokens'] {
    return { controllerManager: randomBytes(24).toString('hex'), scheduler: randomBytes(24).toString('hex') };
}

/**
 * Lines of kube-apiserver's token file. The users are the ones RBAC's bootstrap policy binds
 * (system:kube-controller-manager, system:kube-scheduler), so the components run with
 * upstream's own rights, not as admins.
 */
export function tokenLines(tokens: ControllersState['tokens']): string {
    return (
        `${tokens.controllerManager},system:kube-controller-manager,kube-controller-manager-uid\n` +
        `${tokens.scheduler},system:kube-scheduler,kube-scheduler-uid\n`
    );
}

/** What the components need of the cluster they join (a ClusterState). */
interface Cluster {
    dir: string;
    server: string;
    adminToken: string;
    controllers?: ControllersState;
}

let built: Promise<{ bin: string; kwokDir: string }> | undefined;

/** Builds (once per machine) kube-controller-manager and kube-scheduler (in `bin`) and kwok (with its stages.yaml, in `kwokDir`). */
function controllerBinaries(): Promise<{ bin: string; kwokDir: string }> {
    built ??= (async () => {
        const bin = await buildScript('hack/controlplane/build.sh', ['--controllers']);
        return { bin, kwokDir: await buildScript('hack/controlplane/kwok/build.sh') };
    })();
    return built;
}

function componentArgs(state: Cluster, component: string, port: number): string[] {
    return [
        `--kubeconfig=${join(state.dir, `${component}.kubeconfig`)}`,
        // Loopback, on a port of its own: several clusters share this machine.
        '--bind-address=127.0.0.1',
        `--secure-port=${port}`,
        `--cert-dir=${join(state.dir, `${component}-pki`)}`,
        // One replica: no Lease to win first.
        '--leader-elect=false',
        '--v=1',
    ];
}

/** Starts the components of `state.controllers` (its tokens already in the apiserver's token file). */
export async function startControllers(
    state: Cluster,
    opts: ControllersOptions,
    kubeconfigFor: (user: string, token: string) => string,
): Promise<ControllersState> {
    const { bin, kwokDir } = await controllerBinaries();
    const tokens = state.controllers!.tokens;
    const controllers: ControllersState = {
        kwokNodes: opts.kwokNodes ?? 0,
        controllerManagerPid: 0,
        schedulerPid: 0,
        kwokPid: 0,
        controllerManagerPort: await freePort(),
        schedulerPort: await freePort(),
        tokens,
    };
    state.controllers = controllers;
    for (const [component, token] of [
        ['kube-controller-manager', tokens.controllerManager],
        ['kube-scheduler', tokens.scheduler],
        // kwok stands in for every node's kubelet, which may write any node's and pod's status.
        ['kwok', state.adminToken],
    ] as const) {
        mkdirSync(join(state.dir, `${component}-pki`), { recursive: true, mode: 0o700 });
        writeFileSync(join(state.dir, `${component}.kubeconfig`), kubeconfigFor(component, token), { mode: 0o600 });
    }
    const log = (component: string) => join(state.dir, `${component}.log`);
    controllers.controllerManagerPid = await startProcess(
        join(bin, 'kube-controller-manager'),
        [
            ...componentArgs(state, 'kube-controller-manager', controllers.controllerManagerPort),
            // Each controller as its own ServiceAccount of kube-system with its bootstrap role, as kubeadm runs it.
            '--use-service-account-credentials=true',
            `--root-ca-file=${join(state.dir, 'pki', 'apiserver.crt')}`,
            '--controllers=*',
        ],
        log('kube-controller-manager'),
    );
    controllers.schedulerPid = await startProcess(
        join(bin, 'kube-scheduler'),
        componentArgs(state, 'kube-scheduler', controllers.schedulerPort),
        log('kube-scheduler'),
    );
    if (controllers.kwokNodes > 0) {
        controllers.kwokPid = await startProcess(
            join(kwokDir, 'kwok'),
            [
                `--kubeconfig=${join(state.dir, 'kwok.kubeconfig')}`,
                // Upstream's default Stages only, never a user's ~/.kwok/kwok.yaml.
                `--config=${join(kwokDir, 'stages.yaml')}`,
                `--manage-nodes-with-annotation-selector=${KWOK_NODE_ANNOTATION}=fake`,
                `--cidr=${KWOK_POD_CIDR}`,
                '--node-ip=10.0.255.1',
                '--node-lease-duration-seconds=40',
            ],
            log('kwok'),
        );
    }
    return controllers;
}

/** Waits until both components are healthy and every kwok node is Ready. */
export async function waitForControllers(state: Cluster): Promise<void> {
    const c = state.controllers!;
    await Promise.all([
        waitFor('kube-controller-manager', () => probe(`https://127.0.0.1:${c.controllerManagerPort}/healthz`, 'insecure'), c.controllerManagerPid, join(state.dir, 'kube-controller-manager.log'), 120_000),
        waitFor('kube-scheduler', () => probe(`https://127.0.0.1:${c.schedulerPort}/healthz`, 'insecure'), c.schedulerPid, join(state.dir, 'kube-scheduler.log'), 120_000),
    ]);
    if (c.kwokNodes === 0) return;
    for (let i = 0; i < c.kwokNodes; i++) await createNode(state, kwokNode(i));
    await waitFor(
        `${c.kwokNodes} kwok nodes Ready`,
        async () => {
            const res = await adminCall(state, 'GET', '/api/v1/nodes');
            if (res.status !== 200) throw new Error(`GET /api/v1/nodes: ${res.status}`);
            const nodes = res.body as { items: KwokNode[] };
            const ready = nodes.items.filter((n) => n.metadata.annotations?.[KWOK_NODE_ANNOTATION] && n.status?.conditions?.some((x) => x.type === 'Ready' && x.status === 'True'));
            return ready.length >= c.kwokNodes;
        },
        c.kwokPid,
        join(state.dir, 'kwok.log'),
        120_000,
    );
}

interface KwokNode {
    metadata: { name: string; annotations?: Record<string, string>; labels?: Record<string, string> };
    status?: { conditions?: { type: string; status: string }[]; allocatable?: Record<string, string>; capacity?: Record<string, string> };
}

/** A node as kwok's own examples register one: kwok sets its conditions, addresses and Lease. */
function kwokNode(i: number): KwokNode {
    const name = `kwok-node-${i}`;
    const resources = { cpu: '32', memory: '256Gi', pods: '110' };
    return {
        metadata: {
            name,
            annotations: { [KWOK_NODE_ANNOTATION]: 'fake', 'node.alpha.kubernetes.io/ttl': '0' },
            labels: { 'kubernetes.io/hostname': name, 'kubernetes.io/os': 'linux', 'kubernetes.io/arch': 'amd64', type: 'kwok' },
        },
        status: { allocatable: resources, capacity: resources },
    };
}

function adminCall(state: Cluster, method: string, path: string, body?: unknown): Promise<{ status: number; body: unknown }> {
    const ca = readFileSync(join(state.dir, 'pki', 'apiserver.crt'));
    return new Promise((done, fail) => {
        const req = request(
            `${state.server}${path}`,
            { method, ca, headers: { authorization: `Bearer ${state.adminToken}`, 'content-type': 'application/json' }, timeout: 10_000 },
            (res) => {
                let text = '';
                res.setEncoding('utf8');
                res.on('data', (chunk: string) => (text += chunk));
                res.on('end', () => done({ status: res.statusCode ?? 0, body: text ? (JSON.parse(text) as unknown) : undefined }));
            },
        );
        req.on('error', fail);
        req.on('timeout', () => req.destroy(new Error(`${method} ${path}: timed out`)));
        req.end(body === undefined ? undefined : JSON.stringify(body));
    });
}

async function createNode(state: Cluster, node: KwokNode): Promise<void> {
    const res = await adminCall(state, 'POST', '/api/v1/nodes', node);
    // 409: made by an earlier start of this cluster; kwok takes it over.
    if (res.status !== 201 && res.status !== 409) throw new Error(`creating node ${node.metadata.name}: ${res.status} ${JSON.stringify(res.body)}`);
}
