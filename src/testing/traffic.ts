// Requests made from inside a Pod of a real node (node.ts with its data plane), as a user's Pod
// makes them: names resolved by the cluster's DNS (the Pod's resolv.conf, from the kubelet's
// clusterDNS), Service addresses led by kube-proxy's rules. The Pod runs the netshoot stand-in
// (suite-images.ts); commands reach it through pods/exec (pod-exec.ts).
// - An HTTP request is curl when the image has it, else busybox wget (the stand-in's): each is
//   bounded to 2 s, and its answer is the body's first line or `fail`.
// - A RequestLoop makes requests for a bounded time, about ten a second, and stamps each answer
//   with the time it reached this process: what a test measures "traffic stopped or moved" with.
//   It ends at its deadline or when stopped (a file in the Pod the loop checks).
import type { KubeConfig, V1Pod } from '@kubernetes/client-node';
import type { KubeRest } from '../kube/rest.js';
import { isAlreadyExists } from '../kube/errors.js';
import { eventually } from './harness.js';
import { podExec, type ExecResult } from './pod-exec.js';

/** The MCS conformance suite's request image; here the stand-in (suite-images.ts). */
export const CLIENT_IMAGE = 'docker.io/nicolaka/netshoot:v0.15';

/**
 * `fetch URL`: prints the body, fails on an error or a non-2xx; 2 s at most. busybox 1.35's wget
 * (Debian's busybox-static) dies of a segmentation fault on its own -T: `timeout` bounds it instead.
 */
const FETCH = 'fetch() { if command -v curl >/dev/null 2>&1; then curl -fsS -m 2 "$1"; else timeout 2 wget -qO- "$1"; fi; }';

export interface Answer {
    /** When this process read it (ms, Date.now()). */
    at: number;
    /** The body's first line, or `fail`. */
    answer: string;
}

function firstLine(text: string): string {
    return text.split('\n')[0]!.trim();
}

export class PodClient {
    private loops = 0;

    private constructor(
        private readonly kubeConfig: KubeConfig,
        readonly namespace: string,
        readonly pod: string,
        private readonly container: string,
    ) {}

    /** Creates Pod `name` in `namespace` (CLIENT_IMAGE, never pulled) and waits until it runs. */
    static async start(admin: KubeRest, kubeConfig: KubeConfig, namespace: string, name: string): Promise<PodClient> {
        const pod: V1Pod = {
            metadata: { name },
            spec: {
                // sh as PID 1 ignores SIGTERM: no grace period to wait out.
                terminationGracePeriodSeconds: 0,
                containers: [{ name: 'client', image: CLIENT_IMAGE, imagePullPolicy: 'Never', command: ['/bin/sh', '-c', 'while :; do sleep 3600; done'] }],
            },
        };
        // The namespace's default ServiceAccount comes from kube-controller-manager, shortly after the namespace.
        await eventually(`Pod ${namespace}/${name} created`, async () => {
            await admin.create(`/api/v1/namespaces/${namespace}/pods`, pod).catch((err: unknown) => {
                if (!isAlreadyExists(err)) throw err;
            });
            return true;
        }, 30_000);
        await eventually(`Pod ${namespace}/${name} running`, async () => {
            const p = await admin.get<V1Pod>(`/api/v1/namespaces/${namespace}/pods/${name}`);
            return p.status?.phase === 'Running' && !!p.status.containerStatuses?.every((c) => c.ready);
        }, 120_000);
        return new PodClient(kubeConfig, namespace, name, 'client');
    }

    /** Runs `script` with sh in the Pod. */
    sh(script: string, timeoutMs = 30_000, onStdout?: (chunk: string) => void): Promise<ExecResult> {
        return podExec(this.kubeConfig, this.namespace, this.pod, this.container, ['/bin/sh', '-c', script], { timeoutMs, onStdout });
    }

    /** One GET of `url`: the body's first line, or `fail`. */
    async get(url: string): Promise<string> {
        const { stdout } = await this.sh(`${FETCH}\nr=$(fetch '${url}' 2>/dev/null) && echo "$r" || echo fail`, 15_000);
        return firstLine(stdout);
    }

    /** The IPv4 addresses the cluster's DNS gives `name` (`nslookup -type=A`), sorted; [] when none. */
    async lookup(name: string): Promise<string[]> {
        const { stdout } = await this.sh(`nslookup -type=A '${name}'`, 15_000);
        // The server's own lines come before the first `Name:`.
        const answers = stdout.split('\n').slice(stdout.split('\n').findIndex((l) => l.startsWith('Name:')));
        return answers
            .map((l) => /^Address:\s*([\d.]+)$/.exec(l.trim())?.[1])
            .filter((a): a is string => !!a)
            .sort();
    }

    /** Requests `url` for at most `seconds`, about ten a second, until stopped. */
    loop(url: string, seconds: number): RequestLoop {
        const stopFile = `/tmp/stop-loop-${++this.loops}`;
        const script = [
            FETCH,
            `end=$(( $(date +%s) + ${seconds} ))`,
            `while [ "$(date +%s)" -lt "$end" ] && [ ! -e ${stopFile} ]; do`,
            `  r=$(fetch '${url}' 2>/dev/null) && echo "$r" || echo fail`,
            '  sleep 0.1',
            'done',
        ].join('\n');
        return new RequestLoop(this, script, stopFile, seconds);
    }
}

export class RequestLoop {
    readonly answers: Answer[] = [];
    /** Resolves when the loop has ended (its deadline, or stop()). */
    readonly done: Promise<ExecResult>;
    private partial = '';

    constructor(
        private readonly client: PodClient,
        script: string,
        private readonly stopFile: string,
        seconds: number,
    ) {
        this.done = client.sh(script, seconds * 1000 + 30_000, (chunk) => this.read(chunk));
        // Read through answers; a failed exec is reported by whoever awaits done.
        this.done.catch(() => undefined);
    }

    private read(chunk: string): void {
        const lines = (this.partial + chunk).split('\n');
        this.partial = lines.pop()!;
        const at = Date.now();
        for (const line of lines.filter((l) => l.trim())) this.answers.push({ at, answer: line.trim() });
    }

    since(t: number): Answer[] {
        return this.answers.filter((a) => a.at >= t);
    }

    /** Ends the loop and waits for its last answers. */
    async stop(): Promise<Answer[]> {
        await this.client.sh(`touch ${this.stopFile}`, 15_000);
        await this.done;
        return this.answers;
    }
}
