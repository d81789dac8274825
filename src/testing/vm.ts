// A "VM" for the traffic tests: a host outside the cluster that an ExternalWorkload describes.
// It is a child namespace of the node namespace (child-namespace.ts) with one address, routed
// from the node namespace (not a Pod, not on the Pods' bridge), and an HTTP server listening on
// that address that answers every request with the VM's name, so a request says which VM served
// it. The server can be stopped and started again while the namespace stays: the address then
// refuses connections, as a VM whose service died does.
// Traps of this machine:
// - tests may use no address of the host: VM_CIDR lives only inside namespaces the test made
//   (the VM's on its loopback, a /32 route to it in the node namespace), beside the node's
//   10.213.0.0/24 and the Pods' 10.214.0.0/24;
// - the server is this same node binary (`node -e`, node:http), started through nsenter into
//   the VM's namespace: nothing to build or install, and its pid is the server's own.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startChildNamespace, type ChildNamespace } from './child-namespace.js';
import { probe, startProcess, stopProcess, waitFor } from './processes.js';

/** The VMs' addresses. */
export const VM_CIDR = '10.215.0.0/24';

/** Answers every request with 200 and the name (argv[1]), on address argv[2], port argv[3]. */
const SERVER = `const [name, ip, port] = process.argv.slice(1);
require('node:http').createServer((req, res) => res.end(name + '\\n')).listen(Number(port), ip);`;

export interface Vm {
    name: string;
    ip: string;
    port: number;
    namespace: ChildNamespace;
    /** Whether its HTTP server runs. */
    readonly serving: boolean;
    /** Starts its HTTP server and waits until it answers from the node namespace. */
    start(): Promise<void>;
    /** Stops its HTTP server (the address then refuses connections). */
    stopServer(): Promise<void>;
    /** Ends the VM: its server, its namespace and its server's log. */
    stop(): Promise<void>;
}

/** A VM named `name` (at most 6 characters: its veth's) at `ip` of VM_CIDR, serving HTTP on `port`. */
export async function startVm(name: string, ip: string, port = 8080): Promise<Vm> {
    const namespace = await startChildNamespace({ name, addresses: [ip] });
    const dir = mkdtempSync(join(tmpdir(), `mesh-endpoints-vm-${name}-`));
    const log = join(dir, 'server.log');
    let pid: number | undefined;
    const vm: Vm = {
        name,
        ip,
        port,
        namespace,
        get serving() {
            return pid !== undefined;
        },
        async start() {
            if (pid !== undefined) return;
            pid = await startProcess(...namespace.command(process.execPath, ['-e', SERVER, name, ip, String(port)]), log);
            await waitFor(`the HTTP server of VM ${name}`, () => probe(`http://${ip}:${port}/`), pid, log, 15_000);
        },
        async stopServer() {
            if (pid === undefined) return;
            await stopProcess(pid);
            pid = undefined;
        },
        async stop() {
            await vm.stopServer();
            namespace.stop();
            rmSync(dir, { recursive: true, force: true });
        },
    };
    try {
        await vm.start();
    } catch (err) {
        namespace.stop();
        rmSync(dir, { recursive: true, force: true });
        throw err;
    }
    return vm;
}
