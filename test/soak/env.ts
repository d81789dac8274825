// The soak's world: two real clusters (the local one writes an audit log of every write by a
// replica, with the Lease bodies), the loopback DNS server answering the gateway name, one
// Link, and two replicas of each controller, each its own ServiceAccount behind its own proxy.
// Both clusters have the MCS CRDs; the service mirror runs in the local cluster only, named
// LOCAL_CLUSTER there (--cluster-name), so MCS imports the remote cluster's ServiceExports
// through the Link, and the local cluster's own ones, into the local cluster.
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EXTERNAL_WORKLOADS_LEASE as EW_LEASE } from '../../src/externalworkloads/controller.js';
import { SERVICE_MIRROR_LEASE as SM_LEASE } from '../../src/servicemirror/controller.js';
import { collectionPath, Links, Namespaces, Secrets } from '../../src/kube/resources.js';
import { kubeconfigForToken } from '../../src/testing/cluster.js';
import { installCrds, installMcsCrds } from '../../src/testing/crds.js';
import { TestDnsServer } from '../../src/testing/dns-server.js';
import { startLocalCluster, type LocalCluster } from '../../src/testing/harness.js';
import { TcpProxy } from '../../src/testing/tcp-proxy.js';
import { linkObject } from '../integration/mirror-support.js';
import { buildForProcesses } from './build.js';
import { Replica } from './replica.js';

export const SYSTEM_NS = 'soak-system';
/** The external-workloads Services and workloads. */
export const EW_NS = 'soak-ew';
/** Remote Services, and their mirrors here. */
export const APP_NS = 'soak-app';
export const LINK = 'remote';
/** The local cluster's name in the clusterset (the service mirror's --cluster-name). */
export const LOCAL_CLUSTER = 'soak-local';
/** The remote cluster's name in the clusterset: the Link's targetClusterName (its name). */
export const REMOTE_CLUSTER = LINK;
const LINK_SECRET = 'creds-remote';
export const GATEWAY_NAME = 'gw.soak.test';
export const LEASES = { 'external-workloads': EW_LEASE, 'service-mirror': SM_LEASE } as const;

/**
 * Short terms, so that failovers happen within the run. A replica stops writing renewDeadline
 * after it began its last successful renew; the lease-term check allows writes until
 * leaseDuration after the apiserver received that renew (see lease-audit.ts).
 */
export const LEASE = { durationMs: 5000, renewDeadlineMs: 3000, retryMs: 500 };
/** The service mirror's DNS policy: refreshes every 1-3 s, a failing name stays ready for 20 s. */
export const DNS = { minTtlMs: 1000, maxTtlMs: 3000, staleWindowMs: 20_000 };

const AUDIT_POLICY = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived", "ResponseStarted"]
rules:
  - level: None
    verbs: ["get", "list", "watch"]
  - level: None
    userGroups: ["system:masters"]
  - level: RequestResponse
    resources: [{ group: "coordination.k8s.io", resources: ["leases"] }, { group: "multicluster.linkerd.io", resources: ["links/status"] }]
  - level: Metadata
`;

export interface SoakEnv {
    local: LocalCluster;
    remote: LocalCluster;
    dns: TestDnsServer;
    workDir: string;
    auditLog: string;
    replicas: Replica[];
    stop(): Promise<void>;
}

export async function startSoakEnv(): Promise<SoakEnv> {
    const workDir = mkdtempSync(join(tmpdir(), 'mesh-endpoints-soak-'));
    const auditLog = join(workDir, 'audit.log');
    writeFileSync(join(workDir, 'audit-policy.yaml'), AUDIT_POLICY);
    const auditArgs = [`--audit-policy-file=${join(workDir, 'audit-policy.yaml')}`, `--audit-log-path=${auditLog}`, '--audit-log-format=json'];
    const suffix = process.pid.toString(36);
    const [local, remote, dns] = await Promise.all([
        startLocalCluster(`soak-l-${suffix}`, auditArgs),
        startLocalCluster(`soak-r-${suffix}`),
        TestDnsServer.start(),
    ]);
    const replicas: Replica[] = [];
    const env: SoakEnv = {
        local,
        remote,
        dns,
        workDir,
        auditLog,
        replicas,
        async stop() {
            await Promise.all(replicas.map((r) => r.kill()));
            await Promise.all(replicas.map((r) => r.proxy.stop()));
            await Promise.all([local.stop(), remote.stop(), dns.close()]);
        },
    };
    try {
        await installCrds(local.admin);
        await Promise.all([installMcsCrds(local.admin), installMcsCrds(remote.admin)]);
        for (const ns of [SYSTEM_NS, EW_NS, APP_NS]) await local.admin.create(collectionPath(Namespaces), { metadata: { name: ns } });
        await remote.admin.create(collectionPath(Namespaces), { metadata: { name: APP_NS } });
        dns.setRecords(GATEWAY_NAME, { A: [{ address: '192.0.2.201', ttl: 2 }] });
        await createLink(env);
        const mainJs = await buildForProcesses();
        const common = ['--namespace', SYSTEM_NS, '--lease-duration', `${LEASE.durationMs}ms`, '--renew-deadline', `${LEASE.renewDeadlineMs}ms`, '--retry-period', `${LEASE.retryMs}ms`, '--log-level', 'info'];
        const ew = [...common, '--watch-namespace', EW_NS, '--batch-period', '100ms', '--resync-period', '30s'];
        const sm = [
            ...common,
            '--dns-servers', dns.address,
            '--dns-min-ttl', `${DNS.minTtlMs}ms`, '--dns-max-ttl', `${DNS.maxTtlMs}ms`, '--dns-stale-window', `${DNS.staleWindowMs}ms`, '--dns-timeout', '300ms',
            '--probe-address-override', '127.0.0.1',
            '--resync-period', '30s',
            '--cluster-name', LOCAL_CLUSTER,
        ];
        for (const [name, command, args] of [
            ['ew-a', 'external-workloads', ew],
            ['ew-b', 'external-workloads', ew],
            ['sm-a', 'service-mirror', sm],
            ['sm-b', 'service-mirror', sm],
        ] as const) {
            const proxy = new TcpProxy('127.0.0.1', local.state.apiserverPort);
            await proxy.start();
            const kubeconfig = await replicaKubeconfig(env, name, proxy.port);
            replicas.push(new Replica(name, command, proxy, kubeconfig, [...args], workDir, mainJs));
        }
    } catch (err) {
        await env.stop();
        throw err;
    }
    return env;
}

/** A ServiceAccount bound to cluster-admin, its token in a kubeconfig whose server is the replica's proxy. */
async function replicaKubeconfig(env: SoakEnv, name: string, proxyPort: number): Promise<string> {
    const admin = env.local.admin;
    const saPath = `/api/v1/namespaces/${SYSTEM_NS}/serviceaccounts`;
    await admin.create(saPath, { metadata: { name } });
    await admin.create('/apis/rbac.authorization.k8s.io/v1/clusterrolebindings', {
        metadata: { name: `soak-${name}` },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'cluster-admin' },
        subjects: [{ kind: 'ServiceAccount', name, namespace: SYSTEM_NS }],
    });
    const review = await admin.create<{ status: { token: string } }>(`${saPath}/${name}/token`, {
        apiVersion: 'authentication.k8s.io/v1',
        kind: 'TokenRequest',
        spec: { expirationSeconds: 24 * 3600 },
    } as never);
    const state = env.local.state;
    const yaml = kubeconfigForToken(state, name, review.status.token).replace(`server: ${state.server}`, `server: https://127.0.0.1:${proxyPort}`);
    const file = join(env.workDir, `${name}.kubeconfig`);
    writeFileSync(file, yaml, { mode: 0o600 });
    return file;
}

async function createLink(env: SoakEnv): Promise<void> {
    await env.local.admin.create(collectionPath(Secrets, SYSTEM_NS), {
        metadata: { name: LINK_SECRET },
        type: 'mirror.linkerd.io/remote-kubeconfig',
        data: { kubeconfig: Buffer.from(readFileSync(env.remote.state.kubeconfig, 'utf8')).toString('base64') },
    });
    await env.local.admin.create(collectionPath(Links, SYSTEM_NS), linkBody());
}

/** The soak's Link, as created at the start and re-created after the driver removed it. */
export function linkBody(): object {
    return linkObject({ name: LINK, gatewayAddress: GATEWAY_NAME }, LINK_SECRET);
}

/** The audit user of a replica's ServiceAccount. */
export function auditUser(replica: string): string {
    return `system:serviceaccount:${SYSTEM_NS}:${replica}`;
}
