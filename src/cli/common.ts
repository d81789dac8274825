// What every mesh-endpoints command shares: loading a kubeconfig, parsing flag values,
// and turning a failure into a message and a non-zero exit.
import { KubeConfig } from '@kubernetes/client-node';
import { InvalidArgumentError } from 'commander';
import { parseDurationMs } from '../servicemirror/link.js';

/** --kubeconfig, else in-cluster config, else the default kubeconfig ($KUBECONFIG, ~/.kube/config). */
export function loadKubeConfig(path?: string): KubeConfig {
    const kc = new KubeConfig();
    if (path) kc.loadFromFile(path);
    else if (process.env.KUBERNETES_SERVICE_HOST) kc.loadFromCluster();
    else kc.loadFromDefault();
    if (!kc.getCurrentCluster()) throw new Error('no cluster in the kubeconfig');
    return kc;
}

export function durationFlag(text: string): number {
    const ms = parseDurationMs(text);
    if (ms === null || ms < 0) throw new InvalidArgumentError(`"${text}" is not a duration such as 500ms, 5s, 1m or 1h`);
    return ms;
}

export function intFlag(min: number, max: number) {
    return (text: string): number => {
        const n = Number(text);
        if (!Number.isInteger(n) || n < min || n > max) throw new InvalidArgumentError(`must be an integer in ${min}..${max}`);
        return n;
    };
}

export function fail(err: unknown): never {
    process.stderr.write(`mesh-endpoints: ${(err as Error).message ?? String(err)}\n`);
    process.exit(1);
}
