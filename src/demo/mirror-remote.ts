// What the service-mirror demo puts on the remote cluster and around it: the gateway Service
// an EKS load balancer leaves behind (ingress hostname, no ip), an exported Service with a
// ready endpoint, and the loopback HTTP server the gateway probes are redirected to.
// The addresses in these objects (192.0.2.x, 10.1.0.1) are never connected to.
import type { V1EndpointSlice, V1Service } from '@kubernetes/client-node';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { KubeRest } from '../kube/rest.js';
import { isAlreadyExists } from '../kube/errors.js';
import { collectionPath, EndpointSlices, Namespaces, objectPath, Services } from '../kube/resources.js';
import { table } from './table.js';

export const GATEWAY_NAMESPACE = 'linkerd-multicluster';
export const GATEWAY_NAME = 'linkerd-gateway';
export const GATEWAY_PORT = 4143;
export const GATEWAY_IDENTITY = 'linkerd-gateway.linkerd-multicluster.serviceaccount.identity.linkerd.cluster.local';

export async function ensureNamespace(rest: KubeRest, name: string): Promise<void> {
    await rest.create(collectionPath(Namespaces), { metadata: { name } }).catch((err: unknown) => {
        if (!isAlreadyExists(err)) throw err;
    });
}

/**
 * The gateway as `linkerd multicluster install` makes it, with the load balancer's answer set
 * through the status subresource, as the cloud controller would: a hostname and no ip.
 */
export async function createHostnameGateway(remote: KubeRest, hostname: string): Promise<string> {
    await ensureNamespace(remote, GATEWAY_NAMESPACE);
    await remote.create(collectionPath(Services, GATEWAY_NAMESPACE), {
        metadata: {
            name: GATEWAY_NAME,
            annotations: {
                'mirror.linkerd.io/gateway-identity': GATEWAY_IDENTITY,
                'mirror.linkerd.io/probe-path': '/ready',
                'mirror.linkerd.io/probe-period': '1',
            },
        },
        spec: {
            type: 'LoadBalancer',
            selector: { app: 'linkerd-gateway' },
            ports: [
                { name: 'mc-gateway', port: GATEWAY_PORT },
                { name: 'mc-probe', port: 4191 },
            ],
        },
    });
    const gateway = await remote.mergePatch<V1Service>(objectPath(Services, GATEWAY_NAMESPACE, GATEWAY_NAME, 'status'), {
        status: { loadBalancer: { ingress: [{ hostname }] } },
    });
    return table(
        ['SERVICE', 'TYPE', 'PORTS', 'LOADBALANCER INGRESS'],
        [[
            `${GATEWAY_NAMESPACE}/${GATEWAY_NAME}`,
            gateway.spec?.type ?? '',
            (gateway.spec?.ports ?? []).map((p) => `${p.name}:${p.port}`).join(','),
            JSON.stringify(gateway.status?.loadBalancer?.ingress),
        ]],
    );
}

/** An exported Service and the EndpointSlice an endpoint controller would have written for it. */
export async function createExportedService(remote: KubeRest, namespace: string, name: string): Promise<string> {
    await ensureNamespace(remote, namespace);
    await remote.create(collectionPath(Services, namespace), {
        metadata: { name, labels: { app: name, 'mirror.linkerd.io/exported': 'true' } },
        spec: {
            selector: { app: name },
            ports: [
                { name: 'http', port: 80, targetPort: 8080 },
                { name: 'grpc', port: 9090 },
            ],
        },
    });
    const slice: V1EndpointSlice = {
        metadata: {
            name: `${name}-remote`,
            labels: { 'kubernetes.io/service-name': name, 'endpointslice.kubernetes.io/managed-by': 'endpointslice-controller.k8s.io' },
        },
        addressType: 'IPv4',
        endpoints: [{ addresses: ['10.1.0.1'], conditions: { ready: true } }],
        ports: [
            { name: 'http', port: 8080, protocol: 'TCP' },
            { name: 'grpc', port: 9090, protocol: 'TCP' },
        ],
    };
    await remote.create(collectionPath(EndpointSlices, namespace), slice);
    return table(
        ['SERVICE', 'LABELS', 'PORTS', 'ENDPOINTSLICE', 'ENDPOINT'],
        [[`${namespace}/${name}`, `app=${name},mirror.linkerd.io/exported=true`, 'http:80,grpc:9090', slice.metadata!.name!, '10.1.0.1 ready']],
    );
}

/** Where --probe-address-override sends the gateway probes: 200 on 127.0.0.1, counting them. */
export interface ProbeServer {
    address: string;
    probes: number;
    close(): Promise<void>;
}

/** `host`: loopback, or a node's address inside its network namespace (its Pods reach it there). */
export async function startProbeServer(host = '127.0.0.1'): Promise<ProbeServer> {
    const server = createServer((_req, res) => {
        probe.probes++;
        res.writeHead(200).end('ok');
    });
    await new Promise<void>((done) => server.listen(0, host, done));
    const probe: ProbeServer = {
        address: `${host}:${(server.address() as AddressInfo).port}`,
        probes: 0,
        close: () =>
            new Promise<void>((done) => {
                server.close(() => done());
                // The prober keeps its connection alive; close() alone would wait for it.
                server.closeAllConnections();
            }),
    };
    return probe;
}
