// A stand-in for a multicluster gateway in a test's remote node namespace: Linkerd's gateway is a
// Linkerd proxy (mTLS, routing by authority), which is not built here; this one accepts TCP on
// the gateway port of one address and forwards every connection to one Service's cluster IP,
// which the remote node's kube-proxy routes to its Pods, and answers the mirror's probes on the
// probe port. Each connection it accepts is a line of its log with the time (ms) it came, so a
// test sees which gateway address carried its traffic and when. It is a Node.js process run on
// the namespace's host (no image); its address must already be on that host (addAddress).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { NodeHost } from './node-host.js';
import { startProcess, stopProcess, waitFor } from './processes.js';

export const GATEWAY_PORT = 4143;
export const GATEWAY_PROBE_PORT = 4191;

const SCRIPT = `
const net = require('node:net'), http = require('node:http');
const [address, target, targetPort] = process.argv.slice(1);
net.createServer((client) => {
    console.log('accepted ' + Date.now() + ' ' + client.remoteAddress);
    const upstream = net.connect(Number(targetPort), target);
    client.pipe(upstream).pipe(client);
    upstream.on('error', () => client.destroy());
    client.on('error', () => upstream.destroy());
}).listen(${GATEWAY_PORT}, address, () => console.log('listening'));
http.createServer((_, res) => res.end('ok')).listen(${GATEWAY_PROBE_PORT}, address);
`;

export interface TestGateway {
    address: string;
    /** When (ms, Date.now()) it accepted each connection so far, oldest first. */
    accepted(): number[];
    stop(): Promise<void>;
}

/** A gateway on `address` (already on `host`'s loopback) forwarding to `target`:`targetPort`; its log goes in `dir`. */
export async function startGateway(host: NodeHost, dir: string, address: string, target: string, targetPort: number): Promise<TestGateway> {
    const log = join(dir, `gateway-${address}.log`);
    const pid = await startProcess(...host.run(process.execPath, ['-e', SCRIPT, address, target, String(targetPort)]), log);
    const lines = () => readFileSync(log, 'utf8').split('\n');
    await waitFor(`gateway on ${address}`, async () => lines().includes('listening'), pid, log, 10_000);
    return {
        address,
        accepted: () => lines().filter((l) => l.startsWith('accepted ')).map((l) => Number(l.split(' ')[1])),
        stop: () => stopProcess(pid, 'SIGKILL'),
    };
}
