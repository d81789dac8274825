// Who the VM is: its ServiceAccount, named `<group>.<vm>` in the group's namespace, read from
// the `sub` claim of its own token (the agent never verifies it: the apiserver does, and a
// token that lies about itself is refused there). Pure.
import { parseRegistrationName } from '../externalworkloads/groups/types.js';

export interface AgentIdentity {
    namespace: string;
    group: string;
    vm: string;
    /** What the apiserver calls the caller: the Lease's holderIdentity must be this. */
    username: string;
}

/** The identity a ServiceAccount token names, or why it names none a VM can register as. */
export function identityFromToken(token: string): AgentIdentity | string {
    const payload = token.trim().split('.')[1];
    if (payload === undefined) return 'the token is not a ServiceAccount token (a JWT)';
    let sub: unknown;
    try {
        sub = (JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as { sub?: unknown }).sub;
    } catch {
        return 'the token’s claims cannot be read';
    }
    const match = typeof sub === 'string' ? /^system:serviceaccount:([^:]+):([^:]+)$/.exec(sub) : null;
    if (!match) return `the token is not a ServiceAccount's (sub ${JSON.stringify(sub)})`;
    const [, namespace, account] = match as unknown as [string, string, string];
    const names = parseRegistrationName(account);
    if (!names) return `ServiceAccount ${namespace}/${account} is not named <group>.<vm id>, as a VM of a group must be`;
    return { namespace, ...names, username: sub as string };
}

/** The identity, checked against what the flags say (when they say it). */
export function checkIdentity(identity: AgentIdentity, flags: { namespace?: string; group?: string; vmId?: string }): string | undefined {
    const mismatches = (
        [
            ['--namespace', flags.namespace, identity.namespace],
            ['--group', flags.group, identity.group],
            ['--vm-id', flags.vmId, identity.vm],
        ] as const
    ).filter(([, given, actual]) => given !== undefined && given !== actual);
    if (mismatches.length === 0) return undefined;
    return mismatches.map(([flag, given, actual]) => `${flag} ${given} is not the token's (${actual})`).join('; ');
}
