// The Helm chart keeps up with the CLI: every controller flag is set from a value, and the
// chart's README documents every value with its default. (Rendering and installing the chart
// is tested against a real apiserver in test/integration/chart.test.ts and install.test.ts.)
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { Command } from 'commander';
import { parse } from 'yaml';
import { externalWorkloadsCommand } from './external-workloads.js';
import { serviceMirrorCommand } from './service-mirror.js';

const chartDir = 'charts/mesh-endpoints';
/**
 * Flags the chart leaves out on purpose: the pod's own credentials, --identity, which defaults
 * to $POD_NAME, and --webhook-cert-dir (files need a volume; the chart takes a Secret instead).
 */
const notFromValues = new Set(['--kubeconfig', '--identity', '--webhook-cert-dir']);

function templatesText(dir = join(chartDir, 'templates')): string {
    return readdirSync(dir, { withFileTypes: true })
        .map((e) => (e.isDirectory() ? templatesText(join(dir, e.name)) : readFileSync(join(dir, e.name), 'utf8')))
        .join('\n');
}

function longFlags(register: (program: Command) => void): string[] {
    const program = new Command();
    register(program);
    const command = program.commands[0]!;
    return command.options.map((o) => o.long!).filter((f) => !notFromValues.has(f));
}

/** Leaf paths of a values tree with their values; empty maps and lists are leaves. */
function leaves(node: unknown, path: string[] = []): [string, unknown][] {
    if (node && typeof node === 'object' && !Array.isArray(node) && Object.keys(node).length > 0) {
        return Object.entries(node).flatMap(([k, v]) => leaves(v, [...path, k]));
    }
    return [[path.join('.'), node]];
}

function shown(value: unknown): string {
    if (typeof value === 'string') return value === '' ? '""' : value;
    if (Array.isArray(value) && value.length > 0) return `[${value.join(', ')}]`;
    return JSON.stringify(value);
}

describe('charts/mesh-endpoints', () => {
    const templates = templatesText();
    for (const [name, register] of [
        ['external-workloads', externalWorkloadsCommand],
        ['service-mirror', serviceMirrorCommand],
    ] as const) {
        it(`sets every flag of ${name} from a value`, () => {
            const missing = longFlags(register).filter((flag) => !templates.includes(`${flag}=`));
            assert.deepEqual(missing, [], 'flags the chart does not set: add a value to charts/mesh-endpoints/values.yaml, pass it in templates/<controller>/deployment.yaml, document it in the chart README (or list the flag in notFromValues with the reason)');
        });
    }

    it('documents every value in its README with the default of values.yaml', () => {
        const readme = readFileSync(join(chartDir, 'README.md'), 'utf8').split(/^## Values$/m)[1]!.split(/^## /m)[0]!;
        const rows = new Map<string, string>();
        for (const match of readme.matchAll(/^\| `([^`]+)` \| (.*?) \|/gm)) rows.set(match[1]!, match[2]!.trim());
        const values = parse(readFileSync(join(chartDir, 'values.yaml'), 'utf8')) as object;
        const problems: string[] = [];
        for (const [path, value] of leaves(values)) {
            const documented = [...rows.keys()].find((key) => path === key || path.startsWith(`${key}.`));
            if (!documented) problems.push(`${path}: not in README.md`);
            else if (documented === path && rows.get(path) !== `\`${shown(value)}\``) {
                problems.push(`${path}: README says ${rows.get(path)}, values.yaml has ${shown(value)}`);
            }
        }
        for (const key of rows.keys()) {
            if (!leaves(values).some(([path]) => path === key || path.startsWith(`${key}.`))) problems.push(`${key}: in README.md, not in values.yaml`);
        }
        assert.deepEqual(problems, []);
    });
});
