// The demo runs mesh-endpoints as a user would: the real CLI (src/cli/main.ts) in a child
// process, a one-shot command (`link`) or a long-running controller stopped with SIGTERM.
import { execFile, spawn } from 'node:child_process';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { systemClock } from '../time/clock.js';

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const cliArgs = ['--import', 'tsx', 'src/cli/main.ts'];

/** Runs a command to completion; a non-zero exit rejects with the command's own message. */
export async function runCli(...args: string[]): Promise<{ stdout: string; stderr: string }> {
    try {
        return await promisify(execFile)(process.execPath, [...cliArgs, ...args], { cwd: repoRoot });
    } catch (err) {
        const e = err as { stderr?: string; message: string };
        throw new Error(`mesh-endpoints ${args[0]} failed: ${e.stderr?.trim() || e.message}`);
    }
}

export interface RunningController {
    /** host:port of /metrics, /healthz and /readyz. */
    admin: string;
    /** SIGTERM, as a pod is stopped; resolves with the exit code. */
    stop(): Promise<number | null>;
}

/**
 * Starts a controller command (give it `--admin-addr 127.0.0.1:0`) and waits for its admin
 * endpoint (the line it prints once the manager runs). Its logs pass through to our stderr; a
 * controller that exits early fails the step that started it instead of leaving the demo waiting.
 */
export async function startController(...args: string[]): Promise<RunningController> {
    const child = spawn(process.execPath, [...cliArgs, ...args], {
        cwd: repoRoot,
        stdio: ['ignore', 'inherit', 'pipe'],
    });
    const exited = new Promise<number | null>((done) => child.once('exit', (code) => done(code)));
    const admin = await new Promise<string>((done, fail) => {
        const cancelTimer = systemClock.schedule(() => fail(new Error(`mesh-endpoints ${args[0]} printed no admin endpoint within 60 s`)), 60_000);
        child.stderr!.on('data', (chunk: Buffer) => {
            const text = chunk.toString();
            const found = /admin endpoint listening on (\S+)\n?/.exec(text);
            if (found) {
                cancelTimer();
                done(found[1]!);
            }
            const rest = found ? text.replace(found[0], '') : text;
            if (rest !== '') process.stderr.write(rest);
        });
        void exited.then((code) => {
            cancelTimer();
            fail(new Error(`mesh-endpoints ${args[0]} exited with code ${code} before it was ready`));
        });
    }).catch(async (err: Error) => {
        child.kill('SIGKILL');
        await exited;
        throw err;
    });
    return {
        admin,
        async stop() {
            if (child.exitCode !== null || child.signalCode !== null) return exited;
            child.kill('SIGTERM');
            // A controller that does not stop within its shutdown budget is killed.
            const cancelKill = systemClock.schedule(() => child.kill('SIGKILL'), 15_000);
            const code = await exited;
            cancelKill();
            return code;
        },
    };
}

/** The samples of the metrics named, from a controller's /metrics, summed per name. */
export async function metricTotals(admin: string, ...names: string[]): Promise<Record<string, number>> {
    const text = await (await fetch(`http://${admin}/metrics`)).text();
    const totals: Record<string, number> = Object.fromEntries(names.map((n) => [n, 0]));
    for (const line of text.split('\n')) {
        const match = /^([a-z_]+)(?:\{[^}]*\})? (\S+)$/.exec(line);
        if (match && match[1]! in totals) totals[match[1]!]! += Number(match[2]);
    }
    return totals;
}
