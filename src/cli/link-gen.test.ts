import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1LoadBalancerIngress, V1Service, V1ServicePort } from '@kubernetes/client-node';
import { parse, parseAllDocuments } from 'yaml';
import { parseLink } from '../servicemirror/api/link.js';
import { destinationAccessObjects, gatewaySpecFrom, linkYaml, remoteAccessObjects, remoteKubeconfig, type GatewaySpec } from './link-gen.js';

function gateway(overrides: { ingress?: V1LoadBalancerIngress[]; ports?: V1ServicePort[]; annotations?: Record<string, string>; type?: string } = {}): V1Service {
    return {
        metadata: {
            name: 'linkerd-gateway',
            namespace: 'linkerd-multicluster',
            annotations: overrides.annotations ?? {
                'mirror.linkerd.io/gateway-identity': 'linkerd-gateway.linkerd-multicluster.serviceaccount.identity.linkerd.cluster.local',
                'mirror.linkerd.io/probe-path': '/ready',
                'mirror.linkerd.io/probe-period': '3',
            },
        },
        spec: {
            type: overrides.type ?? 'LoadBalancer',
            ports: overrides.ports ?? [
                { name: 'mc-gateway', port: 4143, nodePort: 30143 },
                { name: 'mc-probe', port: 4191, nodePort: 30191 },
            ],
        },
        status: { loadBalancer: { ingress: overrides.ingress ?? [{ ip: '192.0.2.1' }] } },
    };
}

function spec(svc: V1Service): GatewaySpec {
    const result = gatewaySpecFrom(svc);
    if ('error' in result) throw new Error(result.error);
    return result;
}

describe('link generation from the remote gateway Service', () => {
    it('uses the ingress hostname when the load balancer has no IP (EKS)', () => {
        const elb = 'a1b2-123.elb.us-east-1.amazonaws.com';
        assert.equal(spec(gateway({ ingress: [{ hostname: elb }] })).gatewayAddress, elb);
    });

    it('prefers the ingress IP and joins several ingress entries with commas', () => {
        const result = spec(gateway({ ingress: [{ ip: '192.0.2.1', hostname: 'ignored.example.com' }, { hostname: 'b.example.com' }] }));
        assert.equal(result.gatewayAddress, '192.0.2.1,b.example.com');
    });

    it('reads the gateway and probe ports by name, their node ports on a NodePort Service', () => {
        assert.deepEqual([spec(gateway()).gatewayPort, spec(gateway()).probeSpec.port], ['4143', '4191']);
        const nodePort = spec(gateway({ type: 'NodePort' }));
        assert.deepEqual([nodePort.gatewayPort, nodePort.probeSpec.port], ['30143', '30191']);
    });

    it('turns the probe annotations into a probeSpec, a period in seconds into a duration', () => {
        assert.deepEqual(spec(gateway()).probeSpec, { path: '/ready', port: '4191', period: '3s', timeout: '30s', failureThreshold: '3' });
    });

    it('leaves the probe path empty, so the Link is not probed, when the gateway has no probe-path annotation', () => {
        const result = spec(gateway({ annotations: { 'mirror.linkerd.io/gateway-identity': 'id' } }));
        assert.equal(result.probeSpec.path, '');
        assert.equal(result.probeSpec.period, '3s');
    });

    it('refuses a gateway without ingress yet, saying so', () => {
        for (const ingress of [[], [{}], [{ ip: '', hostname: '' }]]) {
            const result = gatewaySpecFrom(gateway({ ingress }));
            assert.ok('error' in result);
            assert.match(result.error, /linkerd-multicluster\/linkerd-gateway has no LoadBalancer ingress yet/);
        }
    });

    it('refuses a gateway that lacks the named ports, naming them', () => {
        const none = gatewaySpecFrom(gateway({ ports: [{ name: 'http', port: 80 }] }));
        assert.ok('error' in none && /lacks the ports named mc-gateway and mc-probe \(its ports: http\)/.test(none.error));
        const probeOnly = gatewaySpecFrom(gateway({ ports: [{ name: 'mc-gateway', port: 4143 }] }));
        assert.ok('error' in probeOnly && /lacks the port named mc-probe/.test(probeOnly.error));
    });

    it('refuses a gateway without an identity annotation', () => {
        const result = gatewaySpecFrom(gateway({ annotations: {} }));
        assert.ok('error' in result && /mirror.linkerd.io\/gateway-identity/.test(result.error));
    });

    it('prints the mirror Secret, the destination Secret and a Link that the controller parses, with the default export selectors', () => {
        const elb = 'a1b2-123.elb.us-east-1.amazonaws.com';
        const yaml = linkYaml({
            clusterName: 'east',
            namespace: 'mc',
            clusterDomain: 'cluster.local',
            gateway: spec(gateway({ ingress: [{ hostname: elb }] })),
            kubeconfig: 'kubeconfig-text',
            destination: { namespace: 'linkerd', trustDomain: 'east.example', kubeconfig: 'destination-kubeconfig' },
        });
        const [secret, destination, link] = parseAllDocuments(yaml).map((d) => d.toJS());
        assert.equal(secret.type, 'mirror.linkerd.io/remote-kubeconfig');
        assert.equal(Buffer.from(secret.data.kubeconfig, 'base64').toString(), 'kubeconfig-text');
        assert.equal(link.spec.clusterCredentialsSecret, secret.metadata.name);
        // What Linkerd's destination's cluster store looks for (cluster_store.go).
        assert.deepEqual(destination, {
            apiVersion: 'v1',
            kind: 'Secret',
            metadata: {
                name: 'cluster-credentials-east',
                namespace: 'linkerd',
                labels: { 'multicluster.linkerd.io/cluster-name': 'east' },
                annotations: { 'multicluster.linkerd.io/trust-domain': 'east.example', 'multicluster.linkerd.io/cluster-domain': 'cluster.local' },
            },
            type: 'mirror.linkerd.io/remote-kubeconfig',
            data: { kubeconfig: Buffer.from('destination-kubeconfig').toString('base64') },
        });
        const parsed = parseLink({ ...link, metadata: { ...link.metadata } });
        assert.ok('link' in parsed, 'error' in parsed ? parsed.error : '');
        assert.equal(parsed.link.spec.gatewayAddress, elb);
        assert.deepEqual(parsed.link.gateway, { port: 4143, identity: 'linkerd-gateway.linkerd-multicluster.serviceaccount.identity.linkerd.cluster.local' });
        assert.deepEqual(parsed.link.spec.selector, { matchLabels: { 'mirror.linkerd.io/exported': 'true' } });
        assert.deepEqual(parsed.link.spec.remoteDiscoverySelector, { matchLabels: { 'mirror.linkerd.io/exported': 'remote-discovery' } });
        assert.deepEqual(parsed.link.spec.federatedServiceSelector, { matchLabels: { 'mirror.linkerd.io/federated': 'member' } });
        assert.equal(parsed.link.probe?.periodMs, 3000);
    });

    it("writes no destination Secret, and no selector of those modes, when neither remote discovery nor federation is on", () => {
        const yaml = linkYaml({ clusterName: 'east', namespace: 'mc', clusterDomain: 'cluster.local', gateway: spec(gateway()), kubeconfig: 'k', modes: { remoteDiscovery: false, federated: false } });
        const docs = parseAllDocuments(yaml).map((d) => d.toJS());
        assert.deepEqual(docs.map((d) => d.kind), ['Secret', 'Link']);
        assert.equal(docs[1].spec.remoteDiscoverySelector, undefined);
        assert.equal(docs[1].spec.federatedServiceSelector, undefined);
        const federatedOnly = parseAllDocuments(
            linkYaml({ clusterName: 'east', namespace: 'mc', clusterDomain: 'cluster.local', gateway: spec(gateway()), kubeconfig: 'k', modes: { remoteDiscovery: false, federated: true }, destination: { namespace: 'linkerd', trustDomain: 'cluster.local', kubeconfig: 'd' } }),
        ).map((d) => d.toJS());
        assert.deepEqual(federatedOnly.map((d) => `${d.kind} ${d.metadata.namespace}`), ['Secret mc', 'Secret linkerd', 'Link mc']);
        assert.equal(federatedOnly[2].spec.remoteDiscoverySelector, undefined);
    });

    it("writes the modes' selectors but no destination Secret when none is given (no Linkerd in the local cluster)", () => {
        const docs = parseAllDocuments(linkYaml({ clusterName: 'east', namespace: 'mc', clusterDomain: 'cluster.local', gateway: spec(gateway()), kubeconfig: 'k' })).map((d) => d.toJS());
        assert.deepEqual(docs.map((d) => `${d.kind} ${d.metadata.namespace}/${d.metadata.name}`), ['Secret mc/cluster-credentials-east', 'Link mc/east']);
        assert.deepEqual(docs[1].spec.remoteDiscoverySelector, { matchLabels: { 'mirror.linkerd.io/exported': 'remote-discovery' } });
        assert.deepEqual(docs[1].spec.federatedServiceSelector, { matchLabels: { 'mirror.linkerd.io/federated': 'member' } });
    });

    it('writes a kubeconfig with the remote server, its CA and the token', () => {
        const kc = parse(remoteKubeconfig({ clusterName: 'east', server: 'https://192.0.2.1:6443', caPem: 'PEM', token: 'tok' }));
        assert.equal(kc['current-context'], 'east');
        assert.equal(kc.clusters[0].cluster.server, 'https://192.0.2.1:6443');
        assert.equal(Buffer.from(kc.clusters[0].cluster['certificate-authority-data'], 'base64').toString(), 'PEM');
        assert.equal(kc.users[0].user.token, 'tok');
    });

    it('grants each remote ServiceAccount only list and watch of what its reader reads', () => {
        const mirror = remoteAccessObjects('mc');
        assert.deepEqual(mirror.clusterRole.rules, [
            { apiGroups: [''], resources: ['services'], verbs: ['list', 'watch'] },
            { apiGroups: ['discovery.k8s.io'], resources: ['endpointslices'], verbs: ['list', 'watch'] },
            { apiGroups: ['multicluster.x-k8s.io'], resources: ['serviceexports'], verbs: ['list', 'watch'] },
        ]);
        assert.deepEqual(mirror.clusterRoleBinding.subjects, [{ kind: 'ServiceAccount', name: 'mesh-endpoints-service-mirror-remote-access', namespace: 'mc' }]);
        const destination = destinationAccessObjects('mc');
        assert.deepEqual(destination.clusterRole.rules, [
            { apiGroups: [''], resources: ['pods'], verbs: ['list', 'watch'] },
            { apiGroups: [''], resources: ['services'], verbs: ['list', 'watch'] },
            { apiGroups: ['discovery.k8s.io'], resources: ['endpointslices'], verbs: ['list', 'watch'] },
            { apiGroups: ['policy.linkerd.io'], resources: ['servers'], verbs: ['list', 'watch'] },
            { apiGroups: ['apps'], resources: ['replicasets'], verbs: ['list', 'watch'] },
        ]);
        assert.deepEqual(destination.clusterRoleBinding.subjects, [{ kind: 'ServiceAccount', name: 'mesh-endpoints-destination-remote-access', namespace: 'mc' }]);
        assert.notEqual(destination.clusterRoleBinding.metadata.name, mirror.clusterRoleBinding.metadata.name);
    });
});
