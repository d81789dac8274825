// Endpoint identity: which desired endpoint an existing one stands for, and whether it needs a write.
import type { V1Endpoint, V1EndpointHints, V1ObjectReference } from '@kubernetes/client-node';

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

/** Endpoints keyed by identity; a later endpoint of the same identity replaces an earlier one. */
export class EndpointSet {
    private readonly byKey = new Map<string, V1Endpoint>();

    constructor(endpoints: Iterable<V1Endpoint> = []) {
        for (const endpoint of endpoints) this.add(endpoint);
    }

    get size(): number {
        return this.byKey.size;
    }

    add(endpoint: V1Endpoint): void {
        this.byKey.set(endpointKey(endpoint), endpoint);
    }

    /** The endpoint of this identity, removed from the set (one key, where a get and a delete would build two). */
    take(endpoint: V1Endpoint): V1Endpoint | undefined {
        const key = endpointKey(endpoint);
        const held = this.byKey.get(key);
        if (held !== undefined) this.byKey.delete(key);
        return held;
    }

    /**
     * In identity-key order, so whatever is built from the set does not depend on input order. The
     * keys sorted as strings (code-unit order, without a comparator called back per pair), then looked up.
     */
    sorted(): V1Endpoint[] {
        return [...this.byKey.keys()].sort().map((key) => this.byKey.get(key)!);
    }
}
