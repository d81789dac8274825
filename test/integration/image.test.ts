// The image `make image` builds without Docker (hack/image/build.ts), read back from its OCI
// archive and run as a container by runc: the config the Dockerfile gives (src/cli/image.test.ts
// compares the two), no shell and no package manager, and `mesh-endpoints --help` as user 65532
// on a read-only root filesystem.
import assert from 'node:assert/strict';
import { statSync } from 'node:fs';
import { describe, it } from 'node:test';
import { appVersion, imageConfig } from '../../hack/image/config.js';
import { cannotRunContainers, productImage, readImage, runImage } from '../../src/testing/image.js';

const archive = await productImage();
const image = await readImage(archive);
const unsupported = await cannotRunContainers();

describe('the image built without Docker', () => {
    it('has the config of hack/image/config.ts, tagged with the app version', () => {
        assert.deepEqual(image.config.Entrypoint, imageConfig.entrypoint);
        assert.equal(image.config.User, imageConfig.user);
        assert.equal(image.config.WorkingDir, imageConfig.workingDir);
        assert.deepEqual(Object.keys(image.config.ExposedPorts ?? {}).sort(), [...imageConfig.exposedPorts].sort());
        for (const e of imageConfig.env) assert.ok(image.config.Env?.includes(e), e);
        assert.equal(image.refName, appVersion());
        process.stderr.write(`# image: ${(statSync(archive).size / 1e6).toFixed(1)} MB (${archive})\n`);
    });

    it('holds node, its libraries and the bundle, and no shell or package manager', () => {
        for (const f of ['nodejs/bin/node', 'lib64/ld-linux-x86-64.so.2', 'lib/x86_64-linux-gnu/libc.so.6', 'lib/x86_64-linux-gnu/libstdc++.so.6', 'app/dist/cli/main.js', 'app/package.json', 'etc/passwd']) {
            assert.ok(image.files.includes(f), f);
        }
        const forbidden = image.files.filter((f) => /(^|\/)(sh|bash|dash|busybox|apt|apt-get|dpkg|npm|npx)$/.test(f));
        assert.deepEqual(forbidden, []);
        assert.ok(!image.files.some((f) => f.startsWith('bin/') || f.startsWith('usr/bin/')), 'no bin folder at all');
    });

    it('runs `mesh-endpoints --help` as a container', { skip: unsupported && `cannot run containers here: ${unsupported}` }, async () => {
        const { stdout } = await runImage(archive, ['--help']);
        assert.match(stdout, /^Usage: mesh-endpoints /m);
        for (const command of ['external-workloads', 'service-mirror', 'check', 'status']) assert.match(stdout, new RegExp(`^\\s+${command}\\b`, 'm'));
    });
});
