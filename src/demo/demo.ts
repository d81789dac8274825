// `make demo`: both controllers on the embedded local control plane, run through their CLI as
// a user would. Starts cluster "demo" and installs our CRDs; then the external-workloads part
// (external-workloads.ts) and the two-cluster service mirror through a hostname gateway
// (service-mirror.ts, which brings its own second cluster). Everything it starts is stopped
// at the end, also when a step fails; KEEP_CLUSTER=1 leaves the clusters running.
import { KubeRest } from '../kube/rest.js';
import { down, up } from '../testing/cluster.js';
import { installCrds } from '../testing/crds.js';
import { kubeConfigFor } from '../testing/harness.js';
import { externalWorkloadsDemo } from './external-workloads.js';
import { say, step } from './narrate.js';
import { serviceMirrorDemo } from './service-mirror.js';

async function main(): Promise<void> {
    step('starting the local control plane "demo" (etcd + kube-apiserver built from their Go modules)');
    // Fresh every time: a cluster kept by an earlier KEEP_CLUSTER run still holds its objects.
    await down('demo');
    const state = await up('demo');
    say(`kube-apiserver ${state.server}, kubeconfig ${state.kubeconfig}`);
    const rest = new KubeRest(kubeConfigFor(state));
    try {
        step('installing the CRDs from charts/mesh-endpoints/crds/ (ExternalWorkload, Link)');
        await installCrds(rest);

        say('\n#### Part 1: external workloads ####');
        await externalWorkloadsDemo(state, rest);

        say('\n#### Part 2: a two-cluster service mirror through a hostname gateway (EKS) ####');
        await serviceMirrorDemo(state, rest);
    } finally {
        rest.close();
        if (process.env.KEEP_CLUSTER) say(`\ncluster kept running: KUBECONFIG=${state.kubeconfig}`);
        else {
            step('stopping the local control plane "demo"');
            await down('demo');
        }
    }
}

main().catch((err: Error) => {
    process.stderr.write(`demo failed: ${err.message}\n`);
    process.exit(1);
});
