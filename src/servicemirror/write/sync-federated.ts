// Converges one federated Service `<name>-federated` of one namespace: planFederated
// (plan/federated.ts) decides from what every Link's remote cache (and the local cluster) holds
// now; this applies it through MirrorSync's Service writes.
import type { V1Service } from '@kubernetes/client-node';
import { planFederated, type FederatedPlanInput, type FederationLink } from '../plan/federated.js';
import type { MirrorSync } from './mirror-sync.js';

export type { FederationLink };

export interface FederatedSyncDeps extends Pick<FederatedPlanInput, 'local' | 'federation'> {
    writes: Pick<MirrorSync, 'ensureService' | 'deleteService'>;
    links: () => FederationLink[];
    /** The local `<name>-federated`, from the cache. */
    existing: (namespace: string, name: string) => V1Service | undefined;
    /** Makes sure the namespace exists (creating it with --enable-namespace-creation); false when it does not. */
    ensureNamespace: (namespace: string, cluster: string) => Promise<boolean>;
}

export interface FederatedOutcome {
    /** The federated Service now, or null when there is none. */
    service: string | null;
    /** Members refused (by cluster, "" for the local one), and why. */
    refused: { cluster: string; message: string }[];
    problem?: string;
    /**
     * The namespace is missing from our cache. It may have just been created and not reached
     * the cache yet, and no other event would bring this key back: retried with backoff.
     */
    namespaceMissing?: boolean;
}

export class FederatedSync {
    constructor(private readonly deps: FederatedSyncDeps) {}

    async sync(namespace: string, name: string): Promise<FederatedOutcome> {
        const { links, local, existing, federation, writes } = this.deps;
        const plan = planFederated({ namespace, name, links: links(), local, stored: (found) => existing(namespace, found), federation });
        const refused = plan.refused;
        if (plan.action === 'refuse') return { service: null, refused, problem: plan.problem };
        if (plan.action === 'delete') {
            if (plan.found) await writes.deleteService(plan.found);
            return { service: null, refused };
        }
        if (plan.creator !== undefined && !(await this.deps.ensureNamespace(namespace, plan.creator))) {
            return { service: null, refused, problem: `namespace ${namespace} does not exist in this cluster`, namespaceMissing: true };
        }
        const named = plan.desired.metadata!.name!;
        const ensured = await writes.ensureService(namespace, named, plan.desired, plan.owner);
        if ('problem' in ensured) return { service: null, refused, problem: ensured.problem };
        return { service: named, refused };
    }
}
