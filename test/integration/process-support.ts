// A controller run as users run it: the mesh-endpoints command in a child process, its JSON log
// lines parsed as they come, its admin endpoint (with its metrics) and exit observed.
import { spawn, type ChildProcess } from 'node:child_process';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { eventually } from '../../src/testing/harness.js';

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

interface LogLine {
    level: number;
    msg: string;
    [field: string]: unknown;
}

/** Lease timings short enough for a failover test to wait seconds, not the default 15 s. */
export const FAST_ELECTION = ['--lease-duration', '4s', '--renew-deadline', '2500ms', '--retry-period', '500ms'];

export class ControllerProcess {
    readonly proc: ChildProcess;
    readonly lines: LogLine[] = [];
    exitCode: number | null | undefined;
    /** Resolves with the exit code. */
    readonly exit: Promise<number | null>;
    /**
     * host:port of the admin endpoint: from its info log line, which comes as soon as the port is
     * bound, or at every log level from the line the command prints once the manager started.
     */
    admin: string | undefined;

    /** Runs `mesh-endpoints ARGS...` (with `env`, else ours); every line it prints also goes to `allOutput`. */
    constructor(args: string[], allOutput: string[] = [], env?: NodeJS.ProcessEnv) {
        this.proc = spawn(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', ...args], { cwd: repoRoot, env, stdio: ['ignore', 'pipe', 'pipe'] });
        // A chunk may end inside a line: only whole lines are taken.
        const collect = (parse: boolean) => {
            let partial = '';
            return (data: Buffer) => {
                const texts = (partial + data.toString()).split('\n');
                partial = texts.pop()!;
                for (const text of texts.filter(Boolean)) {
                    allOutput.push(text);
                    if (process.env.TEST_LOG_LEVEL) process.stderr.write(`${text}\n`);
                    this.admin ??= /^admin endpoint listening on (\S+)$/.exec(text)?.[1];
                    if (!parse) continue;
                    try {
                        const line = JSON.parse(text) as LogLine;
                        this.lines.push(line);
                        if (line.msg === 'admin endpoint listening') this.admin ??= line.address as string;
                    } catch {
                        this.lines.push({ level: 0, msg: text });
                    }
                }
            };
        };
        this.proc.stdout!.on('data', collect(true));
        this.proc.stderr!.on('data', collect(false));
        this.exit = new Promise((resolve) => this.proc.once('exit', (code) => ((this.exitCode = code), resolve(code))));
    }

    /** An external-workloads replica of the cluster of `kubeconfig`, leading through a Lease of `namespace`, with `extraArgs`. */
    static externalWorkloads(kubeconfig: string, namespace: string, identity: string, extraArgs: string[]): ControllerProcess {
        return new ControllerProcess(['external-workloads', '--kubeconfig', kubeconfig, '--namespace', namespace, '--identity', identity, '--admin-addr', '127.0.0.1:0', ...extraArgs]);
    }

    logged(msg: string | RegExp): LogLine | undefined {
        return this.lines.find((l) => (typeof msg === 'string' ? l.msg === msg : msg.test(l.msg)));
    }

    async adminAddress(): Promise<string> {
        await eventually('the admin endpoint', () => this.admin !== undefined, 60_000);
        return this.admin!;
    }

    async readyz(): Promise<{ status: number; body: string }> {
        const res = await fetch(`http://${await this.adminAddress()}/readyz`);
        return { status: res.status, body: await res.text() };
    }

    /** Whether the admin endpoint is up and says ready; never throws. */
    async ready(): Promise<boolean> {
        return this.admin !== undefined && (await this.readyz().catch(() => undefined))?.status === 200;
    }

    /** The value of one series on /metrics, e.g. `mesh_endpoints_leader` or `name{label="value"}`; NaN when absent. */
    async metric(series: string): Promise<number> {
        const text = await (await fetch(`http://${await this.adminAddress()}/metrics`)).text();
        const line = text.split('\n').find((l) => l.startsWith(`${series} `));
        return line ? Number(line.split(' ').pop()) : NaN;
    }

    /** SIGTERM; resolves with how long the process took to exit. */
    async terminate(): Promise<number> {
        const sentAt = Date.now();
        this.proc.kill('SIGTERM');
        await Promise.race([this.exit, new Promise((r) => setTimeout(r, 30_000))]);
        if (this.exitCode === undefined) this.proc.kill('SIGKILL');
        return Date.now() - sentAt;
    }
}
