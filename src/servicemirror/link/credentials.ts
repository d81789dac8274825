// A Link's credentials Secret, read the one way the service mirror and every CLI command read
// it: the Secret of spec.clusterCredentialsSecret in the Link's namespace, its `kubeconfig`
// key, loaded as an untrusted kubeconfig (src/kube/untrusted-kubeconfig.ts). What goes wrong
// is one CredentialsProblem, whose reason and message the Link's RemoteCredentialsValid
// condition, its Warning Event and `mesh-endpoints check` all show as they are.
import type { KubeConfig } from '../../kube/kubeconfig.js';
import type { KubeRest } from '../../kube/rest.js';
import { isNotFound } from '../../kube/errors.js';
import { objectPath, Secrets } from '../../kube/resources.js';
import { rfc3339 } from '../../time/format.js';
import { describeRefusals, loadUntrustedKubeconfig, type KubeconfigPolicy, type Refusal } from '../../kube/untrusted-kubeconfig.js';
import { CREDENTIALS_SECRET_KEY, type LinkCondition } from '../api/link.js';

export const REMOTE_CREDENTIALS_CONDITION = 'RemoteCredentialsValid';

export interface CredentialsProblem {
    /** MissingCredentials, InvalidCredentials, or the refused field's reason (ExecNotAllowed, ...). */
    reason: string;
    message: string;
    /** The fields the policy refused, when that is the problem. */
    refused?: Refusal[];
}

export type LinkCredentials = { kubeConfig: KubeConfig; server: URL } | { problem: CredentialsProblem };

/** The Secret's data as read from the apiserver (undefined: it does not exist). */
export type CredentialsSecret = { data?: Record<string, string> } | undefined;

/** Pure: the credentials in the Secret `namespace/name`, or what is wrong with them. */
export function credentialsFromSecret(namespace: string, name: string, secret: CredentialsSecret, policy: KubeconfigPolicy): LinkCredentials {
    const where = `credentials Secret ${namespace}/${name}`;
    if (name === '') return { problem: { reason: 'MissingCredentials', message: 'spec.clusterCredentialsSecret is empty' } };
    if (!secret) return { problem: { reason: 'MissingCredentials', message: `${where} not found` } };
    const encoded = secret.data?.[CREDENTIALS_SECRET_KEY];
    if (!encoded) return { problem: { reason: 'InvalidCredentials', message: `${where} has no key ${CREDENTIALS_SECRET_KEY}` } };
    const loaded = loadUntrustedKubeconfig(Buffer.from(encoded, 'base64').toString('utf8'), policy);
    if ('invalid' in loaded) return { problem: { reason: 'InvalidCredentials', message: `${where}: key ${CREDENTIALS_SECRET_KEY} is not a usable kubeconfig: ${loaded.invalid}` } };
    if ('refused' in loaded) {
        return { problem: { reason: loaded.refused[0]!.reason, message: `${where}: ${describeRefusals(loaded.refused)}`, refused: loaded.refused } };
    }
    return loaded;
}

/** Reads the Secret and loads it; a failure to read it (other than not found) is thrown. */
export async function readLinkCredentials(rest: KubeRest, namespace: string, name: string, policy: KubeconfigPolicy): Promise<LinkCredentials> {
    let secret: CredentialsSecret;
    if (name !== '') {
        try {
            secret = await rest.get(objectPath(Secrets, namespace, name));
        } catch (err) {
            if (!isNotFound(err)) throw err;
        }
    }
    return credentialsFromSecret(namespace, name, secret, policy);
}

/**
 * The RemoteCredentialsValid condition: undefined problem means the credentials were loaded.
 * Its transition time is kept from `previous` while its status stays the same.
 */
export function remoteCredentialsCondition(problem: CredentialsProblem | undefined, previous: LinkCondition | undefined, now: number): LinkCondition {
    const status = problem ? 'False' : 'True';
    const kept = previous?.type === REMOTE_CREDENTIALS_CONDITION && previous.status === status;
    const lastTransitionTime = kept ? previous.lastTransitionTime : rfc3339(now);
    if (!problem) {
        return { type: REMOTE_CREDENTIALS_CONDITION, status, lastTransitionTime, reason: 'Loaded', message: 'the credentials Secret holds a kubeconfig the service mirror accepts' };
    }
    return { type: REMOTE_CREDENTIALS_CONDITION, status, lastTransitionTime, reason: problem.reason, message: `${problem.message}; the Link is not served` };
}
