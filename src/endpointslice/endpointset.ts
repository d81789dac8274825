// Endpoint identity: which desired endpoint an existing one stands for, and whether it needs a write.
import type { V1Endpoint, V1EndpointHints, V1ObjectReference } from '@kubernetes/client-node';

/**
 * Identity is what names an endpoint (its addresses, hostname and target); everything else
 * (conditions, zone, node, uid, hints) is state of the same endpoint, compared separately so a
 * readiness flip rewrites the endpoint in its own slice instead of moving it elsewhere.
 * Sorts a copy: the endpoint may be an informer-cache object that must never be mutated.
 */
export function endpointKey(endpoint: V1Endpoint): string {
    return JSON.stringify([
        [...endpoint.addresses].sort(),
        endpoint.hostname ?? '',
        endpoint.targetRef?.namespace ?? '',
        endpoint.targetRef?.name ?? '',
    ]);
}

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

const targetRefFields = ['kind', 'namespace', 'name', 'uid', 'apiVersion', 'resourceVersion', 'fieldPath'] as const;

function normaliseTargetRef(ref: V1ObjectReference | undefined): V1ObjectReference | undefined {
    if (!ref) return undefined;
    const out: V1ObjectReference = {};
    for (const field of targetRefFields) {
        if (ref[field]) out[field] = ref[field];
    }
    return Object.keys(out).length > 0 ? out : undefined;
}

function sameTargetRef(a: V1ObjectReference | undefined, b: V1ObjectReference | undefined): boolean {
    // resourceVersion moves on every write of the target; following it would rewrite slices
    // for changes that do not concern them.
    return targetRefFields.every((f) => f === 'resourceVersion' || (a?.[f] ?? '') === (b?.[f] ?? ''));
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
        hintsKey(a.hints) === hintsKey(b.hints)
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

    get(endpoint: V1Endpoint): V1Endpoint | undefined {
        return this.byKey.get(endpointKey(endpoint));
    }

    has(endpoint: V1Endpoint): boolean {
        return this.byKey.has(endpointKey(endpoint));
    }

    delete(endpoint: V1Endpoint): boolean {
        return this.byKey.delete(endpointKey(endpoint));
    }

    /** In identity-key order, so whatever is built from the set does not depend on input order. */
    sorted(): V1Endpoint[] {
        return [...this.byKey.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, e]) => e);
    }
}
