// The images the MCS conformance suite's Pods run, docker.io/nicolaka/netshoot:v0.15 and
// docker.io/alpine/socat:1.7.4.4, which cannot be pulled here: stand-ins built from Debian
// packages with the tools the specs exec (hack/image/standins.ts says which and why), as archives
// for a real node's importImage. Not the upstream images.
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { repoRoot } from '../../hack/image/config.js';
import { cachedStandins } from '../../hack/image/standins.js';
import type { NodeImage } from './node.js';

let built: Promise<NodeImage[]> | undefined;

/** The stand-ins' archives and base names: cached ones at once, else built now (about a minute the first time). */
export function suiteImages(): Promise<NodeImage[]> {
    built ??= (async () => {
        const cached = cachedStandins();
        if (cached) return cached;
        const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', join(repoRoot, 'hack/image/standins.ts')], { cwd: repoRoot, maxBuffer: 1 << 20 });
        return JSON.parse(stdout.trim().split('\n').at(-1)!) as NodeImage[];
    })();
    return built;
}
