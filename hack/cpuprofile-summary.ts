// Summarises a V8 .cpuprofile (node --cpu-prof): self and total time by function and by module,
// and a timeline of busy samples, so a profile of the controller can be read without a browser.
//
//   npx tsx hack/cpuprofile-summary.ts FILE.cpuprofile [--from MS] [--to MS] [--top N] [--timeline MS] [--focus FUNCTION] [--long-tasks N]
//
// Times are sample counts times the sampling interval (--interval, node's default 1 ms): on a
// loaded machine a sample's own time delta includes the time the process waited for a CPU, the
// count does not.
// --from/--to cut the profile to a window (ms since the profile started); --timeline prints the
// busy (non-idle) ms of each window of that length, to find the phase to cut to. Frames of a
// bundle (the build's minified dist/cli/main.js) are read through its source map (main.js.map).
// --long-tasks N lists the N longest stretches of busy samples with no idle one between them (what
// held the event loop: timers and I/O waited that long), each with where it started and its
// functions of most self time.
import { existsSync, readFileSync } from 'node:fs';
import { SourceMap } from 'node:module';
import { fileURLToPath } from 'node:url';

process.stdout.on('error', () => process.exit(0)); // | head

interface ProfileNode {
    id: number;
    callFrame: { functionName: string; url: string; lineNumber: number };
    children?: number[];
}
interface Profile {
    nodes: ProfileNode[];
    samples: number[];
    timeDeltas: number[];
    startTime: number;
    endTime: number;
}

const args = process.argv.slice(2);
const option = (name: string, fallback: number) => {
    const i = args.indexOf(name);
    return i >= 0 ? Number(args[i + 1]) : fallback;
};
const file = args.find((a, i) => !a.startsWith('--') && !args[i - 1]?.startsWith('--'));
if (!file) throw new Error('usage: cpuprofile-summary.ts FILE.cpuprofile [--from MS] [--to MS] [--top N] [--timeline MS]');
const from = option('--from', 0);
const to = option('--to', Infinity);
const top = option('--top', 40);
const timeline = option('--timeline', 0);
const longTasks = option('--long-tasks', 0);
const intervalMs = option('--interval', 1);
const focusAt = args.indexOf('--focus');
/** Only samples with a function whose name contains this on their stack (e.g. 'apply dist/kube/slice-writer'). */
const focus = focusAt >= 0 ? args[focusAt + 1] : undefined;

const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;

/** A bundle's frames, mapped to where they come from: the source file, line and name. */
const sourceMaps = new Map<string, SourceMap | undefined>();
function original(frame: ProfileNode['callFrame']): ProfileNode['callFrame'] {
    if (!frame.url.startsWith('file://')) return frame;
    if (!sourceMaps.has(frame.url)) {
        const mapFile = `${fileURLToPath(frame.url)}.map`;
        sourceMaps.set(frame.url, existsSync(mapFile) ? new SourceMap(JSON.parse(readFileSync(mapFile, 'utf8'))) : undefined);
    }
    const entry = sourceMaps.get(frame.url)?.findEntry(frame.lineNumber, (frame as { columnNumber?: number }).columnNumber ?? 0) as
        | { originalSource?: string; originalLine?: number; name?: string }
        | undefined;
    if (!entry?.originalSource) return frame;
    return { functionName: frame.functionName && entry.name ? entry.name : frame.functionName, url: entry.originalSource, lineNumber: entry.originalLine ?? 0 };
}
for (const n of profile.nodes) if (!['(idle)', '(program)', '(garbage collector)', '(root)'].includes(n.callFrame.functionName)) n.callFrame = original(n.callFrame);
const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const parent = new Map<number, number>();
for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);

function moduleOf(url: string): string {
    if (!url) return '(native/V8)';
    if (url.startsWith('node:')) return url.startsWith('node:internal') ? 'node:internal' : url;
    const nm = url.lastIndexOf('node_modules/');
    if (nm >= 0) {
        const rest = url.slice(nm + 'node_modules/'.length).split('/');
        return rest[0]!.startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0]!;
    }
    const dist = url.indexOf('/dist/');
    if (dist >= 0) return url.slice(dist + 1);
    const src = url.indexOf('/src/');
    return src >= 0 ? url.slice(src + 1) : url;
}
/** A package's file by its name within the package (prom-client/lib/histogram.js), else as moduleOf. */
function fileOf(url: string): string {
    const nm = url.lastIndexOf('node_modules/');
    return nm >= 0 ? url.slice(nm + 'node_modules/'.length) : moduleOf(url);
}
const fnKey = (n: ProfileNode) => `${n.callFrame.functionName || '(anonymous)'} ${fileOf(n.callFrame.url)}:${n.callFrame.lineNumber + 1}`;
function onStack(id: number, what: string): boolean {
    for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) if (fnKey(byId.get(cur)!).includes(what)) return true;
    return false;
}
const IDLE = new Set(['(idle)', '(program)', '(garbage collector)']);

const self = new Map<string, number>();
const total = new Map<string, number>();
const moduleSelf = new Map<string, number>();
const moduleTotal = new Map<string, number>();
const buckets = new Map<number, number>();
let t = 0;
let counted = 0;
let idle = 0;
let gc = 0;
const add = (m: Map<string, number>, k: string) => m.set(k, (m.get(k) ?? 0) + 1);
profile.samples.forEach((id, i) => {
    t += profile.timeDeltas[i]! / 1000;
    if (t < from || t > to) return;
    const node = byId.get(id)!;
    const name = node.callFrame.functionName;
    if (focus !== undefined && !onStack(id, focus)) return;
    if (name === '(idle)') return void idle++;
    counted++;
    if (name === '(garbage collector)') gc++;
    if (timeline > 0) buckets.set(Math.floor(t / timeline), (buckets.get(Math.floor(t / timeline)) ?? 0) + 1);
    add(self, IDLE.has(name) ? name : fnKey(node));
    add(moduleSelf, IDLE.has(name) ? name : moduleOf(node.callFrame.url));
    const fns = new Set<string>();
    const mods = new Set<string>();
    for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
        const n = byId.get(cur)!;
        if (n.callFrame.functionName === '(root)') break;
        fns.add(IDLE.has(n.callFrame.functionName) ? n.callFrame.functionName : fnKey(n));
        mods.add(IDLE.has(n.callFrame.functionName) ? n.callFrame.functionName : moduleOf(n.callFrame.url));
    }
    for (const f of fns) add(total, f);
    for (const m of mods) add(moduleTotal, m);
});

const ms = (samples: number) => (samples * intervalMs).toFixed(0).padStart(7);
const pct = (samples: number) => `${((100 * samples) / counted).toFixed(1).padStart(5)}%`;
const table = (title: string, m: Map<string, number>, n: number) => {
    console.log(`\n${title}`);
    for (const [k, v] of [...m].sort((a, b) => b[1] - a[1]).slice(0, n)) console.log(`${ms(v)} ms ${pct(v)}  ${k}`);
};
console.log(`${file}: ${profile.samples.length} samples over ${((profile.endTime - profile.startTime) / 1e6).toFixed(1)} s, counted as ${intervalMs} ms each; window ${from}–${to} ms: ${counted} busy samples (${ms(counted).trim()} ms, GC ${ms(gc).trim()} ms), ${idle} idle`);
table('self time by module', moduleSelf, top);
table('total time by module', moduleTotal, top);
table('self time by function', self, top);
table('total time by function', total, top);
if (longTasks > 0) printLongTasks();
if (timeline > 0) {
    console.log(`\nbusy ms per ${timeline} ms`);
    for (const [b, v] of [...buckets].sort((a, c) => a[0] - c[0])) console.log(`${String(b * timeline).padStart(8)} ms ${ms(v)}`);
}

/** The stack's outermost frame below (root): the callback the event loop ran. */
function entryOf(id: number): string {
    let entry = id;
    for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
        if (byId.get(cur)!.callFrame.functionName === '(root)') break;
        entry = cur;
    }
    return fnKey(byId.get(entry)!);
}

function printLongTasks(): void {
    interface Task {
        start: number;
        samples: number[];
        ms: number;
    }
    const tasks: Task[] = [];
    let current: Task | undefined;
    let at = 0;
    profile.samples.forEach((id, i) => {
        at += profile.timeDeltas[i]! / 1000;
        if (at < from || at > to || byId.get(id)!.callFrame.functionName === '(idle)') {
            current = undefined;
            return;
        }
        if (!current) tasks.push((current = { start: at, samples: [], ms: 0 }));
        current.samples.push(id);
        current.ms += profile.timeDeltas[i]! / 1000;
    });
    console.log(`\nlongest busy stretches (samples at ${intervalMs} ms; wall ms include waiting for a CPU)`);
    for (const task of tasks.sort((a, b) => b.samples.length - a.samples.length).slice(0, longTasks)) {
        const selfTimes = new Map<string, number>();
        const entries = new Map<string, number>();
        for (const id of task.samples) {
            const n = byId.get(id)!;
            add(selfTimes, IDLE.has(n.callFrame.functionName) ? n.callFrame.functionName : fnKey(n));
            add(entries, entryOf(id));
        }
        const topOf = (m: Map<string, number>, k: number) => [...m].sort((a, b) => b[1] - a[1]).slice(0, k).map(([f, v]) => `${v} ${f}`).join('; ');
        console.log(`${ms(task.samples.length)} ms busy at ${task.start.toFixed(0)} ms (${task.ms.toFixed(0)} ms wall)\n      entered from: ${topOf(entries, 2)}\n      self: ${topOf(selfTimes, 5)}`);
    }
}
