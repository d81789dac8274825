#!/usr/bin/env -S node --max-semi-space-size=8
// The mesh-endpoints command (its subcommands are in program.ts).
//
// The node flags of the first line are the ones the CLI runs with: the image's ENTRYPOINT
// repeats them (src/cli/bundle.test.ts keeps the two equal) and the benchmarks read them off the
// bundle. Why: V8 grows its young generation up to 2 x 16 MB once much of what it allocates
// survives, as the objects cached from the initial lists do, and keeps it grown; at 1 000
// Services x 10 workloads that was 33 MB of a 124 MB peak RSS. Capped at 2 x 4 MB the peak is
// about 107 MB, for CPU within the noise (+2 %); 2 MB gives 102 MB for +6 % CPU (docs/benchmarks.md,
// "The peak: V8's young generation").
import { buildProgram } from './program.js';

await buildProgram().parseAsync(process.argv);
