#!/usr/bin/env node
// The mesh-endpoints command (its subcommands are in program.ts).
import { buildProgram } from './program.js';

await buildProgram().parseAsync(process.argv);
