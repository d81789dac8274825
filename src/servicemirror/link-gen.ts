// What `mesh-endpoints link` writes: the Link and credentials Secret for the local cluster,
// read off the remote gateway Service, and the read-only access it sets up on the remote.
// Pure: the CLI (src/cli/link.ts) does the reading and writing; this file decides the content
// and every error message a user sees when the gateway is not ready to be linked.
import type { V1Service } from '@kubernetes/client-node';
import { stringify } from 'yaml';
import { DEFAULT_EXPORT_SELECTOR, DEFAULT_FEDERATED_SELECTOR, DEFAULT_REMOTE_DISCOVERY_SELECTOR } from './keys.js';
import { CREDENTIALS_SECRET_KEY, CREDENTIALS_SECRET_TYPE, LINK_GROUP, LINK_STORAGE_VERSION } from './link.js';
import { parseDurationMs } from '../time/duration.js';

export const GATEWAY_PORT_NAME = 'mc-gateway';
export const PROBE_PORT_NAME = 'mc-probe';
export const GATEWAY_IDENTITY_ANNOTATION = 'mirror.linkerd.io/gateway-identity';
export const PROBE_PATH_ANNOTATION = 'mirror.linkerd.io/probe-path';
export const PROBE_PERIOD_ANNOTATION = 'mirror.linkerd.io/probe-period';
/** The ServiceAccount, ClusterRole and ClusterRoleBinding `link` creates on the remote cluster. */
export const REMOTE_ACCESS_NAME = 'mesh-endpoints-service-mirror-remote-access';

/** The Link fields that come from the remote gateway Service. */
export interface GatewaySpec {
    gatewayAddress: string;
    gatewayPort: string;
    gatewayIdentity: string;
    probeSpec: { path: string; port: string; period: string; timeout: string; failureThreshold: string };
}

/**
 * The gateway as `linkerd multicluster link` reads it: every LoadBalancer ingress entry's `ip`,
 * or its `hostname` when it has no ip (the EKS case: an ELB publishes only a name, which the
 * service mirror resolves itself); the ports named mc-gateway and mc-probe (their nodePort on
 * a NodePort Service); the identity annotation. An error says what is missing and what to do.
 */
export function gatewaySpecFrom(gateway: V1Service): GatewaySpec | { error: string } {
    const ref = `gateway Service ${gateway.metadata?.namespace}/${gateway.metadata?.name}`;
    const addresses = (gateway.status?.loadBalancer?.ingress ?? [])
        .map((ingress) => ingress.ip || ingress.hostname || '')
        .filter((address) => address !== '');
    if (addresses.length === 0) {
        return { error: `${ref} has no LoadBalancer ingress yet (status.loadBalancer.ingress has no ip or hostname); wait until its load balancer is provisioned` };
    }
    const nodePort = gateway.spec?.type === 'NodePort';
    const portNumber = (name: string) => {
        const port = (gateway.spec?.ports ?? []).find((p) => p.name === name);
        return port && (nodePort ? port.nodePort : port.port);
    };
    const missing = [GATEWAY_PORT_NAME, PROBE_PORT_NAME].filter((name) => portNumber(name) === undefined);
    if (missing.length > 0) {
        const have = (gateway.spec?.ports ?? []).map((p) => p.name || String(p.port)).join(', ') || 'none';
        return { error: `${ref} lacks the port${missing.length > 1 ? 's' : ''} named ${missing.join(' and ')} (its ports: ${have})` };
    }
    const identity = gateway.metadata?.annotations?.[GATEWAY_IDENTITY_ANNOTATION] ?? '';
    if (identity === '') return { error: `${ref} has no ${GATEWAY_IDENTITY_ANNOTATION} annotation: the mirrors could not verify the gateway` };
    const period = probePeriod(gateway.metadata?.annotations?.[PROBE_PERIOD_ANNOTATION]);
    if (period === null) return { error: `${ref}: annotation ${PROBE_PERIOD_ANNOTATION} is not a number of seconds or a duration` };
    return {
        gatewayAddress: addresses.join(','),
        gatewayPort: String(portNumber(GATEWAY_PORT_NAME)),
        gatewayIdentity: identity,
        probeSpec: {
            // No path means no probing: the mirrors then follow DNS alone.
            path: gateway.metadata?.annotations?.[PROBE_PATH_ANNOTATION] ?? '',
            port: String(portNumber(PROBE_PORT_NAME)),
            period,
            timeout: '30s',
            failureThreshold: '3',
        },
    };
}

/** Linkerd writes the period annotation in seconds ("3"); a Go duration is accepted too. */
function probePeriod(annotation: string | undefined): string | null {
    if (annotation === undefined || annotation.trim() === '') return '3s';
    const ms = parseDurationMs(annotation);
    if (ms === null || ms <= 0) return null;
    return /^\d+$/.test(annotation.trim()) ? `${annotation.trim()}s` : annotation.trim();
}

export interface LinkManifestInput {
    clusterName: string;
    /** Local namespace of the Link and Secret. */
    namespace: string;
    clusterDomain: string;
    gateway: GatewaySpec;
    /** The kubeconfig the service mirror uses to read the remote cluster. */
    kubeconfig: string;
}

export function credentialsSecretName(clusterName: string): string {
    return `cluster-credentials-${clusterName}`;
}

export function linkManifests(input: LinkManifestInput): { secret: object; link: object } {
    const secretName = credentialsSecretName(input.clusterName);
    const secret = {
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name: secretName, namespace: input.namespace },
        type: CREDENTIALS_SECRET_TYPE,
        data: { [CREDENTIALS_SECRET_KEY]: Buffer.from(input.kubeconfig, 'utf8').toString('base64') },
    };
    const link = {
        apiVersion: `${LINK_GROUP}/${LINK_STORAGE_VERSION}`,
        kind: 'Link',
        metadata: { name: input.clusterName, namespace: input.namespace },
        spec: {
            targetClusterName: input.clusterName,
            targetClusterDomain: input.clusterDomain,
            targetClusterLinkerdNamespace: 'linkerd',
            clusterCredentialsSecret: secretName,
            ...input.gateway,
            selector: DEFAULT_EXPORT_SELECTOR,
            remoteDiscoverySelector: DEFAULT_REMOTE_DISCOVERY_SELECTOR,
            federatedServiceSelector: DEFAULT_FEDERATED_SELECTOR,
        },
    };
    return { secret, link };
}

/** Secret then Link, as one YAML stream for `kubectl apply -f -`. */
export function linkYaml(input: LinkManifestInput): string {
    const { secret, link } = linkManifests(input);
    return `${stringify(secret)}---\n${stringify(link)}`;
}

export interface RemoteKubeconfigInput {
    clusterName: string;
    server: string;
    /** PEM of the CA that signs the remote apiserver's certificate; absent to use the system's. */
    caPem?: string;
    insecureSkipTlsVerify?: boolean;
    token: string;
}

export function remoteKubeconfig(input: RemoteKubeconfigInput): string {
    const cluster: Record<string, unknown> = { server: input.server };
    if (input.caPem) cluster['certificate-authority-data'] = Buffer.from(input.caPem, 'utf8').toString('base64');
    if (input.insecureSkipTlsVerify) cluster['insecure-skip-tls-verify'] = true;
    const user = `${REMOTE_ACCESS_NAME}@${input.clusterName}`;
    return stringify({
        apiVersion: 'v1',
        kind: 'Config',
        clusters: [{ name: input.clusterName, cluster }],
        users: [{ name: user, user: { token: input.token } }],
        contexts: [{ name: input.clusterName, context: { cluster: input.clusterName, user } }],
        'current-context': input.clusterName,
    });
}

/**
 * Read-only access to what the service mirror watches on the remote cluster: Services (what
 * is exported), EndpointSlices (whether it has ready endpoints) and ServiceExports (what the
 * remote exports to the MCS clusterset). Nothing else, no writes.
 */
export function remoteAccessObjects(namespace: string) {
    return {
        serviceAccount: { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: REMOTE_ACCESS_NAME, namespace } },
        clusterRole: {
            apiVersion: 'rbac.authorization.k8s.io/v1',
            kind: 'ClusterRole',
            metadata: { name: REMOTE_ACCESS_NAME },
            rules: [
                { apiGroups: [''], resources: ['services'], verbs: ['get', 'list', 'watch'] },
                { apiGroups: ['discovery.k8s.io'], resources: ['endpointslices'], verbs: ['get', 'list', 'watch'] },
                { apiGroups: ['multicluster.x-k8s.io'], resources: ['serviceexports'], verbs: ['get', 'list', 'watch'] },
            ],
        },
        clusterRoleBinding: {
            apiVersion: 'rbac.authorization.k8s.io/v1',
            kind: 'ClusterRoleBinding',
            metadata: { name: `${REMOTE_ACCESS_NAME}-${namespace}` },
            roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: REMOTE_ACCESS_NAME },
            subjects: [{ kind: 'ServiceAccount', name: REMOTE_ACCESS_NAME, namespace }],
        },
    };
}
