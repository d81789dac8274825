// The CLI as `npm run build` ships it (hack/bundle.ts): one bundle, run here from a folder with
// no node_modules anywhere above it, as in the image. The KubeConfig in it: kube/kubeconfig.test.ts.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { copyFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { bundle } from '../../hack/bundle.js';
import type * as Certs from '../webhook/certs.js';

// The image's layout: /app/package.json (the version the CLI reports) and /app/dist.
const app = mkdtempSync(join(tmpdir(), 'mesh-endpoints-bundle-'));
after(() => rmSync(app, { recursive: true, force: true }));
copyFileSync('package.json', join(app, 'package.json'));
const dist = join(app, 'dist');
const { inputs } = await bundle('src/cli/main.ts', dist);

async function cli(...args: string[]): Promise<string> {
    const { stdout } = await promisify(execFile)(process.execPath, [join(dist, 'cli', 'main.js'), ...args], { cwd: app });
    return stdout;
}

describe('the CLI bundle', () => {
    it('runs every command without node_modules', async () => {
        const help = await cli('--help');
        const commands = ['external-workloads', 'service-mirror', 'link', 'unlink', 'status', 'check', 'gateways'];
        for (const command of commands) assert.match(help, new RegExp(`^\\s+${command}\\b`, 'm'));
        for (const command of commands) assert.match(await cli(command, '--help'), new RegExp(`^Usage: mesh-endpoints ${command} `, 'm'));
    });

    it('runs with the node flags of its first line, which the image passes too', async () => {
        const firstLine = readFileSync(join(dist, 'cli', 'main.js'), 'utf8').split('\n')[0]!;
        const [, flags] = /^#!\/usr\/bin\/env -S node((?: --\S+)*)$/.exec(firstLine) ?? [];
        assert.ok(flags, `first line: ${firstLine}`);
        const entrypoint = /^ENTRYPOINT (\[.*\])$/m.exec(readFileSync('Dockerfile', 'utf8'))?.[1];
        assert.deepEqual(JSON.parse(entrypoint!), ['/nodejs/bin/node', ...flags.trim().split(' '), '/app/dist/cli/main.js']);
        const { stdout } = await promisify(execFile)(process.execPath, [...flags.trim().split(' '), join(dist, 'cli', 'main.js'), '--help'], { cwd: app });
        assert.match(stdout, /^Usage: mesh-endpoints /m);
    });

    it('leaves node-forge to a chunk, loaded when a certificate is made', async () => {
        assert.deepEqual(inputs.filter((input) => input.includes('node_modules/node-forge/')), []);
        const certsDir = join(app, 'certs');
        await bundle('src/webhook/certs.ts', certsDir);
        const certs = (await import(pathToFileURL(join(certsDir, 'webhook', 'certs.js')).href)) as typeof Certs;
        const now = new Date();
        const ca = await certs.createCA(now, 3_600_000);
        const serving = await certs.createServingCert({ cert: ca.cert, key: ca.key }, ['webhook.example.svc', '127.0.0.1'], now, 600_000);
        assert.ok(certs.isSignedBy(serving, ca.cert));
        assert.deepEqual(certs.certFacts(serving.cert)?.hosts, ['webhook.example.svc', '127.0.0.1']);
    });
});
