// A client that answers in memory as an apiserver would, for the unit tests of the service
// mirror's reconcilers (not part of the product): each write is recorded, given a uid and a
// resourceVersion (a Service a ClusterIP), and put in the store of its kind, as its watch would
// bring it back; a merge patch merges (RFC 7386); a read of what no store holds is a 404.
import { ApiError } from '../kube/errors.js';
import { KubeConfig } from '../kube/kubeconfig.js';
import { KubeRest, type RequestOpts } from '../kube/rest.js';
import type { KubeObject, ObjectStore } from '../kube/store.js';

function merged(target: unknown, patch: unknown): unknown {
    if (patch === null || typeof patch !== 'object' || Array.isArray(patch)) return patch;
    const out: Record<string, unknown> = target !== null && typeof target === 'object' && !Array.isArray(target) ? { ...(target as Record<string, unknown>) } : {};
    for (const [key, value] of Object.entries(patch)) {
        if (value === null) delete out[key];
        else out[key] = merged(out[key], value);
    }
    return out;
}

type Stored = KubeObject & { spec?: Record<string, unknown> };

export class MemoryRest extends KubeRest {
    /** "METHOD plural[/subresource]" of every write, in the order sent. */
    readonly writes: string[] = [];
    /** Plural → the store its objects are put in (an informer's, or one of the test's). */
    readonly stores = new Map<string, ObjectStore<KubeObject>>();
    private version = 100;

    constructor() {
        const kc = new KubeConfig();
        kc.loadFromOptions({
            clusters: [{ name: 'none', server: 'https://127.0.0.1:1' }],
            users: [{ name: 'u' }],
            contexts: [{ name: 'c', cluster: 'none', user: 'u' }],
            currentContext: 'c',
        });
        super(kc);
    }

    override async request<T>(method: string, path: string, o: RequestOpts = {}): Promise<T> {
        const [, namespace, plural, name, subresource] = /\/namespaces\/([^/]+)\/([^/]+)(?:\/([^/]+))?(?:\/([^/]+))?$/.exec(path) ?? [];
        const store = this.stores.get(plural!);
        if (!store) throw new Error(`no store for ${path}`);
        const before = name === undefined ? undefined : store.get(namespace, name);
        if (method === 'GET') {
            if (!before) throw new ApiError(404, 'NotFound', `${path} not found`);
            return structuredClone(before) as T;
        }
        this.writes.push(`${method} ${[plural, subresource].filter(Boolean).join('/')}`);
        if (method === 'DELETE') {
            if (!before) throw new ApiError(404, 'NotFound', `${path} not found`);
            store.delete(before);
            return before as T;
        }
        const body = (method === 'PATCH' ? merged(before, o.body) : structuredClone(o.body)) as Stored;
        const version = String(++this.version);
        const metadata = { ...body.metadata, namespace, resourceVersion: version, uid: before?.metadata?.uid ?? body.metadata?.uid ?? `uid-${version}` };
        metadata.name ??= `${(body.metadata as { generateName?: string }).generateName}${version}`;
        if (method === 'POST' && plural === 'services' && body.spec?.clusterIP !== 'None') Object.assign(body.spec!, { clusterIP: '10.96.0.7', clusterIPs: ['10.96.0.7'] });
        const stored = { ...body, metadata };
        store.set(stored);
        return structuredClone(stored) as T;
    }
}
