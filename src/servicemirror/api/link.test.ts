import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type Link, parseLink } from './link.js';

/** A Link as `linkerd multicluster link` writes it (v1alpha3). */
function linkerdLink(spec: Record<string, unknown> = {}, extra: Record<string, unknown> = {}): Record<string, unknown> {
    return {
        apiVersion: 'multicluster.linkerd.io/v1alpha3',
        kind: 'Link',
        metadata: { name: 'east', namespace: 'linkerd-multicluster', uid: 'u-1', resourceVersion: '42', generation: 2 },
        spec: {
            targetClusterName: 'east',
            targetClusterDomain: 'cluster.local',
            targetClusterLinkerdNamespace: 'linkerd',
            clusterCredentialsSecret: 'cluster-credentials-east',
            gatewayAddress: '192.0.2.127',
            gatewayPort: '4143',
            gatewayIdentity: 'linkerd-gateway.linkerd-multicluster.serviceaccount.identity.linkerd.cluster.local',
            probeSpec: { failureThreshold: '3', path: '/ready', period: '3s', port: '4191', timeout: '30s' },
            selector: { matchLabels: { 'mirror.linkerd.io/exported': 'true' } },
            remoteDiscoverySelector: { matchLabels: { 'mirror.linkerd.io/exported': 'remote-discovery' } },
            federatedServiceSelector: { matchLabels: { 'mirror.linkerd.io/federated': 'member' } },
            excludedAnnotations: ['example.com/*'],
            excludedLabels: ['team'],
            ...spec,
        },
        ...extra,
    };
}

function parsed(obj: unknown): Link {
    const result = parseLink(obj);
    if ('error' in result) assert.fail(`unexpected parse error: ${result.error}`);
    return result.link;
}

function parseError(obj: unknown): string {
    const result = parseLink(obj);
    if (!('error' in result)) assert.fail('expected a parse error');
    return result.error;
}

describe('parseLink', () => {
    it('reads a v1alpha3 Link as Linkerd writes it, with its gateway and probe in usable form', () => {
        const link = parsed(linkerdLink());
        assert.equal(link.metadata.name, 'east');
        assert.equal(link.metadata.namespace, 'linkerd-multicluster');
        assert.equal(link.metadata.resourceVersion, '42');
        assert.equal(link.spec.targetClusterName, 'east');
        assert.deepEqual(link.spec.selector, { matchLabels: { 'mirror.linkerd.io/exported': 'true' } });
        assert.deepEqual(link.spec.excludedAnnotations, ['example.com/*']);
        assert.deepEqual(link.gateway, {
            port: 4143,
            identity: 'linkerd-gateway.linkerd-multicluster.serviceaccount.identity.linkerd.cluster.local',
        });
        assert.deepEqual(link.probe, { path: '/ready', port: 4191, periodMs: 3000, timeoutMs: 30_000, failureThreshold: 3 });
    });

    it('reads a v1alpha1 Link, which has no federated selector, exclusions or status', () => {
        const old = linkerdLink({ federatedServiceSelector: undefined, excludedAnnotations: undefined, excludedLabels: undefined });
        old.apiVersion = 'multicluster.linkerd.io/v1alpha1';
        const spec = old.spec as Record<string, unknown>;
        delete spec.federatedServiceSelector;
        delete spec.excludedAnnotations;
        delete spec.excludedLabels;
        spec.probeSpec = { path: '/ready', port: '4191', period: '3' };
        const link = parsed(old);
        assert.equal(link.apiVersion, 'multicluster.linkerd.io/v1alpha1');
        assert.deepEqual(link.spec.excludedLabels, []);
        assert.deepEqual(link.spec.excludedAnnotations, []);
        assert.equal(link.spec.federatedServiceSelector, undefined);
        assert.deepEqual(link.probe, { path: '/ready', port: 4191, periodMs: 3000, timeoutMs: 30_000, failureThreshold: 3 });
        assert.deepEqual(link.status, {});
    });

    it('gives a Link whose gatewayAddress names anything a gateway, and one of only commas and spaces none', () => {
        for (const gatewayAddress of ['192.0.2.1, a1b2.elb.us-east-1.amazonaws.com,,2001:db8::1', 'not a name', ' x ']) {
            assert.notEqual(parsed(linkerdLink({ gatewayAddress })).gateway, null, gatewayAddress);
        }
        for (const gatewayAddress of [' , ', ',', '\t', '']) assert.equal(parsed(linkerdLink({ gatewayAddress })).gateway, null, JSON.stringify(gatewayAddress));
    });

    it('gives a Link without gatewayAddress no gateway, whatever its port says', () => {
        const link = parsed(linkerdLink({ gatewayAddress: '', gatewayPort: '', probeSpec: {} }));
        assert.equal(link.gateway, null);
        assert.equal(link.probe, null);
    });

    it('refuses a gateway port that is not a port number', () => {
        assert.match(parseError(linkerdLink({ gatewayPort: 'http' })), /gatewayPort "http"/);
        assert.match(parseError(linkerdLink({ gatewayPort: '70000' })), /gatewayPort "70000"/);
        assert.match(parseError(linkerdLink({ gatewayPort: '' })), /gatewayPort ""/);
    });

    it('refuses a probe whose period, timeout or threshold cannot be used', () => {
        const probe = { path: '/ready', port: '4191' };
        assert.match(parseError(linkerdLink({ probeSpec: { ...probe, period: 'soon' } })), /probeSpec.period "soon"/);
        assert.match(parseError(linkerdLink({ probeSpec: { ...probe, timeout: '0s' } })), /probeSpec.timeout "0s"/);
        assert.match(parseError(linkerdLink({ probeSpec: { ...probe, failureThreshold: '0' } })), /failureThreshold "0"/);
        assert.match(parseError(linkerdLink({ probeSpec: { ...probe, port: 'x' } })), /probeSpec.port "x"/);
    });

    it('defaults an empty probe period to Linkerd’s 3s and keeps the CRD defaults for timeout and threshold', () => {
        const link = parsed(linkerdLink({ probeSpec: { path: '/ready', port: '4191' } }));
        assert.deepEqual(link.probe, { path: '/ready', port: 4191, periodMs: 3000, timeoutMs: 30_000, failureThreshold: 3 });
    });

    it('refuses objects that are not Links or lack a name', () => {
        assert.match(parseError({ ...linkerdLink(), kind: 'Service' }), /kind/);
        assert.match(parseError({ ...linkerdLink(), apiVersion: 'v1' }), /group multicluster.linkerd.io/);
        assert.match(parseError({ ...linkerdLink(), metadata: { namespace: 'x' } }), /metadata.name/);
        assert.match(parseError(null), /root/);
    });

    it('refuses a matchLabels value that is not a string, naming the field', () => {
        const error = parseError(linkerdLink({ selector: { matchLabels: { 'mirror.linkerd.io/exported': true } } }));
        assert.match(error, /spec.selector.matchLabels.mirror.linkerd.io\/exported/);
    });

    it('accepts an invalid selector with a warning, since it only selects nothing', () => {
        const result = parseLink(linkerdLink({ selector: { matchExpressions: [{ key: 'env', operator: 'In', values: [] }] } }));
        assert.ok('link' in result);
        assert.equal(result.warnings.length, 1);
        assert.match(result.warnings[0] ?? '', /spec.selector is invalid/);
    });

    it('reads the gateway resolution status and ignores a malformed status instead of failing', () => {
        const resolution = {
            name: 'a1b2.elb.us-east-1.amazonaws.com',
            addresses: ['192.0.2.10', '192.0.2.11'],
            ttlSeconds: 60,
            resolvedAt: '2026-01-01T00:00:00Z',
            nextRefreshAt: '2026-01-01T00:01:00Z',
        };
        const link = parsed(linkerdLink({}, { status: { gatewayResolution: [resolution] } }));
        assert.deepEqual(link.status.gatewayResolution, [resolution]);
        assert.deepEqual(parsed(linkerdLink({}, { status: { mirrorServices: 'nope' } })).status, {});
    });
});
