// The webhook's HTTPS server on loopback: what it does with connections when it stops.
import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { describe, it } from 'node:test';
import { Registry } from 'prom-client';
import { convertWorkload } from '../externalworkloads/conversion.js';
import { newLogger } from '../kube/log.js';
import { createCA } from './certs.js';
import { WebhookServer } from './server.js';

function openTcp(address: string): Promise<Socket> {
    const [host, port] = [address.slice(0, address.lastIndexOf(':')), Number(address.slice(address.lastIndexOf(':') + 1))];
    return new Promise((resolve, reject) => {
        const socket = connect({ host, port }, () => resolve(socket));
        socket.once('error', reject);
    });
}

describe('the webhook server', () => {
    it('stops at once with a connection still before its TLS handshake (it held close() for the headers timeout, 60-90 s)', async () => {
        const server = new WebhookServer({ addr: '127.0.0.1:0', registry: new Registry(), logger: newLogger('silent'), convert: convertWorkload });
        server.setCertificate(await createCA(new Date(), 3_600_000));
        const address = await server.start();
        const silent = await openTcp(address); // connected, never says hello
        const closedByServer = new Promise<void>((resolve) => silent.once('close', () => resolve()));
        const startedAt = Date.now();
        await server.stop();
        await closedByServer;
        assert.ok(Date.now() - startedAt < 5_000, `stopped in ${Date.now() - startedAt} ms`);
        assert.equal(server.serving(), false);
    });
});
