// `npm run --silent cluster -- up|down|restart-apiserver|list NAME`: the local control
// plane from the command line. `up` prints the kubeconfig path as its last stdout line.
// `up NAME --controllers [--kwok-nodes N]` grows it: kube-controller-manager, kube-scheduler
// and kwok with N simulated nodes (src/testing/controllers.ts).
import { down, listClusters, orphanClusters, restartApiserver, up, type UpOptions } from './cluster.js';

async function main(argv: string[]): Promise<void> {
    const [verb, name, ...flags] = argv;
    switch (verb) {
        case 'up': {
            if (!name) throw new Error('usage: cluster up NAME [--controllers [--kwok-nodes N]]');
            const state = await up(name, upOptions(flags));
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
            throw new Error('usage: cluster up NAME [--controllers [--kwok-nodes N]] | down NAME|--all|--orphans | restart-apiserver NAME | list');
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
