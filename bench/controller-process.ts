// A controller as users run it: the compiled CLI (`make build`'s dist/) in a process of its own,
// so its RSS and CPU are its own, read off /proc, and its counts off its /metrics. Shared by
// the benchmarks that spawn a controller (cluster-scale, service-mirror-scale).
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Cleanups } from './local-cluster.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

/** User + system CPU seconds of a process or thread, from its stat file (clock ticks of 1/100 s, as on Linux). */
export function statCpuSeconds(statPath: string): number {
    const fields = readFileSync(statPath, 'utf8').split(') ')[1]!.split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100;
}

export interface CpuSeconds {
    busy: number;
    idle: number;
}

/**
 * The whole machine's CPU seconds so far, busy and idle, all cores together and each core's
 * (/proc/stat's "cpu" and "cpuN" lines). Busy is user, nice, system, irq and softirq: guest time
 * is already in user and nice, and time stolen by the hypervisor ran nothing of ours.
 */
export function machineCpuSeconds(): CpuSeconds & { cores: Map<number, CpuSeconds> } {
    const cores = new Map<number, CpuSeconds>();
    let machine: CpuSeconds = { busy: 0, idle: 0 };
    for (const line of readFileSync('/proc/stat', 'utf8').split('\n')) {
        const match = /^cpu(\d*)\s+(.*)$/.exec(line);
        if (!match) continue;
        const [user, nice, system, idle, iowait, irq, softirq] = match[2]!.split(/\s+/).map(Number) as number[];
        const seconds = { busy: (user! + nice! + system! + irq! + softirq!) / 100, idle: (idle! + iowait!) / 100 };
        if (match[1] === '') machine = seconds;
        else cores.set(Number(match[1]), seconds);
    }
    return { ...machine, cores };
}

function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms)));
    return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** The controller as `make build` compiles it (dist/); BENCH_CONTROLLER_JS runs another build (e.g. an older commit's). */
export function controllerEntry(): string {
    if (process.env.BENCH_CONTROLLER_JS) return process.env.BENCH_CONTROLLER_JS;
    const built = spawnSync('npm', ['run', '--silent', 'build'], { cwd: root, encoding: 'utf8' });
    if (built.status !== 0) throw new Error(`building the controller failed: ${built.stdout}${built.stderr}`);
    const entry = join(root, 'dist', 'cli', 'main.js');
    if (!existsSync(entry)) throw new Error(`no controller at ${entry}`);
    return entry;
}

/** The node flags a bundle runs with as users run it: those of its first line (`#!/usr/bin/env -S node FLAGS`), as the image's ENTRYPOINT. */
function nodeFlagsOf(entry: string): string[] {
    const firstLine = readFileSync(entry, 'utf8').slice(0, 200).split('\n')[0]!;
    const words = firstLine.startsWith('#!') ? firstLine.split(/\s+/) : [];
    return words.slice(words.indexOf('node') + 1).filter((word) => word.startsWith('--'));
}

export function metricFrom(text: string, name: string, labels = ''): number {
    const line = text.split('\n').find((l) => l.startsWith(labels ? `${name}{` : `${name} `) && l.includes(labels));
    return line ? Number(line.slice(line.lastIndexOf(' ') + 1)) : Number.NaN;
}

export class ControllerProcess {
    private constructor(
        readonly child: ChildProcess,
        readonly adminAddr: string,
        readonly startedAt: number,
    ) {}

    /**
     * `node <entry> <command> --admin-addr 127.0.0.1:0 --log-level warn <args>`, without a
     * client-side request limit where the build has one: the figures are the controller's,
     * not the cap's. Resolves once it prints its admin endpoint (the CLI does once its caches synced).
     * `nodeArgs`: node flags for the controller alone (e.g. --cpu-prof --cpu-prof-dir=DIR), after
     * its own; BENCH_CONTROLLER_NODE_ARGS when not given.
     */
    static async start(entry: string, command: string, args: string[], cleanups: Cleanups, opts: { listenTimeoutMs?: number; nodeArgs?: string } = {}): Promise<ControllerProcess> {
        const listenTimeoutMs = opts.listenTimeoutMs ?? 60_000;
        const help = spawnSync(process.execPath, [entry, command, '--help'], { encoding: 'utf8' }).stdout;
        const uncapped = help.includes('--kube-api-qps') ? ['--kube-api-qps', '0'] : [];
        const nodeArgs = [...nodeFlagsOf(entry), ...(opts.nodeArgs ?? process.env.BENCH_CONTROLLER_NODE_ARGS ?? '').split(' ').filter(Boolean)];
        const nice = process.env.BENCH_CONTROLLER_NICE;
        const [program, ...programArgs] = [...(nice ? ['nice', '-n', nice] : []), process.execPath, ...nodeArgs];
        const startedAt = performance.now();
        // A session of its own (detached): with Linux's autogroup scheduling the controller then competes
        // for a CPU as a group of its own, as a Pod with its own CPU share does, instead of splitting one
        // group's share with the apiserver, etcd and this process. BENCH_CONTROLLER_NICE=-10 (root) raises
        // that group's weight too, so that what is left of the event-loop delay is the controller's own.
        const child = spawn(program!, [...programArgs, entry, command, '--admin-addr', '127.0.0.1:0', '--log-level', 'warn', ...uncapped, ...args], {
            stdio: ['ignore', 'ignore', 'pipe'],
            detached: true,
        });
        if (nice && existsSync(`/proc/${child.pid}/autogroup`)) writeFileSync(`/proc/${child.pid}/autogroup`, nice);
        const unregister = cleanups.add(async () => void child.kill('SIGKILL'));
        child.once('exit', () => unregister());
        let stderr = '';
        const adminAddr = await withTimeout(
            new Promise<string>((resolve, reject) => {
                child.stderr!.on('data', (chunk: Buffer) => {
                    stderr += chunk.toString();
                    const match = /admin endpoint listening on (\S+)/.exec(stderr);
                    if (match) resolve(match[1]!);
                });
                child.once('exit', (code) => reject(new Error(`controller exited (${code}): ${stderr}`)));
            }),
            listenTimeoutMs,
            'the controller to listen',
        );
        return new ControllerProcess(child, adminAddr, startedAt);
    }

    private procStatus(field: string): number {
        const match = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${this.child.pid}/status`, 'utf8'));
        return match ? Number(match[1]) / 1024 : Number.NaN;
    }
    rssMb(): number {
        return this.procStatus('VmRSS');
    }
    peakRssMb(): number {
        return this.procStatus('VmHWM');
    }
    /**
     * The main thread's time on a CPU and time runnable but waiting for one (schedstat, ns):
     * the wait is the machine's load, which event-loop delay cannot tell from the controller's own work.
     */
    mainThreadSchedMs(): { onCpu: number; waiting: number } {
        const [onCpu, waiting] = readFileSync(`/proc/${this.child.pid}/task/${this.child.pid}/schedstat`, 'utf8').split(' ').map(Number);
        return { onCpu: onCpu! / 1e6, waiting: waiting! / 1e6 };
    }
    /** User + system CPU seconds so far. */
    cpuSeconds(): number {
        return statCpuSeconds(`/proc/${this.child.pid}/stat`);
    }

    async get(path: string): Promise<{ ms: number; text: string }> {
        const started = performance.now();
        const res = await fetch(`http://${this.adminAddr}${path}`, { signal: AbortSignal.timeout(30_000) });
        const text = await res.text();
        return { ms: performance.now() - started, text };
    }

    async metric(name: string, labels = ''): Promise<number> {
        const { text } = await this.get('/metrics');
        return metricFrom(text, name, labels);
    }

    async heapUsedMb(): Promise<number> {
        return (await this.metric('mesh_endpoints_nodejs_heap_size_used_bytes')) / 2 ** 20;
    }

    /** Polls /readyz (every 100 ms) until it answers ok: caches synced and leading. */
    async ready(timeoutMs: number): Promise<number> {
        const deadline = performance.now() + timeoutMs;
        while (performance.now() < deadline) {
            const answer = await this.get('/readyz').catch(() => undefined);
            if (answer?.text === 'ok') return performance.now();
            await new Promise((r) => setTimeout(r, 100));
        }
        throw new Error(`controller not ready after ${timeoutMs} ms`);
    }

    async stop(): Promise<void> {
        if (this.child.exitCode !== null) return;
        const exited = new Promise((r) => this.child.once('exit', r));
        this.child.kill('SIGTERM');
        await withTimeout(exited, 30_000, 'the controller to exit').catch(() => this.child.kill('SIGKILL'));
    }
}
