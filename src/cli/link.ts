// `mesh-endpoints link`: prepares a remote cluster to be mirrored and prints what the local
// cluster needs (credentials Secret + Link) as YAML, for `kubectl apply -f -`.
//
// On the remote cluster it creates a ServiceAccount that may only get/list/watch Services and
// EndpointSlices (ClusterRole + ClusterRoleBinding, idempotent), and a token for it through
// the TokenRequest API (POST .../serviceaccounts/NAME/token) with a long expiration
// (--token-expiration, default one year; the apiserver may shorten it). TokenRequest is used
// rather than a kubernetes.io/service-account-token Secret because it needs no token
// controller, which bare control planes (and our test clusters) lack, and the token expires.
// Run `link` again to get a fresh token before it does; the expiry is printed on stderr.
import { readFileSync } from 'node:fs';
import type { V1Service } from '@kubernetes/client-node';
import { InvalidArgumentError, Option, type Command } from 'commander';
import { isAlreadyExists, isNotFound, type KubeRest, KubeRest as Rest } from '../kube/rest.js';
import { collectionPath, Namespaces, objectPath, ServiceAccounts, Services } from '../kube/resources.js';
import { gatewaySpecFrom, linkYaml, REMOTE_ACCESS_NAME, remoteAccessObjects, remoteKubeconfig } from '../servicemirror/link-gen.js';
import { durationFlag, fail, loadKubeConfig } from './common.js';

interface Flags {
    remoteKubeconfig: string;
    clusterName: string;
    gatewayService: { namespace: string; name: string };
    namespace: string;
    clusterDomain: string;
    apiServerAddress?: string;
    tokenExpiration: number;
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
        .addOption(
            new Option('--token-expiration <duration>', 'requested lifetime of the remote token')
                .argParser(durationFlag)
                .default(365 * 24 * 3_600_000, '8760h'),
        )
        .action((flags: Flags) => run(flags).catch(fail));
}

async function run(flags: Flags): Promise<void> {
    const kubeConfig = loadKubeConfig(flags.remoteKubeconfig);
    const remote = new Rest(kubeConfig);
    try {
        const { namespace: gwNamespace, name: gwName } = flags.gatewayService;
        let gateway: V1Service;
        try {
            gateway = await remote.get<V1Service>(objectPath(Services, gwNamespace, gwName));
        } catch (err) {
            if (isNotFound(err)) throw new Error(`gateway Service ${gwNamespace}/${gwName} not found on the remote cluster (see --gateway-service)`);
            throw err;
        }
        const spec = gatewaySpecFrom(gateway);
        if ('error' in spec) throw new Error(spec.error);

        const token = await setUpRemoteAccess(remote, flags.namespace, flags.tokenExpiration);
        const cluster = kubeConfig.getCurrentCluster()!;
        const caPem = cluster.caData ? Buffer.from(cluster.caData, 'base64').toString('utf8') : cluster.caFile ? readFileSync(cluster.caFile, 'utf8') : undefined;
        const kubeconfig = remoteKubeconfig({
            clusterName: flags.clusterName,
            server: flags.apiServerAddress ?? cluster.server,
            caPem,
            insecureSkipTlsVerify: cluster.skipTLSVerify,
            token: token.token,
        });
        process.stdout.write(linkYaml({ clusterName: flags.clusterName, namespace: flags.namespace, clusterDomain: flags.clusterDomain, gateway: spec, kubeconfig }));
        process.stderr.write(
            `link ${flags.clusterName}: gateway ${spec.gatewayAddress}:${spec.gatewayPort}` +
                (spec.probeSpec.path ? `, probed at ${spec.probeSpec.path} on port ${spec.probeSpec.port}` : ', not probed (no probe-path annotation)') +
                `; the remote token expires at ${token.expiresAt}, run link again before then\n`,
        );
    } finally {
        remote.close();
    }
}

/** Idempotent: objects that exist are kept (RBAC objects are brought back to what we need). */
async function setUpRemoteAccess(rest: KubeRest, namespace: string, expirationMs: number): Promise<{ token: string; expiresAt: string }> {
    const objects = remoteAccessObjects(namespace);
    await createIfMissing(rest, collectionPath(Namespaces), { apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace } });
    await createIfMissing(rest, collectionPath(ServiceAccounts, namespace), objects.serviceAccount);
    await createOrReplace(rest, '/apis/rbac.authorization.k8s.io/v1/clusterroles', objects.clusterRole);
    await createOrReplace(rest, '/apis/rbac.authorization.k8s.io/v1/clusterrolebindings', objects.clusterRoleBinding);
    const review = await rest.create<{ status: { token: string; expirationTimestamp: string } }>(
        `${objectPath(ServiceAccounts, namespace, REMOTE_ACCESS_NAME)}/token`,
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
