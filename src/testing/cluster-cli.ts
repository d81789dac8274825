// `npm run --silent cluster -- up|down|restart-apiserver|list NAME`: the local control
// plane from the command line. `up` prints the kubeconfig path as its last stdout line.
// `up NAME --controllers [--kwok-nodes N]` grows it: kube-controller-manager, kube-scheduler
// and kwok with N simulated nodes (src/testing/controllers.ts).
// `up NAME --node` (root): the cluster in a network namespace of its own with a real node,
// node-0 (src/testing/node.ts), the image `make image` built imported; it prints how to enter.
import { imageRef } from '../../hack/image/config.js';
import { down as downCluster, listClusters, orphanClusters, readState, restartApiserver, up, writeState, type UpOptions } from './cluster.js';
import { productImage } from './image.js';
import { inNodeNamespace, madeMountPoints, NODE_CGROUP, NODE_IP, reexecInNodeNamespace, tearDownNodeNamespace } from './node-namespace.js';
import { NODE_APISERVER_ARGS, startNode } from './node.js';

/** Brings cluster `name` down, and the namespace of its node with it. */
async function down(name: string): Promise<void> {
    const state = readState(name);
    if (state?.node) tearDownNodeNamespace(state.apiserverPid || state.etcdPid, state.node.madeDirs, state.node.cgroup);
    await downCluster(name);
}

async function main(argv: string[]): Promise<void> {
    const [verb, name, ...flags] = argv;
    switch (verb) {
        case 'up': {
            if (!name) throw new Error('usage: cluster up NAME [--controllers [--kwok-nodes N]] [--node]');
            const withNode = flags.includes('--node');
            if (withNode && !inNodeNamespace()) await reexecInNodeNamespace({ keep: true });
            const opts = upOptions(flags.filter((f) => f !== '--node'));
            const state = await up(name, withNode ? { ...opts, address: NODE_IP, extraApiserverArgs: NODE_APISERVER_ARGS, controllers: opts.controllers ?? {} } : opts);
            if (withNode && !state.node) {
                await startNode(state, 'node-0', [{ archive: await productImage(), baseName: imageRef().split(':')[0]! }]);
                writeState({ ...state, node: { name: 'node-0', madeDirs: madeMountPoints(), cgroup: NODE_CGROUP } });
                process.stderr.write(`node node-0 Ready; enter its namespace with: nsenter --target ${state.apiserverPid} --net --mount\n`);
            }
            process.stderr.write(`cluster ${name}: ${state.server} (etcd 127.0.0.1:${state.etcdPort})\n`);
            process.stdout.write(`${state.kubeconfig}\n`);
            return;
        }
        case 'down':
            if (name === '--all' || name === '--orphans') {
                for (const each of name === '--all' ? listClusters() : orphanClusters()) await down(each);
            } else if (name) {
                await down(name);
            } else {
                throw new Error('usage: cluster down NAME|--all|--orphans');
            }
            return;
        case 'restart-apiserver':
            if (!name) throw new Error('usage: cluster restart-apiserver NAME');
            await restartApiserver(name);
            return;
        case 'list':
            for (const each of listClusters()) process.stdout.write(`${each}\n`);
            return;
        default:
            throw new Error('usage: cluster up NAME [--controllers [--kwok-nodes N]] [--node] | down NAME|--all|--orphans | restart-apiserver NAME | list');
    }
}

function upOptions(flags: string[]): UpOptions {
    const opts: UpOptions = {};
    for (let i = 0; i < flags.length; i++) {
        if (flags[i] === '--controllers') opts.controllers ??= {};
        else if (flags[i] === '--kwok-nodes' && /^\d+$/.test(flags[i + 1] ?? '')) opts.controllers = { ...opts.controllers, kwokNodes: Number(flags[++i]) };
        else throw new Error(`cluster up: unknown flag ${flags[i]} (--controllers, --kwok-nodes N)`);
    }
    return opts;
}

main(process.argv.slice(2)).catch((err: Error) => {
    process.stderr.write(`cluster: ${err.message}\n`);
    process.exit(1);
});
