// What `mesh-endpoints link` writes: the Link and the service mirror's credentials Secret for
// the local cluster, read off the remote gateway Service; when the Link enables remote
// discovery or federated Services, the Secret Linkerd's destination reads to resolve those
// itself in the remote cluster; and, on the remote, one read-only ServiceAccount per reader
// with only what that reader lists and watches there. Pure: the CLI (src/cli/link.ts) does
// the reading and writing; this file decides the content and every error message a user sees
// when the gateway is not ready to be linked.
import type { V1Service } from '@kubernetes/client-node';
import { stringify } from 'yaml';
import { DEFAULT_EXPORT_SELECTOR, DEFAULT_FEDERATED_SELECTOR, DEFAULT_REMOTE_DISCOVERY_SELECTOR } from '../servicemirror/api/keys.js';
import { CREDENTIALS_SECRET_KEY, CREDENTIALS_SECRET_TYPE, LINK_GROUP, LINK_STORAGE_VERSION, type LinkSpec } from '../servicemirror/api/link.js';
import { parseDurationMs } from '../time/duration.js';
import {
    DESTINATION_ACCESS_NAME,
    DESTINATION_CLUSTER_DOMAIN_ANNOTATION,
    DESTINATION_CLUSTER_NAME_LABEL,
    DESTINATION_RIGHTS,
    DESTINATION_TRUST_DOMAIN_ANNOTATION,
    MIRROR_RIGHTS,
    REMOTE_ACCESS_NAME,
    type RemoteRight,
} from '../servicemirror/link/remote-access.js';

const GATEWAY_PORT_NAME = 'mc-gateway';
const PROBE_PORT_NAME = 'mc-probe';
const GATEWAY_IDENTITY_ANNOTATION = 'mirror.linkerd.io/gateway-identity';
const PROBE_PATH_ANNOTATION = 'mirror.linkerd.io/probe-path';
const PROBE_PERIOD_ANNOTATION = 'mirror.linkerd.io/probe-period';
/** The Link fields that come from the remote gateway Service. */
export type GatewaySpec = Pick<LinkSpec, 'gatewayAddress' | 'gatewayPort' | 'gatewayIdentity' | 'probeSpec'>;

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

/** Which of Linkerd's modes, besides gateway mirrors, the Link turns on. */
export interface LinkModes {
    /** spec.remoteDiscoverySelector: mirrors the destination resolves in the remote cluster. */
    remoteDiscovery: boolean;
    /** spec.federatedServiceSelector: members of `<name>-federated`, resolved the same way. */
    federated: boolean;
}

/** Whether Linkerd's destination needs credentials of its own for these modes. */
export const needsDestination = (modes: LinkModes) => modes.remoteDiscovery || modes.federated;

export interface DestinationSecretInput {
    /** Linkerd's control-plane namespace here, where the destination runs and reads Secrets. */
    namespace: string;
    /** The remote's identity trust domain: the destination expects it of the remote pods. */
    trustDomain: string;
    /** The kubeconfig of the destination's own remote ServiceAccount. */
    kubeconfig: string;
}

export interface LinkManifestInput {
    clusterName: string;
    /** Local namespace of the Link and Secret. */
    namespace: string;
    clusterDomain: string;
    gateway: GatewaySpec;
    /** The kubeconfig the service mirror uses to read the remote cluster. */
    kubeconfig: string;
    /** Both on when absent, as `linkerd multicluster link` writes them. */
    modes?: LinkModes;
    /** Written when the modes need it; absent where no Linkerd runs to read it (link.ts decides). */
    destination?: DestinationSecretInput;
}

export function credentialsSecretName(clusterName: string): string {
    return `cluster-credentials-${clusterName}`;
}

function credentialsSecret(name: string, namespace: string, kubeconfig: string, extra: { labels?: Record<string, string>; annotations?: Record<string, string> } = {}) {
    return {
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name, namespace, ...extra },
        type: CREDENTIALS_SECRET_TYPE,
        data: { [CREDENTIALS_SECRET_KEY]: Buffer.from(kubeconfig, 'utf8').toString('base64') },
    };
}

/**
 * The destination's Secret, as `linkerd multicluster link` writes it: same name and type as
 * the mirror's, in the control-plane namespace, labelled with the cluster name and annotated
 * with its trust and cluster domains (the destination skips a Secret without them).
 */
function destinationSecret(clusterName: string, clusterDomain: string, input: DestinationSecretInput) {
    return credentialsSecret(credentialsSecretName(clusterName), input.namespace, input.kubeconfig, {
        labels: { [DESTINATION_CLUSTER_NAME_LABEL]: clusterName },
        annotations: { [DESTINATION_TRUST_DOMAIN_ANNOTATION]: input.trustDomain, [DESTINATION_CLUSTER_DOMAIN_ANNOTATION]: clusterDomain },
    });
}

/**
 * The objects as one YAML stream for `kubectl apply -f -`, in the order it gets them: the
 * mirror's Secret, the destination's (when given), the Link. The Link's modes do not depend on
 * the destination's Secret: the service mirror serves remote discovery itself (the MCS import
 * copies the remote's endpoints), with or without Linkerd.
 */
export function linkYaml(input: LinkManifestInput): string {
    const modes = input.modes ?? { remoteDiscovery: true, federated: true };
    const secretName = credentialsSecretName(input.clusterName);
    const objects: object[] = [credentialsSecret(secretName, input.namespace, input.kubeconfig)];
    if (needsDestination(modes) && input.destination) objects.push(destinationSecret(input.clusterName, input.clusterDomain, input.destination));
    objects.push({
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
            // Absent, a selector selects nothing: a mode off stays off.
            ...(modes.remoteDiscovery && { remoteDiscoverySelector: DEFAULT_REMOTE_DISCOVERY_SELECTOR }),
            ...(modes.federated && { federatedServiceSelector: DEFAULT_FEDERATED_SELECTOR }),
        },
    });
    return objects.map((o) => stringify(o)).join('---\n');
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

/** A read-only ServiceAccount on the remote with exactly `rights`, cluster-wide. */
function remoteReaderObjects(name: string, namespace: string, rights: readonly RemoteRight[]) {
    return {
        serviceAccount: { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name, namespace } },
        clusterRole: {
            apiVersion: 'rbac.authorization.k8s.io/v1',
            kind: 'ClusterRole',
            metadata: { name },
            rules: rights.map((r) => ({ apiGroups: [r.group], resources: [r.resource], verbs: [...r.verbs] })),
        },
        clusterRoleBinding: {
            apiVersion: 'rbac.authorization.k8s.io/v1',
            kind: 'ClusterRoleBinding',
            metadata: { name: `${name}-${namespace}` },
            roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name },
            subjects: [{ kind: 'ServiceAccount', name, namespace }],
        },
    };
}

export type RemoteReaderObjects = ReturnType<typeof remoteReaderObjects>;

/** The service mirror's reader on the remote. */
export function remoteAccessObjects(namespace: string): RemoteReaderObjects {
    return remoteReaderObjects(REMOTE_ACCESS_NAME, namespace, MIRROR_RIGHTS);
}

/** Linkerd destination's reader on the remote. */
export function destinationAccessObjects(namespace: string): RemoteReaderObjects {
    return remoteReaderObjects(DESTINATION_ACCESS_NAME, namespace, DESTINATION_RIGHTS);
}
