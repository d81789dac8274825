// Lease leader election against a real kube-apiserver: in-process candidates for the
// invariant, separate processes for kill and freeze.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { describe, it } from 'node:test';
import { LeaderElector } from '../../src/kube/leaderelection.js';
import { collectionPath, ConfigMaps, Leases, objectPath } from '../../src/kube/resources.js';
import type { LeaseSpec } from '../../src/kube/leaderelection.js';
import { eventually, startTestCluster } from '../../src/testing/harness.js';

const cluster = await startTestCluster('lease');
const fast = { leaseDurationMs: 4000, renewDeadlineMs: 2500, retryPeriodMs: 500 };

async function holder(ns: string, name: string): Promise<string> {
    const lease = await cluster.admin.get<{ spec?: LeaseSpec }>(objectPath(Leases, ns, name));
    return lease.spec?.holderIdentity ?? '';
}

function candidate(ns: string, identity: string): { proc: ChildProcess; lines: string[] } {
    const proc = spawn(
        process.execPath,
        ['--import', 'tsx', 'test/integration/fixtures/lease-candidate.ts', cluster.state.kubeconfig, ns, identity],
        { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    const lines: string[] = [];
    proc.stdout!.on('data', (d: Buffer) => lines.push(...d.toString().trim().split('\n')));
    return { proc, lines };
}

async function writesBy(ns: string, identity: string): Promise<number> {
    const list = await cluster.admin.get<{ items: unknown[] }>(collectionPath(ConfigMaps, ns), {
        labelSelector: `writer=${identity}`,
    });
    return list.items.length;
}

describe('leader election', () => {
    it('refuses a renewDeadline that is not shorter than the leaseDuration', () => {
        assert.throws(() => new LeaderElector(cluster.admin, { namespace: 'x', name: 'y', leaseDurationMs: 10_000, renewDeadlineMs: 10_000 }));
    });

    it('among three candidates exactly one leads at every moment, and a graceful stop hands over at once', async () => {
        const ns = await cluster.namespace();
        const electors = ['a', 'b', 'c'].map(
            (id) => new LeaderElector(cluster.admin, { namespace: ns, name: 'three', identity: id, ...fast, leaseDurationMs: 20_000, renewDeadlineMs: 10_000 }),
        );
        electors.forEach((e) => e.start());
        await eventually('a leader', () => electors.some((e) => e.isLeader()));
        for (let i = 0; i < 30; i++) {
            const leaders = electors.filter((e) => e.isLeader());
            assert.equal(leaders.length, 1, 'exactly one leader');
            assert.equal(await holder(ns, 'three'), leaders[0]!.identity, 'the leader holds the Lease');
            await new Promise((r) => setTimeout(r, 50));
        }
        const leader = electors.find((e) => e.isLeader())!;
        const stoppedAt = Date.now();
        await leader.stop();
        const rest = electors.filter((e) => e !== leader);
        await eventually('a new leader', () => rest.some((e) => e.isLeader()));
        // The lease lasts 20 s: a takeover well before that shows the release worked.
        assert.ok(Date.now() - stoppedAt < 10_000, 'taken over before the old lease could have expired');
        const lease = await cluster.admin.get<{ spec: LeaseSpec }>(objectPath(Leases, ns, 'three'));
        assert.equal(lease.spec.leaseTransitions, 1);
        assert.match(lease.spec.renewTime!, /\.\d{6}Z$/);
        await Promise.all(rest.map((e) => e.stop()));
    });

    it('a killed leader is replaced once its lease expires', async () => {
        const ns = await cluster.namespace();
        const a = candidate(ns, 'killed');
        // Deadlines count a candidate's process start, half a minute and more on a loaded machine.
        await eventually('the first candidate to lead', () => a.lines.includes('leading'), 90_000);
        const b = candidate(ns, 'standby');
        a.proc.kill('SIGKILL');
        await eventually('the standby to lead', () => b.lines.includes('leading'), 90_000);
        assert.equal(await holder(ns, 'candidates'), 'standby');
        b.proc.kill('SIGTERM');
        await new Promise((r) => b.proc.once('exit', r));
        assert.equal(await holder(ns, 'candidates'), '', 'a graceful stop releases the lease');
    });

    it('a frozen leader, once resumed, writes nothing before it has re-acquired', async () => {
        const ns = await cluster.namespace();
        const a = candidate(ns, 'frozen');
        await eventually('the first candidate to lead', () => a.lines.includes('leading'), 90_000);
        await eventually('the leader to write', async () => (await writesBy(ns, 'frozen')) > 0);
        const b = candidate(ns, 'other');
        a.proc.kill('SIGSTOP');
        await eventually('the other candidate to lead', () => b.lines.includes('leading'), 90_000);
        await eventually('the new leader to write', async () => (await writesBy(ns, 'other')) > 0);
        const writesBeforeResume = await writesBy(ns, 'frozen');
        a.proc.kill('SIGCONT');
        await eventually('the resumed one to notice it lost', () => a.lines.includes('stopped'));
        await new Promise((r) => setTimeout(r, 1500));
        assert.equal(await writesBy(ns, 'frozen'), writesBeforeResume, 'no write after resuming');
        assert.equal(await holder(ns, 'candidates'), 'other');
        for (const c of [a, b]) {
            c.proc.kill('SIGTERM');
            await new Promise((r) => c.proc.once('exit', r));
        }
    });
});
