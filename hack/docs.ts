// `make docs`: rewrites the generated parts of docs/ (the flag tables of configuration.md)
// from the commands themselves.
import { readFileSync, writeFileSync } from 'node:fs';
import { flagsMarkdown, withFlags } from '../src/cli/flags-doc.js';
import { buildProgram } from '../src/cli/program.js';

delete process.env.POD_NAMESPACE;
delete process.env.POD_NAME;
const path = 'docs/configuration.md';
writeFileSync(path, withFlags(readFileSync(path, 'utf8'), flagsMarkdown(buildProgram())));
process.stdout.write(`${path}: flag tables rewritten\n`);
