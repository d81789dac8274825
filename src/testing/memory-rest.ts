// An apiserver in memory, for the unit tests of controllers: a KubeRest whose writes are answered
// as kube-apiserver would (uids, resourceVersions, generations, a conflict on a stale
// resourceVersion or a failed precondition, merge patches, generateName, a ClusterIP for a
// Service created without one) and come back through the informers of their kind as a watch
// would bring them (the informer's transform, its handlers: the controllers' watches see the
// echoes of their own writes; an informer of one namespace or with a label selector sees only
// what its watch would). Informers are never started: a test fills them with `add` and tells
// them changes with `add` and `remove`, and the caches are as whole as a synced informer's. No
// network, no timer: what a controller writes, and in what order, is `writes` (a read is not
// one: a GET answers the apiserver's copy, or 404).
import { ApiError } from '../kube/errors.js';
import type { Informer, InformerOptions } from '../kube/informer.js';
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

/** Whether a watch of `informer` (its namespace, its label selector) brings `obj`: `a=b`, `a==b`, `a!=b`, `a`, `!a`, joined by commas. */
function watches(informer: Informer<KubeObject>, obj: KubeObject): boolean {
    const { namespace, labelSelector } = (informer as unknown as { opts: InformerOptions }).opts;
    if (namespace && obj.metadata?.namespace !== namespace) return false;
    const labels = obj.metadata?.labels ?? {};
    return (labelSelector ?? '')
        .split(',')
        .map((term) => term.trim())
        .filter(Boolean)
        .every((term) => {
            const [, key, op, value] = /^([^=!\s]+)\s*(==|!=|=)\s*(\S*)$/.exec(term) ?? [];
            if (key !== undefined) return op === '!=' ? labels[key] !== value : labels[key] === value;
            if (/[\s()]/.test(term)) throw new Error(`memory-rest: label selector ${labelSelector} not understood`);
            return term.startsWith('!') ? !(term.slice(1) in labels) : term in labels;
        });
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

/** What was written, without the objects' names: `POST endpointslices`, `PUT serviceimports/status`. */
export function kinds(writes: readonly string[]): string[] {
    return writes.map((w) => w.split(' ').slice(0, 2).join(' '));
}

export class MemoryRest extends KubeRest {
    /** Every write, in the order sent: `POST endpointslices shop/web-x`, `PATCH externalworkloads/status shop/vm-1`. */
    readonly writes: string[] = [];
    /** The apiserver's copy of every object, by plural and namespace/name. */
    private readonly objects = new Map<string, Map<string, Raw>>();
    private readonly informers = new Map<string, Informer<KubeObject>[]>();
    private version = 100;
    private uids = 0;
    private clusterIPs = 0;

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

    /** Writes of `plural` come back through this informer (those its namespace and label selector take); it counts as synced. */
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
        for (const informer of this.watching(plural, held)) watchSide(informer).deleted(held);
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
        if (method === 'GET') {
            const held = name === undefined ? undefined : this.table(plural).get(`${namespace ?? ''}/${name}`);
            if (!held) throw new ApiError(404, 'NotFound', `${plural} ${namespace ?? ''}/${name ?? ''} not found`);
            return structuredClone(held) as T;
        }
        const body = structuredClone(o.body ?? {}) as Raw & { metadata?: Raw['metadata'] & { generateName?: string }; preconditions?: { uid?: string; resourceVersion?: string } };
        const objectName = name ?? body.metadata?.name ?? `${body.metadata?.generateName ?? ''}${this.version + 1}`;
        this.writes.push(`${method} ${[plural, subresource].filter(Boolean).join('/')} ${namespace ?? ''}/${objectName}`);
        const key = `${namespace ?? ''}/${objectName}`;
        const held = this.table(plural).get(key);
        if (method === 'POST') {
            if (held) throw new ApiError(409, 'AlreadyExists', `${plural} ${key} already exists`);
            if (plural === 'services') this.allocateClusterIP(body);
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

    /** A Service created without a ClusterIP is given the next one of 10.96.0.0/16 (a headless one, `None`, keeps it), and its family. */
    private allocateClusterIP(service: Raw & { spec?: { clusterIP?: string; clusterIPs?: string[]; ipFamilies?: string[] } }): void {
        const spec = (service.spec ??= {});
        if (!spec.clusterIP) {
            const n = ++this.clusterIPs;
            spec.clusterIP = `10.96.${n >> 8}.${n & 255}`;
        }
        spec.clusterIPs ??= [spec.clusterIP];
        spec.ipFamilies ??= [spec.clusterIP.includes(':') ? 'IPv6' : 'IPv4'];
    }

    private watching(plural: string, obj: KubeObject): Informer<KubeObject>[] {
        return (this.informers.get(plural) ?? []).filter((informer) => watches(informer, obj));
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
        for (const informer of this.informers.get(plural) ?? []) {
            // A change that takes an object out of a watch's selection reaches that watch as its deletion.
            if (watches(informer, stored)) watchSide(informer).applied(structuredClone(stored));
            else if (informer.store.get(metadata.namespace, metadata.name ?? '')) watchSide(informer).deleted(structuredClone(stored));
        }
        return structuredClone(stored);
    }
}
