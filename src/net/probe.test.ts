import assert from 'node:assert/strict';
import { createServer as createHttpServer } from 'node:http';
import { createServer as createTcpServer, type AddressInfo, type Server } from 'node:net';
import { after, describe, it } from 'node:test';
import { probeHttp, probeTcp } from './probe.js';

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
});
