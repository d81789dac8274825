// Part of `npm run build` (after the type check): the whole CLI as one esbuild bundle,
// dist/cli/main.js, with every package it uses inside, so it runs without node_modules (the
// image ships none). Why a bundle and not tsc's file per module: a process pays for what it
// loads, and V8 keeps every loaded module's source text for lazy compilation. Bundled,
// tree-shaken and minified, the idle controller is about 20 MB smaller and starts on half the
// CPU (docs/benchmarks.md, "Where the memory goes"). What it does beyond bundling:
// - client-node: only its config module (KubeConfig and its authenticators) is reached, from
//   src/kube/kubeconfig.ts; the generated API (models and API clients, 21 MB of JavaScript)
//   stays out, and the build fails if it comes back.
// - node-fetch and openid-client, which that config module imports for paths we never take
//   at start (its fetch-based API clients; OIDC tokens), are replaced by the shims in
//   hack/bundle-shims/: node's own Headers, and the packages themselves loaded on first use.
// - a dynamic import() (node-forge, the shims' packages) becomes a chunk of its own in
//   dist/chunks/, loaded only when reached.
// - the output is ASCII: V8 stores a source text with one non-Latin-1 character at two bytes a
//   character, and keeps all of it. The build fails otherwise (write \u escapes in the source).
// Tests and `tsx` runs use the sources and node_modules as they are.
import { build, type Metafile, type Plugin } from 'esbuild';
import { readFileSync, rmSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const GENERATED = '/@kubernetes/client-node/dist/gen/';
/** The generated parts that must stay out: models, the API group clients and their wrappers. */
const UNWANTED = /@kubernetes\/client-node\/dist\/gen\/(models|apis|types)\//;
/** Packages replaced by a shim of ours (which may itself import the real one, lazily). */
const SHIMS: Record<string, string> = {
    'node-fetch': join(repoRoot, 'hack/bundle-shims/node-fetch.ts'),
    'openid-client': join(repoRoot, 'hack/bundle-shims/openid-client.ts'),
};

const bundlePlugin: Plugin = {
    name: 'mesh-endpoints-bundle',
    setup(b) {
        // client-node's generated modules only declare classes and constants (no import-time
        // effects), but its package.json does not say so: without this, every model is kept.
        b.onResolve({ filter: /^\.\.?\// }, (args) => {
            const path = resolve(args.resolveDir, args.path);
            return path.includes(GENERATED) ? { path, sideEffects: false } : undefined;
        });
        b.onResolve({ filter: new RegExp(`^(${Object.keys(SHIMS).join('|')})$`) }, (args) =>
            Object.values(SHIMS).includes(args.importer) ? undefined : { path: SHIMS[args.path]! },
        );
    },
};

export interface BundleResult {
    /** The modules with code in the entry point's output (chunks not included). */
    inputs: string[];
    /** Every file written, relative to the repository. */
    outputs: string[];
}

/** Bundles `entry` (a source file under src/) into `outdir` at the same place (src/cli/main.ts: outdir/cli/main.js), chunks in `outdir/chunks/`. */
export async function bundle(entry: string, outdir: string): Promise<BundleResult> {
    const result = await build({
        entryPoints: [entry],
        outdir,
        entryNames: '[dir]/[name]',
        outbase: join(repoRoot, 'src'),
        chunkNames: 'chunks/[name]-[hash]',
        bundle: true,
        splitting: true,
        format: 'esm',
        platform: 'node',
        target: 'node20',
        minify: true,
        charset: 'ascii',
        // Readable stack traces: NODE_OPTIONS=--enable-source-maps (node reads the map only then).
        sourcemap: true,
        metafile: true,
        logLevel: 'warning',
        absWorkingDir: repoRoot,
        // CommonJS packages inside an ES module still call require() for node's own modules.
        banner: { js: "import{createRequire as __createRequire}from'node:module';const require=__createRequire(import.meta.url);" },
        plugins: [bundlePlugin],
    });
    const outputs = Object.entries((result.metafile as Metafile).outputs);
    const [, main] = outputs.find(([, output]) => output.entryPoint !== undefined)!;
    const inputs = Object.entries(main.inputs).flatMap(([path, { bytesInOutput }]) => (bytesInOutput > 0 ? [path] : []));
    const unwanted = outputs.flatMap(([, output]) => Object.keys(output.inputs)).filter((input) => UNWANTED.test(input));
    if (unwanted.length > 0) throw new Error(`the bundle pulls in client-node's generated API (${unwanted.length} files, e.g. ${unwanted[0]})`);
    for (const [path] of outputs.filter(([path]) => path.endsWith('.js'))) {
        const text = readFileSync(join(repoRoot, path), 'latin1');
        const at = text.search(/[^\x00-\x7f]/);
        if (at >= 0) throw new Error(`${path} is not ASCII at ${at} (${JSON.stringify(text.slice(Math.max(0, at - 40), at + 10))}): write a \\u escape in the source`);
    }
    return { inputs, outputs: outputs.map(([path]) => path) };
}

if (import.meta.url === `file://${process.argv[1]}`) {
    rmSync(join(repoRoot, 'dist'), { recursive: true, force: true });
    const { inputs, outputs } = await bundle('src/cli/main.ts', 'dist');
    process.stdout.write(`dist/cli/main.js: the CLI bundled from ${inputs.length} modules (${outputs.filter((o) => o.endsWith('.js')).length} files)\n`);
}
