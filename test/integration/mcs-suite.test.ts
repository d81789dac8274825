// Where hack/mcs-conformance.sh finds the conformance suite, and what a clone with none gets:
// the script run from a copy of it in a scratch project (no git, the Go module proxy off), with
// a stand-in suite (a Go test package of one test) where a place should have one.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { accessSync, constants, copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { after, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { conformanceSuite, inCI, SUITE_NOT_FOUND } from './mcs-suite.js';

const script = resolve(dirname(fileURLToPath(import.meta.url)), '../../hack/mcs-conformance.sh');
const scratch = mkdtempSync(join(tmpdir(), 'mcs-suite-test-'));
after(() => rmSync(scratch, { recursive: true, force: true }));

/** A project root at <dir>/project with the script, and <dir>/shared beside it. */
function project(name: string): { dir: string; run: (env?: Record<string, string>) => Promise<{ code: number; stdout: string; stderr: string }> } {
    const dir = join(scratch, name);
    mkdirSync(join(dir, 'project/hack'), { recursive: true });
    copyFileSync(script, join(dir, 'project/hack/mcs-conformance.sh'));
    const base: NodeJS.ProcessEnv = { ...process.env, GOPROXY: 'off', MESH_ENDPOINTS_CACHE: join(dir, 'cache') };
    delete base.MCS_CONFORMANCE_DIR;
    const run = (env: Record<string, string> = {}) =>
        new Promise<{ code: number; stdout: string; stderr: string }>((res) =>
            execFile('bash', [join(dir, 'project/hack/mcs-conformance.sh')], { cwd: join(dir, 'project'), env: { ...base, ...env } }, (err, stdout, stderr) =>
                res({ code: err ? Number(err.code) : 0, stdout, stderr }),
            ),
        );
    return { dir, run };
}

/** A Go test package standing in for the suite: what the script needs is go.mod, go.sum and sources. */
function standInSuite(dir: string): string {
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'go.mod'), 'module example.com/standin\n\ngo 1.22\n');
    writeFileSync(join(dir, 'go.sum'), '');
    writeFileSync(join(dir, 'standin_test.go'), 'package standin\n\nimport "testing"\n\nfunc TestStandIn(t *testing.T) {}\n');
    return dir;
}

describe('hack/mcs-conformance.sh: where the suite comes from', () => {
    it('with none of the three places holding it, it exits 69 with one line naming them', async () => {
        const { dir, run } = project('none');
        const { code, stdout, stderr } = await run();
        assert.equal(code, SUITE_NOT_FOUND);
        assert.equal(stdout, '');
        assert.equal(stderr.endsWith('\n'), true);
        const lines = stderr.trimEnd().split('\n');
        assert.equal(lines.length, 1, stderr);
        assert.match(lines[0]!, /MCS_CONFORMANCE_DIR is unset/);
        assert.match(lines[0]!, /the Go module proxy does not serve sigs\.k8s\.io\/mcs-api\/conformance@v\d+\.\d+\.\d+/);
        assert.ok(lines[0]!.includes(`${dir}/shared/mcs-conformance has no go.mod and go.sum`), lines[0]);
    });

    it('finds ../shared/mcs-conformance beside the project, builds it once and prints the binary', async () => {
        const { dir, run } = project('shared');
        standInSuite(join(dir, 'shared/mcs-conformance'));
        const first = await run();
        assert.equal(first.code, 0, first.stderr);
        const binary = first.stdout.trim().split('\n').pop()!;
        assert.ok(binary.startsWith(join(dir, 'cache/mcs-conformance/')), binary);
        accessSync(binary, constants.X_OK);
        assert.match(first.stderr, /building the MCS conformance suite from .*shared\/mcs-conformance/);
        const second = await run();
        assert.deepEqual([second.code, second.stdout.trim(), second.stderr], [0, binary, ''], 'the second run builds nothing');
    });

    it('MCS_CONFORMANCE_DIR, when set, is the only place looked at', async () => {
        const { dir, run } = project('override');
        standInSuite(join(dir, 'shared/mcs-conformance'));
        const empty = join(dir, 'empty');
        mkdirSync(empty);
        const missing = await run({ MCS_CONFORMANCE_DIR: empty });
        assert.equal(missing.code, SUITE_NOT_FOUND);
        assert.match(missing.stderr, new RegExp(`^mcs-conformance: no MCS conformance suite: MCS_CONFORMANCE_DIR \\(${empty}\\) has no go.mod and go.sum .*sigs\\.k8s\\.io/mcs-api/conformance@v[\\d.]+ and ${dir}/shared/mcs-conformance are looked at only when it is unset\\)\\n$`));
        const given = await run({ MCS_CONFORMANCE_DIR: standInSuite(join(dir, 'elsewhere')) });
        assert.equal(given.code, 0, given.stderr);
        assert.match(given.stderr, /building the MCS conformance suite from .*\/elsewhere /);
    });
});

describe('conformanceSuite: the tests that run the suite', () => {
    const empty = mkdtempSync(join(scratch, 'empty-'));

    it('are skipped with the script\'s line when there is no suite', async () => {
        const suite = await conformanceSuite({ ...process.env, CI: '', MCS_CONFORMANCE_DIR: empty });
        assert.ok('skip' in suite);
        assert.match(suite.skip, new RegExp(`^mcs-conformance: no MCS conformance suite: MCS_CONFORMANCE_DIR \\(${empty}\\) has no go.mod and go.sum`));
    });

    it('fail with that line under CI=true', async () => {
        await assert.rejects(conformanceSuite({ ...process.env, CI: 'true', MCS_CONFORMANCE_DIR: empty }), /no MCS conformance suite: .*\(CI=true: the conformance suite is required\)$/);
    });

    it('take CI=true and CI=1 for CI, and nothing else', () => {
        assert.deepEqual(['true', 'TRUE', '1', '', 'false', '0', undefined].map((CI) => inCI({ CI })), [true, true, true, false, false, false, false]);
    });
});
