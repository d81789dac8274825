// The remote cluster of one Link, as its credentials Secret reaches it: informers of its
// Services and EndpointSlices. A new spec or rotated credentials replace the RemoteWatch; the
// Link's gateway state (src/dns) outlives it, in the LinkController. It reads; it never writes.
import { KubeConfig } from '../kube/kubeconfig.js';
import { LABEL_SERVICE_NAME } from '../endpointslice/slice.js';
import { Informer } from '../kube/informer.js';
import type { LogFn } from '../kube/log.js';
import { isNotFound, KubeRest } from '../kube/rest.js';
import { EndpointSlices, objectPath, Secrets, Services } from '../kube/resources.js';
import { SharedValues } from '../kube/shared-values.js';
import { sameButResourceVersion } from '../kube/store.js';
import { compactRemoteSlice, compactService, type CachedRemoteSlice, type CachedService } from './compact.js';
import { CREDENTIALS_SECRET_KEY, type Link } from './link.js';

export interface RemoteWatchHooks {
    /** A remote Service, or its EndpointSlices, changed. Only called once the caches synced. */
    serviceChanged(namespace: string, name: string): void;
    /** The remote caches hold a full list. */
    synced(): void;
    /**
     * Reading the remote cluster failed (why; told at every failed try), or works again
     * (undefined). The informers retry with backoff and keep their caches meanwhile.
     */
    health(error: string | undefined): void;
}

/** The Link cannot be served as written (missing Secret, bad kubeconfig); retried later. */
export class LinkSetupError extends Error {
    constructor(
        readonly reason: string,
        message: string,
    ) {
        super(message);
    }
}

/** A remote Service or EndpointSlice as cached (compact.ts). */
export type RemoteService = CachedService;
export type RemoteSlice = CachedRemoteSlice;

export interface RemoteWatchOptions {
    log: LogFn;
    resyncMs?: number;
    /** Headless mirrors are on: the slices' hostnames, conditions and ports are read, so cached. */
    hostnames?: boolean;
}

export class RemoteWatch {
    readonly services: Informer<RemoteService>;
    readonly slices: Informer<RemoteSlice>;
    private stopped = false;
    private cachesSynced = false;

    private constructor(
        /** The Link uid, credentials version and spec this watch serves: a different one means a new watch. */
        readonly specKey: string,
        private readonly remote: KubeRest,
        private readonly hooks: RemoteWatchHooks,
        opts: RemoteWatchOptions,
    ) {
        const { log, resyncMs } = opts;
        // Either informer failing makes the remote unreadable: every failure is told, and the
        // recovery once both read again.
        const failing = new Set<string>();
        const health = (informer: string) => (error: string | undefined) => {
            const wasFailing = failing.size > 0;
            if (error === undefined) failing.delete(informer);
            else failing.add(informer);
            if (this.stopped || (error === undefined && (!wasFailing || failing.size > 0))) return;
            hooks.health(error);
        };
        // Cached as the mirror reads them (compact.ts): every Service and slice of the remote is.
        const shared = new SharedValues();
        this.services = new Informer(remote, {
            resource: Services,
            resyncMs,
            log,
            health: health('services'),
            transform: (svc) => compactService(svc, 'source', shared),
        });
        this.slices = new Informer<RemoteSlice>(remote, {
            resource: EndpointSlices,
            resyncMs,
            log,
            health: health('slices'),
            transform: (slice) => compactRemoteSlice(slice, opts.hostnames ?? false, shared),
            unchanged: sameButResourceVersion,
        });
        this.slices.store.indexLabel(LABEL_SERVICE_NAME);
        this.registerHandlers();
    }

    /** Loads the Link's credentials and starts watching; throws LinkSetupError when it cannot. */
    static async start(
        link: Link,
        specKey: string,
        localRest: KubeRest,
        hooks: RemoteWatchHooks,
        opts: RemoteWatchOptions & { newRemoteRest?: (kubeConfig: KubeConfig) => KubeRest },
    ): Promise<RemoteWatch> {
        const kubeConfig = await loadCredentials(link, localRest);
        const remote = opts.newRemoteRest ? opts.newRemoteRest(kubeConfig) : new KubeRest(kubeConfig);
        const watch = new RemoteWatch(specKey, remote, hooks, opts);
        watch.services.start();
        watch.slices.start();
        void Promise.all([watch.services.synced, watch.slices.synced]).then(() => {
            watch.cachesSynced = true;
            if (!watch.stopped) hooks.synced();
        });
        return watch;
    }

    get synced(): boolean {
        return this.cachesSynced;
    }

    private registerHandlers(): void {
        const service = (svc: RemoteService) => {
            if (this.cachesSynced) this.hooks.serviceChanged(svc.metadata!.namespace!, svc.metadata!.name!);
        };
        this.services.on({ add: service, update: (_, svc) => service(svc), delete: service });
        // Slices only matter for whether the remote Service has a ready endpoint.
        const slice = (s: RemoteSlice) => {
            const name = s.metadata?.labels?.[LABEL_SERVICE_NAME];
            if (name && this.cachesSynced && this.services.store.get(s.metadata?.namespace, name)) {
                this.hooks.serviceChanged(s.metadata!.namespace!, name);
            }
        };
        this.slices.on({ add: slice, update: (_, s) => slice(s), delete: slice });
    }

    async stop(): Promise<void> {
        this.stopped = true;
        await Promise.all([this.services.stop(), this.slices.stop()]);
        this.remote.close();
    }
}

async function loadCredentials(link: Link, rest: KubeRest): Promise<KubeConfig> {
    const name = link.spec.clusterCredentialsSecret;
    const where = `${link.metadata.namespace}/${name}`;
    if (name === '') throw new LinkSetupError('MissingCredentials', 'spec.clusterCredentialsSecret is empty');
    let secret: { data?: Record<string, string> };
    try {
        secret = await rest.get(objectPath(Secrets, link.metadata.namespace, name));
    } catch (err) {
        if (isNotFound(err)) throw new LinkSetupError('MissingCredentials', `credentials Secret ${where} not found`);
        throw err;
    }
    const encoded = secret.data?.[CREDENTIALS_SECRET_KEY];
    if (!encoded) throw new LinkSetupError('InvalidCredentials', `credentials Secret ${where} has no key ${CREDENTIALS_SECRET_KEY}`);
    const kubeConfig = new KubeConfig();
    try {
        kubeConfig.loadFromString(Buffer.from(encoded, 'base64').toString('utf8'));
    } catch (err) {
        throw new LinkSetupError('InvalidCredentials', `credentials Secret ${where}: key ${CREDENTIALS_SECRET_KEY} is not a kubeconfig: ${(err as Error).message}`);
    }
    if (!kubeConfig.getCurrentCluster()) throw new LinkSetupError('InvalidCredentials', `credentials Secret ${where}: the kubeconfig has no current cluster`);
    return kubeConfig;
}
