// The remote cluster of one Link, as its credentials Secret reaches it: informers of its
// Services and EndpointSlices. A new spec or rotated credentials replace the RemoteWatch; the
// Link's gateway state (src/dns) outlives it, in the LinkController. It reads; it never writes.
import type { KubeConfig } from '../../kube/kubeconfig.js';
import { LABEL_SERVICE_NAME } from '../../endpointslice/slice.js';
import { Informer } from '../../kube/informer.js';
import { optionalApiLog, type LogFn } from '../../kube/log.js';
import { KubeRest } from '../../kube/rest.js';
import { EndpointSlices, Services, ServiceExports } from '../../kube/resources.js';
import { SharedValues } from '../../kube/shared-values.js';
import { sameButResourceVersion } from '../../kube/store.js';
import { mapSource, SourceSet } from '../../kube/sources.js';
import { compactRemoteSlice, compactService, type CompactRemoteSlice, type CompactService } from '../cache/compact.js';
import { STRICT_POLICY, type KubeconfigPolicy } from '../../kube/untrusted-kubeconfig.js';
import { readLinkCredentials, type CredentialsProblem } from './credentials.js';
import type { Link } from '../api/link.js';
import { compactExport, exportSpecChanged } from '../mcs/cache.js';
import type { ServiceExport } from '../mcs/types.js';
import type { RemoteObjectRef } from '../mcs/clusterset.js';
import { remoteFailureReason, type RemoteHealth } from '../plan/status.js';
import { systemClock } from '../../time/clock.js';

/**
 * The largest remote Service or EndpointSlice cached, in characters of its JSON (bytes, for
 * the ASCII an apiserver sends). A real one stays far below: annotations may total 256 KiB, an
 * EndpointSlice holds at most 1 000 endpoints and 100 ports, etcd stores at most 1.5 MiB. Only
 * a remote apiserver that is not what it claims sends more; such an object is dropped, not cached.
 */
export const REMOTE_OBJECT_MAX_BYTES = 1024 * 1024;

/** What the Link's controller is told of the watch's life; the remote's objects are a source (RemoteWatch.changes). */
export interface RemoteWatchHooks {
    /** The remote caches hold a full list. */
    synced(): void;
    /**
     * Reading the remote cluster failed, failed for another reason, or works again (`health`,
     * told once per change). The informers retry with backoff and keep their caches meanwhile.
     */
    health(health: RemoteHealth): void;
    /** A remote object was not cached for its size (REMOTE_OBJECT_MAX_BYTES). */
    oversized?(kind: 'Service' | 'EndpointSlice', object: { namespace?: string; name?: string }, chars: number): void;
    /** The remote's ServiceExports were listed. */
    exportsSynced?(): void;
}

/** The Link cannot be served as written: its credentials are missing, unusable or refused. */
export class LinkSetupError extends Error {
    constructor(readonly problem: CredentialsProblem) {
        super(problem.message);
    }

    get reason(): string {
        return this.problem.reason;
    }
}

/** A remote Service or EndpointSlice as cached (compact.ts). */
export type RemoteService = CompactService;
export type RemoteSlice = CompactRemoteSlice;

export interface RemoteWatchOptions {
    log: LogFn;
    /** Headless mirrors are on: the slices' hostnames, conditions and ports are read, so cached. */
    hostnames?: boolean;
    /** What the credentials kubeconfig may hold beyond inline material (strict when absent). */
    credentialsPolicy?: KubeconfigPolicy;
    /** MCS is served: the remote's ServiceExports are watched too (their CRD may be missing there). */
    serviceExports?: boolean;
}

export class RemoteWatch {
    readonly services: Informer<RemoteService>;
    readonly slices: Informer<RemoteSlice>;
    /** The remote's ServiceExports, when MCS is served; not part of `synced` (see exportsKnown). */
    readonly exports: Informer<ServiceExport> | undefined;
    /**
     * The remote's Services and ServiceExports as they change, and its slices as the Services they
     * feed: a source controllers watch (Controller.watch). Services and slices are told once the
     * caches synced (the first lists are the start of the watch, not changes), a slice only while
     * its Service is cached (it only matters for whether that Service has a ready endpoint), an
     * export only when its spec changed (another cluster's conditions on its own export are
     * nothing read here).
     */
    readonly changes = new SourceSet<RemoteObjectRef>();
    private stopped = false;
    private cachesSynced = false;
    /** Whether the remote can be read, and since when; undefined until its first list or failure. */
    private current: RemoteHealth | undefined;

    private constructor(
        /** The Link uid, credentials version and spec this watch serves: a different one means a new watch. */
        readonly specKey: string,
        /** The Link and its cluster: what each change names. */
        private readonly source: { link: string; cluster: string },
        private readonly remote: KubeRest,
        private readonly hooks: RemoteWatchHooks,
        opts: RemoteWatchOptions,
    ) {
        const { log } = opts;
        // Either informer failing makes the remote unreadable: every failure is told, and the
        // recovery once both read again.
        const failing = new Set<string>();
        const health = (informer: string) => (error: string | undefined) => {
            const wasFailing = failing.size > 0;
            if (error === undefined) failing.delete(informer);
            else failing.add(informer);
            if (this.stopped || (error === undefined && (!wasFailing || failing.size > 0))) return;
            this.told(error);
        };
        // Cached as the mirror reads them (compact.ts): every Service and slice of the remote is.
        const shared = new SharedValues();
        this.services = new Informer(remote, {
            resource: Services,
            log,
            health: health('services'),
            maxObjectBytes: REMOTE_OBJECT_MAX_BYTES,
            oversized: (object, chars) => hooks.oversized?.('Service', object, chars),
            transform: (svc) => compactService(svc, 'source', shared),
        });
        this.slices = new Informer<RemoteSlice>(remote, {
            resource: EndpointSlices,
            log,
            health: health('slices'),
            maxObjectBytes: REMOTE_OBJECT_MAX_BYTES,
            oversized: (object, chars) => hooks.oversized?.('EndpointSlice', object, chars),
            transform: (slice) => compactRemoteSlice(slice, opts.hostnames ?? false, shared),
            unchanged: sameButResourceVersion,
        });
        this.slices.store.indexLabel(LABEL_SERVICE_NAME);
        if (opts.serviceExports) {
            this.exports = new Informer<ServiceExport>(remote, { resource: ServiceExports, log: optionalApiLog(log), transform: compactExport });
        }
        this.registerChanges();
    }

    /** Loads the Link's credentials and starts watching; throws LinkSetupError when it cannot. */
    static async start(
        link: Link,
        specKey: string,
        localRest: KubeRest,
        hooks: RemoteWatchHooks,
        opts: RemoteWatchOptions & { newRemoteRest?: (kubeConfig: KubeConfig) => KubeRest },
    ): Promise<RemoteWatch> {
        const credentials = await readLinkCredentials(localRest, link.metadata.namespace, link.spec.clusterCredentialsSecret, opts.credentialsPolicy ?? STRICT_POLICY);
        if ('problem' in credentials) throw new LinkSetupError(credentials.problem);
        const { kubeConfig } = credentials;
        const remote = opts.newRemoteRest ? opts.newRemoteRest(kubeConfig) : new KubeRest(kubeConfig);
        const watch = new RemoteWatch(specKey, { link: link.metadata.name, cluster: link.spec.targetClusterName }, remote, hooks, opts);
        watch.services.start();
        watch.slices.start();
        watch.exports?.start();
        void watch.exports?.synced.then(() => {
            if (!watch.stopped) hooks.exportsSynced?.();
        });
        void Promise.all([watch.services.synced, watch.slices.synced]).then(() => {
            watch.cachesSynced = true;
            watch.current ??= { readable: true, since: systemClock.now() };
            if (!watch.stopped) hooks.synced();
        });
        return watch;
    }

    get synced(): boolean {
        return this.cachesSynced;
    }

    get health(): RemoteHealth | undefined {
        return this.current;
    }

    /** A failure (why) or the recovery (undefined): a new health unless it fails again for the same reason. */
    private told(error: string | undefined): void {
        const before = this.current;
        if (error !== undefined && before?.readable === false && remoteFailureReason(error) === remoteFailureReason(before.error ?? '')) return;
        const since = before?.readable === (error === undefined) ? before.since : systemClock.now();
        this.current = error === undefined ? { readable: true, since } : { readable: false, since, error };
        this.hooks.health(this.current);
    }

    /** Whether the remote's exports are known: listed, or the remote does not serve the API (no CRD: none). */
    get exportsKnown(): boolean {
        return this.exports !== undefined && (this.exports.hasSynced() || this.exports.problem() !== undefined);
    }

    private registerChanges(): void {
        const { link, cluster } = this.source;
        const ref = (obj: { metadata?: { namespace?: string; name?: string } }, kind: RemoteObjectRef['kind'], name = obj.metadata?.name): RemoteObjectRef[] => (name ? [{ link, cluster, namespace: obj.metadata!.namespace!, name, kind }] : []);
        this.changes.set('services', mapSource(this.services, (svc) => (this.cachesSynced ? ref(svc, 'service') : [])));
        this.changes.set(
            'slices',
            mapSource(this.slices, (s) => {
                const name = s.metadata?.labels?.[LABEL_SERVICE_NAME];
                return name && this.cachesSynced && this.services.store.get(s.metadata?.namespace, name) ? ref(s, 'endpoints', name) : [];
            }),
        );
        if (this.exports) this.changes.set('exports', mapSource(this.exports, (e) => ref(e, 'export'), { changed: exportSpecChanged }));
    }

    async stop(): Promise<void> {
        this.stopped = true;
        for (const id of ['services', 'slices', 'exports']) this.changes.remove(id);
        await Promise.all([this.services.stop(), this.slices.stop(), this.exports?.stop()]);
        this.remote.close();
    }
}
