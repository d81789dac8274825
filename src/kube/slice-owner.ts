// Everything a controller needs to own its EndpointSlices: the informer of the slices it
// manages (selected by its managed-by label, indexed by Service), the tracker that tells the
// echo of its own writes from someone else's change, and the stale check → plan → guarded
// write of one Service's slices. Both controllers own their slices through one of these; it
// must not know what the slices are for.
import type { Counter } from 'prom-client';
import { LABEL_MANAGED_BY, LABEL_SERVICE_NAME } from '../endpointslice/slice.js';
import { SliceTracker } from '../endpointslice/tracker.js';
import { writesPlan } from '../endpointslice/reconciler.js';
import type { SlicePlan } from '../endpointslice/types.js';
import type { Source } from './controller.js';
import { Informer, type InformerHandlers } from './informer.js';
import type { LogFn } from './log.js';
import type { KubeRest } from './rest.js';
import { EndpointSlices } from './resources.js';
import { compactSlice, type OwnedSlice } from './slice-cache.js';
import { serviceKeyOf, SliceWriter } from './slice-writer.js';
import { StaleCacheError } from './errors.js';
import { SharedValues } from './shared-values.js';

/** The Service whose slices are converged. */
export interface SliceOwnerRef {
    namespace: string;
    name: string;
    uid: string;
}

export interface SliceOwnerOptions {
    rest: KubeRest;
    /** endpointslice.kubernetes.io/managed-by of our slices; also the field manager of our writes. */
    managedBy: string;
    /** Counts writes by operation (create, update, delete). */
    sliceWrites?: Counter<'operation'>;
    namespace?: string;
    /** Labels to index slices by, besides the Service name. */
    indexLabels?: string[];
    log: LogFn;
}

export class SliceOwner {
    readonly informer: Informer<OwnedSlice>;
    readonly tracker = new SliceTracker();
    readonly writer: SliceWriter;

    constructor(opts: SliceOwnerOptions) {
        const shared = new SharedValues();
        this.informer = new Informer<OwnedSlice>(opts.rest, {
            resource: EndpointSlices,
            namespace: opts.namespace,
            labelSelector: `${LABEL_MANAGED_BY}=${opts.managedBy}`,
            transform: (slice) => compactSlice(slice as OwnedSlice, shared),
            log: opts.log,
        });
        for (const label of [LABEL_SERVICE_NAME, ...(opts.indexLabels ?? [])]) this.informer.store.indexLabel(label);
        this.writer = new SliceWriter({
            rest: opts.rest,
            tracker: this.tracker,
            fieldManager: opts.managedBy,
            sliceWrites: opts.sliceWrites,
        });
        this.judgeForeignChanges();
    }

    /**
     * The slices someone else created, edited or deleted, as a source controllers watch (keyed
     * by the slice's Service): those are to be undone. It replays nothing: the Services whose
     * slices these are start each term through their own sources.
     */
    readonly foreignChanges: Source<OwnedSlice> = {
        on: (handlers) => {
            this.foreignHandlers.add(handlers);
            return () => this.foreignHandlers.delete(handlers);
        },
        list: () => [],
    };

    private readonly foreignHandlers = new Set<InformerHandlers<OwnedSlice>>();

    /**
     * Tells foreignChanges' watchers what is not the echo of our own writes, judged here once
     * however many watch (the tracker forgets a slice as it judges its delete). An edit that
     * moved a slice between Services is told as an update: a watch queues both.
     */
    private judgeForeignChanges(): void {
        const serviceOf = (slice: OwnedSlice) => slice.metadata?.labels?.[LABEL_SERVICE_NAME];
        const tell = (call: (h: InformerHandlers<OwnedSlice>) => void) => this.foreignHandlers.forEach(call);
        // An event that comes while its Service's slices are being written may be the echo of
        // that write: judged once the tracker has the write's response.
        const judged = (slice: OwnedSlice, judge: () => void) => {
            if (!this.writer.inFlight.hold(serviceKeyOf(slice), judge)) judge();
        };
        this.informer.on({
            add: (slice) => judged(slice, () => this.tracker.shouldSync(slice) && tell((h) => h.add?.(slice))),
            update: (old, slice) => {
                if (serviceOf(old) !== serviceOf(slice)) tell((h) => h.update?.(old, slice));
                else judged(slice, () => this.tracker.shouldSync(slice) && tell((h) => h.update?.(old, slice)));
            },
            delete: (slice) => judged(slice, () => !this.tracker.handleDeletion(slice) && tell((h) => h.delete?.(slice))),
        });
    }

    slicesOf(namespace: string, service: string): OwnedSlice[] {
        return this.informer.store.byLabel(LABEL_SERVICE_NAME, service, namespace);
    }

    /**
     * The Service's cached slices, to plan from. Throws StaleCacheError while the cache lacks one
     * of our own writes: planning from it would undo that write.
     */
    currentSlices(owner: SliceOwnerRef): OwnedSlice[] {
        const existing = this.slicesOf(owner.namespace, owner.name);
        if (this.tracker.staleSlices(owner, existing)) throw new StaleCacheError(`slices of ${owner.namespace}/${owner.name} not yet in cache`);
        return existing;
    }

    /** Writes a plan made from currentSlices: its writes carry the resourceVersions it planned against, and a conflict fails the sync (retried). */
    apply(plan: SlicePlan): Promise<number> {
        return this.writer.apply(plan);
    }

    /** Deletes these slices of ours (their Service is gone or no longer served). */
    deleteAll(slices: OwnedSlice[]): Promise<number> {
        return this.apply(writesPlan({ deletes: slices }));
    }

    /** The Service is gone: its tracked generations go too. */
    forgetService(namespace: string, name: string): void {
        this.tracker.deleteService(namespace, name);
    }

    /** A new leadership term: what an earlier term wrote may have been changed by another leader since. */
    newTerm(): void {
        this.tracker.reset();
    }
}
