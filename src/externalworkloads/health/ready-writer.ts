// Writes an ExternalWorkload's Ready condition: a merge patch of the status subresource with
// the whole conditions list (the CRD does not declare it a map list, so a patch replaces the
// list; every other condition is sent back as it is) and the resourceVersion it was read at,
// so a condition someone else wrote in between is never lost: a conflict is a stale cache,
// retried once the informer has the newer object (no extra read, no `get` right needed).
import type { Informer } from '../../kube/informer.js';
import type { KubeRest } from '../../kube/rest.js';
import { isConflict, isNotFound, StaleCacheError } from '../../kube/errors.js';
import { ExternalWorkloads, objectPath } from '../../kube/resources.js';
import type { CachedWorkload, WorkloadMeta } from '../compact.js';
import { readyCondition, READY, storedReadyStatus, withReadyCondition } from './readiness.js';
import { systemClock } from '../../time/clock.js';

export interface ReadyWriterDeps {
    rest: KubeRest;
    workloads: Informer<CachedWorkload>;
    now?: () => Date;
}

/** Written (the workload's metadata as stored now), already so, or gone. */
export type ReadyWrite = { outcome: 'written'; workload: WorkloadMeta } | { outcome: 'unchanged' } | { outcome: 'gone' };

export class ReadyWriter {
    constructor(private readonly deps: ReadyWriterDeps) {}

    /** Throws to be retried: not the leader, a stale cache (conflict), or the apiserver's refusal. */
    async write(namespace: string, name: string, ready: boolean, message: string): Promise<ReadyWrite> {
        const cached = this.deps.workloads.store.get(namespace, name);
        if (!cached?.ok) return { outcome: 'gone' };
        const { conditions } = cached;
        if (storedReadyStatus(conditions) === (ready ? 'True' : 'False')) return { outcome: 'unchanged' };
        const previous = conditions?.find((c) => c.type === READY);
        const condition = readyCondition(ready, message, (this.deps.now ?? (() => new Date(systemClock.now())))(), previous);
        try {
            const { metadata: stored } = await this.deps.rest.mergePatchForMetadata(
                objectPath(ExternalWorkloads, namespace, name, 'status'),
                {
                    metadata: { resourceVersion: cached.metadata.resourceVersion },
                    status: { conditions: withReadyCondition(conditions, condition) },
                },
            );
            // The answer is the stored metadata alone: the Event of the transition names this version.
            return { outcome: 'written', workload: { ...cached.metadata, uid: stored?.uid ?? cached.metadata.uid, resourceVersion: stored?.resourceVersion } };
        } catch (err) {
            if (isNotFound(err)) return { outcome: 'gone' };
            // The informer saw the 409 too: if its watch stays silent now, it is restarted.
            if (isConflict(err)) throw new StaleCacheError(`${namespace}/${name} changed since cached`);
            throw err;
        }
    }
}
