// What of a source Service (a remote one, a federated member) the Service standing for it would
// carry that the local apiserver refuses. A remote apiserver validated it already, but the
// remote is untrusted: a compromised one can send anything, and a mirror the local apiserver
// refuses would fail on every sync. Checked before any write, as Kubernetes v1.35 checks a
// Service (pkg/apis/core/validation: ValidateObjectMeta's labels and annotations,
// validateServicePort, the uniqueness of port names and port/protocol pairs).
import type { V1ServicePort } from '@kubernetes/client-node';
import { isDNS1123Label, isLabelValue, isQualifiedName } from '../../endpointslice/names.js';

/** The apiserver's limit on the total size of an object's annotations (TotalAnnotationSizeLimitB). */
const ANNOTATIONS_MAX_BYTES = 256 * 1024;
const PROTOCOLS = new Set(['TCP', 'UDP', 'SCTP']);
/** IsValidPortName (an IANA_SVC_NAME): at most 15 of a-z, 0-9 and "-", a letter among them, no "--", no "-" at either end. */
const IANA_SVC_NAME = /^[a-z0-9]([a-z0-9-]{0,13}[a-z0-9])?$/;

function isPortName(value: string): boolean {
    return IANA_SVC_NAME.test(value) && /[a-z]/.test(value) && !value.includes('--');
}

const isPortNumber = (value: unknown) => Number.isInteger(value) && (value as number) >= 1 && (value as number) <= 65535;

/** The first reason the apiserver would refuse these labels and annotations, or null. */
export function metadataProblem(labels: Record<string, string>, annotations: Record<string, string>): string | null {
    for (const [key, value] of Object.entries(labels)) {
        if (!isQualifiedName(key)) return `label key ${JSON.stringify(key.slice(0, 100))} is not a valid label key`;
        if (typeof value !== 'string' || !isLabelValue(value)) return `label ${key} has a value that is not a valid label value`;
    }
    let bytes = 0;
    for (const [key, value] of Object.entries(annotations)) {
        if (!isQualifiedName(key.toLowerCase())) return `annotation key ${JSON.stringify(key.slice(0, 100))} is not a valid annotation key`;
        if (typeof value !== 'string') return `annotation ${key} is not a string`;
        bytes += Buffer.byteLength(key) + Buffer.byteLength(value);
    }
    if (bytes > ANNOTATIONS_MAX_BYTES) return `its annotations are ${bytes} bytes, more than the ${ANNOTATIONS_MAX_BYTES} an object may carry`;
    return null;
}

/** The first reason the apiserver would refuse these Service ports, or null. */
export function portsProblem(ports: readonly V1ServicePort[]): string | null {
    const names = new Set<string>();
    const numbers = new Set<string>();
    for (const [i, port] of ports.entries()) {
        const where = `spec.ports[${i}]`;
        if (ports.length > 1 && !port.name) return `${where} has no name, which a Service of several ports requires`;
        if (port.name !== undefined && port.name !== '' && !isDNS1123Label(port.name)) return `${where}.name ${JSON.stringify(String(port.name).slice(0, 100))} is not a DNS-1123 label`;
        if (port.name && names.has(port.name)) return `${where}.name ${port.name} is not unique`;
        if (port.name) names.add(port.name);
        if (!isPortNumber(port.port)) return `${where}.port ${JSON.stringify(port.port)} is not a port number (1-65535)`;
        const protocol = port.protocol ?? 'TCP';
        if (!PROTOCOLS.has(protocol)) return `${where}.protocol ${JSON.stringify(String(protocol).slice(0, 100))} is not TCP, UDP or SCTP`;
        const key = `${port.port}/${protocol}`;
        if (numbers.has(key)) return `${where} repeats port ${key}`;
        numbers.add(key);
        const target = port.targetPort;
        if (target !== undefined && !(typeof target === 'number' ? isPortNumber(target) : typeof target === 'string' && isPortName(target))) {
            return `${where}.targetPort ${JSON.stringify(String(target).slice(0, 100))} is neither a port number nor a port name`;
        }
        if (port.appProtocol !== undefined && !isQualifiedName(port.appProtocol)) return `${where}.appProtocol ${JSON.stringify(String(port.appProtocol).slice(0, 100))} is not a qualified name`;
    }
    return null;
}
