// ExternalWorkloadGroup (mesh-endpoints.io/v1alpha1), the registration Lease a workload agent
// writes, and the names that tie them together. Parsing never throws: a malformed group or
// Lease becomes a problem with a sentence, and only that object is left out. Pure.
//
// Names: VM `<vm>` of group `<group>` is the ServiceAccount `<group>.<vm>` of the group's
// namespace; it writes the Lease `<group>.<vm>` and its ExternalWorkload is `<group>.<vm>`.
// The VM id is a DNS label (no dot), so the group is what comes before the last dot.
import { parseCidr, type Cidr } from '../../ip/cidr.js';
import { parseDurationMs } from '../../time/duration.js';
import * as z from '../../zod.js';
import type { MeshTLS, WorkloadPort } from '../types.js';

export const GROUP_API_GROUP = 'mesh-endpoints.io';
export const GROUP_API_VERSION = `${GROUP_API_GROUP}/v1alpha1`;
export const GROUP_KIND = 'ExternalWorkloadGroup';
/** On the Lease (written by the agent, checked by the admission policy) and on every materialised workload. */
export const GROUP_LABEL = 'mesh-endpoints.io/workload-group';
/** On the Lease: the addresses the VM claims, comma-separated. */
export const ADDRESSES_ANNOTATION = 'mesh-endpoints.io/addresses';
/** On the Lease: set by an agent that is shutting down; the workload is not ready at once. */
export const WITHDRAWN_ANNOTATION = 'mesh-endpoints.io/withdrawn';
/** On a materialised workload: the group generation its template came from. */
export const GENERATION_ANNOTATION = 'mesh-endpoints.io/group-generation';

export const DEFAULT_HEARTBEAT_MS = 10_000;
/** The kubelet's node Lease: renewed every 10 s, lasting 40 s. */
export const DEFAULT_LEASE_DURATION_MS = 40_000;
export const DEFAULT_GRACE_MS = 300_000;

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

export interface GroupTemplate {
    labels: Record<string, string>;
    annotations: Record<string, string>;
    ports: WorkloadPort[];
    /** Patterns: {vm}, {group}, {namespace} and {serviceAccount} are replaced per VM. */
    meshTLS: Required<MeshTLS>;
}

/** A group as the controller plans from it. */
export interface WorkloadGroup {
    namespace: string;
    name: string;
    uid: string;
    generation: number;
    ranges: Cidr[];
    heartbeatMs: number;
    leaseDurationMs: number;
    graceMs: number;
    template: GroupTemplate;
}

export type ParsedGroup = { ok: true; group: WorkloadGroup } | { ok: false; why: string };

function optional<T extends z.ZodMiniType>(schema: T) {
    return z.pipe(z.nullish(schema), z.transform((value: z.output<T> | null | undefined) => value ?? undefined));
}
const stringMap = optional(z.record(z.string(), z.string()));
const groupSchema = z.looseObject({
    metadata: z.looseObject({ name: z.string(), namespace: z.string(), uid: optional(z.string()), generation: optional(z.number()) }),
    spec: z.looseObject({
        addressRanges: z.array(z.string()).check(z.minLength(1)),
        heartbeatPeriod: optional(z.string()),
        leaseDuration: optional(z.string()),
        gracePeriod: optional(z.string()),
        template: z.looseObject({
            metadata: optional(z.looseObject({ labels: stringMap, annotations: stringMap })),
            spec: z.looseObject({
                ports: optional(z.array(z.looseObject({ name: optional(z.string()), port: z.int().check(z.gte(1), z.lte(65535)), protocol: optional(z.string()) }))),
                meshTLS: z.looseObject({ identity: z.string().check(z.minLength(1)), serverName: z.string().check(z.minLength(1)) }),
            }),
        }),
    }),
});

/** The group, or why it cannot be planned from (the CRD's own rules make this rare: an object from an older schema, or one written around them). */
export function parseGroup(object: unknown): ParsedGroup {
    const result = groupSchema.safeParse(object);
    if (!result.success) {
        const issue = result.error.issues[0]!;
        return { ok: false, why: `${issue.path.join('.') || '(object)'}: ${issue.message}` };
    }
    const { metadata, spec } = result.data;
    const ranges: Cidr[] = [];
    for (const text of spec.addressRanges) {
        const parsed = parseCidr(text);
        if (!parsed.ok) return { ok: false, why: `spec.addressRanges: ${parsed.why}` };
        ranges.push(parsed.cidr);
    }
    const durations: Array<[string, string | undefined, number]> = [
        ['heartbeatPeriod', spec.heartbeatPeriod, DEFAULT_HEARTBEAT_MS],
        ['leaseDuration', spec.leaseDuration, DEFAULT_LEASE_DURATION_MS],
        ['gracePeriod', spec.gracePeriod, DEFAULT_GRACE_MS],
    ];
    const ms: number[] = [];
    for (const [field, text, fallback] of durations) {
        const value = text === undefined ? fallback : parseDurationMs(text);
        if (value === null || value <= 0) return { ok: false, why: `spec.${field}: ${JSON.stringify(text)} is not a positive duration such as 10s` };
        ms.push(value);
    }
    const [heartbeatMs, leaseDurationMs, graceMs] = ms as [number, number, number];
    if (leaseDurationMs <= heartbeatMs) return { ok: false, why: 'spec.leaseDuration must be longer than spec.heartbeatPeriod (a Lease would lapse between two heartbeats)' };
    const { template } = spec;
    return {
        ok: true,
        group: {
            namespace: metadata.namespace,
            name: metadata.name,
            uid: metadata.uid ?? '',
            generation: metadata.generation ?? 0,
            ranges,
            heartbeatMs,
            leaseDurationMs,
            graceMs,
            template: {
                labels: template.metadata?.labels ?? {},
                annotations: template.metadata?.annotations ?? {},
                ports: (template.spec.ports ?? []).map(({ name, port, protocol }) => ({ ...(name ? { name } : {}), port, protocol: protocol ?? 'TCP' })),
                meshTLS: { identity: template.spec.meshTLS.identity, serverName: template.spec.meshTLS.serverName },
            },
        },
    };
}

/** `<group>.<vm>`: the agent's ServiceAccount, its Lease and its workload. */
export function registrationName(group: string, vm: string): string {
    return `${group}.${vm}`;
}

/** The group and VM a registration name stands for, or undefined when it has not that form. */
export function parseRegistrationName(name: string): { group: string; vm: string } | undefined {
    const dot = name.lastIndexOf('.');
    if (dot <= 0 || name.length > 253 || !DNS_SUBDOMAIN.test(name)) return undefined;
    const group = name.slice(0, dot);
    const vm = name.slice(dot + 1);
    return DNS_LABEL.test(vm) ? { group, vm } : undefined;
}

/** A registration Lease as the controller reads it: whatever the agent wrote, not yet judged. */
export interface RegistrationLease {
    namespace: string;
    name: string;
    uid: string;
    resourceVersion?: string;
    group: string;
    vm: string;
    holder: string;
    /** ms since the epoch; undefined when the Lease carries none (or an unreadable one). */
    renewTime?: number;
    createdAt?: number;
    /** As claimed, in the annotation's order, not yet checked. */
    addresses: string[];
    withdrawn: boolean;
}

type Meta = { name?: unknown; namespace?: unknown; uid?: unknown; resourceVersion?: unknown; labels?: Record<string, unknown>; annotations?: Record<string, unknown>; creationTimestamp?: unknown };

/** The registration a Lease carries, or undefined when it is not one (its name and group label disagree). */
export function parseRegistrationLease(object: unknown): RegistrationLease | undefined {
    const o = (object ?? {}) as { metadata?: Meta; spec?: { holderIdentity?: unknown; renewTime?: unknown } };
    const m = o.metadata ?? {};
    if (typeof m.name !== 'string' || typeof m.namespace !== 'string') return undefined;
    const names = parseRegistrationName(m.name);
    if (!names || m.labels?.[GROUP_LABEL] !== names.group) return undefined;
    const text = (value: unknown) => (typeof value === 'string' ? value : undefined);
    const time = (value: unknown) => {
        const ms = value instanceof Date ? value.getTime() : typeof value === 'string' ? Date.parse(value) : Number.NaN;
        return Number.isFinite(ms) ? ms : undefined;
    };
    const claimed = text(m.annotations?.[ADDRESSES_ANNOTATION]) ?? '';
    return {
        namespace: m.namespace,
        name: m.name,
        uid: text(m.uid) ?? '',
        resourceVersion: text(m.resourceVersion),
        ...names,
        holder: text(o.spec?.holderIdentity) ?? '',
        renewTime: time(o.spec?.renewTime),
        createdAt: time(m.creationTimestamp),
        addresses: claimed.split(',').map((a) => a.trim()).filter(Boolean).slice(0, 8),
        withdrawn: m.annotations?.[WITHDRAWN_ANNOTATION] !== undefined,
    };
}

/** The username a VM's agent authenticates as. */
export function agentUsername(namespace: string, group: string, vm: string): string {
    return `system:serviceaccount:${namespace}:${registrationName(group, vm)}`;
}
