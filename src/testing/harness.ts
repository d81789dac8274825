// What an integration test file needs from the local control plane: a cluster of its
// own that is stopped after the file, also when a test fails or the run is killed
// (a watchdog brings it down once the test process is gone), and clients for it.
import { KubeConfig } from '@kubernetes/client-node';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { KubeRest } from '../kube/rest.js';
import { collectionPath, Namespaces } from '../kube/resources.js';
import { clustersRoot, down, kubeconfigForToken, up, type ClusterState, type UpOptions } from './cluster.js';
import { repoRoot } from './processes.js';

export interface TestCluster {
    state: ClusterState;
    kubeConfig(server?: string): KubeConfig;
    admin: KubeRest;
    /** A fresh namespace for one test. */
    namespace(prefix?: string): Promise<string>;
    /** A client acting as ServiceAccount `name` of `namespace` (created if missing), with no rights but those granted. */
    serviceAccountClient(namespace: string, name: string): Promise<KubeRest>;
    /** Stops `part` (a node, its add-ons) before the cluster goes down, whenever that is. */
    stopsWith(part: { stop(): Promise<void> | void }): void;
}

function watchdog(name: string): void {
    const dir = join(clustersRoot(), name);
    const cli = join(repoRoot, 'src/testing/cluster-cli.ts');
    const script =
        `while kill -0 ${process.pid} 2>/dev/null; do sleep 1; done; ` +
        `[ -d '${dir}' ] && cd '${repoRoot}' && exec node --import tsx '${cli}' down '${name}'`;
    spawn('bash', ['-c', script], { detached: true, stdio: 'ignore' }).unref();
}

export function kubeConfigFor(state: ClusterState, server = state.server): KubeConfig {
    const kc = new KubeConfig();
    kc.loadFromFile(state.kubeconfig);
    if (server !== state.server) {
        kc.clusters = kc.clusters.map((c) => ({ ...c, server }));
    }
    return kc;
}

/** A local cluster owned by this process: the watchdog brings it down if the process dies. */
export interface LocalCluster extends TestCluster {
    /** Closes the admin client and brings the cluster down (its data removed). */
    stop(): Promise<void>;
}

/** `controllers`: kube-controller-manager, kube-scheduler and kwok nodes too (src/testing/controllers.ts); `address`: see UpOptions. */
export async function startLocalCluster(name: string, extraApiserverArgs?: string[], opts: Pick<UpOptions, 'controllers' | 'address'> = {}): Promise<LocalCluster> {
    watchdog(name);
    const state = await up(name, { ownerPid: process.pid, extraApiserverArgs, controllers: opts.controllers, address: opts.address });
    const admin = new KubeRest(kubeConfigFor(state));
    let counter = 0;
    const parts: { stop(): Promise<void> | void }[] = [];
    return {
        state,
        admin,
        kubeConfig: (server?: string) => kubeConfigFor(state, server),
        async namespace(nsPrefix = 'test') {
            const ns = `${nsPrefix}-${++counter}-${randomBytes(2).toString('hex')}`;
            await admin.create(collectionPath(Namespaces), { metadata: { name: ns } });
            return ns;
        },
        async serviceAccountClient(namespace, saName) {
            const saPath = `/api/v1/namespaces/${namespace}/serviceaccounts`;
            await admin.create(saPath, { metadata: { name: saName } }).catch(() => undefined);
            const review = await admin.create<{ status: { token: string } }>(`${saPath}/${saName}/token`, {
                apiVersion: 'authentication.k8s.io/v1',
                kind: 'TokenRequest',
                spec: { expirationSeconds: 3600 },
            } as never);
            const kc = new KubeConfig();
            kc.loadFromString(kubeconfigForToken(state, `${namespace}-${saName}`, review.status.token));
            return new KubeRest(kc);
        },
        stopsWith(part) {
            parts.push(part);
        },
        async stop() {
            for (const part of parts.reverse()) await part.stop();
            admin.close();
            await down(name);
        },
    };
}

/**
 * A step of a test file's top-level set-up (top-level await: clusters, servers, controllers).
 * Node 20 reports a file whose top level throws only as "test failed", its error printed far
 * up the log: a step that fails is reported as the failing test `set-up: <what>` with its
 * error instead, and the file goes no further (none of its tests is declared).
 */
export async function setUp<T>(what: string, step: () => Promise<T>): Promise<T> {
    try {
        return await step();
    } catch (err) {
        test(`set-up: ${what}`, () => {
            throw err;
        });
        return new Promise<T>(() => undefined);
    }
}

/**
 * Call at the top level of a test file (top-level await, never in a test or a describe: a
 * failure ends the set-up there), so the cleanup runs after the whole file.
 */
export async function startTestCluster(prefix: string, opts: Pick<UpOptions, 'controllers' | 'address'> & { extraApiserverArgs?: string[] } = {}): Promise<TestCluster> {
    const name = `t-${prefix}-${randomBytes(3).toString('hex')}`.slice(0, 40);
    const cluster = await setUp(`cluster ${name}`, () => startLocalCluster(name, opts.extraApiserverArgs, { controllers: opts.controllers, address: opts.address }));
    after(() => cluster.stop());
    return cluster;
}

/** Polls `check` until it returns true; fails with `what` after `timeoutMs`. */
export async function eventually(what: string, check: () => boolean | Promise<boolean>, timeoutMs = 30_000) {
    const deadline = Date.now() + timeoutMs;
    let lastError: unknown;
    while (Date.now() < deadline) {
        try {
            if (await check()) return;
        } catch (err) {
            lastError = err;
        }
        await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error(`timed out waiting for ${what}${lastError ? `: ${(lastError as Error).message}` : ''}`);
}
