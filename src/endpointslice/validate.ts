// The apiserver's whole EndpointSlice validation, as Kubernetes v1.35.4 runs it on a create
// or an update (k8s.io/kubernetes pkg/apis/discovery/validation/validation.go,
// ValidateEndpointSlice and the functions it calls), plus what decoding the JSON body
// requires. The slice writer runs it on every slice before the first write of a plan, so a
// write the apiserver would reject is never sent: a bug in an adapter shows as one clear
// error of ours instead of a 422 in a retry loop. Pure; returns every problem, not the first.
//
// Where we are stricter than the apiserver it is said below; each stricter rule is one our
// planner always meets, so it costs nothing and keeps what we write valid under either
// setting of the StrictIPCIDRValidation feature gate.
import type { DiscoveryV1EndpointPort, V1Endpoint, V1EndpointSlice, V1ObjectMeta } from '@kubernetes/client-node';
import { sliceAddressProblems } from '../ip/address.js';
import type { AddressType } from '../ip/family.js';
import { isDNS1123Label, isDNS1123Subdomain, isGenerateNamePrefix, isLabelValue, isQualifiedName, isUsableGenerateName } from './names.js';

// validation.go's package variables.
const MAX_ENDPOINTS = 1000;
const MAX_ADDRESSES = 100;
const MAX_PORTS = 20000;
const MAX_ZONE_HINTS = 8;
const MAX_NODE_HINTS = 8;
const PROTOCOLS = new Set(['TCP', 'UDP', 'SCTP']);
// apimachinery pkg/api/validation/objectmeta.go TotalAnnotationSizeLimitB.
const MAX_ANNOTATION_BYTES = 256 * 1024;

export function sliceProblems(slice: V1EndpointSlice): string[] {
    const problems: string[] = [];
    metadataProblems(slice.metadata, problems);
    // validateAddressType allows IPv4, IPv6 and FQDN; we never write FQDN (deprecated, and
    // Linkerd's destination ignores it), so anything else is a bug of ours.
    const addressType = slice.addressType;
    if (addressType !== 'IPv4' && addressType !== 'IPv6') problems.push(`addressType ${JSON.stringify(addressType)} is not IPv4 or IPv6`);
    else endpointsProblems(slice.endpoints ?? [], addressType, problems);
    portsProblems(slice.ports ?? [], problems);
    return problems;
}

/**
 * apivalidation.ValidateObjectMeta(meta, requiresNamespace=true, NameIsDNSSubdomain), i.e.
 * apimachinery pkg/api/validation/objectmeta.go ValidateObjectMetaAccessor and
 * validateObjectMetaAccessorWithOptsCommon. managedFields are not checked: we only ever send
 * back what the apiserver gave us.
 */
function metadataProblems(meta: V1ObjectMeta | undefined, problems: string[]): void {
    const { name, generateName, namespace } = meta ?? {};
    if (generateName) {
        if (!isGenerateNamePrefix(generateName)) problems.push(`metadata.generateName ${JSON.stringify(generateName)} is not a DNS subdomain prefix`);
        // The name the apiserver will make (names.SimpleNameGenerator) is checked too.
        else if (!name && !isUsableGenerateName(generateName)) {
            problems.push(`metadata.generateName ${JSON.stringify(generateName)} yields invalid names`);
        }
    }
    if (name) {
        if (!isDNS1123Subdomain(name)) problems.push(`metadata.name ${JSON.stringify(name)} is not a DNS subdomain`);
    } else if (!generateName) problems.push('metadata: name or generateName is required');
    if (!namespace) problems.push('metadata.namespace is required');
    else if (!isDNS1123Label(namespace)) problems.push(`metadata.namespace ${JSON.stringify(namespace)} is not a DNS label`);
    if ((meta?.generation ?? 0) < 0) problems.push('metadata.generation must not be negative');
    // Loops, not Object.entries or forEach: this runs for every slice of every write, and a
    // fresh process runs it in V8's interpreter, where each array and closure is paid for.
    const labels = meta?.labels;
    for (const key in labels) {
        const value = labels[key];
        if (!isQualifiedName(key)) problems.push(`metadata.labels: key ${JSON.stringify(key)} is not a qualified name`);
        if (typeof value !== 'string' || !isLabelValue(value)) problems.push(`metadata.labels[${JSON.stringify(key)}]: ${JSON.stringify(value)} is not a valid label value`);
    }
    let annotationBytes = 0;
    const annotations = meta?.annotations;
    for (const key in annotations) {
        const value = annotations[key];
        // ValidateAnnotations: a qualified name once lowercased; the size counts bytes.
        if (!isQualifiedName(key.toLowerCase())) problems.push(`metadata.annotations: key ${JSON.stringify(key)} is not a qualified name`);
        if (typeof value !== 'string') problems.push(`metadata.annotations[${JSON.stringify(key)}] is not a string`);
        else annotationBytes += Buffer.byteLength(key) + Buffer.byteLength(value);
    }
    if (annotationBytes > MAX_ANNOTATION_BYTES) problems.push(`metadata.annotations: ${annotationBytes} bytes, more than ${MAX_ANNOTATION_BYTES}`);
    // ValidateOwnerReferences: version, kind, name and uid set; at most one controller.
    const refs = meta?.ownerReferences ?? [];
    let controllers = 0;
    for (let i = 0; i < refs.length; i++) {
        const ref = refs[i]!;
        const apiVersion = ref.apiVersion ?? '';
        const version = apiVersion.slice(apiVersion.lastIndexOf('/') + 1);
        if (!version || !ref.kind || !ref.name || !ref.uid) problems.push(`metadata.ownerReferences[${i}]: apiVersion, kind, name and uid are required`);
        if (ref.controller === true) controllers++;
    }
    if (controllers > 1) problems.push('metadata.ownerReferences: only one reference can be the controller');
    // ValidateFinalizers; validateKubeFinalizerName (core validation) only adds rules for
    // unprefixed names, and we keep whatever finalizers the stored slice had.
    for (const finalizer of meta?.finalizers ?? []) {
        if (!isQualifiedName(finalizer)) problems.push(`metadata.finalizers: ${JSON.stringify(finalizer)} is not a qualified name`);
    }
}

/** validateEndpoints. Zone, conditions and targetRef have no rule there; only their JSON types matter. */
function endpointsProblems(endpoints: V1Endpoint[], addressType: AddressType, problems: string[]): void {
    if (endpoints.length > MAX_ENDPOINTS) {
        problems.push(`${endpoints.length} endpoints, more than ${MAX_ENDPOINTS}`);
        return;
    }
    // Where a problem is: written out only when there is one (most slices have none).
    for (let i = 0; i < endpoints.length; i++) {
        const endpoint = endpoints[i]!;
        const addresses = endpoint.addresses ?? [];
        if (addresses.length < 1 || addresses.length > MAX_ADDRESSES) {
            problems.push(`endpoints[${i}]: ${addresses.length} addresses, must be 1 to ${MAX_ADDRESSES}`);
        }
        for (const address of addresses) {
            for (const problem of sliceAddressProblems(address, addressType)) problems.push(`endpoints[${i}].addresses: ${problem}`);
        }
        // ValidateNodeName is NameIsDNSSubdomain.
        if (endpoint.nodeName !== undefined && !isDNS1123Subdomain(endpoint.nodeName)) {
            problems.push(`endpoints[${i}].nodeName ${JSON.stringify(endpoint.nodeName)} is not a DNS subdomain`);
        }
        if (endpoint.hostname !== undefined && !isDNS1123Label(endpoint.hostname)) {
            problems.push(`endpoints[${i}].hostname ${JSON.stringify(endpoint.hostname)} is not a DNS label`);
        }
        if (endpoint.zone !== undefined && typeof endpoint.zone !== 'string') problems.push(`endpoints[${i}].zone is not a string`);
        const conditions = endpoint.conditions as Record<string, unknown> | undefined;
        for (const condition in conditions) {
            const value = conditions[condition];
            if (value !== undefined && value !== null && typeof value !== 'boolean') problems.push(`endpoints[${i}].conditions.${condition} is not a boolean`);
        }
        // We write no hints: most endpoints have none to check.
        if (endpoint.hints) hintsProblems(endpoint, `endpoints[${i}]`, problems);
    }
}

/** validateHints: at most 8 zone and 8 node hints, unique, label values and node names. */
function hintsProblems(endpoint: V1Endpoint, at: string, problems: string[]): void {
    const { forZones = [], forNodes = [] } = endpoint.hints ?? {};
    if (forZones.length > MAX_ZONE_HINTS) problems.push(`${at}.hints.forZones: more than ${MAX_ZONE_HINTS}`);
    else if (new Set(forZones.map((z) => z.name)).size !== forZones.length) problems.push(`${at}.hints.forZones: duplicate zone`);
    else if (forZones.some((z) => !isLabelValue(z.name))) problems.push(`${at}.hints.forZones: a zone is not a label value`);
    if (forNodes.length > MAX_NODE_HINTS) problems.push(`${at}.hints.forNodes: more than ${MAX_NODE_HINTS}`);
    else if (new Set(forNodes.map((n) => n.name)).size !== forNodes.length) problems.push(`${at}.hints.forNodes: duplicate node`);
    else if (forNodes.some((n) => !isDNS1123Subdomain(n.name))) problems.push(`${at}.hints.forNodes: a node name is not a DNS subdomain`);
}

/**
 * validatePorts. A missing name or protocol is defaulted ("" and TCP, discovery/v1
 * SetDefaults_EndpointPort) before validation. The port number has no rule there: a value
 * outside int32 fails decoding; we also refuse 0 and over 65535, which no source port has.
 */
/** What the apiserver says of a slice's port list alone (the service mirror asks it of remote slices whose ports it copies). */
export function slicePortsProblems(ports: DiscoveryV1EndpointPort[]): string[] {
    const problems: string[] = [];
    portsProblems(ports, problems);
    return problems;
}

function portsProblems(ports: DiscoveryV1EndpointPort[], problems: string[]): void {
    if (ports.length > MAX_PORTS) {
        problems.push(`${ports.length} ports, more than ${MAX_PORTS}`);
        return;
    }
    const names = new Set<string>();
    for (let i = 0; i < ports.length; i++) {
        const port = ports[i]!;
        const name = port.name ?? '';
        if (name !== '' && !isDNS1123Label(name)) problems.push(`ports[${i}].name ${JSON.stringify(name)} is not a DNS label`);
        if (names.has(name)) problems.push(`ports[${i}].name ${JSON.stringify(name)} is used twice`);
        names.add(name);
        if (port.protocol !== undefined && !PROTOCOLS.has(port.protocol)) problems.push(`ports[${i}].protocol ${JSON.stringify(port.protocol)} is not TCP, UDP or SCTP`);
        if (port.appProtocol !== undefined && !isQualifiedName(port.appProtocol)) {
            problems.push(`ports[${i}].appProtocol ${JSON.stringify(port.appProtocol)} is not a qualified name`);
        }
        if (port.port !== undefined && !(Number.isInteger(port.port) && port.port >= 1 && port.port <= 65535)) {
            problems.push(`ports[${i}].port ${port.port} is not 1 to 65535`);
        }
    }
}
