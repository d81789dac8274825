// The manager's shutdown bound, against a loopback server that never answers (a hung apiserver).
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, describe, it } from 'node:test';
import { KubeConfig } from '@kubernetes/client-node';
import { newLogger } from './log.js';
import { Manager, type Runnable } from './manager.js';
import { KubeRest } from './rest.js';

const hung = createServer(() => undefined);
await new Promise<void>((resolve) => hung.listen(0, '127.0.0.1', resolve));
after(() => {
    hung.closeAllConnections();
    hung.close();
});

function hungClient(): KubeRest {
    const kc = new KubeConfig();
    kc.loadFromOptions({
        clusters: [{ name: 'hung', server: `http://127.0.0.1:${(hung.address() as AddressInfo).port}`, skipTLSVerify: true }],
        users: [{ name: 'u' }],
        contexts: [{ name: 'c', cluster: 'hung', user: 'u' }],
        currentContext: 'c',
    });
    return new KubeRest(kc, { timeoutMs: 600_000 });
}

describe('Manager', () => {
    it('aborts the requests of items still in hand once the drain budget is spent', async () => {
        const rest = hungClient();
        let inHand: Promise<unknown> | undefined;
        const runnable: Runnable = {
            name: 'stuck',
            informers: [],
            startLeading: () => {
                inHand = rest.get('/api/v1/namespaces').catch((err: Error) => err);
            },
            stopLeading: async () => void (await inHand),
        };
        const manager = new Manager({ rest, logger: newLogger('silent'), drainTimeoutMs: 200 });
        manager.add(runnable);
        await manager.start();
        await manager.stop();
        const outcome = await inHand;
        assert.ok(outcome instanceof Error && /client closed/.test(outcome.message), `the request in hand was aborted: ${String(outcome)}`);
    });

    it('exits 1 from a stop that outlasts the shutdown bound', async () => {
        const rest = hungClient();
        const never = new Promise<void>(() => undefined);
        const manager = new Manager({ rest, logger: newLogger('silent'), drainTimeoutMs: 60_000, shutdownTimeoutMs: 100 });
        manager.add({ name: 'forever', informers: [], startLeading: () => undefined, stopLeading: () => never });
        await manager.start();
        const exitCode = await new Promise<number>((resolve) => manager.onSignal('SIGTERM', resolve));
        assert.equal(exitCode, 1);
        rest.close();
    });
});
