import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { describe, it } from 'node:test';
import { newLogger } from './log.js';

function capture(): { lines: string[]; stream: Writable } {
    const lines: string[] = [];
    const stream = new Writable({
        write(chunk: Buffer, _encoding, done) {
            lines.push(chunk.toString());
            done();
        },
    });
    return { lines, stream };
}

describe('logs never print credentials', () => {
    it("replaces a Secret's data, a kubeconfig's inline material and request headers, at the top or one level down", () => {
        const { lines, stream } = capture();
        const logger = newLogger('debug', stream);
        const secret = { metadata: { name: 'creds-east' }, type: 'mirror.linkerd.io/remote-kubeconfig', data: { kubeconfig: 'S0VZQkFTRTY0' }, stringData: { token: 'plain-token' } };
        logger.info({ secret }, 'a Secret logged whole');
        logger.warn({ user: { name: 'u', token: 'tok-1', 'client-key-data': 'KEY64', 'client-certificate-data': 'CERT64', exec: { command: 'steal' } } }, 'a kubeconfig user');
        logger.error({ token: 'tok-2', kubeconfig: 'apiVersion: v1', request: { headers: { authorization: 'Bearer tok-3' } } }, 'an error with what it was given');
        logger.child({ component: 'x' }).debug({ cluster: { caData: 'CA64', server: 'https://192.0.2.1' } }, 'a child logger');
        const text = lines.join('');
        for (const secretText of ['S0VZQkFTRTY0', 'plain-token', 'tok-1', 'KEY64', 'CERT64', 'steal', 'tok-2', 'apiVersion: v1', 'Bearer tok-3', 'CA64']) {
            assert.ok(!text.includes(secretText), `${secretText} is not logged`);
        }
        assert.equal(lines.length, 4);
        assert.match(text, /"name":"creds-east"/, 'what is not secret stays');
        assert.match(text, /"server":"https:\/\/192\.0\.2\.1"/);
        assert.equal(text.split('[redacted]').length - 1, 10);
    });
});
