// The replicas run compiled JavaScript: under tsx each start costs ~10 s of CPU on this
// loaded 2-core machine, compiled code ~1 s, and a replica the chaos loop restarts must be back
// within a lease or two. This is `make build` without the type check (make test's typecheck
// does that): each source of tsconfig.build.json transpiled on its own into dist/, in a second
// or two, and only when it is newer than its output.
import { mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { transformSync } from 'esbuild';
import ts from 'typescript';

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

/** Returns the path of dist/cli/main.js, current with src/. */
export function buildForProcesses(): string {
    const configPath = join(repoRoot, 'tsconfig.build.json');
    const config = ts.parseJsonConfigFileContent(ts.readConfigFile(configPath, ts.sys.readFile).config, ts.sys, repoRoot);
    const outDir = config.options.outDir!;
    const rootDir = config.options.rootDir!;
    for (const source of config.fileNames) {
        const output = join(outDir, relative(rootDir, source)).replace(/\.ts$/, '.js');
        const outputTime = statSync(output, { throwIfNoEntry: false })?.mtimeMs ?? 0;
        if (outputTime > statSync(source).mtimeMs) continue;
        const { code } = transformSync(readFileSync(source, 'utf8'), { loader: 'ts', format: 'esm', target: 'es2022', platform: 'node', sourcefile: source });
        mkdirSync(dirname(output), { recursive: true });
        writeFileSync(output, code);
    }
    return join(outDir, 'cli/main.js');
}
