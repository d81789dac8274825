// The processes of a local cluster (etcd, kube-apiserver, and on request the controllers, kwok
// and a node): building their binaries, free loopback ports, starting a detached process group
// with its log, waiting for it to be ready or to die telling why, and stopping it.
import { execFile, spawn } from 'node:child_process';
import { once } from 'node:events';
import { closeSync, existsSync, openSync, readFileSync } from 'node:fs';
import { request } from 'node:https';
import { request as httpRequest } from 'node:http';
import { createServer } from 'node:net';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

export const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

/** Runs a build script of hack/ (the first build takes many minutes; its progress goes to our stderr) and returns the last line it prints: the folder or binary it built. */
export async function buildScript(script: string, args: string[] = []): Promise<string> {
    const { stdout } = await promisify(execFile)('bash', [join(repoRoot, script), ...args], { maxBuffer: 1 << 20, timeout: 60 * 60 * 1000 }).catch(
        (err: { stderr?: string; message: string }) => {
            throw new Error(`${script} failed: ${err.stderr ?? err.message}`);
        },
    );
    return stdout.trim().split('\n').at(-1)!;
}

export async function freePort(): Promise<number> {
    return new Promise((resolvePort, reject) => {
        const server = createServer();
        server.unref();
        server.on('error', reject);
        server.listen(0, '127.0.0.1', () => {
            const address = server.address();
            server.close(() => (typeof address === 'object' && address ? resolvePort(address.port) : reject()));
        });
    });
}

export function isAlive(pid: number): boolean {
    if (!(pid > 0)) return false;
    try {
        process.kill(pid, 0);
        return true;
    } catch {
        return false;
    }
}

/**
 * GET a health endpoint; resolves true on 200 "ok". Never throws. 'insecure': the serving
 * certificate a component made for itself, on loopback.
 */
export function probe(url: string, ca?: Buffer | 'insecure'): Promise<boolean> {
    return new Promise((done) => {
        const get = url.startsWith('https:') ? request : httpRequest;
        const tls = ca === 'insecure' ? { rejectUnauthorized: false } : { ca };
        const req = get(url, { method: 'GET', ...tls, timeout: 2000 }, (res) => {
            res.resume();
            done(res.statusCode === 200);
        });
        req.on('error', () => done(false));
        req.on('timeout', () => req.destroy());
        req.end();
    });
}

/** etcd or kube-apiserver exited during start-up because a port picked for it was taken meanwhile. */
export class PortTakenError extends Error {}

export async function waitFor(what: string, check: () => Promise<boolean>, pid: number, log: string, timeoutMs: number) {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
        if (await check()) return;
        if (!isAlive(pid)) {
            const tail = existsSync(log) ? readFileSync(log, 'utf8').split('\n').slice(-20).join('\n') : '';
            const message = `${what} exited during start-up; last lines of ${log}:\n${tail}`;
            throw /address already in use/.test(tail) ? new PortTakenError(message) : new Error(message);
        }
        // Every test file waits for this: polled often, it is seen ready sooner (about 0.17 s a cluster).
        await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error(`${what} not ready after ${timeoutMs} ms (log: ${log})`);
}

export async function startProcess(binary: string, args: string[], log: string): Promise<number> {
    const out = openSync(log, 'a');
    // Detached into its own process group: the cluster outlives `cluster up`, and `down`
    // stops the whole group.
    const child = spawn(binary, args, { detached: true, stdio: ['ignore', out, out] });
    closeSync(out);
    child.unref();
    // A failed spawn (EAGAIN, ENOMEM, no binary) has no pid and tells why in an 'error' event,
    // which would crash the caller with no word of the cluster if nobody listened.
    if (child.pid === undefined) {
        const [err] = (await once(child, 'error')) as [Error];
        throw new Error(`could not start ${binary}: ${err.message}`);
    }
    return child.pid;
}

/** Sends `signal` to the process group of `pid`, or to `pid` alone when it leads none. */
export function signalGroup(pid: number, signal: NodeJS.Signals): void {
    try {
        process.kill(-pid, signal);
    } catch {
        try {
            process.kill(pid, signal);
        } catch {
            /* already gone */
        }
    }
}

/** Sends `signal` to the process group of `pid` and waits for it to end; SIGKILL after 10 s. */
export function stopProcess(pid: number, signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
    if (!isAlive(pid)) return Promise.resolve();
    signalGroup(pid, signal);
    return new Promise((done) => {
        const deadline = Date.now() + 10_000;
        const timer = setInterval(() => {
            if (!isAlive(pid)) {
                clearInterval(timer);
                done();
            } else if (Date.now() > deadline) {
                try {
                    process.kill(-pid, 'SIGKILL');
                } catch {
                    /* gone between the check and the kill */
                }
            }
        }, 50);
    });
}

