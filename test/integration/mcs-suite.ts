// The MCS API conformance suite's binary for the tests that run it, or why they are skipped.
// hack/mcs-conformance.sh finds the suite (MCS_CONFORMANCE_DIR, the Go module proxy,
// ../shared/mcs-conformance) and builds it once per machine; a clone with none of the three
// gets the test reported skipped with the script's one line, and `make test` passes. CI=true
// makes that a failure, so CI never drops the suite without anyone noticing.
import { execFile } from 'node:child_process';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

/** hack/mcs-conformance.sh's exit status when no place has the suite (EX_UNAVAILABLE). */
export const SUITE_NOT_FOUND = 69;

export type ConformanceSuite = { binary: string } | { skip: string };

/** Whether this run is CI's (CI=true, as CI services set it): a missing suite fails it. */
export function inCI(env: NodeJS.ProcessEnv = process.env): boolean {
    return ['true', '1'].includes((env.CI ?? '').toLowerCase());
}

/**
 * The suite's binary, or the reason to skip the test that runs it. Meant for a setUp step at the
 * top level of a test file:
 *
 *     const suite = await setUp('the conformance suite (hack/mcs-conformance.sh)', conformanceSuite);
 *     if ('skip' in suite) test(TITLE, { skip: suite.skip }, () => undefined);
 *     else await run(suite.binary);
 *
 * Rejects when the build fails, and when the suite is missing in CI.
 */
export function conformanceSuite(env: NodeJS.ProcessEnv = process.env): Promise<ConformanceSuite> {
    return new Promise((res, rej) => {
        execFile('bash', [join(repoRoot, 'hack/mcs-conformance.sh')], { cwd: repoRoot, env, maxBuffer: 16 << 20 }, (err, stdout, stderr) => {
            if (!err) return res({ binary: stdout.trim().split('\n').pop()! });
            const lines = stderr.trim().split('\n');
            const line = lines[lines.length - 1] ?? '';
            if (err.code !== SUITE_NOT_FOUND) return rej(new Error(`hack/mcs-conformance.sh failed (${err.code ?? err.signal}):\n${stderr.slice(-8000)}`));
            if (inCI(env)) return rej(new Error(`${line} (CI=true: the conformance suite is required)`));
            res({ skip: line });
        });
    });
}
