import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { conversionPatch, parseWebhookService } from './crd-conversion.js';

const service = { namespace: 'mesh-endpoints', name: 'mesh-endpoints-external-workloads-webhook', port: 443 };
const serviceStanza = (caBundle: string) => ({
    strategy: 'Webhook',
    webhook: { conversionReviewVersions: ['v1'], clientConfig: { caBundle, service: { ...service, path: '/convert' } } },
});

describe('what the controller writes into the CRD’s conversion', () => {
    it('without a Service: leaves a CRD that does not convert through a webhook alone', () => {
        assert.deepEqual(conversionPatch(undefined, 'Q0E='), { skip: 'not-webhook' });
        assert.deepEqual(conversionPatch({ strategy: 'None' }, 'Q0E='), { skip: 'not-webhook' });
    });

    it('without a Service: writes only the caBundle of a webhook someone else configured, when it differs', () => {
        const url = { strategy: 'Webhook', webhook: { conversionReviewVersions: ['v1'], clientConfig: { url: 'https://127.0.0.1:9443/convert' } } };
        assert.deepEqual(conversionPatch(url, 'Q0E='), { patch: { spec: { conversion: { webhook: { clientConfig: { caBundle: 'Q0E=' } } } } } });
        const synced = { ...url, webhook: { ...url.webhook, clientConfig: { ...url.webhook.clientConfig, caBundle: 'Q0E=' } } };
        assert.deepEqual(conversionPatch(synced, 'Q0E='), { skip: 'in-sync' });
    });

    it('with a Service: writes the whole stanza (removing a url) until it is in sync', () => {
        const result = conversionPatch({ strategy: 'None' }, 'Q0E=', service);
        assert.ok('patch' in result);
        assert.deepEqual(result.patch.spec.conversion, { ...serviceStanza('Q0E='), webhook: { ...serviceStanza('Q0E=').webhook, clientConfig: { ...serviceStanza('Q0E=').webhook.clientConfig, url: null } } });
        assert.deepEqual(conversionPatch(serviceStanza('Q0E='), 'Q0E=', service), { skip: 'in-sync' });
        assert.ok('patch' in conversionPatch(serviceStanza('b2xk'), 'Q0E=', service), 'a new CA');
        assert.ok('patch' in conversionPatch({ ...serviceStanza('Q0E='), webhook: { ...serviceStanza('Q0E=').webhook, clientConfig: { caBundle: 'Q0E=', service: { ...service, port: 8443, path: '/convert' } } } }, 'Q0E=', service));
    });

    it('parses NAMESPACE/NAME[:PORT]', () => {
        assert.deepEqual(parseWebhookService('mesh-endpoints/webhook'), { namespace: 'mesh-endpoints', name: 'webhook', port: 443 });
        assert.deepEqual(parseWebhookService('ns/webhook:9443'), { namespace: 'ns', name: 'webhook', port: 9443 });
        for (const bad of ['webhook', 'ns/', 'NS/webhook', 'ns/webhook:0', 'ns/webhook:99999', 'ns/a/b']) assert.equal(parseWebhookService(bad), null, bad);
    });
});
