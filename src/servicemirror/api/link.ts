// The Link custom resource (links.multicluster.linkerd.io), read as any of Linkerd's three
// versions and turned into one typed, defaulted value the service mirror can trust.
// Owns: the Link/LinkStatus types, parseLink. Must not do I/O, read
// the clock or resolve gateway names (that is src/dns/); label selectors live in selector.ts.
import type { GatewayNameStatus } from '../../dns/resolution-status.js';
import { parseDurationMs } from '../../time/duration.js';
import * as z from '../../zod.js';
import { type LabelSelector, labelSelectorSchema, selectorProblem } from './selector.js';

export { type LabelSelector, type LabelSelectorRequirement, matchesSelector } from './selector.js';

export const LINK_GROUP = 'multicluster.linkerd.io';
export const LINK_STORAGE_VERSION = 'v1alpha3';
/** Secret type and key Linkerd's `linkerd multicluster link` writes the remote kubeconfig under. */
export const CREDENTIALS_SECRET_TYPE = 'mirror.linkerd.io/remote-kubeconfig';
export const CREDENTIALS_SECRET_KEY = 'kubeconfig';

/** The probe as written in the Link: every field a string, as in Linkerd's Go types. */
export interface ProbeSpec {
    path: string;
    port: string;
    period: string;
    timeout: string;
    failureThreshold: string;
}

/** v1alpha3 spec; v1alpha1/v1alpha2 objects are the same shape minus the newer fields. */
export interface LinkSpec {
    /** Suffix of every mirror name; "" is Linkerd's local-mirror mode and mirrors nothing here. */
    targetClusterName: string;
    targetClusterDomain: string;
    targetClusterLinkerdNamespace: string;
    clusterCredentialsSecret: string;
    /** Comma-separated IPs and/or hostnames, as written. */
    gatewayAddress: string;
    gatewayPort: string;
    gatewayIdentity: string;
    probeSpec: ProbeSpec;
    selector?: LabelSelector;
    remoteDiscoverySelector?: LabelSelector;
    federatedServiceSelector?: LabelSelector;
    excludedAnnotations: string[];
    excludedLabels: string[];
}

/**
 * Where a Link's gateway listens and who it is; absent when gatewayAddress names nothing (a
 * no-gateway link). Its addresses are src/dns/gateway-address.ts's to parse.
 */
export interface GatewaySpec {
    port: number;
    identity: string;
}

export interface LinkProbe {
    path: string;
    port: number;
    periodMs: number;
    timeoutMs: number;
    failureThreshold: number;
}

export interface ObjectRef {
    group?: string;
    kind?: string;
    name: string;
    namespace: string;
}

export interface LinkCondition {
    type: string;
    status: 'True' | 'False' | 'Unknown';
    lastTransitionTime: string;
    reason: string;
    message: string;
    localRef?: ObjectRef;
}

export interface ServiceStatus {
    controllerName: string;
    remoteRef: ObjectRef;
    conditions?: LinkCondition[];
}

/**
 * Our addition to Linkerd's status: how each gateway name resolved (the shape src/dns builds).
 * No peer shows this, and without it a stale or failing resolution (Linkerd #5343, #10635)
 * is invisible to users.
 */
export type GatewayResolutionStatus = GatewayNameStatus;

/** Ours: how many of a Link's exported remote Services are mirrored, and why the others are not. */
export interface MirrorSummary {
    /** Remote Services exported through the Link (mirrored or not). */
    services: number;
    mirrored: number;
    notMirrored: number;
    /** The not-mirrored ones by reason (InvalidService, MissingNamespace, Error), sorted by reason. */
    notMirroredByReason: { reason: string; services: number }[];
    /** Not-mirrored Services beyond those listed in mirrorServices. */
    notListed: number;
}

export interface LinkStatus {
    /**
     * Ours: RemoteReadable, whether the remote cluster can be read (since when, and why not), and
     * ServicesMirrored, whether every exported remote Service is mirrored.
     */
    conditions?: LinkCondition[];
    /** Linkerd's shape; we list only the remote Services not mirrored, at most LISTED_NOT_MIRRORED. */
    mirrorServices?: ServiceStatus[];
    mirrorSummary?: MirrorSummary;
    federatedServices?: ServiceStatus[];
    gatewayResolution?: GatewayResolutionStatus[];
}

export interface Link {
    apiVersion: string;
    metadata: {
        name: string;
        namespace: string;
        uid?: string;
        resourceVersion?: string;
        generation?: number;
        creationTimestamp?: string;
    };
    spec: LinkSpec;
    gateway: GatewaySpec | null;
    probe: LinkProbe | null;
    status: LinkStatus;
}

export type ParseLinkResult = { link: Link; warnings: string[] } | { error: string };

/** Linkerd's gateway chart probes every 3 seconds; the CRD itself sets no default period. */
const DEFAULT_PROBE_PERIOD = '3s';
const DEFAULT_PROBE_TIMEOUT = '30s';
const DEFAULT_FAILURE_THRESHOLD = '3';

const str = z._default(z.optional(z.string()), '');

const probeSchema = z._default(
    z.optional(
        z.object({
            path: str,
            port: str,
            period: str,
            timeout: z._default(z.optional(z.string()), DEFAULT_PROBE_TIMEOUT),
            failureThreshold: z._default(z.optional(z.string()), DEFAULT_FAILURE_THRESHOLD),
        }),
    ),
    { path: '', port: '', period: '', timeout: DEFAULT_PROBE_TIMEOUT, failureThreshold: DEFAULT_FAILURE_THRESHOLD },
);

export const linkSpecSchema = z.object({
    targetClusterName: str,
    targetClusterDomain: str,
    targetClusterLinkerdNamespace: str,
    clusterCredentialsSecret: str,
    gatewayAddress: str,
    gatewayPort: str,
    gatewayIdentity: str,
    probeSpec: probeSchema,
    selector: z.optional(labelSelectorSchema),
    remoteDiscoverySelector: z.optional(labelSelectorSchema),
    federatedServiceSelector: z.optional(labelSelectorSchema),
    excludedAnnotations: z._default(z.optional(z.array(z.string())), []),
    excludedLabels: z._default(z.optional(z.array(z.string())), []),
});

const linkObjectSchema = z.object({
    apiVersion: z.string().check(z.refine((v) => v.startsWith(`${LINK_GROUP}/`), { message: `must be in group ${LINK_GROUP}` })),
    kind: z.literal('Link'),
    metadata: z.object({
        name: z.string().check(z.minLength(1)),
        namespace: z.string().check(z.minLength(1)),
        uid: z.optional(z.string()),
        resourceVersion: z.optional(z.string()),
        generation: z.optional(z.number()),
        creationTimestamp: z.optional(z.union([z.string(), z.pipe(z.date(), z.transform((d: Date) => d.toISOString()))])),
    }),
    spec: linkSpecSchema,
    // Status is ours to rewrite: a malformed one must not stop the Link from being served.
    status: z.optional(z.unknown()),
});

/** Parse a Link read from the apiserver (any served version) into its v1alpha3 form. */
/**
 * Whether a Link's update is a new Link to serve: its spec changed, or it was deleted and
 * created again (a new uid). Status writes, ours included, come back as updates that are not.
 */
export function linkSpecChanged(old: { metadata?: { uid?: string }; spec?: unknown }, obj: { metadata?: { uid?: string }; spec?: unknown }): boolean {
    return old.metadata?.uid !== obj.metadata?.uid || JSON.stringify(old.spec) !== JSON.stringify(obj.spec);
}

export function parseLink(obj: unknown): ParseLinkResult {
    const parsed = linkObjectSchema.safeParse(obj);
    if (!parsed.success) return { error: describeZodError(parsed.error) };
    const { apiVersion, metadata, spec } = parsed.data;
    const gateway = parseGateway(spec);
    if ('error' in gateway) return { error: gateway.error };
    const probe = parseProbe(spec.probeSpec);
    if ('error' in probe) return { error: probe.error };
    const warnings: string[] = [];
    for (const field of ['selector', 'remoteDiscoverySelector', 'federatedServiceSelector'] as const) {
        const problem = spec[field] ? selectorProblem(spec[field]) : null;
        // Linkerd treats an invalid selector as matching nothing; we do too, but say so.
        if (problem) warnings.push(`spec.${field} is invalid and selects nothing: ${problem}`);
    }
    const meta: Link['metadata'] = { name: metadata.name, namespace: metadata.namespace };
    if (metadata.uid !== undefined) meta.uid = metadata.uid;
    if (metadata.resourceVersion !== undefined) meta.resourceVersion = metadata.resourceVersion;
    if (metadata.generation !== undefined) meta.generation = metadata.generation;
    if (metadata.creationTimestamp !== undefined) meta.creationTimestamp = metadata.creationTimestamp;
    return {
        link: { apiVersion, metadata: meta, spec, gateway: gateway.gateway, probe: probe.probe, status: readStatus(parsed.data.status) },
        warnings,
    };
}

function parseGateway(spec: LinkSpec): { gateway: GatewaySpec | null } | { error: string } {
    // Anything but commas and white space: an entry, valid or not (an invalid one is told by the gateway).
    if (!/[^,\s]/.test(spec.gatewayAddress)) return { gateway: null };
    const port = parsePort(spec.gatewayPort);
    if (port === null) return { error: `spec.gatewayPort ${JSON.stringify(spec.gatewayPort)} is not a port number (1-65535)` };
    return { gateway: { port, identity: spec.gatewayIdentity } };
}

function parseProbe(spec: ProbeSpec): { probe: LinkProbe | null } | { error: string } {
    // Linkerd starts the probe worker only when a path is set.
    if (spec.path === '') return { probe: null };
    const port = parsePort(spec.port);
    if (port === null) return { error: `spec.probeSpec.port ${JSON.stringify(spec.port)} is not a port number (1-65535)` };
    const periodMs = parseDurationMs(spec.period === '' ? DEFAULT_PROBE_PERIOD : spec.period);
    if (periodMs === null || periodMs <= 0) return { error: `spec.probeSpec.period ${JSON.stringify(spec.period)} is not a positive duration` };
    const timeoutMs = parseDurationMs(spec.timeout === '' ? DEFAULT_PROBE_TIMEOUT : spec.timeout);
    if (timeoutMs === null || timeoutMs <= 0) return { error: `spec.probeSpec.timeout ${JSON.stringify(spec.timeout)} is not a positive duration` };
    const threshold = spec.failureThreshold === '' ? 3 : parseDecimal(spec.failureThreshold);
    if (threshold === null || threshold < 1) {
        return { error: `spec.probeSpec.failureThreshold ${JSON.stringify(spec.failureThreshold)} is not a positive integer` };
    }
    return { probe: { path: spec.path, port, periodMs, timeoutMs, failureThreshold: threshold } };
}

function parseDecimal(text: string): number | null {
    return /^\d{1,9}$/.test(text.trim()) ? Number(text.trim()) : null;
}

function parsePort(text: string): number | null {
    const n = parseDecimal(text);
    return n !== null && n >= 1 && n <= 65535 ? n : null;
}

const statusSchema = z.object({
    mirrorServices: z.optional(z.array(z.looseObject({ controllerName: z.string(), remoteRef: z.looseObject({ name: z.string(), namespace: z.string() }) }))),
    federatedServices: z.optional(z.array(z.looseObject({ controllerName: z.string(), remoteRef: z.looseObject({ name: z.string(), namespace: z.string() }) }))),
    gatewayResolution: z.optional(z.array(z.looseObject({ name: z.string(), addresses: z.array(z.string()) }))),
});

function readStatus(status: unknown): LinkStatus {
    const parsed = statusSchema.safeParse(status ?? {});
    return parsed.success ? (parsed.data as LinkStatus) : {};
}

function describeZodError(error: z.core.$ZodError): string {
    return error.issues.map((issue) => `${issue.path.join('.') || '(root)'}: ${issue.message}`).join('; ');
}
