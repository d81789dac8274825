// Shared by the integration tests that run the mesh-endpoints command as a user does (a child
// process) and by those that need a gateway probe target: an HTTP server on 127.0.0.1 whose
// answer the test switches.
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { after } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import type { KubeRest } from '../../src/kube/rest.js';

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

export interface CliResult {
    code: number;
    stdout: string;
    stderr: string;
}

/** Runs `mesh-endpoints ARGS...` to completion; a non-zero exit is returned, not thrown. */
export async function cli(...args: string[]): Promise<CliResult> {
    try {
        const { stdout, stderr } = await promisify(execFile)(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', ...args], { cwd: repoRoot });
        return { code: 0, stdout, stderr };
    } catch (err) {
        const e = err as { code?: number; stdout?: string; stderr?: string };
        return { code: typeof e.code === 'number' ? e.code : 1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
    }
}

/** The kubeconfig of a client as a file, for --kubeconfig (a ServiceAccount's, say). */
export function kubeconfigFile(rest: KubeRest, name: string): string {
    const path = join(tmpdir(), `mesh-endpoints-${process.pid}-${name}.kubeconfig`);
    writeFileSync(path, rest.kubeConfig.exportConfig(), { mode: 0o600 });
    return path;
}

/** A probe target on loopback whose answer the test switches. */
export class ProbeServer {
    healthy = true;
    readonly paths: string[] = [];
    private constructor(private readonly server: Server) {}
    static async start(): Promise<ProbeServer> {
        let probe: ProbeServer | undefined;
        const server = createServer((req, res) => {
            probe!.paths.push(req.url ?? '');
            res.writeHead(probe!.healthy ? 200 : 503).end();
        });
        probe = new ProbeServer(server);
        await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
        after(() => new Promise<void>((done) => server.close(() => done())));
        return probe;
    }
    get port(): number {
        return (this.server.address() as AddressInfo).port;
    }
}
