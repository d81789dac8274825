// The ExternalWorkload as the apiserver serves it, and the problems a workload can have.
// Both served versions are covered (v1alpha1 names the TLS block `meshTls`, v1beta1
// `meshTLS`). Without a conversion webhook an object created through v1alpha1 and read
// through v1beta1 has its `meshTls` pruned, as with Linkerd's CRD; publishing endpoints needs
// neither block. Parsing never throws: a malformed object becomes an InvalidWorkload
// problem, and the controller leaves that one workload out.
import * as z from '../zod.js';

export const WORKLOAD_GROUP = 'workload.linkerd.io';
export const WORKLOAD_KIND = 'ExternalWorkload';
/** The stored version; every targetRef names it, whichever version the object was written in. */
export const WORKLOAD_API_VERSION = `${WORKLOAD_GROUP}/v1beta1`;
export const WORKLOAD_PLURAL = 'externalworkloads';
/** The annotation (and prefix of the annotations) a workload asks for health checks with (health/probe-spec.ts reads them). */
export const PROBE_ANNOTATION = 'mesh-endpoints.io/probe';

export interface MeshTLS {
    identity?: string;
    serverName?: string;
}

export interface WorkloadPort {
    name?: string;
    port: number;
    /** The CRD defaults it to TCP; an object that never went through the apiserver may lack it. */
    protocol?: string;
}

export interface WorkloadIP {
    ip?: string;
}

export interface WorkloadCondition {
    type: string;
    status: string;
    reason?: string;
    message?: string;
    /** RFC 3339 string from raw JSON, or a Date when client-node deserialised it. */
    lastProbeTime?: string | Date;
    lastTransitionTime?: string | Date;
}

export interface ExternalWorkload {
    apiVersion?: string;
    kind?: string;
    metadata: {
        name: string;
        namespace: string;
        /** Always set by the apiserver; absent only in hand-written objects such as examples. */
        uid?: string;
        resourceVersion?: string;
        generation?: number;
        labels?: Record<string, string>;
        annotations?: Record<string, string>;
        creationTimestamp?: string | Date;
        deletionTimestamp?: string | Date;
    };
    spec: {
        /** v1beta1 */
        meshTLS?: MeshTLS;
        /** v1alpha1 */
        meshTls?: MeshTLS;
        ports?: WorkloadPort[];
        workloadIPs?: WorkloadIP[];
    };
    status?: {
        conditions?: WorkloadCondition[];
    };
}

/** Who an Event is about: enough for the controller to build an involvedObject. */
export interface WorkloadRef {
    namespace: string;
    name: string;
    /** "" when the object carries none. */
    uid: string;
}

/** CamelCase Event reasons, one per kind of bad input we leave out. */
export type ProblemReason =
    | 'InvalidWorkload'
    | 'InvalidIP'
    | 'UnusableIP'
    | 'DuplicateIPFamily'
    | 'MissingNamedPort'
    | 'InvalidHostname';

/** A problem with one workload, as found by a helper that does not need to name it. */
export interface ProblemDetail {
    reason: ProblemReason;
    /** Deterministic for the same input, so the controller can deduplicate Events by it. */
    message: string;
}

export interface WorkloadProblem extends ProblemDetail {
    workload: WorkloadRef;
}

export type ParsedWorkload =
    | { ok: true; workload: ExternalWorkload }
    | { ok: false; problem: WorkloadProblem };

// JSON written by hand (or by older clients) may carry explicit nulls for absent fields.
function optional<T extends z.ZodMiniType>(schema: T) {
    return z.pipe(z.nullish(schema), z.transform((value: z.output<T> | null | undefined) => value ?? undefined));
}

const timestamp = z.union([z.string(), z.date()]);

const meshTLSSchema = z.looseObject({
    identity: optional(z.string()),
    serverName: optional(z.string()),
});

const conditionSchema = z.looseObject({
    type: z.string(),
    status: z.string(),
    reason: optional(z.string()),
    message: optional(z.string()),
    lastProbeTime: optional(timestamp),
    lastTransitionTime: optional(timestamp),
});

// Unknown fields are kept, not rejected: a newer CRD version must not make us drop workloads.
const externalWorkloadSchema: z.ZodMiniType<ExternalWorkload> = z.looseObject({
    apiVersion: optional(z.string()),
    kind: optional(z.string()),
    metadata: z.looseObject({
        name: z.string().check(z.minLength(1)),
        namespace: z.string().check(z.minLength(1)),
        uid: optional(z.string()),
        resourceVersion: optional(z.string()),
        generation: optional(z.number()),
        labels: optional(z.record(z.string(), z.string())),
        annotations: optional(z.record(z.string(), z.string())),
        creationTimestamp: optional(timestamp),
        deletionTimestamp: optional(timestamp),
    }),
    spec: z.looseObject({
        meshTLS: optional(meshTLSSchema),
        meshTls: optional(meshTLSSchema),
        ports: optional(
            z.array(
                z.looseObject({
                    name: optional(z.string()),
                    port: z.int().check(z.gte(1), z.lte(65535)),
                    protocol: optional(z.string()),
                }),
            ),
        ),
        // A missing or odd `ip` is not a parse failure: the address check reports it as
        // InvalidIP and the workload's other addresses stay usable.
        workloadIPs: optional(z.array(z.looseObject({ ip: optional(z.string()) }))),
    }),
    status: optional(z.looseObject({ conditions: optional(z.array(conditionSchema)) })),
});

// The same schema as hand-written predicates, for the well-formed objects that are nearly all
// of them: zod's parse builds a copy of every object and field (parsed and cached, a served
// workload cost 9.8 KB of allocations through zod, 2.4 KB through these; 150 against 50 ms of
// CPU for 11 000: docs/benchmarks.md, "Start-up"), while an object these accept is already what
// zod would return. They accept a subset of what the schema accepts, whose parse changes
// nothing (no null for an absent field, no Date, only plain objects, no own __proto__ key);
// everything else, malformed or odd, goes through zod, so problems keep zod's messages.
// types.property.test.ts holds the two together: the same verdict and the same cached form.
type Check = (value: unknown) => boolean;

function isPlain(value: unknown): value is Record<string, unknown> {
    return typeof value === 'object' && value !== null && Object.getPrototypeOf(value) === Object.prototype && !Object.hasOwn(value, '__proto__');
}
const isString: Check = (value) => typeof value === 'string';
const isName: Check = (value) => typeof value === 'string' && value.length > 0;
const isNumber: Check = (value) => typeof value === 'number' && Number.isFinite(value);
const isPort: Check = (value) => typeof value === 'number' && Number.isInteger(value) && value >= 1 && value <= 65535;
const absentOr = (check: Check): Check => (value) => value === undefined || check(value);
const optionalString = absentOr(isString);
const optionalTimestamp = optionalString;
const arrayOf = (check: Check): Check => (value) => Array.isArray(value) && value.every(check);
const isStringMap: Check = (value) => {
    if (!isPlain(value) || Object.getOwnPropertySymbols(value).length > 0) return false;
    for (const key in value) if (typeof value[key] !== 'string') return false;
    return true;
};
const isMeshTLS: Check = (v) => isPlain(v) && optionalString(v.identity) && optionalString(v.serverName);
const optionalMeshTLS = absentOr(isMeshTLS);
const isPortEntry: Check = (v) => isPlain(v) && optionalString(v.name) && isPort(v.port) && optionalString(v.protocol);
const isIPEntry: Check = (v) => isPlain(v) && optionalString(v.ip);
const isCondition: Check = (v) =>
    isPlain(v) && isString(v.type) && isString(v.status) && optionalString(v.reason) && optionalString(v.message) && optionalTimestamp(v.lastProbeTime) && optionalTimestamp(v.lastTransitionTime);
const optionalConditions = absentOr(arrayOf(isCondition));
const optionalPorts = absentOr(arrayOf(isPortEntry));
const optionalIPs = absentOr(arrayOf(isIPEntry));
const optionalStringMap = absentOr(isStringMap);
const optionalNumber = absentOr(isNumber);

/** True when `object` is well-formed as it stands: the schema accepts it and its parse would change nothing. */
function isWellFormedAsIs(object: unknown): object is ExternalWorkload {
    if (!isPlain(object) || !optionalString(object.apiVersion) || !optionalString(object.kind)) return false;
    const { metadata: m, spec: s, status } = object;
    if (!isPlain(m) || !isName(m.name) || !isName(m.namespace) || !optionalString(m.uid) || !optionalString(m.resourceVersion) || !optionalNumber(m.generation)) return false;
    if (!optionalStringMap(m.labels) || !optionalStringMap(m.annotations) || !optionalTimestamp(m.creationTimestamp) || !optionalTimestamp(m.deletionTimestamp)) return false;
    if (!isPlain(s) || !optionalMeshTLS(s.meshTLS) || !optionalMeshTLS(s.meshTls) || !optionalPorts(s.ports) || !optionalIPs(s.workloadIPs)) return false;
    return status === undefined || (isPlain(status) && optionalConditions(status.conditions));
}

/**
 * Parses one object from a watch or list; never throws. A well-formed object is returned as it
 * is, not copied (treat the result as read-only).
 */
export function parseExternalWorkload(object: unknown): ParsedWorkload {
    if (isWellFormedAsIs(object)) return { ok: true, workload: object };
    return parseWithZod(object);
}

/** zod's parse, for every object: what the fast path above must agree with. */
export function parseWithZod(object: unknown): ParsedWorkload {
    const result = externalWorkloadSchema.safeParse(object);
    if (result.success) return { ok: true, workload: result.data };
    const issues = result.error.issues.slice(0, 3).map((issue) => {
        const path = issue.path.map((part) => (typeof part === 'number' ? `[${part}]` : `.${String(part)}`));
        return `${path.join('').replace(/^\./, '') || '(object)'}: ${issue.message}`;
    });
    const more = result.error.issues.length > issues.length ? '; …' : '';
    return {
        ok: false,
        problem: {
            workload: refOfUnknown(object),
            reason: 'InvalidWorkload',
            message: `malformed ExternalWorkload, left out of every Service: ${issues.join('; ')}${more}`,
        },
    };
}

/** Parses a list, keeping the good objects and one problem per malformed one. */
export function parseExternalWorkloads(objects: readonly unknown[]): {
    workloads: ExternalWorkload[];
    problems: WorkloadProblem[];
} {
    const workloads: ExternalWorkload[] = [];
    const problems: WorkloadProblem[] = [];
    for (const object of objects) {
        const parsed = parseExternalWorkload(object);
        if (parsed.ok) workloads.push(parsed.workload);
        else problems.push(parsed.problem);
    }
    return { workloads, problems };
}

/** Whichever TLS block the object carries: v1beta1's `meshTLS`, else v1alpha1's `meshTls`. */
export function meshTLSOf(workload: ExternalWorkload): MeshTLS | undefined {
    return workload.spec.meshTLS ?? workload.spec.meshTls;
}

/** Linkerd's rule: ready when some condition says Ready=True; no conditions means not ready. */
export function isWorkloadReady(workload: ExternalWorkload): boolean {
    return (workload.status?.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True');
}

function refOfUnknown(object: unknown): WorkloadRef {
    const metadata = isRecord(object) && isRecord(object.metadata) ? object.metadata : {};
    const text = (value: unknown): string => (typeof value === 'string' ? value : '');
    return { namespace: text(metadata.namespace), name: text(metadata.name), uid: text(metadata.uid) };
}

function isRecord(value: unknown): value is Record<string, unknown> {
    return typeof value === 'object' && value !== null && !Array.isArray(value);
}
