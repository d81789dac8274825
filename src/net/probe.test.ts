import assert from 'node:assert/strict';
import { createServer as createHttpServer } from 'node:http';
import { createServer as createTcpServer, type AddressInfo, type Server } from 'node:net';
import { after, describe, it } from 'node:test';
import { probeHttp, probeTcp, reasonPhrase } from './probe.js';

const listen = async <S extends Server>(server: S): Promise<number> => {
    if (!server.listening) await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return (server.address() as AddressInfo).port;
};

describe('one-shot probes', () => {
    let status = 200;
    const http = createHttpServer((req, res) => {
        if (req.url === '/slow') return void setTimeout(() => res.end('late'), 500);
        res.writeHead(status, { Connection: req.headers.connection ?? 'keep-alive' }).end();
    });
    const tcp = createTcpServer((socket) => socket.end());
    after(() => {
        http.close();
        tcp.close();
    });

    it('an HTTP GET passes on the status codes asked for, on a fresh connection each time', async () => {
        const port = await listen(http);
        const kube = (code: number) => code >= 200 && code < 400;
        for (const [code, ok] of [[200, true], [302, true], [503, false], [404, false]] as const) {
            status = code;
            const result = await probeHttp({ host: '127.0.0.1', port, path: '/ready', timeoutMs: 1000, passes: kube });
            assert.equal(result.ok, ok, `${code}`);
            assert.match(result.detail, new RegExp(`^${code} .*from 127\\.0\\.0\\.1:${port}$`));
        }
        status = 204;
        assert.equal((await probeHttp({ host: '127.0.0.1', port, path: '/', timeoutMs: 1000 })).ok, false, 'the default passes 200 only');
        const open = () => new Promise<number>((r) => http.getConnections((_, n) => r(n)));
        for (let i = 0; i < 50 && (await open()) > 0; i++) await new Promise((r) => setTimeout(r, 20));
        assert.equal(await open(), 0, 'no connection kept alive');
    });

    it('an HTTP GET fails on a timeout and on an abort', async () => {
        const port = await listen(http);
        const slow = await probeHttp({ host: '127.0.0.1', port, path: '/slow', timeoutMs: 50 });
        assert.equal(slow.ok, false);
        assert.match(slow.detail, /no answer from 127\.0\.0\.1:\d+ within 50 ms/);
        const controller = new AbortController();
        const aborted = probeHttp({ host: '127.0.0.1', port, path: '/slow', timeoutMs: 5000, signal: controller.signal });
        controller.abort();
        assert.equal((await aborted).ok, false);
    });

    it('a TCP connect passes when something listens and fails when nothing does', async () => {
        const port = await listen(tcp);
        const up = await probeTcp({ host: '127.0.0.1', port, timeoutMs: 1000 });
        assert.deepEqual([up.ok, up.detail], [true, `connected to 127.0.0.1:${port}`]);
        const closed = createTcpServer();
        const freePort = await listen(closed);
        closed.close();
        const down = await probeTcp({ host: '127.0.0.1', port: freePort, timeoutMs: 1000 });
        assert.equal(down.ok, false);
        assert.match(down.detail, /ECONNREFUSED/);
    });

    it('never follows a redirect: its target hears nothing, and the 302 is only a status code', async () => {
        let heard = 0;
        const target = createHttpServer((_, res) => void (heard++, res.end()));
        const targetPort = await listen(target);
        const redirecting = createHttpServer((_, res) => void res.writeHead(302, { Location: `http://127.0.0.1:${targetPort}/elsewhere` }).end());
        const port = await listen(redirecting);
        try {
            const result = await probeHttp({ host: '127.0.0.1', port, path: '/ready', timeoutMs: 1000, passes: (code) => code >= 200 && code < 400 });
            assert.deepEqual([result.ok, result.detail], [true, `302 Found from 127.0.0.1:${port}`]);
            const refused = await probeHttp({ host: '127.0.0.1', port, path: '/ready', timeoutMs: 1000 });
            assert.equal(refused.ok, false, 'a probe passing 200 only fails on the redirect');
            assert.equal(heard, 0);
        } finally {
            target.close();
            redirecting.close();
        }
    });

    it('reads no body: an endless one ends nothing, and none of it reaches the detail', async () => {
        let sent = 0;
        const endless = createHttpServer((_, res) => {
            res.writeHead(200, { 'Content-Type': 'text/plain' });
            const chunk = Buffer.alloc(64 * 1024, 'SECRET-BODY ');
            const pump = () => {
                while (!res.destroyed && res.write(chunk)) sent += chunk.length;
                if (!res.destroyed) res.once('drain', pump);
            };
            pump();
        });
        const port = await listen(endless);
        try {
            const result = await probeHttp({ host: '127.0.0.1', port, path: '/', timeoutMs: 5000 });
            assert.deepEqual([result.ok, result.detail], [true, `200 OK from 127.0.0.1:${port}`]);
            assert.ok(sent < 64 << 20, `the server wrote ${sent} bytes before the probe hung up`);
        } finally {
            endless.closeAllConnections();
            endless.close();
        }
    });

    it('fails on a response head over 8 KiB, and cuts a long reason phrase', async () => {
        const big = createHttpServer((_, res) => void res.writeHead(200, { 'X-Filler': 'x'.repeat(16 * 1024) }).end());
        const port = await listen(big);
        try {
            const result = await probeHttp({ host: '127.0.0.1', port, path: '/', timeoutMs: 1000 });
            assert.equal(result.ok, false);
            assert.doesNotMatch(result.detail, /xxxx/);
        } finally {
            big.close();
        }
        assert.equal(reasonPhrase('OK'), 'OK');
        assert.equal(reasonPhrase(`token=${'a'.repeat(100)}`), `token=${'a'.repeat(34)}…`);
        assert.equal(reasonPhrase('a\u0000b\nc\u00e9'), 'abc');
    });
});
