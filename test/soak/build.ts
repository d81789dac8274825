// The replicas run the CLI as `npm run build` ships it (hack/bundle.ts: one esbuild bundle,
// dist/cli/main.js): under tsx each start costs ~10 s of CPU on this loaded 2-core machine,
// the bundle well under 1 s, and a replica the chaos loop restarts must be back within a lease
// or two. Bundled again at every soak (a second or two), without the type check (make test's
// typecheck does that).
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { bundle } from '../../hack/bundle.js';

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

/** Returns the path of dist/cli/main.js, current with src/. */
export async function buildForProcesses(): Promise<string> {
    await bundle('src/cli/main.ts', join(repoRoot, 'dist'));
    return join(repoRoot, 'dist', 'cli', 'main.js');
}
