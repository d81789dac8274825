// One controller replica of the soak: `mesh-endpoints <command>` as a child process (the
// bundled dist/cli/main.js, see build.ts), reaching
// the local apiserver only through its own TCP proxy (so the chaos loop can cut or stall its
// connections) and acting as its own ServiceAccount (so the apiserver's audit log names it).
// Its output goes to <workDir>/<name>.log, appended across restarts.
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { TcpProxy } from '../../src/testing/tcp-proxy.js';

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

export type ReplicaState = 'running' | 'stopped' | 'down';

export class Replica {
    private proc: ChildProcess | undefined;
    private exited: Promise<void> = Promise.resolve();
    /** Running, SIGSTOPped, or not running (killed, terminated, or not started). */
    state: ReplicaState = 'down';
    /** Each SIGSTOP, until its SIGCONT (ms since the epoch). */
    readonly pauses: { from: number; to?: number }[] = [];
    /** When each process was started (ms since the epoch). */
    readonly startedAt: number[] = [];

    constructor(
        /** Also its leader-election identity and ServiceAccount name. */
        readonly name: string,
        readonly command: 'external-workloads' | 'service-mirror',
        readonly proxy: TcpProxy,
        private readonly kubeconfig: string,
        private readonly args: string[],
        private readonly workDir: string,
        private readonly mainJs: string,
    ) {}

    start(): void {
        if (this.state !== 'down') return;
        const log = openSync(join(this.workDir, `${this.name}.log`), 'a');
        const proc = spawn(
            process.execPath,
            [this.mainJs, this.command, '--kubeconfig', this.kubeconfig, '--identity', this.name, '--admin-addr', '127.0.0.1:0', ...this.args],
            { cwd: repoRoot, stdio: ['ignore', log, log] },
        );
        closeSync(log);
        this.proc = proc;
        this.state = 'running';
        this.startedAt.push(Date.now());
        this.exited = new Promise((done) =>
            proc.once('exit', () => {
                if (this.proc === proc) this.state = 'down';
                done();
            }),
        );
        watchdog(proc.pid!);
    }

    /** SIGKILL, SIGTERM, SIGSTOP or SIGCONT. */
    signal(signal: 'SIGKILL' | 'SIGTERM' | 'SIGSTOP' | 'SIGCONT'): void {
        if (this.state === 'down' || !this.proc) return;
        this.proc.kill(signal);
        if (signal === 'SIGSTOP') (this.state = 'stopped'), this.pauses.push({ from: Date.now() });
        if (signal === 'SIGCONT') (this.state = 'running'), (this.pauses.at(-1)!.to = Date.now());
    }

    /** Resolves when the process has exited (at once when none runs). */
    exit(): Promise<void> {
        return this.exited;
    }

    /** Kills the process (a stopped one too) and waits for it. */
    async kill(): Promise<void> {
        if (this.state === 'down') return;
        this.proc?.kill('SIGKILL');
        await this.exited;
    }
}

/** Kills the child if this process dies first (a SIGKILLed soak must not leave replicas behind). */
function watchdog(child: number): void {
    // Only while we are gone and the pid is still a mesh-endpoints command (never a reused pid).
    const script =
        `while kill -0 ${process.pid} 2>/dev/null && kill -0 ${child} 2>/dev/null; do sleep 1; done; ` +
        `kill -0 ${process.pid} 2>/dev/null || { grep -q cli/main.ts /proc/${child}/cmdline 2>/dev/null && kill -9 ${child}; }`;
    spawn('bash', ['-c', script], { detached: true, stdio: 'ignore' }).unref();
}
