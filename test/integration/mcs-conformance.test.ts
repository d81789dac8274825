// The official MCS API conformance suite (kubernetes-sigs/mcs-api conformance/, built by
// hack/mcs-conformance.sh from where it finds it: MCS_CONFORMANCE_DIR, the Go module proxy or
// ../shared/mcs-conformance) run whole, every Required and Optional spec with no label filter,
// against two clusters that carry traffic: each has one real node (node.ts: containerd, the
// kubelet, kube-proxy in iptables mode and CoreDNS answering cluster.local and clusterset.local),
// the first in the node namespace and the second in a child namespace of it (second-node.ts), a
// veth and routes making one flat Pod network, as the MCS API's own e2e has. The clusters are
// linked both ways with no gateway (each import carries the exporting cluster's own Pod IPs) and
// each runs its own service-mirror. The suite's images (nicolaka/netshoot:v0.15,
// alpine/socat:1.7.4.4) cannot be pulled here: stand-ins with the same tools, built from Debian
// packages (src/testing/suite-images.ts), are imported under those names. Its Ginkgo JSON report
// decides; the reports are kept under .cache/reports/mcs-conformance/shard-{1,2}/ (the README's
// conformance claim). With no suite to be found (mcs-suite.ts) the test is reported skipped, or
// fails under CI=true; where containers cannot run, it is reported skipped with the reason.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { cpSync, createWriteStream, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';
import { parse, stringify } from 'yaml';
import { setUp } from '../../src/testing/harness.js';
import { cannotRunContainers } from '../../src/testing/image.js';
import { inNodeNamespace, NODE_IP, reexecInNodeNamespace } from '../../src/testing/node-namespace.js';
import { NODE_APISERVER_ARGS } from '../../src/testing/node.js';
import { suiteImages } from '../../src/testing/suite-images.js';
import { startMcsSet, startRealNodes, type McsSet } from './mcs-support.js';
import { conformanceSuite } from './mcs-suite.js';

// Before anything starts: from here on this process runs inside the node namespace.
const unsupported = await cannotRunContainers();
if (!unsupported && !inNodeNamespace()) await reexecInNodeNamespace();

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const keptDir = join(repoRoot, '.cache/reports/mcs-conformance');

/** Every spec of the suite: 14 Required, 13 Optional (4 Connectivity and 6 DNS among them). */
const EXPECTED_SPECS = 27;

// The suite's Pods get IPv4 addresses only: in the test clusters' default dual-stack service
// range the suite's PreferDualStack Service is imported with both families and the EndpointSlice
// spec waits for IPv6 endpoints that cannot exist here. A single-stack range makes the clusters
// what their Pods are, and every spec runs.
const SINGLE_STACK = ['--service-cluster-ip-range=10.96.0.0/16'];

interface SpecReport {
    ContainerHierarchyTexts?: string[] | null;
    LeafNodeType: string;
    LeafNodeText: string;
    LeafNodeLabels?: string[] | null;
    ContainerHierarchyLabels?: (string[] | null)[] | null;
    State: string;
    Failure?: { Message?: string; Location?: { FileName?: string; LineNumber?: number } };
    CapturedGinkgoWriterOutput?: string;
    CapturedStdOutErr?: string;
}

const specName = (s: SpecReport) => [...(s.ContainerHierarchyTexts ?? []), s.LeafNodeText].filter(Boolean).join(' ').trim();
const specLabels = (s: SpecReport) => [...(s.ContainerHierarchyLabels ?? []).flatMap((l) => l ?? []), ...(s.LeafNodeLabels ?? [])];

/** Both clusters' kubeconfigs in one file (contexts keep the clusters' names). */
function joinedKubeconfig(set: McsSet, path: string): string[] {
    const configs = [set.east, set.west].map((m) => parse(readFileSync(m.cluster.state.kubeconfig, 'utf8')));
    const joined = {
        apiVersion: 'v1',
        kind: 'Config',
        'current-context': configs[0]['current-context'],
        clusters: configs.flatMap((c) => c.clusters),
        users: configs.flatMap((c) => c.users),
        contexts: configs.flatMap((c) => c.contexts),
    };
    writeFileSync(path, stringify(joined), { mode: 0o600 });
    return configs.map((c) => c['current-context'] as string);
}

/**
 * The suite spends its time polling (each spec waits for its request Pods at 1 s a probe, some
 * hold a condition for 5 s): it runs as two processes at once, as `ginkgo -p` would, one with
 * the specs SHARD matches and one with the rest (`--ginkgo.focus` / `--ginkgo.skip` of the same
 * expression: each spec runs in exactly one). Every spec makes namespaces of its own.
 */
const SHARD = 'ExternalName|at least one exporting cluster|No clusterset IP|EndpointSlice|Exporting a headless service|Only labels and annotations|DNS|exposes the port';

interface ShardRun {
    name: string;
    code: number | null;
    seconds: number;
    specs: SpecReport[];
}

async function runShard(binary: string, name: string, args: string[], kept: string): Promise<ShardRun> {
    const work = mkdtempSync(join(tmpdir(), `mcs-conformance-${name}-`));
    const started = Date.now();
    // The suite writes report.html and report.yaml in its working directory.
    const log = createWriteStream(join(work, 'output.log'));
    const code = await new Promise<number | null>((res, rej) => {
        const proc = spawn(binary, [...args, '--ginkgo.json-report=report.json', '--ginkgo.junit-report=junit.xml'], { cwd: work, stdio: ['ignore', 'pipe', 'pipe'] });
        proc.stdout.pipe(log, { end: false });
        proc.stderr.pipe(log, { end: false });
        proc.on('error', rej);
        proc.on('close', res);
    });
    await new Promise((r) => log.end(r));
    const seconds = Math.round((Date.now() - started) / 1000);
    const dir = join(kept, name);
    mkdirSync(dir, { recursive: true });
    for (const f of ['report.json', 'junit.xml', 'report.html', 'report.yaml', 'output.log']) {
        try {
            cpSync(join(work, f), join(dir, f));
        } catch {
            // A suite that failed early writes only some of them; what is there is kept.
        }
    }
    rmSync(work, { recursive: true, force: true });
    let reports: { SpecReports?: SpecReport[] | null }[];
    try {
        reports = JSON.parse(readFileSync(join(dir, 'report.json'), 'utf8'));
    } catch (err) {
        const out = readFileSync(join(dir, 'output.log'), 'utf8');
        assert.fail(`the suite (${name}) wrote no JSON report (exit ${code}): ${(err as Error).message}\n${out.slice(-8000)}`);
    }
    return { name, code, seconds, specs: reports.flatMap((r) => r.SpecReports ?? []).filter((s) => s.LeafNodeType === 'It') };
}

const TITLE = 'the MCS conformance suite, all of it, on real nodes: every spec passes';
const suite = unsupported ? { skip: `cannot run containers here: ${unsupported}` } : await setUp('the conformance suite (hack/mcs-conformance.sh)', () => conformanceSuite());
if ('skip' in suite) test(TITLE, { skip: suite.skip }, () => undefined);
else await conformanceRun(suite.binary);

/** Top-level set-up (two grown clusters with a real node each) and the one test. */
async function conformanceRun(binary: string): Promise<void> {
    const setUpStarted = Date.now();
    const set = await startMcsSet('mcsconf', { controllers: {}, address: NODE_IP, extraApiserverArgs: [...NODE_APISERVER_ARGS, ...SINGLE_STACK], flat: true });
    const images = await setUp("the suite's stand-in images", () => suiteImages());
    await setUp('a real node in each cluster', () => startRealNodes(set, images));
    test(TITLE, { timeout: 30 * 60_000 }, async (t) => {
        rmSync(keptDir, { recursive: true, force: true });
        mkdirSync(keptDir, { recursive: true });
        // Admin tokens: kept out of the reports' folder, and removed whatever happens.
        const secrets = mkdtempSync(join(tmpdir(), 'mcs-conformance-kubeconfig-'));
        t.after(() => rmSync(secrets, { recursive: true, force: true }));
        const kubeconfig = join(secrets, 'kubeconfig');
        const contexts = joinedKubeconfig(set, kubeconfig);
        const version = JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')).version as string;
        const args = [
            '--kubeconfig', kubeconfig,
            '--contexts', contexts.join(','),
            '--ginkgo.no-color',
            '--ginkgo.v',
            '--ginkgo.timeout=25m',
            '--project', 'mesh-endpoints',
            '--version', version,
        ];
        const started = Date.now();
        t.diagnostic(`set-up (two grown clusters with a real node each, CRDs, Links, two service mirrors): ${Math.round((started - setUpStarted) / 1000)} s`);
        const shards = await Promise.all([runShard(binary, 'shard-1', [...args, `--ginkgo.focus=${SHARD}`], keptDir), runShard(binary, 'shard-2', [...args, `--ginkgo.skip=${SHARD}`], keptDir)]);
        const seconds = Math.round((Date.now() - started) / 1000);
        t.diagnostic(`MCS conformance reports kept in ${keptDir}/shard-{1,2} (the suite ran ${seconds} s: ${shards.map((s) => `${s.name} ${s.seconds} s, exit ${s.code}`).join('; ')})`);

        const ran = shards.flatMap((s) => s.specs).filter((s) => s.State !== 'skipped' && s.State !== 'pending');
        const passed = ran.filter((s) => s.State === 'passed');
        const failed = ran.filter((s) => s.State !== 'passed');
        const required = ran.filter((s) => specLabels(s).includes('Required')).length;
        t.diagnostic(`MCS conformance: ${passed.length}/${ran.length} passed (${required} Required, ${ran.length - required} Optional)`);
        for (const s of failed) {
            console.error(
                `--- FAILED [${s.State}] ${specName(s)} [${specLabels(s).join(', ')}]\n` +
                    `${s.Failure?.Location?.FileName ?? ''}:${s.Failure?.Location?.LineNumber ?? ''}\n${s.Failure?.Message ?? ''}\n` +
                    `${s.CapturedGinkgoWriterOutput ?? ''}${s.CapturedStdOutErr ?? ''}`,
            );
        }
        assert.deepEqual(failed.map((s) => `${specName(s)}: ${s.State}`), [], 'every spec that ran passed');
        assert.equal(new Set(ran.map(specName)).size, ran.length, 'no spec ran twice');
        assert.equal(ran.length, EXPECTED_SPECS, `every spec of the suite ran (${ran.map(specName).join('; ')})`);
        assert.ok(shards.every((s) => s.specs.some((r) => r.State === 'passed')), 'each process ran specs');
        assert.deepEqual(shards.map((s) => s.code), [0, 0], 'the suite exits 0');
    });
}
