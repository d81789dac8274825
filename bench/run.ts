// bench/: the performance figures of mesh-endpoints (`make bench`, i.e. `npx tsx bench/run.ts`).
// It owns measuring and reporting; it must not assert on times (a figure that differs from what
// the design promises is flagged, not failed), write outside bench/results/, or connect beyond
// loopback. Every cluster, controller and server a benchmark starts is stopped before it returns.
//
//   npx tsx bench/run.ts [planner] [external-workloads] [service-mirror-dns] [apiserver-writes] [cluster-scale] [service-mirror-scale] [health-checks] [memory-curve] [mirror-memory] [mcs-scale] [workload-groups]   (all by default)
//   SCALE=large npx tsx bench/run.ts cluster-scale service-mirror-scale memory-curve
//     (adds one Service of 10 000 workloads; 2 000 mirrors per Link; a step of 100 000 workloads)
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runApiserverWritesBenchmark } from './apiserver-writes.js';
import { runClusterScaleBenchmark } from './cluster-scale.js';
import { runExternalWorkloadsBenchmark } from './external-workloads.js';
import { runHealthChecksBenchmark } from './health-checks.js';
import { runMcsScaleBenchmark } from './mcs-scale.js';
import { runMemoryCurveBenchmark } from './memory-curve.js';
import { runMirrorMemoryBenchmark } from './mirror-memory.js';
import { Cleanups } from './local-cluster.js';
import { runPlannerBenchmarks } from './planner.js';
import { runServiceMirrorDnsBenchmark } from './service-mirror-dns.js';
import { runServiceMirrorScaleBenchmark } from './service-mirror-scale.js';
import { Report } from './stats.js';
import { runWorkloadGroupsBenchmark } from './workload-groups.js';

const benchDir = dirname(fileURLToPath(import.meta.url));
const resultsFile = join(benchDir, 'results', 'latest.json');

const cleanups = new Cleanups();
const BENCHMARKS: Record<string, (report: Report) => void | Promise<void>> = {
    planner: (report) => runPlannerBenchmarks(report),
    'external-workloads': (report) => runExternalWorkloadsBenchmark(report, cleanups),
    'service-mirror-dns': (report) => runServiceMirrorDnsBenchmark(report, cleanups),
    'apiserver-writes': (report) => runApiserverWritesBenchmark(report, cleanups),
    'cluster-scale': (report) => runClusterScaleBenchmark(report, cleanups),
    'service-mirror-scale': (report) => runServiceMirrorScaleBenchmark(report, cleanups),
    'health-checks': (report) => runHealthChecksBenchmark(report, cleanups),
    'memory-curve': (report) => runMemoryCurveBenchmark(report, cleanups),
    'mirror-memory': (report) => runMirrorMemoryBenchmark(report, cleanups),
    'mcs-scale': (report) => runMcsScaleBenchmark(report, cleanups),
    'workload-groups': (report) => runWorkloadGroupsBenchmark(report, cleanups),
};

function onSignal(signal: NodeJS.Signals): void {
    process.stdout.write(`\n${signal}: stopping the benchmark clusters\n`);
    void cleanups.runAll().finally(() => process.exit(130));
}

function gitCommit(): string | undefined {
    try {
        return execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: benchDir, encoding: 'utf8' }).trim();
    } catch {
        return undefined;
    }
}

/** Valid JSON with one figure per line: readable in a terminal, diffable between runs. */
function summaryJson(summary: Record<string, unknown>, figures: unknown[]): string {
    const head = JSON.stringify(summary).replace(/}$/, '');
    return `${head},"figures":[\n${figures.map((f) => `  ${JSON.stringify(f)}`).join(',\n')}\n]}\n`;
}

async function main(argv: string[]): Promise<number> {
    if (argv.includes('--help')) {
        process.stdout.write(`usage: npx tsx bench/run.ts [${Object.keys(BENCHMARKS).join('] [')}]   (all by default; SCALE=large for the large figures)\n`);
        return 0;
    }
    const unknown = argv.filter((name) => !(name in BENCHMARKS));
    if (unknown.length > 0) throw new Error(`unknown benchmark ${unknown.join(', ')}; known: ${Object.keys(BENCHMARKS).join(', ')}`);
    const selected = argv.length > 0 ? argv : Object.keys(BENCHMARKS);
    process.once('SIGINT', onSignal);
    process.once('SIGTERM', onSignal);

    const report = new Report((line) => process.stdout.write(`${line}\n`));
    const startedAt = new Date();
    const durationsS: Record<string, number> = {};
    process.stdout.write(`mesh-endpoints benchmarks: ${selected.join(', ')} (node ${process.version}, ${cpus().length} CPUs)\n`);
    for (const name of selected) {
        process.stdout.write(`==> ${name}\n`);
        const started = performance.now();
        try {
            await BENCHMARKS[name]!(report);
        } catch (err) {
            report.error(name, err);
        }
        durationsS[name] = Math.round((performance.now() - started) / 100) / 10;
        process.stdout.write(`    (${name} took ${durationsS[name]} s)\n`);
    }
    await cleanups.runAll();

    const unexpected = report.unexpected();
    const summary = {
        startedAt: startedAt.toISOString(),
        commit: gitCommit(),
        node: process.version,
        cpus: cpus().length,
        benchmarks: selected,
        durationsS,
        unexpected: unexpected.map((f) => `${f.benchmark}: ${f.what}`),
        errors: report.errors,
    };
    const json = summaryJson(summary, report.figures);
    mkdirSync(dirname(resultsFile), { recursive: true });
    writeFileSync(resultsFile, json);
    process.stdout.write(`\nJSON summary (${relative(process.cwd(), resultsFile)}):\n${json}`);
    if (unexpected.length > 0) process.stdout.write(`note: ${unexpected.length} count(s) differ from what the design expects (see "unexpected")\n`);
    return report.errors.length > 0 ? 1 : 0;
}

main(process.argv.slice(2)).then(
    (code) => process.exit(code),
    async (err: Error) => {
        process.stderr.write(`bench: ${err.message}\n`);
        await cleanups.runAll();
        process.exit(1);
    },
);
