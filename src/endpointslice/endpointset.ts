// Endpoint identity: which desired endpoint an existing one stands for, and whether it needs a write.
import type { V1Endpoint, V1EndpointConditions, V1EndpointHints, V1ObjectReference } from '@kubernetes/client-node';

/**
 * Identity is what names an endpoint (its addresses, hostname and target); everything else
 * (conditions, zone, node, uid, hints) is state of the same endpoint, compared separately so a
 * readiness flip rewrites the endpoint in its own slice instead of moving it elsewhere.
 * Each part is written after its length, so no value can pass for a separator; built for
 * every endpoint of every sync, it costs no array or JSON. Sorts a copy of the addresses when
 * there are several: the endpoint may be an informer-cache object that must never be mutated.
 */
export function endpointKey(endpoint: V1Endpoint): string {
    const addresses = endpoint.addresses;
    let key = '';
    if (addresses.length === 1) key = part(addresses[0]!);
    else for (const address of [...addresses].sort()) key += part(address);
    const ref = endpoint.targetRef;
    return `${key}|${part(endpoint.hostname ?? '')}${part(ref?.namespace ?? '')}${part(ref?.name ?? '')}`;
}

const part = (value: string) => `${value.length}:${value}`;

/**
 * The form we write, equal to what the apiserver hands back: empty strings dropped (optional
 * string fields are either absent or valid), conditions always an object, no hints (we never
 * compute them, so any found are stale) and no deprecatedTopology (read-only in discovery/v1).
 */
export function normaliseEndpoint(endpoint: V1Endpoint): V1Endpoint {
    const out: V1Endpoint = { addresses: [...endpoint.addresses], conditions: {} };
    const c = endpoint.conditions;
    if (c?.ready !== undefined) out.conditions!.ready = c.ready;
    if (c?.serving !== undefined) out.conditions!.serving = c.serving;
    if (c?.terminating !== undefined) out.conditions!.terminating = c.terminating;
    if (endpoint.hostname) out.hostname = endpoint.hostname;
    if (endpoint.nodeName) out.nodeName = endpoint.nodeName;
    if (endpoint.zone) out.zone = endpoint.zone;
    const targetRef = normaliseTargetRef(endpoint.targetRef);
    if (targetRef) out.targetRef = targetRef;
    return out;
}

/**
 * normaliseEndpoint's result, or the endpoint itself where that would be an equal copy (the plan
 * then holds the caller's object; nothing in it is ever changed): source adapters build their
 * endpoints in this form, and copying each of them at every plan cost a fifth of a no-op re-plan.
 */
export function inNormalForm(endpoint: V1Endpoint): V1Endpoint {
    return isNormal(endpoint) ? endpoint : normaliseEndpoint(endpoint);
}

/** Exactly the fields normaliseEndpoint would copy, each set (strings not empty). Loops, not closures: this runs for every desired endpoint. */
function isNormal(endpoint: V1Endpoint): boolean {
    const { conditions, targetRef } = endpoint;
    if (!Array.isArray(endpoint.addresses) || conditions == null) return false;
    for (const key in endpoint) if (!ENDPOINT_FIELDS.has(key) || !endpoint[key as keyof V1Endpoint]) return false;
    for (const key in conditions) if (!CONDITIONS.has(key) || conditions[key as keyof V1EndpointConditions] === undefined) return false;
    if (targetRef === undefined) return true;
    let fields = 0;
    for (const key in targetRef) {
        if (!TARGET_REF_FIELDS.has(key) || !targetRef[key as keyof V1ObjectReference]) return false;
        fields++;
    }
    return fields > 0;
}

const ENDPOINT_FIELDS: ReadonlySet<string> = new Set(['addresses', 'conditions', 'hostname', 'nodeName', 'zone', 'targetRef']);
const CONDITIONS: ReadonlySet<string> = new Set(['ready', 'serving', 'terminating']);
const TARGET_REF_FIELDS: ReadonlySet<string> = new Set(['kind', 'namespace', 'name', 'uid', 'apiVersion', 'resourceVersion', 'fieldPath']);

/** Written out field by field: a loop of keyed stores over a field list cost more than the rest of the endpoint. */
function normaliseTargetRef(ref: V1ObjectReference | undefined): V1ObjectReference | undefined {
    if (!ref) return undefined;
    const { kind, namespace, name, uid, apiVersion, resourceVersion, fieldPath } = ref;
    if (!(kind || namespace || name || uid || apiVersion || resourceVersion || fieldPath)) return undefined;
    const out: V1ObjectReference = {};
    if (kind) out.kind = kind;
    if (namespace) out.namespace = namespace;
    if (name) out.name = name;
    if (uid) out.uid = uid;
    if (apiVersion) out.apiVersion = apiVersion;
    if (resourceVersion) out.resourceVersion = resourceVersion;
    if (fieldPath) out.fieldPath = fieldPath;
    return out;
}

/** Every field but resourceVersion, which moves on every write of the target: following it would rewrite slices for changes that do not concern them. */
function sameTargetRef(a: V1ObjectReference | undefined, b: V1ObjectReference | undefined): boolean {
    return (
        (a?.kind ?? '') === (b?.kind ?? '') &&
        (a?.namespace ?? '') === (b?.namespace ?? '') &&
        (a?.name ?? '') === (b?.name ?? '') &&
        (a?.uid ?? '') === (b?.uid ?? '') &&
        (a?.apiVersion ?? '') === (b?.apiVersion ?? '') &&
        (a?.fieldPath ?? '') === (b?.fieldPath ?? '')
    );
}

function sameHints(a: V1EndpointHints | undefined, b: V1EndpointHints | undefined): boolean {
    // We write none; most endpoints compared have none on either side.
    if (a === undefined && b === undefined) return true;
    return hintsKey(a) === hintsKey(b);
}

function hintsKey(hints: V1EndpointHints | undefined): string {
    const zones = (hints?.forZones ?? []).map((z) => z.name).sort();
    const nodes = (hints?.forNodes ?? []).map((n) => n.name).sort();
    return JSON.stringify([zones, nodes]);
}

/**
 * Whether an existing endpoint already says what the desired one says, beyond their shared
 * identity. A condition that is unset is not the same as one set to false (nil means "unknown,
 * treat as ready" to consumers), so nil-versus-set is a difference.
 */
export function endpointsEqualBeyondIdentity(a: V1Endpoint, b: V1Endpoint): boolean {
    return (
        (a.nodeName ?? '') === (b.nodeName ?? '') &&
        (a.zone ?? '') === (b.zone ?? '') &&
        a.conditions?.ready === b.conditions?.ready &&
        a.conditions?.serving === b.conditions?.serving &&
        a.conditions?.terminating === b.conditions?.terminating &&
        sameTargetRef(a.targetRef, b.targetRef) &&
        sameHints(a.hints, b.hints)
    );
}

/** Endpoints by identity; a later endpoint of the same identity replaces an earlier one. */
export class EndpointSet {
    // A set to be taken from is filed under the identity's least address, a string the endpoint
    // already holds (V8 keeps its hash): building and hashing endpointKey for every desired and
    // every existing endpoint was most of a no-op re-plan. Without that (a first plan: no
    // slices to match) under endpointKey, which sorted() needs anyway.
    private readonly byAddress: Map<string, V1Endpoint[]> | undefined;
    private readonly byKey = new Map<string, V1Endpoint>();
    private count = 0;

    constructor(endpoints: Iterable<V1Endpoint> = [], options: { toTake?: boolean } = {}) {
        if (options.toTake ?? true) this.byAddress = new Map();
        for (const endpoint of endpoints) this.add(endpoint);
    }

    get size(): number {
        return this.byAddress ? this.count : this.byKey.size;
    }

    add(endpoint: V1Endpoint): void {
        if (!this.byAddress) {
            this.byKey.set(endpointKey(endpoint), endpoint);
            return;
        }
        const address = leastAddress(endpoint);
        let held = this.byAddress.get(address);
        if (!held) this.byAddress.set(address, (held = []));
        const i = indexOfIdentity(held, endpoint);
        if (i >= 0) held[i] = endpoint;
        else {
            held.push(endpoint);
            this.count++;
        }
    }

    /** The endpoint of this identity, removed from the set. */
    take(endpoint: V1Endpoint): V1Endpoint | undefined {
        if (!this.byAddress) {
            const key = endpointKey(endpoint);
            const held = this.byKey.get(key);
            this.byKey.delete(key);
            return held;
        }
        const held = this.byAddress.get(leastAddress(endpoint)) ?? NONE;
        const i = indexOfIdentity(held, endpoint);
        if (i < 0) return undefined;
        this.count--;
        // The last moved into its place: no array made. An emptied list stays: a large Map rehashes as it empties.
        const taken = held[i]!;
        held[i] = held[held.length - 1]!;
        held.pop();
        return taken;
    }

    /**
     * In identity-key order, so whatever is built from the set does not depend on input order. The
     * keys sorted as strings (code-unit order, without a comparator called back per pair), then looked up.
     */
    sorted(): V1Endpoint[] {
        const byKey = this.byAddress ? new Map<string, V1Endpoint>() : this.byKey;
        // forEach and an index, not for...of: in unoptimised code (a first plan) that allocates per endpoint.
        this.byAddress?.forEach((held) => {
            for (let i = 0; i < held.length; i++) byKey.set(endpointKey(held[i]!), held[i]!);
        });
        return [...byKey.keys()].sort().map((key) => byKey.get(key)!);
    }
}

const NONE: V1Endpoint[] = [];

/** The first of endpointKey's sorted addresses. */
function leastAddress({ addresses }: V1Endpoint): string {
    return addresses.length === 1 ? addresses[0]! : ([...addresses].sort()[0] ?? '');
}

function indexOfIdentity(held: readonly V1Endpoint[], endpoint: V1Endpoint): number {
    for (let i = 0; i < held.length; i++) if (sameIdentity(held[i]!, endpoint)) return i;
    return -1;
}

/** endpointKey(a) === endpointKey(b), without building either. */
function sameIdentity(a: V1Endpoint, b: V1Endpoint): boolean {
    return (
        (a.targetRef?.name ?? '') === (b.targetRef?.name ?? '') &&
        (a.targetRef?.namespace ?? '') === (b.targetRef?.namespace ?? '') &&
        (a.hostname ?? '') === (b.hostname ?? '') &&
        sameAddresses(a.addresses, b.addresses)
    );
}

/** The same addresses in any order, each as often (endpointKey's sorted list). */
function sameAddresses(a: readonly string[], b: readonly string[]): boolean {
    if (a.length !== b.length) return false;
    if (a.length === 1) return a[0] === b[0];
    const sortedB = [...b].sort();
    return [...a].sort().every((address, i) => address === sortedB[i]);
}
