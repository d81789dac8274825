// An apiserver in memory, for the unit tests of controllers: a KubeRest whose writes are answered
// as kube-apiserver would (uids, resourceVersions, generations, a conflict on a stale
// resourceVersion or a failed precondition, merge patches, generateName) and come back through
// the informers of their kind as a watch would bring them (the informer's transform, its
// handlers: the controllers' watches see the echoes of their own writes). Informers are never
// started: a test fills them with `add` and tells them changes with `add` and `remove`, and the
// caches are as whole as a synced informer's. No network, no timer: what a controller writes,
// and in what order, is `writes`.
import { ApiError } from '../kube/errors.js';
import type { Informer } from '../kube/informer.js';
import { KubeConfig } from '../kube/kubeconfig.js';
import type { ReflectorStore } from '../kube/reflector.js';
import { KubeRest, type RequestOpts } from '../kube/rest.js';
import type { KubeObject } from '../kube/store.js';

type Raw = KubeObject & Record<string, unknown>;

interface Target {
    plural: string;
    namespace: string | undefined;
    name: string | undefined;
    subresource: string | undefined;
}

/** The informer's side of its watch: each object as served, cached and told to its handlers (the test's stand-in for a watch stream). */
function watchSide(informer: Informer<KubeObject>): ReflectorStore {
    return (informer as unknown as { reflectorStore(): ReflectorStore }).reflectorStore();
}

/** `/api/v1/namespaces/ns/services/web/status`, `/apis/g/v/namespaces/ns/plural`: what a path names. */
function parsePath(path: string): Target {
    const parts = path.split('?')[0]!.split('/').filter(Boolean).map(decodeURIComponent);
    const rest = parts[0] === 'api' ? parts.slice(2) : parts.slice(3);
    const namespaced = rest[0] === 'namespaces' && rest.length >= 3;
    const [plural, name, subresource] = namespaced ? rest.slice(2) : rest;
    return { plural: plural!, namespace: namespaced ? rest[1] : undefined, name, subresource };
}

/** RFC 7386: objects merged key by key, null deletes, anything else replaces. */
function mergePatch(target: unknown, patch: unknown): unknown {
    if (patch === null || typeof patch !== 'object' || Array.isArray(patch)) return patch;
    const merged: Record<string, unknown> = target !== null && typeof target === 'object' && !Array.isArray(target) ? { ...(target as Record<string, unknown>) } : {};
    for (const [key, value] of Object.entries(patch)) {
        if (value === null) delete merged[key];
        else merged[key] = mergePatch(merged[key], value);
    }
    return merged;
}

export class MemoryRest extends KubeRest {
    /** Every write, in the order sent: `POST endpointslices shop/web-x`, `PATCH externalworkloads/status shop/vm-1`. */
    readonly writes: string[] = [];
    /** The apiserver's copy of every object, by plural and namespace/name. */
    private readonly objects = new Map<string, Map<string, Raw>>();
    private readonly informers = new Map<string, Informer<KubeObject>[]>();
    private version = 100;
    private uids = 0;

    constructor() {
        const kc = new KubeConfig();
        kc.loadFromOptions({
            clusters: [{ name: 'memory', server: 'https://127.0.0.1:1' }],
            users: [{ name: 'u' }],
            contexts: [{ name: 'c', cluster: 'memory', user: 'u' }],
            currentContext: 'c',
        });
        super(kc);
    }

    /** Writes of `plural` come back through this informer; it counts as synced. */
    serve<T extends KubeObject>(plural: string, informer: Informer<T>): void {
        const list = this.informers.get(plural) ?? [];
        list.push(informer as unknown as Informer<KubeObject>);
        this.informers.set(plural, list);
        watchSide(informer as unknown as Informer<KubeObject>).synced();
    }

    /** An object created or changed by someone else: stored (a uid and resourceVersion given when it has none) and told to the informers. */
    add<T extends object>(plural: string, obj: T): T {
        const stored = this.store(plural, structuredClone(obj) as Raw);
        return stored as unknown as T;
    }

    /** An object deleted by someone else. */
    remove(plural: string, namespace: string | undefined, name: string): void {
        const held = this.table(plural).get(`${namespace ?? ''}/${name}`);
        if (!held) return;
        this.table(plural).delete(`${namespace ?? ''}/${name}`);
        for (const informer of this.informers.get(plural) ?? []) watchSide(informer).deleted(held);
    }

    /** The apiserver's copy. */
    object<T = Raw>(plural: string, namespace: string | undefined, name: string): T | undefined {
        return this.table(plural).get(`${namespace ?? ''}/${name}`) as T | undefined;
    }

    /** The apiserver's copies of a kind. */
    list<T = Raw>(plural: string): T[] {
        return [...this.table(plural).values()] as T[];
    }

    override async request<T>(method: string, path: string, o: RequestOpts = {}): Promise<T> {
        const { plural, namespace, name, subresource } = parsePath(path);
        const body = structuredClone(o.body ?? {}) as Raw & { metadata?: Raw['metadata'] & { generateName?: string }; preconditions?: { uid?: string; resourceVersion?: string } };
        const objectName = name ?? body.metadata?.name ?? `${body.metadata?.generateName ?? ''}${this.version + 1}`;
        this.writes.push(`${method} ${[plural, subresource].filter(Boolean).join('/')} ${namespace ?? ''}/${objectName}`);
        const key = `${namespace ?? ''}/${objectName}`;
        const held = this.table(plural).get(key);
        if (method === 'POST') {
            if (held) throw new ApiError(409, 'AlreadyExists', `${plural} ${key} already exists`);
            return this.store(plural, { ...body, metadata: { ...body.metadata, name: objectName, namespace } }) as T;
        }
        if (!held) throw new ApiError(404, 'NotFound', `${plural} ${key} not found`);
        if (method === 'DELETE') {
            const wanted = body.preconditions ?? {};
            if ((wanted.uid && wanted.uid !== held.metadata?.uid) || (wanted.resourceVersion && wanted.resourceVersion !== held.metadata?.resourceVersion)) {
                throw new ApiError(409, 'Conflict', `${plural} ${key}: precondition failed`);
            }
            this.remove(plural, namespace, objectName);
            return {} as T;
        }
        const sentVersion = body.metadata?.resourceVersion;
        if (sentVersion && sentVersion !== held.metadata?.resourceVersion) throw new ApiError(409, 'Conflict', `${plural} ${key}: the object has been modified`);
        let next: Raw;
        if (method === 'PATCH') next = mergePatch(held, subresource === 'status' ? { status: body.status, metadata: {} } : body) as Raw;
        else if (subresource === 'status') next = { ...held, status: body.status };
        else next = { ...body, status: held.status };
        next.metadata = { ...next.metadata, uid: held.metadata?.uid, name: objectName, namespace, resourceVersion: undefined };
        return this.store(plural, next, subresource === undefined ? (held.metadata?.generation ?? 1) + 1 : held.metadata?.generation) as T;
    }

    private table(plural: string): Map<string, Raw> {
        let table = this.objects.get(plural);
        if (!table) this.objects.set(plural, (table = new Map()));
        return table;
    }

    private store(plural: string, obj: Raw, generation = obj.metadata?.generation ?? 1): Raw {
        const metadata = { ...obj.metadata, uid: obj.metadata?.uid ?? `uid-${++this.uids}`, resourceVersion: String(++this.version), generation };
        const stored = { ...obj, metadata } as Raw;
        this.table(plural).set(`${metadata.namespace ?? ''}/${metadata.name}`, stored);
        for (const informer of this.informers.get(plural) ?? []) watchSide(informer).applied(structuredClone(stored));
        return structuredClone(stored);
    }
}
