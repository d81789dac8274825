// The transport's manners, against a loopback HTTP server that records what it receives
// (what the apiserver does with the requests is the integration tests' business).
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { KubeConfig } from '@kubernetes/client-node';
import { KubeRest, METADATA_ONLY } from './rest.js';
import type { ServerCopy } from './server-copies.js';
import { ApiError, NotLeaderError } from './errors.js';
import { userAgent, VERSION } from './version.js';
import { EndpointSlices, Services } from './resources.js';

const received: IncomingMessage[] = [];
let answer: (req: IncomingMessage, res: ServerResponse) => void = (_req, res) => res.end('{}');
const server = createServer((req, res) => {
    received.push(req);
    answer(req, res);
});
await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
after(() => {
    server.closeAllConnections();
    server.close();
});

function client(options: ConstructorParameters<typeof KubeRest>[1] = {}, user: object = { token: 'not-a-secret' }): KubeRest {
    const kc = new KubeConfig();
    kc.loadFromOptions({
        clusters: [{ name: 'local', server: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, skipTLSVerify: true }],
        users: [{ name: 'u', ...user }],
        contexts: [{ name: 'c', cluster: 'local', user: 'u' }],
        currentContext: 'c',
    });
    return new KubeRest(kc, options);
}

/** An exec credential plugin that hands out token-1, token-2, ... each already expired, so every request runs it again. */
function countingExecPlugin(): object {
    const dir = mkdtempSync(join(tmpdir(), 'rest-test-'));
    after(() => rmSync(dir, { recursive: true, force: true }));
    const counter = join(dir, 'count');
    writeFileSync(counter, '0');
    const script = `const fs = require('fs'); const n = Number(fs.readFileSync(${JSON.stringify(counter)}, 'utf8')) + 1; fs.writeFileSync(${JSON.stringify(counter)}, String(n));
process.stdout.write(JSON.stringify({ apiVersion: 'client.authentication.k8s.io/v1', kind: 'ExecCredential', status: { token: 'token-' + n, expirationTimestamp: '2000-01-01T00:00:00Z' } }));`;
    return { exec: { apiVersion: 'client.authentication.k8s.io/v1', command: process.execPath, args: ['-e', script], interactiveMode: 'Never' } };
}

describe('KubeRest', () => {
    it('names the component and version in its User-Agent', async () => {
        answer = (_req, res) => res.end('{}');
        const rest = client({ component: 'external-workloads' });
        await rest.get('/api/v1/namespaces');
        assert.match(VERSION, /^\d+\.\d+\.\d+/);
        assert.equal(received.at(-1)!.headers['user-agent'], `mesh-endpoints/${VERSION} (external-workloads)`);
        assert.equal(userAgent(), `mesh-endpoints/${VERSION}`);
        rest.close();
    });

    it('sends fixed credentials with every request, and asks an exec plugin for each request', async () => {
        answer = (_req, res) => res.end('{}');
        const fixed = client();
        await fixed.get('/a');
        await fixed.get('/b');
        assert.deepEqual(received.slice(-2).map((r) => r.headers.authorization), ['Bearer not-a-secret', 'Bearer not-a-secret']);
        fixed.close();
        const exec = client({}, countingExecPlugin());
        await exec.get('/a');
        await exec.get('/b');
        assert.deepEqual(received.slice(-2).map((r) => r.headers.authorization), ['Bearer token-1', 'Bearer token-2']);
        exec.close();
    });

    it('asks for the stored metadata alone on a write whose caller reads nothing else, JSON otherwise', async () => {
        answer = (_req, res) => res.end('{"kind":"PartialObjectMetadata","metadata":{"name":"s-1","generation":1}}');
        const rest = client();
        const created = await rest.createForMetadata('/slices', { metadata: { generateName: 's-' } }, { fieldManager: 'me' });
        assert.deepEqual(created.metadata, { name: 's-1', generation: 1 });
        await rest.replaceForMetadata('/slices/s-1', { metadata: { name: 's-1' } });
        await rest.mergePatchForMetadata('/workloads/w/status', { status: {} });
        await rest.create('/slices', {});
        assert.deepEqual(
            received.slice(-4).map((r) => [r.method, r.headers.accept, r.headers['content-type']]),
            [
                ['POST', METADATA_ONLY, 'application/json'],
                ['PUT', METADATA_ONLY, 'application/json'],
                ['PATCH', METADATA_ONLY, 'application/merge-patch+json'],
                ['POST', 'application/json', 'application/json'],
            ],
        );
        rest.close();
    });

    it('gives up on a request that gets no answer within its deadline', async () => {
        answer = () => undefined; // never answers
        const rest = client({ timeoutMs: 200 });
        await assert.rejects(rest.get('/api/v1/namespaces'), (err: unknown) => err instanceof ApiError && err.code === 0 && /within 200 ms/.test(err.message));
        rest.close();
    });

    it('gives up on an answer whose body stalls past the deadline', async () => {
        answer = (_req, res) => {
            res.writeHead(200, { 'Content-Type': 'application/json' });
            res.write('{"items":['); // and never the rest
        };
        const rest = client({ timeoutMs: 200 });
        await assert.rejects(rest.get('/slow'), (err: unknown) => err instanceof ApiError && err.code === 0 && /within 200 ms/.test(err.message));
        rest.close();
    });

    it("ends a request and a watch when the caller's signal aborts", async () => {
        answer = (req, res) => {
            if (!req.url?.includes('watch=true')) return; // a request never answered
            res.writeHead(200, { 'Content-Type': 'application/json' });
            res.write('{"type":"ADDED","object":{"metadata":{"name":"a"}}}\n'); // then the stream stays open
        };
        const rest = client({ timeoutMs: 60_000 });
        const caller = new AbortController();
        const pending = rest.get('/hangs');
        const request = rest.request('GET', '/hangs', { signal: caller.signal });
        const events: unknown[] = [];
        const watch = rest.watch('/objects', {}, caller.signal, (event) => events.push(event), () => undefined);
        await new Promise((r) => setTimeout(r, 100));
        caller.abort(new Error('caller gave up'));
        await assert.rejects(request, /caller gave up/);
        await assert.rejects(watch, (err: unknown) => err instanceof ApiError && err.code === 0);
        assert.deepEqual(events, [{ type: 'ADDED', object: { metadata: { name: 'a' } } }]);
        rest.close();
        await assert.rejects(pending, /client closed/); // the other request was not ended by that signal
    });

    it('aborts every request in flight on close(), and stays usable', async () => {
        answer = () => undefined;
        const rest = client({ timeoutMs: 60_000 });
        const pending = [rest.get('/a'), rest.get('/b')];
        await new Promise((r) => setTimeout(r, 50));
        rest.close();
        for (const p of pending) await assert.rejects(p, (err: unknown) => err instanceof ApiError && /client closed/.test(err.message));
        answer = (_req, res) => res.end('{"ok":true}');
        assert.deepEqual(await rest.get('/c'), { ok: true });
        rest.close();
    });

    it('makes requests over the client-side limit wait for a token, in order, and lets close() end the wait', async () => {
        answer = (_req, res) => res.end('{}');
        const rest = client({ qps: 0.2, burst: 2 });
        const before = received.length;
        const first = [rest.get('/1'), rest.get('/2')];
        const third = rest.get('/3'); // must wait five seconds for its token
        await Promise.all(first);
        assert.equal(received.length - before, 2, 'the burst went out, the third waits');
        rest.close();
        await assert.rejects(third, /rate limited/);
    });

    it('asks the leader guard after the rate-limit wait: a write whose term ended while it waited is never sent', async () => {
        answer = (_req, res) => res.end('{}');
        const rest = client({ qps: 5, burst: 1 });
        let leading = true;
        const whileLeader = () => leading;
        const before = received.length;
        await rest.create('/first', {}, undefined, { whileLeader });
        const waiting = rest.create('/second', {}, undefined, { whileLeader }); // waits ~200 ms for a token
        leading = false;
        await assert.rejects(waiting, NotLeaderError);
        assert.deepEqual(received.slice(before).map((r) => r.url), ['/first']);
        rest.close();
    });

    it("hands out guarded views: their writes go out only while leading, reads always; the view shares the client's limit and close(), a fork keeps the guard", async () => {
        answer = (_req, res) => res.end('{}');
        const rest = client({ qps: 5, burst: 1 });
        let leading = false;
        const guarded = rest.guarded(() => leading);
        const before = received.length;
        await guarded.get('/read');
        await assert.rejects(guarded.create('/refused', {}), NotLeaderError);
        await assert.rejects(guarded.deleteExactly('/refused', 'uid'), NotLeaderError);
        await assert.rejects(guarded.fork({ qps: 0 }).replace('/refused', {}), NotLeaderError);
        await rest.create('/unguarded', {}); // the client itself is not guarded
        leading = true;
        await guarded.mergePatch('/written', {});
        assert.deepEqual(received.slice(before).map((r) => `${r.method} ${r.url}`), ['GET /read', 'POST /unguarded', 'PATCH /written']);
        // One rate limit: the view's request waits behind the client's, and the client's close() ends it.
        const ahead = rest.get('/token').catch(() => undefined);
        const waiting = guarded.get('/waits');
        rest.close();
        await assert.rejects(waiting, /rate limited/);
        await ahead;
    });

    it("tells a resource's listeners what each answer about one of its objects shows of the server's copy, a fork's answers too", async () => {
        const conflict = JSON.stringify({ kind: 'Status', code: 409, reason: 'Conflict', message: 'the object has been modified' });
        answer = (req, res) => {
            if (req.method === 'PUT' || req.method === 'DELETE') return res.writeHead(409).end(conflict);
            if (req.url?.endsWith('/services')) return res.end('{"kind":"ServiceList","metadata":{"resourceVersion":"9"},"items":[]}');
            res.end('{"kind":"Service","metadata":{"name":"web","namespace":"shop","resourceVersion":"8"}}');
        };
        const rest = client();
        const copies: ServerCopy[] = [];
        const stop = rest.onServerCopy(Services, (copy) => copies.push(copy));
        rest.onServerCopy(EndpointSlices, () => assert.fail('no slice was asked for'));
        await rest.get('/api/v1/namespaces/shop/services/web');
        const fork = rest.fork({ qps: 0 });
        await fork.mergePatch('/api/v1/namespaces/shop/services/web/status', { status: {} });
        await rest.get('/api/v1/namespaces/shop/services'); // a list: no one object
        await rest.create('/api/v1/namespaces/shop/services', {}); // a create: in no cache yet
        await assert.rejects(rest.replace('/api/v1/namespaces/shop/services/web', { metadata: { name: 'web', resourceVersion: '7' } }));
        await assert.rejects(rest.delete('/api/v1/namespaces/shop/services/web', undefined, { preconditions: { uid: 'u' } }));
        stop();
        await rest.get('/api/v1/namespaces/shop/services/web');
        assert.deepEqual(copies, [
            { namespace: 'shop', name: 'web', resourceVersion: '8', conflict: false },
            { namespace: 'shop', name: 'web', resourceVersion: '8', conflict: false },
            { namespace: 'shop', name: 'web', resourceVersion: '7', conflict: true },
            { namespace: 'shop', name: 'web', resourceVersion: undefined, conflict: true },
        ]);
        rest.close();
        fork.close();
    });

    it('never follows a redirect, so the credentials stay with the server named: a 3xx is an error, for requests and watches', async () => {
        const elsewhere: IncomingMessage[] = [];
        const other = createServer((req, res) => {
            elsewhere.push(req);
            res.end('{}');
        });
        await new Promise<void>((resolve) => other.listen(0, '127.0.0.1', resolve));
        const target = `http://127.0.0.1:${(other.address() as AddressInfo).port}/api/v1/secrets`;
        answer = (_req, res) => {
            res.writeHead(307, { location: target });
            res.end();
        };
        const rest = client();
        try {
            await assert.rejects(rest.get('/api/v1/services'), (err: ApiError) => err.code === 307 && err.reason === 'Redirect' && err.message.includes(target) && /not followed/.test(err.message));
            await assert.rejects(
                rest.watch('/api/v1/services', {}, new AbortController().signal, () => {}, () => {}),
                (err: ApiError) => err.code === 307 && err.reason === 'Redirect',
            );
            assert.deepEqual(elsewhere, [], 'nothing reached the address the redirect named');
        } finally {
            rest.close();
            other.close();
        }
    });
});
