// The chaos soak: two clusters, two replicas of each controller, a driver of random changes,
// a chaos loop of faults, and invariant checkers watching the apiservers throughout (the
// WatchChecker; the McsChecker for ServiceImports and MCS slices). After `seconds` of both, the
// faults stop and every Service and ServiceImport must converge to the planners' answer.
// `make soak` runs this file (SOAK_S seconds, 300 by default; SOAK_SEED to replay a run) and
// exits non-zero on any violation; test/integration/chaos-soak.test.ts runs a 60 s form.
import { rmSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { mcsSummary, mismatches } from './converge.js';
import { Chaos } from './chaos.js';
import { Driver } from './driver.js';
import { startSoakEnv } from './env.js';
import { countLine, History, type Violation } from './history.js';
import { auditLeaseTerms, readAudit, type Write } from './audit.js';
import { Random, soakSeed } from './random.js';
import { judgeEmptiedMirrors, WatchChecker } from './watch-checker.js';
import { McsChecker } from './mcs-checker.js';

/** The bound on convergence once the faults stop (a replica restarted last needs seconds to boot). */
const CONVERGE_LIMIT_MS = 90_000;
/** The gateway name's answer once the driver stops (Driver.stop). */
const FINAL_GATEWAY = [{ address: '192.0.2.201', family: 'IPv4' as const, ready: true }];

export interface SoakReport {
    seed: number;
    violations: Violation[];
    faults: number;
    changes: number;
    convergedMs?: number;
    lines: string[];
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The replicas' writes the apiserver refused with 409: how many, and the three objects with the most (a retry storm shows here). */
function conflictLine(writes: readonly Write[]): string {
    const counts = new Map<string, { n: number; first: number; last: number }>();
    for (const w of writes.filter((w) => w.code === 409)) {
        const key = `${w.replica} ${w.what} ${w.namespace}/${w.name}`;
        const c = counts.get(key) ?? { n: 0, first: w.receivedUs, last: w.receivedUs };
        counts.set(key, { n: c.n + 1, first: Math.min(c.first, w.receivedUs), last: Math.max(c.last, w.receivedUs) });
    }
    const total = [...counts.values()].reduce((sum, c) => sum + c.n, 0);
    const top = [...counts.entries()].sort(([, a], [, b]) => b.n - a.n).slice(0, 3);
    const when = (us: number) => new Date(us / 1000).toISOString().slice(11, 23);
    return total === 0 ? 'none' : `${total}; ${top.map(([k, c]) => `${k} ${c.n} (${when(c.first)}-${when(c.last)})`).join(', ')}`;
}
const total = (counts: Record<string, number>) => Object.values(counts).reduce((a, b) => a + b, 0);

export async function runSoak(opts: { seconds: number; seed: number; print?: (line: string) => void }): Promise<SoakReport> {
    const lines: string[] = [];
    const print = (line: string) => (lines.push(line), opts.print?.(line));
    const { seconds, seed } = opts;
    print(`soak: seed ${seed} (SOAK_SEED=${seed} replays the choices), ${seconds} s of changes and faults`);
    const history = new History();
    const env = await startSoakEnv();
    print(`soak: clusters up; replica logs and the audit log in ${env.workDir}`);
    let convergedMs: number | undefined;
    try {
        const checker = new WatchChecker(env, history);
        const mcsChecker = new McsChecker(env, history);
        await Promise.all([checker.start(), mcsChecker.start()]);
        for (const replica of env.replicas) replica.start();
        const driver = new Driver(env, new Random(seed), history);
        const chaos = new Chaos(env, new Random(seed ^ 0x5bd1e995), history);
        driver.start();
        chaos.start();
        await sleep(seconds * 1000);
        await chaos.stop();
        await driver.stop();

        let left: string[] = [];
        const calmAt = Date.now();
        let shown = false;
        while (Date.now() < calmAt + CONVERGE_LIMIT_MS) {
            left = await mismatches(env, FINAL_GATEWAY).catch((err: Error) => [`reading the clusters: ${err.message}`]);
            if (left.length === 0) break;
            if (!shown && Date.now() > calmAt + 10_000) {
                shown = true;
                print(`still converging 10 s after the faults stopped (replicas: ${env.replicas.map((r) => `${r.name} ${r.state}`).join(', ')}):\n    ${left.join('\n    ')}`);
            }
            await sleep(500);
        }
        if (left.length === 0) convergedMs = Date.now() - history.lastFaultEndAt;
        else history.violation('converged', `not converged ${CONVERGE_LIMIT_MS / 1000} s after the faults stopped:\n    ${left.join('\n    ')}`);
        const mcsEnd = await mcsSummary(env).catch((err: Error) => `unreadable: ${err.message}`);
        await Promise.all([checker.stop(), mcsChecker.stop()]);

        const audit = readAudit(env, history);
        const leases = auditLeaseTerms(env, audit, history);
        const emptyings = judgeEmptiedMirrors(checker.emptied, env.dns.queries, audit, env.replicas, history);
        print(`faults injected: ${countLine(history.faults)}`);
        print(`changes made: ${countLine(history.changes)}; refused or failed in transit: ${countLine(history.failedChanges)}`);
        print(`replica starts: ${env.replicas.map((r) => `${r.name} ${r.startedAt.length}`).join(', ')}`);
        print(`SIGTERM to exit: ${history.sigtermExitMs.length === 0 ? 'none sent' : `max ${Math.max(...history.sigtermExitMs)} ms of ${history.sigtermExitMs.length}`}`);
        print(`leader changes (apiserver audit): ${Object.entries(leases.leaderChanges).map(([c, n]) => `${c} ${n}`).join(', ')}; lease writes ${leases.leaseWrites}`);
        print(`writes by replicas (apiserver audit): ${countLine(leases.writes)}`);
        print(`writes refused with 409 Conflict (a stale cache), most on one object: ${conflictLine(audit.writes)}`);
        print(`slice versions checked by the oracle: ${checker.slicesChecked}`);
        print(`mirror emptyings seen: ${checker.emptied.length}, explained: ${countLine(emptyings.explained)}`);
        print(`MCS at the end: ${mcsEnd}`);
        const mcs = mcsChecker.figures;
        print(
            `MCS: ServiceImports created ${mcs.importsCreated} (${mcs.importsRecreated} after a deletion of the same name; ${mcs.importedFromBoth.size} names imported from both clusters at times), ServiceExports seen ${mcs.exportVersions}, MCS slice versions checked ${mcs.sliceVersionsChecked} (a port ahead of its import, caught up within 2 s: ${mcs.slicePortsLate}); Link removed ${history.linkDown.length} times (${history.linkDown.map((d) => `${(((d.to ?? Date.now()) - d.from) / 1000).toFixed(1)} s`).join(', ') || 'never'})`,
        );
        for (const example of mcs.lateExamples) print(`  - ${example}`);
        const lastFault = new Date(history.lastFaultEndAt).toISOString();
        print(`converged: ${convergedMs === undefined ? `NO (limit ${CONVERGE_LIMIT_MS / 1000} s)` : `${(convergedMs / 1000).toFixed(1)} s after the last fault ended (${lastFault}; every replica restarted by then)`}`);
        print(`writes outside a term that were in flight across a SIGSTOP (not counted as violations): ${history.pausedInFlight.length}`);
        for (const detail of history.pausedInFlight) print(`  - ${detail}`);
        print(`invariant violations: ${history.violations.length}`);
        for (const v of history.violations) print(`  - [${v.invariant}] ${new Date(v.at).toISOString()} ${v.detail}`);
        for (const line of mcsChecker.evidence()) print(line);
    } finally {
        await env.stop();
        if (history.violations.length === 0 && !process.env.SOAK_KEEP) rmSync(env.workDir, { recursive: true, force: true });
    }
    return { seed, violations: history.violations, faults: total(history.faults), changes: total(history.changes), convergedMs, lines };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
    const seconds = Number(process.env.SOAK_S || 300);
    if (!(seconds > 0)) throw new Error(`SOAK_S must be a positive number of seconds, not ${process.env.SOAK_S}`);
    const report = await runSoak({ seconds, seed: soakSeed(), print: (line) => console.log(line) });
    process.exit(report.violations.length === 0 ? 0 : 1);
}
