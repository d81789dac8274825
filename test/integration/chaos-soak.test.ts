// The short form of `make soak`: 60 s of random changes and faults against two replicas of
// each controller on two real clusters, with the invariant checker (test/soak/) watching; the
// run's figures are printed. SOAK_S and SOAK_SEED work here too.
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { soakSeed } from '../soak/random.js';
import { runSoak } from '../soak/run.js';

it('a chaos soak keeps every invariant and converges', async () => {
    const report = await runSoak({ seconds: Number(process.env.SOAK_S || 60), seed: soakSeed(), print: (line) => console.log(line) });
    assert.ok(report.faults >= 5, `only ${report.faults} faults were injected`);
    assert.ok(report.changes >= 30, `only ${report.changes} changes were made`);
    assert.deepEqual(
        report.violations.map((v) => `[${v.invariant}] ${v.detail}`),
        [],
        `violations (replay with SOAK_SEED=${report.seed})`,
    );
    assert.ok(report.convergedMs !== undefined);
});
