// The one place the code gets zod from (`import * as z from '../zod.js'`): zod/mini, the same
// checks and parser as zod's default build without a method set on every schema object, with
// zod's English messages (which the default build loads itself, and our Events and Link
// conditions quote). zod's default build cost every process about 1.5 MB of heap and 4 MB of
// RSS (docs/benchmarks.md, "Where the memory goes"). A re-export, not an object holding zod:
// the bundle then keeps only what is used (not every locale).
import { en } from 'zod/locales';
import { config } from 'zod/mini';

config(en());

export * from 'zod/mini';
