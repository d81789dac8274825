// A command run in a Pod's container as `kubectl exec` runs it: a websocket to kube-apiserver's
// pods/exec (client-node's Exec, channel protocol v5 or v4), which asks the kubelet, which asks
// containerd's stream server. Used by the traffic tests to make requests from inside a Pod.
// Every call has a deadline: at the deadline the websocket is closed and the call fails, but the
// command may run on in the container until it ends by itself, so the commands given here are
// bounded themselves (a request's own timeout, a loop's count).
import { Exec, type KubeConfig, type V1Status } from '@kubernetes/client-node';
import { Writable } from 'node:stream';

export interface ExecResult {
    /** The command's exit code (from the status the kubelet sends at the end). */
    code: number;
    stdout: string;
    stderr: string;
}

export interface ExecOptions {
    /** Default: 30 s. */
    timeoutMs?: number;
    /** Each chunk of stdout as it comes (a command that prints as it goes, read while it runs). */
    onStdout?: (chunk: string) => void;
}

function collector(onChunk?: (chunk: string) => void): { stream: Writable; text: () => string } {
    let text = '';
    const stream = new Writable({
        write(chunk: Buffer, _encoding, done) {
            const s = chunk.toString('utf8');
            text += s;
            onChunk?.(s);
            done();
        },
    });
    return { stream, text: () => text };
}

/** The exit code a V1Status carries: 0 on Success, the ExitCode cause on NonZeroExitCode, else -1. */
function exitCode(status: V1Status): number {
    if (status.status === 'Success') return 0;
    const cause = status.details?.causes?.find((c) => c.reason === 'ExitCode');
    return cause?.message !== undefined ? Number(cause.message) : -1;
}

/** Runs `command` in `container` of Pod `namespace/pod` and resolves once it ends, whatever its exit code. */
export async function podExec(kubeConfig: KubeConfig, namespace: string, pod: string, container: string, command: string[], opts: ExecOptions = {}): Promise<ExecResult> {
    const timeoutMs = opts.timeoutMs ?? 30_000;
    const stdout = collector(opts.onStdout);
    const stderr = collector();
    let status: V1Status | undefined;
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<never>((_, fail) => {
        timer = setTimeout(() => fail(new Error(`exec in ${namespace}/${pod} timed out after ${timeoutMs} ms: ${command.join(' ')}`)), timeoutMs);
    });
    const connecting = new Exec(kubeConfig).exec(namespace, pod, container, command, stdout.stream, stderr.stream, null, false, (s) => (status = s));
    try {
        const ws = await Promise.race([connecting, deadline]);
        try {
            await Promise.race([new Promise((done) => ws.once('close', done)), deadline]);
        } finally {
            ws.close();
        }
    } finally {
        clearTimeout(timer);
        // A connection made after the deadline is closed too.
        void connecting.then((ws) => ws.close(), () => undefined);
    }
    if (!status) throw new Error(`exec in ${namespace}/${pod} ended with no status: ${command.join(' ')}; stderr: ${stderr.text()}`);
    return { code: exitCode(status), stdout: stdout.text(), stderr: stderr.text() };
}
