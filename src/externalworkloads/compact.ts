// An ExternalWorkload as the controller caches it: only what the endpoint planner and the
// health checks read, decided once per resourceVersion (the informer's transform) rather than
// at every sync of every Service that selects it. The raw object and its parsed copy are
// dropped: measured at 11 000 workloads, they were 1 050 of the 1 354 bytes a cached workload
// cost (docs/benchmarks.md, "Where the memory goes").
import type { AddressType } from '../ip/family.js';
import { workloadAddresses } from './addresses.js';
import { isWorkloadReady, PROBE_ANNOTATION, parseExternalWorkload, type ExternalWorkload, type ProblemDetail, type WorkloadCondition, type WorkloadPort, type WorkloadProblem } from './types.js';

/** What the store, selection and Events read of any workload, well-formed or not (a type, not an interface: the store's KubeObject takes it). */
export type WorkloadMeta = {
    name: string;
    namespace: string;
    uid?: string;
    resourceVersion?: string;
    labels?: Record<string, string>;
};

/** A well-formed workload, reduced to what the controller decides anything from. */
export interface CompactWorkload {
    ok: true;
    metadata: WorkloadMeta;
    /** Linkerd's rule: some condition says Ready=True. */
    ready: boolean;
    /** deletionTimestamp is set. */
    terminating: boolean;
    /** The first usable address of each family, canonical (src/ip decides what is usable). */
    addresses: Partial<Record<AddressType, string>>;
    /** Addresses of spec.workloadIPs no endpoint may hold (loopback, ...), kept only when there are some: probes may go there if allowed. */
    unpublishedIPs?: readonly string[];
    /** Why an address of spec.workloadIPs was left out; the same empty array for most workloads. */
    addressProblems: readonly ProblemDetail[];
    /** The named ports only: a Service's named targetPort is all a port is looked up by. */
    ports: readonly WorkloadPort[];
    /** Only the mesh-endpoints.io/probe* annotations: the health checks' settings. */
    probeAnnotations?: Record<string, string>;
    /** status.conditions as stored, kept only when the health checks are on (they write the whole list back). */
    conditions?: WorkloadCondition[];
}

/** A workload that failed to parse: left out of every Service and reported. */
export interface MalformedWorkload {
    ok: false;
    metadata: WorkloadMeta;
    problem: WorkloadProblem;
}

export type CachedWorkload = CompactWorkload | MalformedWorkload;

/** Where equal values are held once: kube/shared-values.ts's SharedValues, passed in by the informer's transform. */
export interface ValueInterner {
    text(value: string): string;
    object<T extends object>(value: T): T;
}

export interface CompactOptions {
    /** Keep status.conditions (the health checks' Ready writer needs them). */
    keepConditions?: boolean;
    /** Where equal label sets and port lists are held once (one per cache). */
    shared?: ValueInterner;
}

const NO_PROBLEMS: readonly ProblemDetail[] = Object.freeze([]);
const NO_PORTS: readonly WorkloadPort[] = Object.freeze([]);

/** The compact form of a parsed workload; what the planner reads of it is exactly what this keeps. */
export function compactWorkload(workload: ExternalWorkload, opts: CompactOptions = {}): CompactWorkload {
    const { name, namespace, uid, resourceVersion, labels, annotations, deletionTimestamp } = workload.metadata;
    const { byFamily, problems, unpublished } = workloadAddresses(workload);
    const named = (workload.spec.ports ?? []).filter((p) => p.name);
    const share = <T extends object>(value: T): T => opts.shared?.object(value) ?? value;
    const ports = named.map(({ name, port, protocol }) => Object.freeze({ name, port, protocol: protocol ?? 'TCP' }));
    const compact: CompactWorkload = {
        ok: true,
        metadata: { name, namespace: opts.shared?.text(namespace) ?? namespace, uid, resourceVersion, labels: labels && share(labels) },
        ready: isWorkloadReady(workload),
        terminating: deletionTimestamp != null,
        addresses: byFamily,
        addressProblems: problems.length > 0 ? problems : NO_PROBLEMS,
        ports: ports.length > 0 ? share(ports) : NO_PORTS,
    };
    if (unpublished.length > 0) compact.unpublishedIPs = unpublished;
    const probeAnnotations = Object.entries(annotations ?? {}).filter(([key]) => key.startsWith(PROBE_ANNOTATION));
    if (probeAnnotations.length > 0) compact.probeAnnotations = Object.fromEntries(probeAnnotations);
    if (opts.keepConditions && workload.status?.conditions) compact.conditions = workload.status.conditions;
    return compact;
}

/** The informer's transform: parsed once per resourceVersion, kept compact. */
export function cacheWorkload(object: unknown, opts: CompactOptions = {}): CachedWorkload {
    const parsed = parseExternalWorkload(object);
    if (parsed.ok) return compactWorkload(parsed.workload, opts);
    const metadata = isRecord(object) && isRecord(object.metadata) ? object.metadata : {};
    const labels = isRecord(metadata.labels) && Object.values(metadata.labels).every((v) => typeof v === 'string') ? (metadata.labels as Record<string, string>) : undefined;
    const { namespace, name, uid } = parsed.problem.workload;
    const resourceVersion = typeof metadata.resourceVersion === 'string' ? metadata.resourceVersion : undefined;
    return { ok: false, metadata: { name, namespace, uid: uid || undefined, resourceVersion, labels }, problem: parsed.problem };
}

function isRecord(value: unknown): value is Record<string, unknown> {
    return typeof value === 'object' && value !== null && !Array.isArray(value);
}
