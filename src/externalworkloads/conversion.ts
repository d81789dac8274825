// Conversion between the two served versions of ExternalWorkload, as the CRD's conversion
// webhook does it (pure: objects in, objects out).
//
// The versions differ in two places only:
// - the TLS block is `spec.meshTls` in v1alpha1 and `spec.meshTLS` in v1beta1;
// - v1alpha1 holds at most one workload IP, v1beta1 two (one per family).
// Everything else is copied field by field, unknown fields included.
//
// A v1beta1 object with two IPs read as v1alpha1 shows its first IP only, and keeps the
// whole v1beta1 list in the annotation SAVED_WORKLOAD_IPS (as Kubernetes keeps HPA v2
// fields in annotations of autoscaling/v1 objects). Converting back restores the list when
// the v1alpha1 object still carries that first IP; if a v1alpha1 client changed or removed
// it, the client's list wins and the saved one is dropped. The annotation is ours: a
// v1beta1 object never keeps it.
import { isDeepStrictEqual } from 'node:util';
import { WORKLOAD_GROUP } from './types.js';

export const WORKLOAD_VERSIONS = ['v1alpha1', 'v1beta1'] as const;
export type WorkloadVersion = (typeof WORKLOAD_VERSIONS)[number];

/** Where a v1alpha1 view keeps the v1beta1 workloadIPs it cannot hold (JSON array). */
export const SAVED_WORKLOAD_IPS = 'mesh-endpoints.io/v1beta1-workload-ips';

type JsonObject = Record<string, unknown>;

export type ConversionResult = { ok: true; object: JsonObject } | { ok: false; message: string };

/** `workload.linkerd.io/v1beta1` → `v1beta1`; undefined for anything else. */
export function workloadVersionOf(apiVersion: unknown): WorkloadVersion | undefined {
    if (typeof apiVersion !== 'string') return undefined;
    const [group, version] = apiVersion.split('/');
    return group === WORKLOAD_GROUP && WORKLOAD_VERSIONS.includes(version as WorkloadVersion) ? (version as WorkloadVersion) : undefined;
}

/** Converts one ExternalWorkload to `desiredAPIVersion`; never throws, never changes its input. */
export function convertWorkload(object: unknown, desiredAPIVersion: string): ConversionResult {
    const to = workloadVersionOf(desiredAPIVersion);
    if (!to) return { ok: false, message: `cannot convert to ${JSON.stringify(desiredAPIVersion)}: not a served ExternalWorkload version` };
    if (!isObject(object)) return { ok: false, message: 'an ExternalWorkload must be a JSON object' };
    const from = workloadVersionOf(object.apiVersion);
    if (!from) return { ok: false, message: `cannot convert from apiVersion ${JSON.stringify(object.apiVersion)}: not an ExternalWorkload version` };
    if (object.spec !== undefined && !isObject(object.spec)) return { ok: false, message: 'spec must be an object' };
    const copy = structuredClone(object);
    copy.apiVersion = desiredAPIVersion;
    if (from === to) return { ok: true, object: copy };
    return { ok: true, object: to === 'v1beta1' ? toBeta(copy) : toAlpha(copy) };
}

function toBeta(object: JsonObject): JsonObject {
    const spec = object.spec as JsonObject | undefined;
    const saved = takeAnnotation(object, SAVED_WORKLOAD_IPS);
    if (!spec) return object;
    renameKey(spec, 'meshTls', 'meshTLS');
    const restored = saved === undefined ? undefined : parseSavedIPs(saved);
    if (restored && isDeepStrictEqual(spec.workloadIPs, restored.slice(0, 1))) spec.workloadIPs = restored;
    return object;
}

function toAlpha(object: JsonObject): JsonObject {
    const spec = object.spec as JsonObject | undefined;
    // Ours only: a stray copy on a v1beta1 object would be read back as saved IPs.
    takeAnnotation(object, SAVED_WORKLOAD_IPS);
    if (!spec) return object;
    renameKey(spec, 'meshTLS', 'meshTls');
    const ips = spec.workloadIPs;
    if (Array.isArray(ips) && ips.length > 1) {
        setAnnotation(object, SAVED_WORKLOAD_IPS, JSON.stringify(ips));
        spec.workloadIPs = ips.slice(0, 1);
    }
    return object;
}

/** Moves `from` to `to`, keeping the key order of the object (kubectl shows it). */
function renameKey(object: JsonObject, from: string, to: string): void {
    if (!(from in object)) return;
    const entries = Object.entries(object).map(([k, v]): [string, unknown] => [k === from ? to : k, v]);
    for (const key of Object.keys(object)) delete object[key];
    for (const [k, v] of entries) object[k] = v;
}

function parseSavedIPs(text: string): unknown[] | undefined {
    try {
        const parsed: unknown = JSON.parse(text);
        return Array.isArray(parsed) && parsed.length > 0 ? parsed : undefined;
    } catch {
        return undefined;
    }
}

function takeAnnotation(object: JsonObject, key: string): string | undefined {
    const metadata = object.metadata;
    if (!isObject(metadata) || !isObject(metadata.annotations) || !(key in metadata.annotations)) return undefined;
    const value = metadata.annotations[key];
    delete metadata.annotations[key];
    if (Object.keys(metadata.annotations).length === 0) delete metadata.annotations;
    return typeof value === 'string' ? value : undefined;
}

function setAnnotation(object: JsonObject, key: string, value: string): void {
    if (!isObject(object.metadata)) object.metadata = {};
    const metadata = object.metadata as JsonObject;
    if (!isObject(metadata.annotations)) metadata.annotations = {};
    (metadata.annotations as JsonObject)[key] = value;
}

function isObject(value: unknown): value is JsonObject {
    return typeof value === 'object' && value !== null && !Array.isArray(value);
}
