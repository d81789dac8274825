// A real local control plane: etcd and kube-apiserver, built from their Go modules
// (hack/controlplane/build.sh), running on loopback with TLS, RBAC and a static admin
// token. Tests and the demo use it; nothing here is a fake. It owns the processes and
// the state folder of each named cluster; it knows nothing of our controllers.
import { execFile } from 'node:child_process';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { controllerTokens, startControllers, tokenLines, waitForControllers, type ControllersOptions, type ControllersState } from './controllers.js';
import { buildScript, freePort, isAlive, PortTakenError, probe, startProcess, stopProcess, waitFor } from './processes.js';

export { freePort, PortTakenError };

/** What `up` leaves behind so that a later `up` or `down` (another process) finds the cluster. */
export interface ClusterState {
    name: string;
    dir: string;
    server: string;
    apiserverPort: number;
    etcdPort: number;
    adminToken: string;
    etcdPid: number;
    apiserverPid: number;
    kubeconfig: string;
    /** The test process this cluster belongs to; it is an orphan once that process is gone. */
    ownerPid?: number;
    /** More kube-apiserver flags (an audit log), kept across restartApiserver; one named as a base flag replaces it. */
    extraApiserverArgs?: string[];
    /** kube-controller-manager, kube-scheduler and kwok, when UpOptions.controllers asked for them. */
    controllers?: ControllersState;
    /** The address kube-apiserver binds and advertises and clients use; 127.0.0.1 unless UpOptions.address. */
    address?: string;
    /** A real node joined by `cluster up NAME --node` (src/testing/node.ts), in the namespace its processes keep. */
    node?: { name: string; madeDirs: string[]; cgroup: string };
}

export function clustersRoot(): string {
    return process.env.MESH_ENDPOINTS_CLUSTERS ?? join(tmpdir(), 'mesh-endpoints-clusters');
}

/** Builds (once per machine) and returns the folder holding the etcd and kube-apiserver binaries. */
const controlPlaneBinaries = () => buildScript('hack/controlplane/build.sh');

function stateFile(dir: string): string {
    return join(dir, 'state.json');
}

export function writeState(state: ClusterState): void {
    writeFileSync(stateFile(state.dir), JSON.stringify(state, null, 2));
}

export function readState(name: string): ClusterState | undefined {
    const file = stateFile(join(clustersRoot(), name));
    if (!existsSync(file)) return undefined;
    return JSON.parse(readFileSync(file, 'utf8')) as ClusterState;
}

function apiserverArgs(state: Pick<ClusterState, 'dir' | 'apiserverPort' | 'etcdPort' | 'extraApiserverArgs' | 'address'>): string[] {
    const { dir } = state;
    const address = state.address ?? '127.0.0.1';
    const extra = state.extraApiserverArgs ?? [];
    const flagName = (arg: string) => arg.split('=')[0];
    const base = [
        `--etcd-servers=http://127.0.0.1:${state.etcdPort}`,
        `--bind-address=${address}`,
        `--advertise-address=${address}`,
        `--secure-port=${state.apiserverPort}`,
        `--cert-dir=${join(dir, 'pki')}`,
        '--authorization-mode=RBAC',
        `--token-auth-file=${join(dir, 'tokens.csv')}`,
        '--service-account-issuer=https://kubernetes.default.svc',
        `--service-account-signing-key-file=${join(dir, 'sa.key')}`,
        `--service-account-key-file=${join(dir, 'sa.pub')}`,
        '--service-cluster-ip-range=10.96.0.0/16,fd00:10:96::/108',
        '--disable-admission-plugins=ServiceAccount',
        // As on OpenShift and other hardened clusters: blockOwnerDeletion needs update on the
        // owner's finalizers, so the RBAC tests see whether our rules grant it.
        '--enable-admission-plugins=OwnerReferencesPermissionEnforcement',
        '--endpoint-reconciler-type=none',
        '--allow-privileged=true',
    ];
    // A list flag given twice is both lists: an extra flag replaces the base one instead.
    return [...base.filter((arg) => !extra.some((e) => flagName(e) === flagName(arg))), ...extra];
}

async function startApiserver(bin: string, state: ClusterState): Promise<number> {
    const log = join(state.dir, 'kube-apiserver.log');
    const pid = await startProcess(join(bin, 'kube-apiserver'), apiserverArgs(state), log);
    const caFile = join(state.dir, 'pki', 'apiserver.crt');
    await waitFor(
        'kube-apiserver',
        async () => existsSync(caFile) && probe(`${state.server}/readyz`, readFileSync(caFile)),
        pid,
        log,
        120_000,
    );
    return pid;
}

/** A kubeconfig for the cluster acting with a bearer token (the admin's, a ServiceAccount's). */
export function kubeconfigForToken(state: ClusterState, user: string, token: string): string {
    const ca = readFileSync(join(state.dir, 'pki', 'apiserver.crt'));
    return [
        'apiVersion: v1',
        'kind: Config',
        `current-context: ${state.name}`,
        'clusters:',
        `- name: ${state.name}`,
        '  cluster:',
        `    server: ${state.server}`,
        `    certificate-authority-data: ${ca.toString('base64')}`,
        'users:',
        // Unique user names per cluster: client-node caches credentials by user name.
        `- name: ${user}@${state.name}`,
        '  user:',
        `    token: ${token}`,
        'contexts:',
        `- name: ${state.name}`,
        '  context:',
        `    cluster: ${state.name}`,
        `    user: ${user}@${state.name}`,
        '    namespace: default',
        '',
    ].join('\n');
}

export interface UpOptions {
    /** The test process the cluster belongs to (ClusterState.ownerPid). */
    ownerPid?: number;
    /** More kube-apiserver flags (ClusterState.extraApiserverArgs). */
    extraApiserverArgs?: string[];
    /** Picks a free loopback port (freePort by default; a test hands out a taken one). */
    pickPort?: () => Promise<number>;
    /**
     * Also run kube-controller-manager and kube-scheduler (src/testing/controllers.ts) and, with
     * `kwokNodes`, kwok with that many simulated nodes. A running cluster started without them is
     * started again (its token file must name the components).
     */
    controllers?: ControllersOptions;
    /**
     * The address kube-apiserver binds and advertises (ClusterState.address): a real node's
     * namespace gives its node address, which its Pods reach (src/testing/node.ts).
     */
    address?: string;
}

/** Starts on new ports up to this many times when a port picked was taken (PortTakenError). */
const PORT_ATTEMPTS = 3;

/** Starts cluster `name`, or returns the running one. */
export async function up(name: string, opts: UpOptions = {}): Promise<ClusterState> {
    if (!/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(name) || name.length > 40) {
        throw new Error(`cluster name "${name}" must be a DNS label of at most 40 characters`);
    }
    const existing = readState(name);
    const grownAsAsked = !opts.controllers || (existing?.controllers && existing.controllers.kwokNodes >= (opts.controllers.kwokNodes ?? 0));
    if (existing && grownAsAsked && isAlive(existing.etcdPid) && isAlive(existing.apiserverPid)) {
        const ca = readFileSync(join(existing.dir, 'pki', 'apiserver.crt'));
        if (await probe(`${existing.server}/readyz`, ca)) return existing;
    }
    if (existing) await down(name);

    const bin = await controlPlaneBinaries();
    // Each port is picked free and released, then bound by etcd or kube-apiserver moments later
    // (the apiserver's once etcd is ready, a second or more): any process binding a port of its
    // own in between may take it. Such a start is brought down and made again on new ports.
    for (let attempt = 1; ; attempt++) {
        try {
            return await start(name, bin, opts);
        } catch (err) {
            if (!(err instanceof PortTakenError) || attempt === PORT_ATTEMPTS) throw err;
        }
    }
}

async function start(name: string, bin: string, opts: UpOptions): Promise<ClusterState> {
    const pickPort = opts.pickPort ?? freePort;
    const dir = join(clustersRoot(), name);
    mkdirSync(join(dir, 'pki'), { recursive: true, mode: 0o700 });
    const [etcdPort, etcdPeerPort, apiserverPort] = [await pickPort(), await pickPort(), await pickPort()];
    const adminToken = randomBytes(24).toString('hex');
    const tokens = opts.controllers ? controllerTokens() : undefined;
    writeFileSync(join(dir, 'tokens.csv'), `${adminToken},admin,admin-uid,"system:masters"\n${tokens ? tokenLines(tokens) : ''}`, { mode: 0o600 });
    const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    writeFileSync(join(dir, 'sa.key'), privateKey.export({ type: 'pkcs8', format: 'pem' }), { mode: 0o600 });
    writeFileSync(join(dir, 'sa.pub'), publicKey.export({ type: 'spki', format: 'pem' }));

    const state: ClusterState = {
        name,
        dir,
        server: `https://${opts.address ?? '127.0.0.1'}:${apiserverPort}`,
        apiserverPort,
        etcdPort,
        adminToken,
        etcdPid: 0,
        apiserverPid: 0,
        kubeconfig: join(dir, 'kubeconfig'),
        ownerPid: opts.ownerPid,
        extraApiserverArgs: opts.extraApiserverArgs,
        ...(tokens ? { controllers: { kwokNodes: 0, controllerManagerPid: 0, schedulerPid: 0, kwokPid: 0, controllerManagerPort: 0, schedulerPort: 0, tokens } } : {}),
        ...(opts.address ? { address: opts.address } : {}),
    };
    const etcdLog = join(dir, 'etcd.log');
    try {
        state.etcdPid = await startProcess(
            join(bin, 'etcd'),
            [
                `--name=${name}`,
                `--data-dir=${join(dir, 'etcd')}`,
                `--listen-client-urls=http://127.0.0.1:${etcdPort}`,
                `--advertise-client-urls=http://127.0.0.1:${etcdPort}`,
                `--listen-peer-urls=http://127.0.0.1:${etcdPeerPort}`,
                `--initial-advertise-peer-urls=http://127.0.0.1:${etcdPeerPort}`,
                `--initial-cluster=${name}=http://127.0.0.1:${etcdPeerPort}`,
                '--unsafe-no-fsync',
                '--log-level=warn',
            ],
            etcdLog,
        );
        // Written before waiting, so a failed start can still be brought down.
        writeState(state);
        await waitFor('etcd', () => probe(`http://127.0.0.1:${etcdPort}/health`), state.etcdPid, etcdLog, 60_000);
        state.apiserverPid = await startApiserver(bin, state);
        if (opts.controllers) {
            state.controllers = await startControllers(state, opts.controllers, (user, token) => kubeconfigForToken(state, user, token));
            writeState(state);
            await waitForControllers(state);
        }
    } catch (err) {
        await down(name);
        throw err;
    }
    writeState(state);
    writeFileSync(state.kubeconfig, kubeconfigForToken(state, 'admin', adminToken), { mode: 0o600 });
    return state;
}

/** Stops cluster `name` and removes its data. A cluster that is not running is not an error. */
export async function down(name: string): Promise<void> {
    const state = readState(name);
    const dir = join(clustersRoot(), name);
    // Killed, not stopped: the data goes with them, and kube-apiserver's graceful stop takes a
    // second or more of every test file's run.
    if (state) {
        const c = state.controllers;
        const pids = [state.apiserverPid, state.etcdPid, c?.controllerManagerPid, c?.schedulerPid, c?.kwokPid];
        await Promise.all(pids.filter((pid): pid is number => !!pid).map((pid) => stopProcess(pid, 'SIGKILL')));
    }
    // A real node's mounts (its Pods' volumes and netns files) may outlive it in its folder.
    await unmountUnder(dir);
    rmSync(dir, { recursive: true, force: true });
}

/** Unmounts everything mounted under `dir` (deepest first): the kubelet's volumes, the Pods' netns files. */
export async function unmountUnder(dir: string): Promise<void> {
    const mounts = readFileSync('/proc/self/mountinfo', 'utf8')
        .split('\n')
        .map((l) => l.split(' ')[4])
        .filter((m): m is string => !!m && (m === dir || m.startsWith(`${dir}/`)))
        .sort((a, b) => b.length - a.length);
    for (const m of mounts) await promisify(execFile)('umount', ['-l', m]).catch(() => undefined);
}

/** Stops and starts kube-apiserver alone, keeping etcd and so every object. */
export async function restartApiserver(name: string, pausedMs = 0): Promise<ClusterState> {
    await stopApiserver(name);
    if (pausedMs > 0) await new Promise((r) => setTimeout(r, pausedMs));
    return startApiserverAgain(name);
}

/** Stops kube-apiserver alone (SIGTERM, as a rollout would), keeping etcd and so every object. */
export async function stopApiserver(name: string): Promise<void> {
    await stopProcess(runningState(name).apiserverPid);
}

/** Starts the kube-apiserver that stopApiserver stopped, on the same port. */
export async function startApiserverAgain(name: string): Promise<ClusterState> {
    const state = runningState(name);
    state.apiserverPid = await startApiserver(await controlPlaneBinaries(), state);
    writeState(state);
    return state;
}

function runningState(name: string): ClusterState {
    const state = readState(name);
    if (!state) throw new Error(`cluster ${name} is not running`);
    return state;
}

/**
 * Compacts etcd's history up to its current revision (through etcd's JSON gateway), as
 * kube-apiserver does every 5 minutes: watches from an older resourceVersion then get 410 Gone.
 */
export async function compactEtcd(name: string): Promise<number> {
    const state = runningState(name);
    const call = async (path: string, body: object) => {
        const res = await fetch(`http://127.0.0.1:${state.etcdPort}${path}`, { method: 'POST', body: JSON.stringify(body) });
        if (!res.ok) throw new Error(`etcd ${path}: ${res.status} ${await res.text()}`);
        return (await res.json()) as { header?: { revision?: string } };
    };
    // Any key: the answer's header carries the current revision.
    const revision = Number((await call('/v3/kv/range', { key: Buffer.from('/').toString('base64') })).header?.revision);
    await call('/v3/kv/compaction', { revision }).catch((err: Error) => {
        // Compacted already (by us, or by kube-apiserver's own periodic compaction): nothing to do.
        if (!err.message.includes('required revision has been compacted')) throw err;
    });
    return revision;
}

/** Clusters started for a test process that no longer runs. */
export function orphanClusters(): string[] {
    return listClusters().filter((name) => {
        const owner = readState(name)?.ownerPid;
        return owner !== undefined && !isAlive(owner);
    });
}

export function listClusters(): string[] {
    const root = clustersRoot();
    if (!existsSync(root)) return [];
    return readdirSync(root).filter((n) => existsSync(stateFile(join(root, n))));
}
