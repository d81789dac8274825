// A kubeconfig we did not write and must not obey blindly: a Link's credentials Secret, which
// whoever may write Secrets in the Links' namespace controls. client-node runs an `exec` plugin
// or an auth provider's command as our process, reads any file a kubeconfig names (a token
// file, a CA, a client key: the controller's own ServiceAccount token among them) and sends
// what it read to the server the kubeconfig names. So the YAML is read here first, with our
// own schema, and only the inline material of the current context (server, CA data, token,
// client certificate and key data, TLS server name) reaches client-node, through
// loadFromOptions: what is refused is never handed to it. Flux (--insecure-kubeconfig-exec,
// --insecure-kubeconfig-tls), Argo CD and Cluster API treat kubeconfig Secrets the same way.
// Pure: no file, process or network is touched.
import { parse } from 'yaml';
import * as z from '../zod.js';
import { KubeConfig } from './kubeconfig.js';

/** What an operator has chosen to trust beyond inline material (the service mirror's flags). */
export interface KubeconfigPolicy {
    /**
     * --allow-kubeconfig-exec: exec plugins and auth providers (which run commands) and local
     * file paths (tokenFile, certificate-authority, client-certificate, client-key). One flag
     * for both: a kubeconfig that may run a command may read any file anyway.
     */
    allowExec: boolean;
    /** --allow-insecure-remote-tls: insecure-skip-tls-verify: true, and an http:// server. */
    allowInsecureTls: boolean;
}

export const STRICT_POLICY: KubeconfigPolicy = { allowExec: false, allowInsecureTls: false };

export const ALLOW_EXEC_FLAG = '--allow-kubeconfig-exec';
export const ALLOW_INSECURE_TLS_FLAG = '--allow-insecure-remote-tls';

/** One field the policy refuses: the condition reason names it, the message says where and why. */
export interface Refusal {
    /** CamelCase, for a condition or Event reason: ExecNotAllowed, TokenFileNotAllowed, ... */
    reason: string;
    /** Where in the kubeconfig, e.g. `users["east"].user.exec`. */
    field: string;
    message: string;
}

export type UntrustedKubeconfig = { kubeConfig: KubeConfig; server: URL } | { refused: Refusal[] } | { invalid: string };

/** Refused fields, in the order they are reported, with what each would make us do. */
const USER_FIELDS = [
    { key: 'exec', reason: 'ExecNotAllowed', why: 'a credential plugin: the command would run as this process', flag: ALLOW_EXEC_FLAG },
    { key: 'auth-provider', reason: 'AuthProviderNotAllowed', why: "an auth provider: it runs commands (gcp's cmd-path) or reads files (tokenFile)", flag: ALLOW_EXEC_FLAG },
    { key: 'tokenFile', reason: 'TokenFileNotAllowed', why: "a local file whose content would be sent as the token (this process's own ServiceAccount token, say)", flag: ALLOW_EXEC_FLAG },
    // client-node's own spelling of tokenFile: it reads the file while loading the kubeconfig.
    { key: 'token-file', reason: 'TokenFileNotAllowed', why: 'a local file whose content would be sent as the token', flag: ALLOW_EXEC_FLAG },
    { key: 'client-certificate', reason: 'ClientCertificateFileNotAllowed', why: 'a local file path (use client-certificate-data)', flag: ALLOW_EXEC_FLAG },
    { key: 'client-key', reason: 'ClientKeyFileNotAllowed', why: 'a local file path (use client-key-data)', flag: ALLOW_EXEC_FLAG },
] as const;

const text = z.optional(z.string());
const clusterSchema = z.looseObject({
    server: z.string(),
    'certificate-authority-data': text,
    'certificate-authority': text,
    'insecure-skip-tls-verify': z.optional(z.boolean()),
    'tls-server-name': text,
    'proxy-url': text,
});
const userSchema = z.looseObject({
    token: text,
    'client-certificate-data': text,
    'client-key-data': text,
    tokenFile: text,
    'token-file': text,
    'client-certificate': text,
    'client-key': text,
    exec: z.optional(z.unknown()),
    'auth-provider': z.optional(z.unknown()),
});
// Lists may be null (an empty YAML key); entries are found by name, as client-go does.
const list = <T extends z.ZodMiniType>(entry: T) => z.optional(z.nullable(z.array(entry)));
const kubeconfigSchema = z.looseObject({
    'current-context': z.string().check(z.minLength(1, 'no current-context')),
    clusters: list(z.looseObject({ name: z.string(), cluster: clusterSchema })),
    users: list(z.looseObject({ name: z.string(), user: z.optional(z.nullable(userSchema)) })),
    contexts: list(z.looseObject({ name: z.string(), context: z.looseObject({ cluster: z.string(), user: text }) })),
});

const present = (value: unknown) => value !== undefined && value !== null && value !== '';

/** The kubeconfig's current context as client-node gets it, or why it may not be used. */
export function loadUntrustedKubeconfig(yamlText: string, policy: KubeconfigPolicy = STRICT_POLICY): UntrustedKubeconfig {
    let raw: unknown;
    try {
        // A kubeconfig has no use for aliases; a few keep an alias bomb from growing.
        raw = parse(yamlText, { maxAliasCount: 10 });
    } catch (err) {
        return { invalid: `not YAML: ${(err as Error).message.split('\n')[0]}` };
    }
    const parsed = kubeconfigSchema.safeParse(raw);
    if (!parsed.success) return { invalid: parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ') };
    const config = parsed.data;
    const contextName = config['current-context'];
    const context = config.contexts?.find((c) => c.name === contextName)?.context;
    if (!context) return { invalid: `current-context ${JSON.stringify(contextName)} names no context` };
    const cluster = config.clusters?.find((c) => c.name === context.cluster)?.cluster;
    if (!cluster) return { invalid: `context ${JSON.stringify(contextName)} names cluster ${JSON.stringify(context.cluster)}, which is not in clusters` };
    const userName = context.user ?? '';
    const entry = config.users?.find((u) => u.name === userName);
    const user: z.infer<typeof userSchema> | undefined = userName === '' ? {} : entry && (entry.user ?? {});
    if (!user) return { invalid: `context ${JSON.stringify(contextName)} names user ${JSON.stringify(userName)}, which is not in users` };

    let server: URL;
    try {
        server = new URL(cluster.server);
    } catch {
        return { invalid: `clusters[${JSON.stringify(context.cluster)}].cluster.server ${JSON.stringify(cluster.server)} is not a URL` };
    }
    if (server.protocol !== 'https:' && server.protocol !== 'http:') {
        return { invalid: `clusters[${JSON.stringify(context.cluster)}].cluster.server must be an https:// URL, not ${server.protocol}` };
    }

    const refused: Refusal[] = [];
    const refuse = (reason: string, field: string, why: string, flag?: string) =>
        refused.push({ reason, field, message: `${field} is refused: ${why}${flag ? `; the service mirror's ${flag} allows it` : ''}` });
    const clusterField = `clusters[${JSON.stringify(context.cluster)}].cluster`;
    if (server.protocol === 'http:' && !policy.allowInsecureTls) {
        refuse('PlainHTTPServerNotAllowed', `${clusterField}.server`, `${server.origin} is plain http: the token would cross the network in clear`, ALLOW_INSECURE_TLS_FLAG);
    }
    if (cluster['insecure-skip-tls-verify'] === true && !policy.allowInsecureTls) {
        refuse('InsecureSkipTLSVerifyNotAllowed', `${clusterField}.insecure-skip-tls-verify`, 'the server would not be verified, so anyone in the path gets the token', ALLOW_INSECURE_TLS_FLAG);
    }
    if (present(cluster['certificate-authority']) && !policy.allowExec) {
        refuse('CertificateAuthorityFileNotAllowed', `${clusterField}.certificate-authority`, 'a local file path (use certificate-authority-data)', ALLOW_EXEC_FLAG);
    }
    // Our transport has no proxy support: connecting directly instead is not what was asked.
    if (present(cluster['proxy-url'])) refuse('ProxyURLNotAllowed', `${clusterField}.proxy-url`, 'proxies are not supported for remote clusters');
    const userField = `users[${JSON.stringify(userName)}].user`;
    for (const field of USER_FIELDS) {
        if (present(user[field.key]) && !policy.allowExec) refuse(field.reason, `${userField}.${field.key}`, field.why, field.flag);
    }
    if (refused.length > 0) return { refused };

    const tokenFile = user.tokenFile ?? user['token-file'];
    const kubeConfig = new KubeConfig();
    kubeConfig.loadFromOptions({
        clusters: [
            {
                name: context.cluster,
                server: cluster.server.replace(/\/$/, ''),
                caData: cluster['certificate-authority-data'],
                caFile: cluster['certificate-authority'],
                // client-node refuses an http:// server unless told to skip TLS verification: there is none.
                skipTLSVerify: cluster['insecure-skip-tls-verify'] === true || server.protocol === 'http:',
                tlsServerName: cluster['tls-server-name'],
            },
        ],
        users: [
            {
                name: userName,
                token: user.token,
                certData: user['client-certificate-data'],
                keyData: user['client-key-data'],
                certFile: user['client-certificate'],
                keyFile: user['client-key'],
                exec: user.exec,
                // client-node reads a token file through its tokenFile auth provider (re-read every minute).
                authProvider: user['auth-provider'] ?? (tokenFile ? { name: 'tokenFile', config: { tokenFile } } : undefined),
            },
        ],
        contexts: [{ name: contextName, cluster: context.cluster, user: userName }],
        currentContext: contextName,
    });
    return { kubeConfig, server };
}

/** The words of a refusal, the same in the Link condition, its Event and `check`. */
export function describeRefusals(refused: readonly Refusal[]): string {
    return refused.map((r) => r.message).join('; ');
}
