// Runs every unit test file (src/**/*.test.ts) in this one process, for `make unit`.
// `node --test` would start a process per file, and on two cores paying tsx's start-up
// ~60 times took longer than the tests themselves. The files are pure or use only their
// own loopback servers, so sharing a process changes nothing they assert. To run one
// file alone: node --import tsx --test --test-reporter=spec src/path/to/file.test.ts
import { readdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';

const src = resolve(dirname(fileURLToPath(import.meta.url)), '../src');
const files = readdirSync(src, { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.test.ts'))
    .sort();

// One suite around them all: its tests are known before any runs, so --test-force-exit
// waits for every file, and a file's top-level after() hooks run once all are done.
// A file that fails to load is a failed test of its own; the others still run.
describe('unit tests', async () => {
    for (const file of files) {
        await import(pathToFileURL(join(src, file)).href).catch((err: unknown) =>
            it(`loads ${file}`, () => {
                throw err;
            }),
        );
    }
});
