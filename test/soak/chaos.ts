// The soak's chaos loop: SIGKILL (then a restart), SIGSTOP then SIGCONT, SIGTERM (then a
// restart) of replicas; cut and stall of a replica's connections to the local apiserver;
// restart of an apiserver; compaction of an etcd. Faults overlap; stop() lets the ones in
// flight finish and then heals everything: every replica running, no proxy stalled.
import { Leases, objectPath } from '../../src/kube/resources.js';
import { compactEtcd, restartApiserver } from '../../src/testing/cluster.js';
import { LEASES, SYSTEM_NS, type SoakEnv } from './env.js';
import type { History } from './history.js';
import type { Random } from './random.js';
import type { Replica } from './replica.js';

/** A SIGTERMed replica must be gone within this (the controllers bound their shutdown to 10 s). */
const SIGTERM_LIMIT_MS = 15_000;
/** An apiserver restart costs many seconds on a loaded machine: at most one per this period. */
const APISERVER_RESTART_GAP_MS = 40_000;

export class Chaos {
    private stopped = false;
    private readonly inFlight = new Set<Promise<void>>();
    /** Replicas (by name) and proxies a fault is working on. */
    private readonly busy = new Set<string>();
    private lastApiserverRestart = 0;
    private loop: Promise<void> | undefined;

    constructor(
        private readonly env: SoakEnv,
        private readonly random: Random,
        private readonly history: History,
    ) {}

    start(): void {
        this.loop = this.run();
    }

    async stop(): Promise<void> {
        this.stopped = true;
        await this.loop;
        while (this.inFlight.size > 0) await Promise.all(this.inFlight);
        for (const replica of this.env.replicas) {
            replica.proxy.freeze(false);
            if (replica.state === 'stopped') replica.signal('SIGCONT');
            if (replica.state === 'down') replica.start();
        }
        this.history.faultEnded();
    }

    private sleep(ms: number): Promise<void> {
        return new Promise((r) => setTimeout(r, ms));
    }

    private async run(): Promise<void> {
        while (!this.stopped) {
            await this.sleep(this.random.int(1500, 4000));
            if (this.stopped) break;
            const kind = this.random.weighted({ sigkill: 3, sigstop: 3, sigterm: 2, cut: 3, stall: 2, 'apiserver-restart': 2, 'etcd-compact': 2 });
            const fault = await this.fault(kind);
            if (!fault) continue;
            this.history.fault(fault.name);
            const running = fault.run().catch((err: Error) => this.history.violation('chaos', `${fault.name} failed: ${err.message}`));
            this.inFlight.add(running);
            void running.finally(() => {
                this.inFlight.delete(running);
                this.history.faultEnded();
            });
        }
    }

    /** A running replica no fault is working on; the Lease holder of a controller more often than not. */
    private async target(): Promise<Replica | undefined> {
        const free = this.env.replicas.filter((r) => r.state === 'running' && !this.busy.has(r.name));
        if (free.length === 0) return undefined;
        if (this.random.chance(0.7)) {
            const lease = this.random.pick(Object.values(LEASES));
            const holder = await this.env.local.admin
                .get<{ spec?: { holderIdentity?: string } }>(objectPath(Leases, SYSTEM_NS, lease))
                .then((l) => l.spec?.holderIdentity)
                .catch(() => undefined);
            const leader = free.find((r) => r.name === holder);
            if (leader) return leader;
        }
        return this.random.pick(free);
    }

    private async fault(kind: string): Promise<{ name: string; run: () => Promise<void> } | undefined> {
        if (kind === 'apiserver-restart') {
            if (Date.now() - this.lastApiserverRestart < APISERVER_RESTART_GAP_MS || this.busy.has('apiserver')) return undefined;
            this.lastApiserverRestart = Date.now();
            return this.apiserverRestart(this.random.chance(0.5) ? 'local' : 'remote');
        }
        if (kind === 'etcd-compact') {
            const which = this.random.chance(0.5) ? 'local' : 'remote';
            return { name: `etcd-compact-${which}`, run: async () => void (await compactEtcd(this.env[which].state.name)) };
        }
        const replica = await this.target();
        if (!replica) return undefined;
        return { name: kind, run: () => this.holding(replica.name, () => this.replicaFault(kind, replica)) };
    }

    private async holding(key: string, work: () => Promise<void>): Promise<void> {
        this.busy.add(key);
        try {
            await work();
        } finally {
            this.busy.delete(key);
        }
    }

    private async replicaFault(kind: string, replica: Replica): Promise<void> {
        switch (kind) {
            case 'sigkill':
                replica.signal('SIGKILL');
                await replica.exit();
                await this.sleep(this.random.int(500, 3000));
                return replica.start();
            case 'sigstop':
                replica.signal('SIGSTOP');
                // Longer than a lease at times: the standby takes over while this one sleeps.
                await this.sleep(this.random.int(1000, 8000));
                return replica.signal('SIGCONT');
            case 'sigterm': {
                const sentAt = Date.now();
                replica.signal('SIGTERM');
                const exited = await Promise.race([replica.exit().then(() => true), this.sleep(SIGTERM_LIMIT_MS).then(() => false)]);
                this.history.sigtermExitMs.push(Date.now() - sentAt);
                if (!exited) {
                    this.history.violation('bounded-shutdown', `${replica.name} still running ${SIGTERM_LIMIT_MS} ms after SIGTERM`);
                    await replica.kill();
                }
                await this.sleep(this.random.int(500, 2000));
                return replica.start();
            }
            case 'cut':
                return replica.proxy.cutAll();
            default:
                // stall: the connections stay open and carry nothing.
                replica.proxy.freeze(true);
                await this.sleep(this.random.int(1000, 6000));
                return replica.proxy.freeze(false);
        }
    }

    private apiserverRestart(which: 'local' | 'remote'): { name: string; run: () => Promise<void> } {
        return {
            name: `apiserver-restart-${which}`,
            run: () =>
                this.holding('apiserver', async () => {
                    const down = { from: Date.now(), to: undefined as number | undefined };
                    if (which === 'remote') this.history.remoteDown.push(down);
                    await restartApiserver(this.env[which].state.name, this.random.int(0, 2000));
                    down.to = Date.now();
                }),
        };
    }
}
