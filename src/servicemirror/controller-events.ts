// Which local event queues which key. Links and their credentials Secrets queue the Link's
// watch; our mirror Services and slices (someone else's edit or delete, not the echo of our
// own write) and new namespaces queue the mirrors concerned. Remote events are the LinkWatch's.
import type { V1EndpointSlice, V1Service } from '@kubernetes/client-node';
import { LABEL_SERVICE_NAME } from '../endpointslice/slice.js';
import type { SliceTracker } from '../endpointslice/tracker.js';
import type { Informer } from '../kube/informer.js';
import type { KubeObject } from '../kube/store.js';
import type { WorkQueue } from '../kube/workqueue.js';
import type { LinkLifecycle } from './controller-links.js';
import { CLUSTER_NAME_LABEL, remoteServiceName } from './mirror.js';

type LocalService = V1Service & KubeObject;
type LocalSlice = V1EndpointSlice & KubeObject;
type Key = string;

export const mirrorKey = (link: string, namespace: string, name: string): Key => `mirror/${link}/${namespace}/${name}`;

export interface LocalHandlerDeps {
    links: Informer<KubeObject>;
    secrets: Informer<KubeObject>;
    services: Informer<LocalService>;
    slices: Informer<LocalSlice>;
    namespaces: Informer<KubeObject>;
    tracker: SliceTracker;
    lifecycle: LinkLifecycle;
    /** The queue while leading; events arriving otherwise are dropped (leading re-lists all). */
    queue: () => WorkQueue<Key> | undefined;
}

export function registerLocalHandlers(deps: LocalHandlerDeps): void {
    const watchLink = (obj: KubeObject) => deps.queue()?.add(`watch/${obj.metadata!.name!}`);
    deps.links.on({
        add: watchLink,
        // Status writes (ours included) come back as updates: only a spec change matters.
        update: (old, obj) => {
            const spec = (o: KubeObject) => JSON.stringify((o as { spec?: unknown }).spec);
            if (spec(old) !== spec(obj) || old.metadata?.uid !== obj.metadata?.uid) watchLink(obj);
        },
        delete: watchLink,
    });
    const credentialsChanged = (secret: KubeObject) => {
        for (const link of deps.links.store.list()) {
            if ((link as { spec?: { clusterCredentialsSecret?: string } }).spec?.clusterCredentialsSecret === secret.metadata?.name) watchLink(link);
        }
    };
    deps.secrets.on({ add: credentialsChanged, update: (_, secret) => credentialsChanged(secret), delete: credentialsChanged });

    // Our mirrors: someone else's edit or delete is undone by the sync of their remote Service.
    const mirrorOf = (obj: KubeObject, serviceName: string | undefined) => {
        const cluster = obj.metadata?.labels?.[CLUSTER_NAME_LABEL];
        const watch = cluster ? deps.lifecycle.forCluster(cluster) : undefined;
        const remote = serviceName && cluster ? remoteServiceName(serviceName, cluster) : null;
        return watch && remote ? mirrorKey(watch.link.metadata.name, obj.metadata!.namespace!, remote) : undefined;
    };
    const service = (svc: LocalService) => {
        const key = mirrorOf(svc, svc.metadata?.name);
        if (key) deps.queue()?.add(key);
    };
    deps.services.on({ add: service, update: (_, svc) => service(svc), delete: service });

    // The tracker tells the echo of our own slice writes from someone else's change.
    const sliceKey = (slice: LocalSlice) => mirrorOf(slice, slice.metadata?.labels?.[LABEL_SERVICE_NAME]);
    const later = (key: Key | undefined) => key && deps.queue()?.addAfter(key, 500);
    deps.slices.on({
        add: (slice) => deps.tracker.shouldSync(slice) && later(sliceKey(slice)),
        update: (_, slice) => deps.tracker.shouldSync(slice) && later(sliceKey(slice)),
        delete: (slice) => !deps.tracker.handleDeletion(slice) && later(sliceKey(slice)),
    });

    // A mirror skipped for want of its namespace is created once the namespace appears.
    deps.namespaces.on({
        add: (ns) => {
            for (const watch of deps.lifecycle.all()) {
                if (!watch.synced) continue;
                for (const svc of watch.services.store.list(ns.metadata!.name)) {
                    deps.queue()?.add(mirrorKey(watch.link.metadata.name, svc.metadata!.namespace!, svc.metadata!.name!));
                }
            }
        },
    });
}
