// The shape of src/ as docs/architecture.md draws it, checked on every unit run: no import
// circle anywhere (type-only imports count: a circle of types is a circle of concepts), and the
// pure core stays pure (no runtime from src/kube/, no node module that does I/O, no clock,
// timer, randomness or process globals), so its table tests are the whole truth about it.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

const src = dirname(fileURLToPath(import.meta.url));

/**
 * The pure core: whole folders, and the pure files of folders that also hold I/O. A file added
 * to a pure folder is pure by default; one added elsewhere opts in by being listed here.
 */
const PURE_FOLDERS = ['endpointslice/', 'ip/', 'servicemirror/api/', 'servicemirror/plan/'];
const PURE_FILES = [
    'agent/identity.ts',
    'agent/lease.ts',
    'dns/gateway-address.ts',
    'dns/gateway-endpoints.ts',
    'dns/name-state.ts',
    'dns/resolution-status.ts',
    'externalworkloads/addresses.ts',
    'externalworkloads/compact.ts',
    'externalworkloads/desired.ts',
    'externalworkloads/endpoint.ts',
    'externalworkloads/groups/cached.ts',
    'externalworkloads/groups/heartbeat.ts',
    'externalworkloads/groups/materialise.ts',
    'externalworkloads/groups/plan.ts',
    'externalworkloads/groups/status.ts',
    'externalworkloads/groups/types.ts',
    'externalworkloads/health/readiness.ts',
    'externalworkloads/plan.ts',
    'externalworkloads/ports.ts',
    'externalworkloads/selection.ts',
    'externalworkloads/types.ts',
    'servicemirror/link/gateway-events.ts',
    'servicemirror/mcs/endpoints.ts',
    'servicemirror/mcs/plan-derived.ts',
    'servicemirror/mcs/plan-import.ts',
    'servicemirror/mcs/resolve.ts',
    'servicemirror/mcs/state.ts',
    'servicemirror/mcs/types.ts',
    'time/duration.ts',
    'time/format.ts',
    'zod.ts',
];

/** node modules a pure file must not import: they reach the network, the disk, the process or the clock. */
const IO_MODULES = new Set([
    'child_process', 'cluster', 'dgram', 'dns', 'dns/promises', 'fs', 'fs/promises', 'http', 'http2', 'https', 'inspector',
    'net', 'os', 'perf_hooks', 'process', 'readline', 'timers', 'timers/promises', 'tls', 'v8', 'worker_threads',
]);
/** node:net's pure helpers, which ip/ uses to read an address as strictly as Go does. */
const PURE_NET_NAMES = new Set(['isIP', 'isIPv4', 'isIPv6']);
/** Packages whose values do I/O or hold process-wide state; their types are fine. */
const RUNTIME_PACKAGES = new Set(['@kubernetes/client-node', 'prom-client', 'pino']);
const GLOBALS = /\b(Date\.now\(|new Date\(\)|setTimeout\(|setInterval\(|setImmediate\(|performance\.now\(|Math\.random\(|process\.)/;

/**
 * Where product code may set a timer itself: the clock (time/clock.ts), which every other file
 * goes through so a test can move time for all of them, and the test harness (testing/).
 */
const TIMER_OWNERS = ['time/', 'testing/'];
const TIMER = /\b(setTimeout|setInterval)\(/;

interface Import {
    specifier: string;
    typeOnly: boolean;
    names: string[];
}

const IMPORT = /^\s*(import|export)\s+(type\s+)?([^'";]*?)\s*from\s*'([^']+)'/gm;
const SIDE_EFFECT_IMPORT = /^\s*import\s+'([^']+)'/gm;
const DYNAMIC_IMPORT = /\bimport\(\s*'([^']+)'\s*\)/g;

function importsOf(text: string): Import[] {
    const found: Import[] = [];
    for (const m of text.matchAll(IMPORT)) {
        const clause = m[3] ?? '';
        const names = [...clause.matchAll(/(?:^|[{,]\s*)(?:type\s+)?(\w+)/g)].map((n) => n[1]!);
        const allTypes = /^\{[^}]*\}$/.test(clause) && clause.slice(1, -1).split(',').every((part) => part.trim() === '' || part.trim().startsWith('type '));
        found.push({ specifier: m[4]!, typeOnly: Boolean(m[2]) || allTypes, names });
    }
    for (const m of text.matchAll(SIDE_EFFECT_IMPORT)) found.push({ specifier: m[1]!, typeOnly: false, names: [] });
    for (const m of text.matchAll(DYNAMIC_IMPORT)) found.push({ specifier: m[1]!, typeOnly: false, names: [] });
    return found;
}

/** Text without comments, so a comment that names Date.now() is not a use of it. */
function code(text: string): string {
    return text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:'"`])\/\/.*$/gm, '$1');
}

const files = readdirSync(src, { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.ts') && !f.endsWith('.test.ts'))
    .map((f) => f.split('\\').join('/'))
    .sort();
const sources = new Map(files.map((f) => [f, readFileSync(join(src, f), 'utf8')]));

/** The src/-relative file a relative specifier names, or undefined for a package or node module. */
function target(from: string, specifier: string): string | undefined {
    if (!specifier.startsWith('.')) return undefined;
    return relative(src, resolve(src, dirname(from), specifier)).split('\\').join('/').replace(/\.js$/, '.ts');
}

const graph = new Map(files.map((f) => [f, importsOf(sources.get(f)!).map((i) => target(f, i.specifier)).filter((t): t is string => t !== undefined && sources.has(t))]));

/** Tarjan's strongly connected components: every one of more than one file, or a file importing itself, is a circle. */
function circles(graph: Map<string, string[]>): string[][] {
    let index = 0;
    const order = new Map<string, number>();
    const low = new Map<string, number>();
    const stack: string[] = [];
    const onStack = new Set<string>();
    const found: string[][] = [];
    const visit = (file: string): void => {
        order.set(file, index);
        low.set(file, index++);
        stack.push(file);
        onStack.add(file);
        for (const next of graph.get(file) ?? []) {
            if (!order.has(next)) {
                visit(next);
                low.set(file, Math.min(low.get(file)!, low.get(next)!));
            } else if (onStack.has(next)) low.set(file, Math.min(low.get(file)!, order.get(next)!));
        }
        if (low.get(file) !== order.get(file)) return;
        const component: string[] = [];
        for (let member = stack.pop()!; ; member = stack.pop()!) {
            onStack.delete(member);
            component.push(member);
            if (member === file) break;
        }
        if (component.length > 1 || graph.get(file)!.includes(file)) found.push(component.sort());
    };
    for (const file of graph.keys()) if (!order.has(file)) visit(file);
    return found;
}

const isPure = (file: string) => PURE_FOLDERS.some((folder) => file.startsWith(folder)) || PURE_FILES.includes(file);

function purityProblems(file: string): string[] {
    const text = sources.get(file)!;
    const problems: string[] = [];
    for (const imp of importsOf(text)) {
        const to = target(file, imp.specifier);
        if (to !== undefined) {
            if (to.startsWith('kube/')) problems.push(`imports the runtime (${imp.specifier})`);
            else if (sources.has(to) && !isPure(to) && !imp.typeOnly) problems.push(`imports ${imp.specifier}, which is not pure`);
            continue;
        }
        const node = imp.specifier.replace(/^node:/, '');
        if (IO_MODULES.has(node) && !(node === 'net' && imp.names.length > 0 && imp.names.every((n) => PURE_NET_NAMES.has(n)))) {
            problems.push(`imports ${imp.specifier}`);
        }
        if (RUNTIME_PACKAGES.has(imp.specifier) && !imp.typeOnly) problems.push(`imports values of ${imp.specifier}`);
    }
    const global = GLOBALS.exec(code(text));
    if (global) problems.push(`uses ${global[1]} (take the time or the randomness as an argument)`);
    return problems.map((p) => `${file} ${p}`);
}

describe('the shape of src/', () => {
    it('has no import circle', () => {
        assert.deepEqual(circles(graph), [], 'files that import each other, directly or around a circle');
    });

    it('keeps the folders of servicemirror/ in one order: each imports only those before it', () => {
        // A file-level circle is caught above; this catches two folders leaning on each other
        // through different files, which makes "what does plan/ need" unanswerable again.
        const order = ['api', 'plan', 'cache', 'mcs', 'link', 'write', '.'];
        const folderOf = (file: string) => file.slice('servicemirror/'.length).split('/').slice(0, -1).join('/') || '.';
        const upward: string[] = [];
        for (const [file, targets] of graph) {
            if (!file.startsWith('servicemirror/')) continue;
            const from = order.indexOf(folderOf(file));
            assert.notEqual(from, -1, `${file}: a folder of servicemirror/ that has no place in the order`);
            for (const to of targets.filter((t) => t.startsWith('servicemirror/'))) {
                if (order.indexOf(folderOf(to)) > from) upward.push(`${file} -> ${to}`);
            }
        }
        assert.deepEqual(upward, []);
    });

    it('keeps every file of product code within 400 lines', () => {
        // Past that a file holds more than one thing (LinkController held all of a Link in 555).
        const lines = (file: string) => sources.get(file)!.split('\n').length - 1;
        assert.deepEqual(files.filter((f) => lines(f) > 400).map((f) => `${f}: ${lines(f)} lines`), []);
    });

    it('finds a circle however long, and only circles', () => {
        const edges = { a: ['b'], b: ['c'], c: ['a', 'd'], d: [], e: ['e'], f: ['d'] };
        assert.deepEqual(circles(new Map(Object.entries(edges))), [['a', 'b', 'c'], ['e']]);
    });

    it('keeps the pure core free of the runtime, I/O, clocks and process globals', () => {
        assert.deepEqual(files.filter(isPure).flatMap(purityProblems), []);
    });

    it('sets timers only through time/clock.ts outside the clock and the test harness', () => {
        const direct = files
            .filter((f) => !TIMER_OWNERS.some((folder) => f.startsWith(folder)))
            .flatMap((f) => {
                const text = sources.get(f)!;
                const call = TIMER.exec(code(text));
                const timers = importsOf(text).find((i) => /^(node:)?timers(\/promises)?$/.test(i.specifier));
                return [...(call ? [`${f} calls ${call[1]}`] : []), ...(timers ? [`${f} imports ${timers.specifier}`] : [])];
            });
        assert.deepEqual(direct, []);
    });

    it('leaves the leader guard to the runtime: no writer outside kube/ builds one', () => {
        // Every controller writes through the Manager's client (KubeRest.guarded): a writer that
        // passed its own whileLeader would be a second rule, and one that forgot, none.
        const guards = files.filter((f) => !f.startsWith('kube/') && /\bwhileLeader\b/.test(code(sources.get(f)!)));
        assert.deepEqual(guards, []);
    });

    it('leaves subscriptions to the runtime: no controller outside kube/ hands a cache its own handlers', () => {
        // Controllers watch (Controller.watch, a Source from kube/sources.ts): the runtime then
        // queues the old and the new object's keys, judges echoes once, replays each term, and
        // unsubscribes a controller that ends. A handler object passed to on() outside kube/ is a second way.
        const handlers = files.filter((f) => !f.startsWith('kube/') && !f.endsWith('.test.ts') && /\.on\(\{/.test(code(sources.get(f)!)));
        assert.deepEqual(handlers, []);
    });

    it('keeps ip/ below endpointslice/: addresses know nothing of slices', () => {
        const upward = files.filter((f) => f.startsWith('ip/')).flatMap((f) => graph.get(f)!.filter((to) => to.startsWith('endpointslice/')).map((to) => `${f} imports ${to}`));
        assert.deepEqual(upward, []);
    });

    it('lists only pure files that exist', () => {
        assert.deepEqual(PURE_FILES.filter((f) => !sources.has(f)), []);
    });

    it('reads the imports a circle would be made of', () => {
        // The parser itself, on the forms the tree uses, so a change to it cannot hide a circle.
        const parsed = importsOf(
            "import type { A } from './a.js';\nimport { type B, c } from '../b.js';\nexport { d } from './d.js';\nimport './e.js';\nconst f = await import('./f.js');\nimport { isIP } from 'node:net';",
        );
        assert.deepEqual(
            parsed.map((i) => [i.specifier, i.typeOnly]),
            [['./a.js', true], ['../b.js', false], ['./d.js', false], ['node:net', false], ['./e.js', false], ['./f.js', false]],
        );
        assert.deepEqual(parsed.find((i) => i.specifier === 'node:net')?.names, ['isIP']);
    });
});
