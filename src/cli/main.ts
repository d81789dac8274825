#!/usr/bin/env -S node --max-semi-space-size=8 --interrupt-budget=270336
// The mesh-endpoints command (its subcommands are in program.ts).
//
// The node flags of the first line are the ones the CLI runs with: the image's ENTRYPOINT
// repeats them (src/cli/bundle.test.ts keeps the two equal) and the benchmarks read them off the
// bundle. Why: V8 grows its young generation up to 2 x 16 MB once much of what it allocates
// survives, as the objects cached from the initial lists do, and keeps it grown; at 1 000
// Services x 10 workloads that was 33 MB of a 124 MB peak RSS. Capped at 2 x 4 MB the peak is
// about 107 MB, for CPU within the noise (+2 %); 2 MB gives 102 MB for +6 % CPU (docs/benchmarks.md,
// "The peak: V8's young generation").
// --interrupt-budget=270336, 4 x V8's default: a function goes to TurboFan after four times as
// much interpreted work. A fresh process's initial sync then spends 0.17 instead of 0.56 ms of
// V8's compiler threads' CPU per slice write (1.33 against 1.67 ms of controller CPU, medians
// of 4 alternating runs), CPU the apiserver and etcd need on the same cores; a long-running
// controller's hot code is optimised all the same, seconds later (docs/benchmarks.md, "V8's
// warm-up in a fresh process").
import { buildProgram } from './program.js';

await buildProgram().parseAsync(process.argv);
