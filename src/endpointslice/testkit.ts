// Builders and a tiny in-memory apiserver for the endpointslice/ tests. Not part of the public
// API (index.ts does not export it); it lives here rather than in a *.test.ts file so several
// test files can share it without being run as a test themselves.
import type { DiscoveryV1EndpointPort, V1Endpoint, V1EndpointSlice } from '@kubernetes/client-node';
import type { AddressType, DesiredGroup, ReconcileInput, OwningService, SlicePlan } from './types.js';

export const MANAGED_BY = 'mesh-endpoints.example.org';

export function makeOwner(overrides: Partial<OwningService> = {}): OwningService {
    return { name: 'web', namespace: 'shop', uid: 'svc-uid-1', labels: { app: 'web' }, headless: false, ...overrides };
}

/** Distinct addresses from documentation/benchmark ranges; never connected to. */
export function ipv4(i: number): string {
    return `198.18.${(i >> 8) & 255}.${i & 255}`;
}

export function ipv6(i: number): string {
    return `2001:db8::${i.toString(16)}`;
}

export function makeEndpoint(i: number, overrides: Partial<V1Endpoint> = {}): V1Endpoint {
    return {
        addresses: [ipv4(i)],
        conditions: { ready: true, serving: true, terminating: false },
        targetRef: { kind: 'ExternalWorkload', namespace: 'shop', name: `wl-${i}`, uid: `wl-uid-${i}` },
        ...overrides,
    };
}

export function range(from: number, count: number): number[] {
    return Array.from({ length: count }, (_, k) => from + k);
}

export const httpPorts: DiscoveryV1EndpointPort[] = [{ name: 'http', port: 8080, protocol: 'TCP' }];

export function group(endpoints: V1Endpoint[], ports = httpPorts, addressType: AddressType = 'IPv4'): DesiredGroup {
    return { addressType, ports, endpoints };
}

export function makeInput(overrides: Partial<ReconcileInput> = {}): ReconcileInput {
    return {
        owner: makeOwner(),
        addressTypes: ['IPv4'],
        desired: [],
        existing: [],
        maxEndpointsPerSlice: 100,
        managedBy: MANAGED_BY,
        ...overrides,
    };
}

/** Informer-cache objects are shared; freezing them turns any mutation into a TypeError. */
export function deepFreeze<T>(value: T): T {
    if (value && typeof value === 'object' && !Object.isFrozen(value)) {
        Object.freeze(value);
        for (const child of Object.values(value)) deepFreeze(child);
    }
    return value;
}

/** What the apiserver stores: JSON round trip (undefined gone), discovery/v1 defaulting. */
export function serverForm(slice: V1EndpointSlice): V1EndpointSlice {
    const stored = JSON.parse(JSON.stringify(slice)) as V1EndpointSlice;
    stored.ports = (stored.ports ?? []).map((p) => ({ ...p, name: p.name ?? '', protocol: p.protocol ?? 'TCP' }));
    stored.endpoints = (stored.endpoints ?? []).map((e) => ({ ...e, conditions: e.conditions ?? {} }));
    return stored;
}

/**
 * Applies a plan as the apiserver would: generated names, uids, generations, resourceVersion
 * preconditions on updates, 404-tolerant deletes. Returns the new, frozen, server-form slices.
 */
export class FakeApiserver {
    private readonly slices = new Map<string, V1EndpointSlice>();
    private counter = 0;

    constructor(initial: V1EndpointSlice[] = []) {
        for (const slice of initial) this.slices.set(slice.metadata!.name!, deepFreeze(slice));
    }

    list(): V1EndpointSlice[] {
        return [...this.slices.values()];
    }

    apply(plan: SlicePlan): V1EndpointSlice[] {
        for (const create of plan.creates) {
            if (create.metadata?.name) throw new Error('a create must leave the name to generateName');
            this.counter++;
            const stored = serverForm(create);
            stored.metadata = {
                ...stored.metadata,
                name: `${create.metadata!.generateName}gen${this.counter}`,
                uid: `slice-uid-${this.counter}`,
                resourceVersion: String(this.counter),
                generation: 1,
            };
            this.slices.set(stored.metadata.name!, deepFreeze(stored));
        }
        for (const update of plan.updates) {
            const name = update.metadata?.name ?? '';
            const current = this.slices.get(name);
            if (!current) throw new Error(`update of missing slice ${name}`);
            if (update.metadata?.resourceVersion !== current.metadata?.resourceVersion) throw new Error(`conflict on ${name}`);
            if (update.addressType !== current.addressType) throw new Error('addressType is immutable');
            this.counter++;
            const stored = serverForm(update);
            stored.metadata = {
                ...stored.metadata,
                uid: current.metadata!.uid!,
                resourceVersion: String(this.counter),
                generation: (current.metadata!.generation ?? 0) + 1,
            };
            this.slices.set(name, deepFreeze(stored));
        }
        for (const del of plan.deletes) this.slices.delete(del.metadata?.name ?? '');
        return this.list();
    }
}

/** An existing slice as the apiserver would hand it back, owned by `owner`. */
export function storedSlice(
    name: string,
    endpoints: V1Endpoint[],
    options: { owner?: OwningService; ports?: DiscoveryV1EndpointPort[]; addressType?: string; labels?: Record<string, string> } = {},
): V1EndpointSlice {
    const owner = options.owner ?? makeOwner();
    return deepFreeze(
        serverForm({
            apiVersion: 'discovery.k8s.io/v1',
            kind: 'EndpointSlice',
            metadata: {
                name,
                namespace: owner.namespace,
                uid: `uid-${name}`,
                resourceVersion: '7',
                generation: 3,
                labels: options.labels ?? {
                    ...owner.labels,
                    'kubernetes.io/service-name': owner.name,
                    'endpointslice.kubernetes.io/managed-by': MANAGED_BY,
                },
                ownerReferences: [
                    { apiVersion: 'v1', kind: 'Service', name: owner.name, uid: owner.uid, controller: true, blockOwnerDeletion: true },
                ],
            },
            addressType: options.addressType ?? 'IPv4',
            ports: options.ports ?? httpPorts,
            endpoints,
        }),
    );
}

export function sizes(slices: V1EndpointSlice[]): number[] {
    return slices.map((s) => s.endpoints.length);
}
