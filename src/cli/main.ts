#!/usr/bin/env node
// mesh-endpoints: one binary, one subcommand per controller, plus `link`.
import { Command } from 'commander';
import { externalWorkloadsCommand } from './external-workloads.js';
import { linkCommand } from './link.js';
import { serviceMirrorCommand } from './service-mirror.js';

const program = new Command('mesh-endpoints')
    .description('EndpointSlices for ExternalWorkloads and mirrored multicluster Services')
    .showHelpAfterError();
externalWorkloadsCommand(program);
serviceMirrorCommand(program);
linkCommand(program);
await program.parseAsync(process.argv);
