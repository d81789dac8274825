// The webhook's HTTPS server on loopback: what it does with connections when it stops, and
// with every request that is not a ConversionReview POSTed to /convert over TLS 1.2 or later.
import assert from 'node:assert/strict';
import { request } from 'node:https';
import { connect, type Socket } from 'node:net';
import { connect as tlsConnect, createServer as createTlsServer, type ConnectionOptions } from 'node:tls';
import { after, before, describe, it } from 'node:test';
import { Registry } from 'prom-client';
import { convertWorkload } from '../externalworkloads/conversion.js';
import { newLogger } from '../kube/log.js';
import { createCA } from './certs.js';
import { MAX_BODY_BYTES, WebhookServer } from './server.js';

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

interface Answer {
    status: number;
    headers: Record<string, string | string[] | undefined>;
    body: string;
}

/** One HTTPS request to the webhook; `body` a string or a generator of chunks (sent chunked). */
function call(address: string, method: string, path: string, body?: string | Buffer, headers: Record<string, string | number> = {}): Promise<Answer> {
    const port = Number(address.slice(address.lastIndexOf(':') + 1));
    return new Promise((resolve, reject) => {
        const req = request({ host: '127.0.0.1', port, method, path, rejectUnauthorized: false, agent: false, headers: { 'Content-Type': 'application/json', ...headers } }, (res) => {
            let text = '';
            res.setEncoding('utf8');
            res.on('data', (chunk: string) => (text += chunk));
            res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text }));
        });
        req.on('error', reject);
        if (body !== undefined) req.write(body);
        req.end();
    });
}

const review = (objects: unknown[], desiredAPIVersion = 'workload.linkerd.io/v1beta1') =>
    JSON.stringify({ apiVersion: 'apiextensions.k8s.io/v1', kind: 'ConversionReview', request: { uid: 'u-1', desiredAPIVersion, objects } });
const alpha = { apiVersion: 'workload.linkerd.io/v1alpha1', kind: 'ExternalWorkload', metadata: { name: 'vm', namespace: 'ns' }, spec: { meshTls: { identity: 'id', serverName: 'vm' } } };

describe('the webhook server answers only what it must, and keeps serving', () => {
    const registry = new Registry();
    const server = new WebhookServer({ addr: '127.0.0.1:0', registry, logger: newLogger('silent'), convert: convertWorkload });
    let address = '';
    before(async () => {
        address = await server.start();
        server.setCertificate(await createCA(new Date(), 3_600_000)); // the renewal path: setSecureContext
    });
    after(() => server.stop());

    const stillConverts = async (after: string) => {
        const answer = await call(address, 'POST', '/convert', review([alpha]));
        assert.equal(answer.status, 200, after);
        const parsed = JSON.parse(answer.body) as { response: { uid: string; result: { status: string }; convertedObjects: Array<{ apiVersion: string; spec: Record<string, unknown> }> } };
        assert.deepEqual([parsed.response.uid, parsed.response.result.status], ['u-1', 'Success'], after);
        assert.equal(parsed.response.convertedObjects[0]?.apiVersion, 'workload.linkerd.io/v1beta1', after);
        assert.deepEqual(parsed.response.convertedObjects[0]?.spec.meshTLS, { identity: 'id', serverName: 'vm' }, after);
    };
    const results = async () => Object.fromEntries((await registry.getSingleMetric('mesh_endpoints_conversion_reviews_total')!.get()).values.map((v) => [v.labels.result, v.value]));

    it('converts a valid review', () => stillConverts('first'));

    it('answers GET /convert with 405 (Allow: POST) and POST /other with 404', async () => {
        const get = await call(address, 'GET', '/convert');
        assert.deepEqual([get.status, get.headers.allow], [405, 'POST']);
        assert.match(JSON.parse(get.body).message, /GET is not allowed; POST a ConversionReview/);
        await stillConverts('after GET /convert');
        const other = await call(address, 'POST', '/other', review([alpha]));
        assert.equal(other.status, 404);
        assert.match(JSON.parse(other.body).message, /conversion is served at \/convert/);
        await stillConverts('after POST /other');
    });

    it('answers a body over 16 MiB with 413, declared or streamed, without reading it', async () => {
        const declared = await call(address, 'POST', '/convert', 'x', { 'Content-Length': MAX_BODY_BYTES + 1 }).catch((err: Error) => err);
        assert.ok(!(declared instanceof Error), `answered: ${declared}`);
        assert.equal(declared.status, 413);
        await stillConverts('after a declared oversized body');
        // Chunked, no length said: refused once the limit is passed.
        const streamed = await call(address, 'POST', '/convert', Buffer.alloc(MAX_BODY_BYTES + 1024, 0x20), { 'Transfer-Encoding': 'chunked' }).catch((err: Error) => err);
        assert.ok(!(streamed instanceof Error) ? streamed.status === 413 : /ECONNRESET|EPIPE|socket hang up/.test(streamed.message), `refused: ${streamed instanceof Error ? streamed.message : streamed.status}`);
        await stillConverts('after a streamed oversized body');
    });

    it('answers malformed JSON and reviews that are not v1 ConversionReviews with 400 and a message', async () => {
        const cases: Array<[string, string, RegExp]> = [
            ['not JSON', '{"apiVersion": ', /the body is not JSON/],
            ['an empty body', '', /the body is not JSON/],
            ['JSON, not a review', '[1,2,3]', /expected an apiextensions\.k8s\.io\/v1 ConversionReview/],
            ['a v1beta1 review', JSON.stringify({ apiVersion: 'apiextensions.k8s.io/v1beta1', kind: 'ConversionReview', request: { uid: 'u', desiredAPIVersion: 'v', objects: [] } }), /expected an apiextensions\.k8s\.io\/v1 ConversionReview/],
            ['a review without objects', JSON.stringify({ apiVersion: 'apiextensions.k8s.io/v1', kind: 'ConversionReview', request: { uid: 'u', desiredAPIVersion: 'v' } }), /no request with uid, desiredAPIVersion and objects/],
            ['a workload nested 100 000 deep', review([]).replace('"objects":[]', `"objects":[{"apiVersion":"workload.linkerd.io/v1alpha1","kind":"ExternalWorkload","spec":${'{"a":'.repeat(100_000)}1${'}'.repeat(100_000)}}]`), /the body is not JSON|could not be read/],
        ];
        for (const [what, body, message] of cases) {
            const answer = await call(address, 'POST', '/convert', body);
            assert.equal(answer.status, 400, `${what}: ${answer.status} ${answer.body.slice(0, 200)}`);
            assert.match(answer.body, message, what);
            await stillConverts(`after ${what}`);
        }
        const failed = await call(address, 'POST', '/convert', review([alpha, 'not an object', alpha]));
        const parsed = JSON.parse(failed.body) as { response: { uid: string; result: { status: string; message: string } } };
        assert.deepEqual([failed.status, parsed.response.uid, parsed.response.result.status], [200, 'u-1', 'Failure'], 'an object that cannot be converted is a Failure review');
        assert.match(parsed.response.result.message, /object 1: an ExternalWorkload must be a JSON object/);
        const counted = await results();
        for (const result of ['success', 'failure', 'bad_request', 'not_found', 'method_not_allowed', 'too_large']) assert.ok((counted[result] ?? 0) >= 1, `${result} counted`);
    });

    it('refuses a TLS 1.1 client, which a TLS 1.1 server would have accepted; TLS 1.2 connects', async () => {
        const port = Number(address.slice(address.lastIndexOf(':') + 1));
        // SECLEVEL=0: this OpenSSL speaks TLS 1.1 only when asked to.
        const tls11: ConnectionOptions = { host: '127.0.0.1', rejectUnauthorized: false, minVersion: 'TLSv1.1', maxVersion: 'TLSv1.1', ciphers: 'DEFAULT@SECLEVEL=0' };
        const handshake = (options: ConnectionOptions) =>
            new Promise<string>((resolve) => {
                const socket = tlsConnect(options, () => {
                    resolve(`connected ${socket.getProtocol()}`);
                    socket.end();
                });
                socket.on('error', (err) => resolve(`refused: ${err.message}`));
            });
        const pair = await createCA(new Date(), 3_600_000);
        const old = createTlsServer({ cert: pair.cert, key: pair.key, minVersion: 'TLSv1', ciphers: 'DEFAULT@SECLEVEL=0' }, (s) => s.end());
        await new Promise<void>((resolve) => old.listen(0, '127.0.0.1', resolve));
        try {
            assert.equal(await handshake({ ...tls11, port: (old.address() as { port: number }).port }), 'connected TLSv1.1', 'the client can speak TLS 1.1');
        } finally {
            old.close();
        }
        assert.match(await handshake({ ...tls11, port }), /^refused: .*(protocol version|unsupported protocol)/i);
        assert.match(await handshake({ host: '127.0.0.1', port, rejectUnauthorized: false, maxVersion: 'TLSv1.2' }), /^connected TLSv1\.2$/);
        await stillConverts('after a TLS 1.1 handshake');
    });
});

describe('the webhook server under many large requests at once', () => {
    it('answers 429 (Retry-After) past its budget of bodies being read, and serves again once they are done', async () => {
        const server = new WebhookServer({ addr: '127.0.0.1:0', registry: new Registry(), logger: newLogger('silent'), convert: convertWorkload, maxBufferedBytes: 1 << 20 });
        server.setCertificate(await createCA(new Date(), 3_600_000));
        const address = await server.start();
        const port = Number(address.slice(address.lastIndexOf(':') + 1));
        try {
            // One caller says it sends 800 KiB of a review, sends a part of it, and waits.
            const body = review([alpha]);
            const padding = ' '.repeat(800 << 10);
            const whole = Buffer.from(body.slice(0, -1) + padding + body.slice(-1));
            const held = request({ host: '127.0.0.1', port, method: 'POST', path: '/convert', rejectUnauthorized: false, agent: false, headers: { 'Content-Length': whole.length } });
            const heldAnswer = new Promise<number>((resolve, reject) => {
                held.on('response', (res) => (res.resume(), resolve(res.statusCode ?? 0)));
                held.on('error', reject);
            });
            await new Promise((resolve) => held.write(whole.subarray(0, 1024), resolve));
            // Refused once the server has the held request's headers (until then a second review fits).
            const small = ' '.repeat(400 << 10) + body;
            let second = await call(address, 'POST', '/convert', small);
            for (let i = 0; i < 100 && second.status === 200; i++) second = await call(address, 'POST', '/convert', small);
            assert.deepEqual([second.status, second.headers['retry-after']], [429, '1']);
            held.end(whole.subarray(1024));
            assert.equal(await heldAnswer, 200, 'the held review is answered');
            assert.equal((await call(address, 'POST', '/convert', small)).status, 200, 'served again');
        } finally {
            await server.stop();
        }
    });
});
