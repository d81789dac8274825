// Carries out one registration's plan (plan.ts): the workload's create or replace, its Ready
// condition, the deletes, in that order, each against the version the plan was made from, so a
// change in between is a conflict (planned again), never overwritten. Tolerant where the world is racy: a delete that finds nothing is success.
import { withReadyCondition } from '../health/readiness.js';
import type { KubeRest } from '../../kube/rest.js';
import { isConflict, isNotFound, StaleCacheError } from '../../kube/errors.js';
import { ExternalWorkloads, Leases, objectPath, collectionPath } from '../../kube/resources.js';
import type { GroupWorkload } from './cached.js';
import type { RegistrationPlan } from './plan.js';
import type { RegistrationLease } from './types.js';

/** What was written: the workload's uid (for its Events) when it exists after the plan. */
export interface Applied {
    workloadUid?: string;
    writes: number;
}

export class RegistrationWriter {
    constructor(private readonly rest: KubeRest) {}

    async apply(plan: RegistrationPlan, lease: RegistrationLease | undefined, existing: GroupWorkload | undefined, namespace: string, name: string): Promise<Applied> {
        let uid = existing?.metadata.uid;
        let resourceVersion = existing?.metadata.resourceVersion;
        let writes = 0;
        try {
            if (plan.delete) {
                if (plan.delete.workload) await this.ignoreMissing(this.rest.delete(objectPath(ExternalWorkloads, namespace, name), undefined, { preconditions: { uid } }));
                // Against the version planned from: a heartbeat that came in meanwhile keeps the Lease.
                if (plan.delete.lease && lease) await this.ignoreMissing(this.rest.delete(objectPath(Leases, namespace, name), undefined, { preconditions: { resourceVersion: lease.resourceVersion } }));
                return { writes: Number(plan.delete.workload) + Number(plan.delete.lease) };
            }
            if (plan.write?.kind === 'create') {
                const stored = await this.rest.createForMetadata(collectionPath(ExternalWorkloads, namespace), plan.write.workload);
                ({ uid, resourceVersion } = stored.metadata ?? {});
                writes++;
            } else if (plan.write?.kind === 'update') {
                const body = { ...plan.write.workload, metadata: { ...plan.write.workload.metadata, resourceVersion } };
                const stored = await this.rest.replaceForMetadata(objectPath(ExternalWorkloads, namespace, name), body);
                ({ uid, resourceVersion } = stored.metadata ?? {});
                writes++;
            }
            if (plan.ready) {
                const conditions = withReadyCondition(plan.write?.kind === 'create' ? [] : existing?.conditions, plan.ready);
                await this.rest.mergePatchForMetadata(objectPath(ExternalWorkloads, namespace, name, 'status'), { metadata: { resourceVersion }, status: { conditions } });
                writes++;
            }
        } catch (err) {
            // Our cache is behind the apiserver: planned again once the informer has caught up.
            if (isConflict(err)) throw new StaleCacheError(`${namespace}/${name} changed since cached`);
            throw err;
        }
        return { workloadUid: uid, writes };
    }

    private async ignoreMissing(request: Promise<unknown>): Promise<void> {
        try {
            await request;
        } catch (err) {
            if (!isNotFound(err)) throw err;
        }
    }
}

