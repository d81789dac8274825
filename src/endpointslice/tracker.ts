// The generations of the slices we wrote, per Service, so that an informer cache that has not
// yet seen our own writes is recognised as stale (planning against it would undo or repeat
// them) and the events our writes cause do not trigger another sync.
import type { V1EndpointSlice } from '@kubernetes/client-node';
import { LABEL_SERVICE_NAME } from './slice.js';

/** All the tracker reads of a slice (a write's answer holds only this: see SliceWriter). */
type SliceMetadata = Pick<V1EndpointSlice, 'metadata'>;

/** Tracked in place of a generation once we deleted the slice. */
const DELETION_EXPECTED = -1;

interface ServiceSlices {
    /** uid of the Service the generations were written for, when known. */
    serviceUid?: string;
    generations: Map<string, number>;
}

export interface TrackedService {
    namespace: string;
    name: string;
    uid: string;
}

function serviceKey(namespace: string, name: string): string {
    return `${namespace}/${name}`;
}

/** Generation, not resourceVersion: only writes of the slice's contents matter here. */
function generationOf(slice: SliceMetadata): number {
    return slice.metadata?.generation ?? 0;
}

function controllerUid(slice: SliceMetadata): string | undefined {
    for (const ref of slice.metadata?.ownerReferences ?? []) if (ref.controller) return ref.uid;
    return undefined;
}

export class SliceTracker {
    private readonly byService = new Map<string, ServiceSlices>();

    private keyOf(slice: SliceMetadata): { key: string; uid: string } | undefined {
        const serviceName = slice.metadata?.labels?.[LABEL_SERVICE_NAME];
        const uid = slice.metadata?.uid;
        if (!serviceName || !uid) return undefined;
        return { key: serviceKey(slice.metadata?.namespace ?? '', serviceName), uid };
    }

    private entry(key: string): ServiceSlices {
        let entry = this.byService.get(key);
        if (!entry) {
            entry = { generations: new Map() };
            this.byService.set(key, entry);
        }
        return entry;
    }

    private tracked(slice: SliceMetadata): number | undefined {
        const id = this.keyOf(slice);
        return id && this.byService.get(id.key)?.generations.get(id.uid);
    }

    /** After a create or update succeeded, with the object the apiserver returned. */
    update(slice: SliceMetadata): void {
        const id = this.keyOf(slice);
        if (!id) return;
        const entry = this.entry(id.key);
        const serviceUid = controllerUid(slice);
        if (serviceUid !== undefined && serviceUid !== entry.serviceUid) {
            // A Service of this name with another uid: what we tracked belonged to its predecessor.
            if (entry.serviceUid !== undefined) entry.generations.clear();
            entry.serviceUid = serviceUid;
        }
        entry.generations.set(id.uid, generationOf(slice));
    }

    /** After a delete was sent: the informer may still show the slice for a while. */
    expectDeletion(slice: SliceMetadata): void {
        const id = this.keyOf(slice);
        if (id) this.entry(id.key).generations.set(id.uid, DELETION_EXPECTED);
    }

    has(slice: SliceMetadata): boolean {
        return this.tracked(slice) !== undefined;
    }

    /** False for the echo of our own write, so it does not cause another sync. */
    shouldSync(slice: SliceMetadata): boolean {
        const generation = this.tracked(slice);
        return generation === undefined || generationOf(slice) > generation;
    }

    /**
     * Forgets a deleted slice; false when we were tracking it and did not delete it ourselves,
     * i.e. someone else removed a slice the Service still needs.
     */
    handleDeletion(slice: SliceMetadata): boolean {
        const id = this.keyOf(slice);
        const entry = id && this.byService.get(id.key);
        if (!id || !entry) return true;
        const generation = entry.generations.get(id.uid);
        entry.generations.delete(id.uid);
        return generation === undefined || generation === DELETION_EXPECTED;
    }

    /**
     * True when the informer's slices of this Service are older than what we wrote: one we
     * deleted is still there, one has a lower generation than we got back, or one we wrote is
     * missing. Generations of an earlier Service of the same name (other uid) are dropped first:
     * its slices are the garbage collector's now, not a sign of a stale cache.
     */
    staleSlices(service: TrackedService, slicesFromInformer: readonly SliceMetadata[]): boolean {
        const entry = this.byService.get(serviceKey(service.namespace, service.name));
        if (!entry) return false;
        if (entry.serviceUid !== undefined && entry.serviceUid !== service.uid) {
            entry.generations.clear();
            entry.serviceUid = service.uid;
            return false;
        }
        const seen = new Set<string>();
        for (const slice of slicesFromInformer) {
            const uid = slice.metadata?.uid;
            if (!uid) continue;
            seen.add(uid);
            const generation = entry.generations.get(uid);
            if (generation === undefined) continue;
            if (generation === DELETION_EXPECTED || generation > generationOf(slice)) return true;
        }
        for (const [uid, generation] of entry.generations) {
            if (generation !== DELETION_EXPECTED && !seen.has(uid)) return true;
        }
        return false;
    }

    deleteService(namespace: string, name: string): void {
        this.byService.delete(serviceKey(namespace, name));
    }

    /** On gaining leadership: what an earlier term wrote may have been overwritten since. */
    reset(): void {
        this.byService.clear();
    }
}
