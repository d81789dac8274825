// `mesh-endpoints link`: prepares a remote cluster to be mirrored and prints what the local
// cluster needs as YAML, for `kubectl apply -f -`: the service mirror's credentials Secret,
// Linkerd destination's Secret when the Link enables remote discovery or federated Services
// (--remote-discovery, --federated; in --control-plane-namespace), and the Link. The local
// cluster (--kubeconfig, else kubectl's default) is read for one thing: whether that
// namespace exists. Without it there is no Linkerd to read the Secret and `kubectl apply`
// would fail on it, so it is left out, and said so; a local cluster that cannot be read
// changes nothing (the Secret is written, as asked).
//
// On the remote cluster it creates one ServiceAccount per reader, each bound to a ClusterRole
// with only what that reader lists and watches (src/servicemirror/link/remote-access.ts;
// idempotent), and a token for each through the TokenRequest API (POST
// .../serviceaccounts/NAME/token) with a long expiration (--token-expiration, default one
// year; the apiserver may shorten it). TokenRequest is used rather than a
// kubernetes.io/service-account-token Secret because it needs no token controller, which bare
// control planes (and our test clusters) lack, and the token expires. Run `link` again to get
// fresh tokens before they do; the expiry is printed on stderr. Every kubeconfig it writes is
// first loaded as the service mirror loads it: one the service mirror would refuse is an error.
import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import type { V1Service } from '@kubernetes/client-node';
import { parse } from 'yaml';
import { InvalidArgumentError, Option, type Command } from 'commander';
import { KubeConfig } from '../kube/kubeconfig.js';
import { KubeRest } from '../kube/rest.js';
import { isAlreadyExists } from '../kube/errors.js';
import { collectionPath, ConfigMaps, Namespaces, objectPath, ServiceAccounts, Services } from '../kube/resources.js';
import { ALLOW_INSECURE_TLS_FLAG, describeRefusals, loadUntrustedKubeconfig } from '../kube/untrusted-kubeconfig.js';
import { credentialsSecretName, destinationAccessObjects, gatewaySpecFrom, linkYaml, needsDestination, remoteAccessObjects, remoteKubeconfig, type RemoteReaderObjects } from './link-gen.js';
import { boolFlag, durationOption, fail, loadKubeConfig } from './common.js';
import { getIfExists } from './read.js';

interface Flags {
    kubeconfig?: string;
    remoteKubeconfig: string;
    clusterName: string;
    gatewayService: { namespace: string; name: string };
    namespace: string;
    clusterDomain: string;
    apiServerAddress?: string;
    tokenExpiration: number;
    remoteDiscovery: boolean;
    federated: boolean;
    controlPlaneNamespace: string;
    trustDomain?: string;
    allowInsecureRemoteTls: boolean;
}

const DNS_LABEL = /^[a-z]([-a-z0-9]*[a-z0-9])?$/;

function namespacedName(text: string): { namespace: string; name: string } {
    const [namespace, name, extra] = text.split('/');
    if (!namespace || !name || extra !== undefined) throw new InvalidArgumentError('expected NAMESPACE/NAME');
    return { namespace, name };
}

function clusterNameFlag(text: string): string {
    if (!DNS_LABEL.test(text) || text.length > 63) throw new InvalidArgumentError('must be a DNS label (it suffixes every mirror name)');
    return text;
}

export function linkCommand(program: Command): void {
    program
        .command('link')
        .description('set up read-only access on a remote cluster and print the credentials Secret and Link for this one')
        .option('--kubeconfig <path>', "kubeconfig of this (local) cluster, read only to see whether --control-plane-namespace exists (default: $KUBECONFIG or ~/.kube/config, as kubectl)")
        .requiredOption('--remote-kubeconfig <path>', 'kubeconfig of the remote (target) cluster, with rights to create RBAC objects there')
        .requiredOption('--cluster-name <name>', 'name of the remote cluster: the Link name and the suffix of every mirror', clusterNameFlag)
        .addOption(
            new Option('--gateway-service <ns/name>', 'the remote gateway Service')
                .argParser(namespacedName)
                .default({ namespace: 'linkerd-multicluster', name: 'linkerd-gateway' }, 'linkerd-multicluster/linkerd-gateway'),
        )
        .option('--namespace <ns>', 'namespace of the Link and Secret here, and of the ServiceAccount on the remote', 'linkerd-multicluster')
        .option('--cluster-domain <domain>', "the remote cluster's DNS domain", 'cluster.local')
        .option('--api-server-address <url>', "the remote apiserver's address as the local cluster reaches it (default: the one in --remote-kubeconfig)")
        .addOption(durationOption('--token-expiration <duration>', 'requested lifetime of the remote token', 365 * 24 * 3_600_000))
        .option('--remote-discovery [bool]', "the Link selects remote-discovery Services (mirror.linkerd.io/exported=remote-discovery), which Linkerd's destination resolves in the remote cluster: also writes the destination's Secret where Linkerd runs", boolFlag, true)
        .option('--federated [bool]', "the Link selects federated Service members (mirror.linkerd.io/federated=member), resolved the same way: also writes the destination's Secret where Linkerd runs", boolFlag, true)
        .option('--control-plane-namespace <ns>', "Linkerd's control-plane namespace here, where the destination reads its Secret (left out when the local cluster has no such namespace)", 'linkerd')
        .option('--trust-domain <domain>', "the remote's identity trust domain, for the destination's Secret (default: the remote's linkerd-config, else cluster.local)")
        .option(`${ALLOW_INSECURE_TLS_FLAG} [bool]`, 'write a kubeconfig that skips TLS verification or uses http://, as the remote kubeconfig does (only a service mirror with the same flag accepts it)', boolFlag, false)
        .action((flags: Flags) => run(flags).catch(fail));
}

async function run(flags: Flags): Promise<void> {
    const kubeConfig = loadKubeConfig(flags.remoteKubeconfig);
    const cluster = kubeConfig.getCurrentCluster()!;
    const caPem = cluster.caData ? Buffer.from(cluster.caData, 'base64').toString('utf8') : cluster.caFile ? readFileSync(cluster.caFile, 'utf8') : undefined;
    const kubeconfigOf = (token: string): string =>
        remoteKubeconfig({ clusterName: flags.clusterName, server: flags.apiServerAddress ?? cluster.server, caPem, insecureSkipTlsVerify: cluster.skipTLSVerify, token });
    // Before anything is created on the remote: what would be written must be accepted.
    refuseWhatTheMirrorRefuses(kubeconfigOf('placeholder'), flags.allowInsecureRemoteTls);
    const modes = { remoteDiscovery: flags.remoteDiscovery, federated: flags.federated };
    // Asked first: a Secret left out needs no ServiceAccount and token on the remote either.
    const controlPlane = needsDestination(modes) ? await localNamespace(flags.kubeconfig, flags.controlPlaneNamespace) : undefined;
    const notes: string[] = [];
    const remote = new KubeRest(kubeConfig);
    try {
        const { namespace: gwNamespace, name: gwName } = flags.gatewayService;
        const gateway = await getIfExists<V1Service>(remote, objectPath(Services, gwNamespace, gwName));
        if (!gateway) throw new Error(`gateway Service ${gwNamespace}/${gwName} not found on the remote cluster (see --gateway-service)`);
        const spec = gatewaySpecFrom(gateway);
        if ('error' in spec) throw new Error(spec.error);

        const mirror = await setUpRemoteAccess(remote, flags.namespace, remoteAccessObjects(flags.namespace), flags.tokenExpiration);
        const writeDestination = controlPlane !== undefined && controlPlane !== 'absent';
        const destination = writeDestination ? await setUpRemoteAccess(remote, flags.namespace, destinationAccessObjects(flags.namespace), flags.tokenExpiration) : undefined;
        const trustDomain = destination ? (flags.trustDomain ?? (await remoteTrustDomain(remote))) : undefined;
        process.stdout.write(
            linkYaml({
                clusterName: flags.clusterName,
                namespace: flags.namespace,
                clusterDomain: flags.clusterDomain,
                gateway: spec,
                kubeconfig: kubeconfigOf(mirror.token),
                modes,
                destination: destination && { namespace: flags.controlPlaneNamespace, trustDomain: trustDomain!, kubeconfig: kubeconfigOf(destination.token) },
            }),
        );
        notes.push(
            `gateway ${spec.gatewayAddress}:${spec.gatewayPort}` +
                (spec.probeSpec.path ? `, probed at ${spec.probeSpec.path} on port ${spec.probeSpec.port}` : ', not probed (no probe-path annotation)') +
                `; the remote token expires at ${mirror.expiresAt}, run link again before then`,
        );
        if (controlPlane === 'absent') {
            notes.push(
                `namespace ${flags.controlPlaneNamespace} does not exist in the local cluster, so Linkerd destination's Secret is left out (no Linkerd reads it there); ` +
                    `if Linkerd's control plane runs in another namespace, pass it as --control-plane-namespace`,
            );
        } else if (typeof controlPlane === 'object') {
            notes.push(
                `the local cluster could not be read (${controlPlane.unread}), so Linkerd destination's Secret is written into namespace ${flags.controlPlaneNamespace} as asked; ` +
                    `on a cluster without Linkerd pass --kubeconfig for it, or --remote-discovery=false --federated=false`,
            );
        }
        if (destination) {
            notes.push(
                `Linkerd's destination resolves remote-discovery and federated Services with Secret ${flags.controlPlaneNamespace}/${credentialsSecretName(flags.clusterName)} ` +
                    `(trust domain ${trustDomain}); it reads that Secret only when it is created: to give it a new token, delete the Secret before applying`,
            );
        }
    } finally {
        remote.close();
    }
    // Each a whole line: what follows on the terminal (kubectl's own output) starts on its own.
    process.stderr.write(notes.map((note) => `link ${flags.clusterName}: ${note}\n`).join(''));
}

/**
 * Whether the local cluster has this namespace ('present', 'absent'), or why that cannot be
 * told. kubectl's kubeconfig unless --kubeconfig names one (which must then load); no kubeconfig
 * at all is "cannot be told", not client-node's http://localhost:8080 fallback.
 */
async function localNamespace(path: string | undefined, namespace: string): Promise<'present' | 'absent' | { unread: string }> {
    const kubeConfig = new KubeConfig();
    if (path) kubeConfig.loadFromFile(path);
    else if (!process.env.KUBECONFIG && !existsSync(join(homedir(), '.kube', 'config')) && !process.env.KUBERNETES_SERVICE_HOST) {
        return { unread: 'no kubeconfig: $KUBECONFIG is unset and there is no ~/.kube/config' };
    } else {
        try {
            if (process.env.KUBECONFIG || !process.env.KUBERNETES_SERVICE_HOST) kubeConfig.loadFromDefault();
            else kubeConfig.loadFromCluster();
        } catch (err) {
            return { unread: (err as Error).message };
        }
    }
    if (!kubeConfig.getCurrentCluster()) return { unread: 'no cluster in the kubeconfig' };
    const local = new KubeRest(kubeConfig, { timeoutMs: LOCAL_READ_TIMEOUT_MS });
    try {
        return (await getIfExists(local, objectPath(Namespaces, '', namespace))) ? 'present' : 'absent';
    } catch (err) {
        return { unread: (err as Error).message };
    } finally {
        local.close();
    }
}

/** One GET: a local apiserver that does not answer within it is taken as unreadable, not waited for. */
const LOCAL_READ_TIMEOUT_MS = 5_000;

/** `link` never writes a kubeconfig the service mirror would refuse. */
function refuseWhatTheMirrorRefuses(kubeconfig: string, allowInsecureTls: boolean): void {
    const loaded = loadUntrustedKubeconfig(kubeconfig, { allowExec: false, allowInsecureTls });
    if ('refused' in loaded) {
        throw new Error(
            `the credentials would be refused by the service mirror (${describeRefusals(loaded.refused)}): give the remote apiserver an https address whose certificate --remote-kubeconfig verifies (--api-server-address), or pass ${ALLOW_INSECURE_TLS_FLAG} if the service mirror runs with it`,
        );
    }
    if ('invalid' in loaded) throw new Error(`the credentials kubeconfig would not be usable: ${loaded.invalid}`);
}

/** The remote's identity trust domain, as its linkerd-config says (Linkerd's default when it has none). */
async function remoteTrustDomain(remote: KubeRest): Promise<string> {
    const config = await getIfExists<{ data?: Record<string, string> }>(remote, objectPath(ConfigMaps, 'linkerd', 'linkerd-config'));
    const values = parse(config?.data?.values ?? '') as { identityTrustDomain?: unknown } | null;
    return typeof values?.identityTrustDomain === 'string' && values.identityTrustDomain !== '' ? values.identityTrustDomain : 'cluster.local';
}

/** Idempotent: objects that exist are kept (RBAC objects are brought back to what we need). Returns a new token. */
async function setUpRemoteAccess(rest: KubeRest, namespace: string, objects: RemoteReaderObjects, expirationMs: number): Promise<{ token: string; expiresAt: string }> {
    await createIfMissing(rest, collectionPath(Namespaces), { apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace } });
    await createIfMissing(rest, collectionPath(ServiceAccounts, namespace), objects.serviceAccount);
    await createOrReplace(rest, '/apis/rbac.authorization.k8s.io/v1/clusterroles', objects.clusterRole);
    await createOrReplace(rest, '/apis/rbac.authorization.k8s.io/v1/clusterrolebindings', objects.clusterRoleBinding);
    const review = await rest.create<{ status: { token: string; expirationTimestamp: string } }>(
        `${objectPath(ServiceAccounts, namespace, objects.serviceAccount.metadata.name)}/token`,
        {
            apiVersion: 'authentication.k8s.io/v1',
            kind: 'TokenRequest',
            spec: { expirationSeconds: Math.max(600, Math.round(expirationMs / 1000)) },
        } as never,
    );
    return { token: review.status.token, expiresAt: review.status.expirationTimestamp };
}

async function createIfMissing(rest: KubeRest, collection: string, obj: object): Promise<void> {
    await rest.create(collection, obj).catch((err: unknown) => {
        if (!isAlreadyExists(err)) throw err;
    });
}

async function createOrReplace(rest: KubeRest, collection: string, obj: { metadata: { name: string } }): Promise<void> {
    try {
        await rest.create(collection, obj);
    } catch (err) {
        if (!isAlreadyExists(err)) throw err;
        const current = await rest.get<{ metadata: { resourceVersion: string } }>(`${collection}/${obj.metadata.name}`);
        await rest.replace(`${collection}/${obj.metadata.name}`, { ...obj, metadata: { ...obj.metadata, resourceVersion: current.metadata.resourceVersion } });
    }
}
