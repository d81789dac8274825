// Builders for the externalworkloads/ tests: a Service and an ExternalWorkload in the form
// the apiserver serves them (defaults applied), with just the fields a test cares about.
// A plain module rather than a *.test.ts so that several test files can share it.
import type { V1Service, V1ServicePort, V1ServiceSpec } from '@kubernetes/client-node';
import type { ExternalWorkload, WorkloadPort } from './types.js';

export const NAMESPACE = 'shop';

export function makeService(spec: Partial<V1ServiceSpec> = {}, metadata: Partial<V1Service['metadata']> = {}): V1Service {
    return {
        apiVersion: 'v1',
        kind: 'Service',
        metadata: { name: 'web', namespace: NAMESPACE, uid: 'svc-uid', ...metadata },
        spec: {
            type: 'ClusterIP',
            clusterIP: '10.96.0.10',
            ipFamilies: ['IPv4'],
            selector: { app: 'web' },
            ports: [httpPort()],
            ...spec,
        },
    };
}

export function httpPort(overrides: Partial<V1ServicePort> = {}): V1ServicePort {
    return { name: 'http', port: 80, protocol: 'TCP', targetPort: 8080, ...overrides };
}

export interface WorkloadOptions {
    namespace?: string;
    labels?: Record<string, string>;
    ips?: string[];
    ports?: WorkloadPort[];
    ready?: boolean;
    deleting?: boolean;
}

export function makeWorkload(name: string, options: WorkloadOptions = {}): ExternalWorkload {
    const workload: ExternalWorkload = {
        apiVersion: 'workload.linkerd.io/v1beta1',
        kind: 'ExternalWorkload',
        metadata: {
            name,
            namespace: options.namespace ?? NAMESPACE,
            uid: `uid-${name}`,
            labels: options.labels ?? { app: 'web' },
        },
        spec: {
            meshTLS: { identity: `${name}.shop.serviceaccount.identity.linkerd.cluster.local`, serverName: `${name}.shop.cluster.local` },
            ports: options.ports ?? [{ name: 'http', port: 8080, protocol: 'TCP' }],
            workloadIPs: (options.ips ?? ['192.0.2.1']).map((ip) => ({ ip })),
        },
        status: { conditions: [{ type: 'Ready', status: options.ready === false ? 'False' : 'True' }] },
    };
    if (options.deleting) workload.metadata.deletionTimestamp = '2026-01-01T00:00:00Z';
    return workload;
}

/** Distinct addresses from the 198.18.0.0/15 benchmarking range; never connected to. */
export function ipv4(i: number): string {
    return `198.18.${(i >> 8) & 255}.${i & 255}`;
}
