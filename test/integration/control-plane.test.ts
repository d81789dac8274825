// The local control plane and the REST client: what every other integration test stands on.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createServer } from 'node:net';
import { describe, it } from 'node:test';
import { promisify } from 'node:util';
import { ApiError, isNotFound } from '../../src/kube/errors.js';
import { collectionPath, ConfigMaps, objectPath, Services } from '../../src/kube/resources.js';
import { down, freePort, readState, up } from '../../src/testing/cluster.js';
import { eventually, startTestCluster } from '../../src/testing/harness.js';

const run = promisify(execFile);
const cluster = await startTestCluster('cp');

function isAlive(pid: number): boolean {
    try {
        process.kill(pid, 0);
        return true;
    } catch {
        return false;
    }
}

describe('local control plane', () => {
    it('cluster up prints a kubeconfig path as its last line; up again prints the same; down leaves no process', async () => {
        const name = `cli-${process.pid}`;
        const cli = ['--import', 'tsx', 'src/testing/cluster-cli.ts'];
        const first = (await run(process.execPath, [...cli, 'up', name])).stdout.trim().split('\n').at(-1)!;
        assert.ok(existsSync(first), 'the kubeconfig exists');
        const second = (await run(process.execPath, [...cli, 'up', name])).stdout.trim().split('\n').at(-1)!;
        assert.equal(second, first);
        const state = readState(name)!;
        assert.ok(isAlive(state.apiserverPid) && isAlive(state.etcdPid));
        await run(process.execPath, [...cli, 'down', name]);
        assert.ok(!isAlive(state.apiserverPid) && !isAlive(state.etcdPid), 'no process left');
        assert.ok(!existsSync(first), 'no data left');
    });

    it('starts again on new ports when a port it picked is taken before kube-apiserver binds it', async () => {
        // Another process binds the port in the second between its pick and the apiserver's start.
        const taken = createServer();
        await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
        const takenPort = (taken.address() as { port: number }).port;
        const picked: number[] = [];
        const pickPort = async () => {
            // etcd's two ports, then the apiserver's.
            picked.push(picked.length === 2 ? takenPort : await freePort());
            return picked.at(-1)!;
        };
        const name = `t-taken-${process.pid}`;
        try {
            const state = await up(name, { ownerPid: process.pid, pickPort });
            assert.equal(picked.length, 6, 'one more start, on three new ports');
            assert.notEqual(state.apiserverPort, takenPort);
            assert.ok(isAlive(state.apiserverPid) && isAlive(state.etcdPid));
        } finally {
            await down(name);
            taken.close();
        }
    });

    it('reports a test file whose top-level set-up fails as the failing test of that step, with its error', async () => {
        const file = 'test/integration/fixtures/failing-set-up.ts';
        // A runner of its own, not a child of ours reporting to us.
        const { NODE_TEST_CONTEXT: _, ...env } = process.env;
        const failed = await run(process.execPath, ['--import', 'tsx', '--test', '--test-force-exit', '--test-reporter=spec', file], { env }).catch((e: { code: number; stdout: string }) => e);
        assert.equal((failed as { code?: number }).code, 1);
        const summary = failed.stdout.slice(failed.stdout.indexOf('failing tests:'));
        assert.match(summary, /✖ set-up: a step that fails[^]*kube-apiserver exited during start-up: bind: address already in use/);
        assert.doesNotMatch(failed.stdout, /is never declared/);
    });

    it('reports the real Kubernetes version, not the unstamped placeholder', async () => {
        const version = await cluster.admin.get<{ gitVersion: string }>('/version');
        assert.match(version.gitVersion, /^v1\.\d+\.\d+$/);
    });

    it('enforces RBAC: a ServiceAccount without bindings is forbidden to list Services until granted', async () => {
        const ns = await cluster.namespace();
        const sa = await cluster.serviceAccountClient(ns, 'reader');
        const err = await sa.get(collectionPath(Services, ns)).catch((e: ApiError) => e);
        assert.ok(err instanceof ApiError && err.code === 403, 'forbidden');
        await cluster.admin.create(`/apis/rbac.authorization.k8s.io/v1/namespaces/${ns}/roles`, {
            metadata: { name: 'read-services' },
            rules: [{ apiGroups: [''], resources: ['services'], verbs: ['list'] }],
        });
        await cluster.admin.create(`/apis/rbac.authorization.k8s.io/v1/namespaces/${ns}/rolebindings`, {
            metadata: { name: 'reader' },
            roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'read-services' },
            subjects: [{ kind: 'ServiceAccount', name: 'reader', namespace: ns }],
        });
        // The authorizer's cache picks the binding up within moments.
        await eventually('the binding to take effect', async () => (await sa.get<{ items: unknown[] }>(collectionPath(Services, ns))).items.length === 0);
        sa.close();
    });

    it('sends DeleteOptions whole: a uid precondition is enforced and the next request still works', async () => {
        const ns = await cluster.namespace();
        const cm = await cluster.admin.create<{ metadata: { name?: string; uid?: string } }>(collectionPath(ConfigMaps, ns), { metadata: { name: 'x' } });
        const wrong = await cluster.admin
            .delete(objectPath(ConfigMaps, ns, 'x'), undefined, { kind: 'DeleteOptions', apiVersion: 'v1', preconditions: { uid: 'not-its-uid' } })
            .catch((e: ApiError) => e);
        assert.ok(wrong instanceof ApiError && wrong.code === 409, 'the precondition was read and failed');
        await cluster.admin.delete(objectPath(ConfigMaps, ns, 'x'), undefined, { kind: 'DeleteOptions', apiVersion: 'v1', preconditions: { uid: cm.metadata.uid! } });
        const gone = await cluster.admin.get(objectPath(ConfigMaps, ns, 'x')).catch((e: unknown) => e);
        assert.ok(isNotFound(gone));
    });
});
