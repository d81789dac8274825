// Executes a SlicePlan against the apiserver: creates, then updates, then deletes, as
// upstream does (new endpoints are served before old ones go). A slice the apiserver would
// reject is never sent (validate.ts); the plan fails whole instead. Its client is the guarded
// one the Manager hands out (a replica that lost its lease writes nothing); every success is
// recorded in the tracker, so the events our writes cause are recognised as ours. The tracker
// reads only metadata, so that is all the apiserver is asked to answer with.
import type { V1EndpointSlice } from '@kubernetes/client-node';
import type { Counter } from 'prom-client';
import type { SlicePlan } from '../endpointslice/types.js';
import type { SliceTracker } from '../endpointslice/tracker.js';
import { LABEL_SERVICE_NAME } from '../endpointslice/slice.js';
import { sliceProblems } from '../endpointslice/validate.js';
import { InvalidSliceError } from './errors.js';
import { InFlight } from './own-writes.js';
import type { KubeRest } from './rest.js';
import { collectionPath, EndpointSlices, objectPath } from './resources.js';
import { Pacer } from './pacer.js';

export interface SliceWriterOptions {
    rest: KubeRest;
    tracker: SliceTracker;
    fieldManager: string;
    /** Counts writes by operation (create, update, delete). */
    sliceWrites?: Counter<'operation'>;
}

/** "namespace/service" of a slice: the key its writes are in flight under (SliceWriter.inFlight). */
export const serviceKeyOf = (slice: V1EndpointSlice) => `${slice.metadata?.namespace ?? ''}/${slice.metadata?.labels?.[LABEL_SERVICE_NAME] ?? ''}`;

export class SliceWriter {
    /** The Services whose slices are being written: the events of their slices wait for the tracker (see own-writes.ts). */
    readonly inFlight = new InFlight();

    constructor(private readonly opts: SliceWriterOptions) {}

    private validate(slice: V1EndpointSlice): void {
        const problems = sliceProblems(slice);
        if (problems.length > 0) {
            const { namespace, name, generateName } = slice.metadata ?? {};
            throw new InvalidSliceError(`EndpointSlice ${namespace}/${name ?? `${generateName}*`} not written: ${problems.join('; ')}`);
        }
    }

    /** Applies the plan in order; the first failure stops it (the sync is retried). */
    async apply(plan: SlicePlan): Promise<number> {
        // Checked before the first write, so an invalid plan changes nothing; 100 slices of
        // 100 endpoints take tens of ms, hence the pauses.
        const slicer = new Pacer();
        for (const slice of [...plan.creates, ...plan.updates]) {
            this.validate(slice);
            if (slicer.due()) await slicer.pause();
        }
        const all = [...plan.creates, ...plan.updates, ...plan.deletes];
        if (all.length === 0) return 0;
        return this.inFlight.around([...new Set(all.map(serviceKeyOf))], () => this.write(plan));
    }

    private async write(plan: SlicePlan): Promise<number> {
        const { rest, tracker, sliceWrites } = this.opts;
        const query = { fieldManager: this.opts.fieldManager };
        let writes = 0;
        for (const slice of plan.creates) {
            const namespace = slice.metadata!.namespace!;
            const created = await rest.createForMetadata(collectionPath(EndpointSlices, namespace), slice, query);
            tracker.update(created);
            sliceWrites?.inc({ operation: 'create' });
            writes++;
        }
        for (const slice of plan.updates) {
            const { namespace, name } = slice.metadata!;
            const updated = await rest.replaceForMetadata(objectPath(EndpointSlices, namespace, name!), slice, query);
            tracker.update(updated);
            sliceWrites?.inc({ operation: 'update' });
            writes++;
        }
        for (const slice of plan.deletes) {
            const { namespace, name, uid } = slice.metadata!;
            // The uid precondition keeps us from deleting a same-named successor.
            await rest.deleteExactly(objectPath(EndpointSlices, namespace, name!), uid);
            tracker.expectDeletion(slice);
            sliceWrites?.inc({ operation: 'delete' });
            writes++;
        }
        return writes;
    }
}
