// Resolving a Service's ports against one workload, as the EndpointSlice controller does
// for a Pod's container ports. The result is in the apiserver's defaulted form (name ""
// when unnamed, protocol always set) so that it compares equal to what a stored slice
// holds: otherwise every sync would see a change and rewrite the slice.
import type { DiscoveryV1EndpointPort, V1Service, V1ServicePort } from '@kubernetes/client-node';
import type { WorkloadPort } from './types.js';

/** What port resolution reads of a workload: its named ports (compact.ts keeps only those). */
export interface NamedPorts {
    ports: readonly WorkloadPort[];
}

export interface MissingNamedPort {
    servicePort: string;
    targetPort: string;
    protocol: string;
}

export interface ResolvedPorts {
    /** In the order of the Service's ports; equal lists mean the same slice group. */
    ports: DiscoveryV1EndpointPort[];
    /** Service ports left out because the workload declares no port of that name. */
    missing: MissingNamedPort[];
}

/**
 * A named targetPort becomes the number of the workload port with that name and protocol;
 * a numeric one is used as is (like for Pods, the workload need not declare it); an absent
 * one means the Service port's own number. A Service port whose name the workload lacks is
 * left out for that workload only, which puts the workload in a slice group of its own
 * rather than dropping it from the Service's other ports.
 */
export function resolvePorts(service: V1Service, workload: NamedPorts): ResolvedPorts {
    const ports: DiscoveryV1EndpointPort[] = [];
    const missing: MissingNamedPort[] = [];
    for (const servicePort of service.spec?.ports ?? []) {
        const protocol = servicePort.protocol ?? 'TCP';
        const target = servicePort.targetPort;
        let number: number | undefined;
        if (typeof target === 'string' && target !== '') {
            number = namedWorkloadPort(workload, target, protocol);
            if (number === undefined) {
                missing.push({ servicePort: servicePortLabel(servicePort), targetPort: target, protocol });
                continue;
            }
        } else {
            // 0 is what an unset IntOrString decodes to in Go clients; the apiserver itself
            // defaults targetPort to the port.
            number = typeof target === 'number' && target > 0 ? target : servicePort.port;
        }
        const port: DiscoveryV1EndpointPort = { name: servicePort.name ?? '', port: number, protocol };
        if (servicePort.appProtocol) port.appProtocol = servicePort.appProtocol;
        ports.push(port);
    }
    return { ports, missing };
}

/** Whether resolvePorts reads the workload at all: only for a targetPort given by name. */
export function targetsNamedPorts(service: V1Service): boolean {
    return (service.spec?.ports ?? []).some((port) => typeof port.targetPort === 'string' && port.targetPort !== '');
}

function namedWorkloadPort(workload: NamedPorts, name: string, protocol: string): number | undefined {
    // The first match wins, as for container ports; duplicate names are refused by the CRD.
    return workload.ports.find((p) => p.name === name && (p.protocol ?? 'TCP') === protocol)?.port;
}

function servicePortLabel(port: V1ServicePort): string {
    return port.name ? `"${port.name}"` : String(port.port);
}
