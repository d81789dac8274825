// What the controller writes into the CRD's spec.conversion (pure). By default only the CA
// bundle, and only when the CRD already converts through a webhook (someone else pointed it
// at us: the chart, kubectl, a url for a controller outside the cluster). With a Service
// given (--webhook-service) the whole webhook stanza, because Helm installs CRDs from crds/
// as they are and cannot template them.
import { isDeepStrictEqual } from 'node:util';
import { CONVERT_PATH } from './server.js';

export interface CrdConversion {
    strategy?: string;
    webhook?: {
        conversionReviewVersions?: string[];
        clientConfig?: {
            caBundle?: string;
            url?: string;
            service?: { namespace: string; name: string; path?: string; port?: number };
        };
    };
}

export interface WebhookService {
    namespace: string;
    name: string;
    port: number;
}

/** "NAMESPACE/NAME[:PORT]" (port 443 when absent); null when malformed. */
export function parseWebhookService(text: string): WebhookService | null {
    const match = /^([a-z0-9]([-a-z0-9]*[a-z0-9])?)\/([a-z0-9]([-a-z0-9]*[a-z0-9])?)(?::(\d+))?$/.exec(text);
    if (!match) return null;
    const port = match[5] === undefined ? 443 : Number(match[5]);
    return port >= 1 && port <= 65535 ? { namespace: match[1]!, name: match[3]!, port } : null;
}

export type ConversionPatch = { patch: { spec: { conversion: CrdConversion } } } | { skip: 'not-webhook' | 'in-sync' };

/** The merge patch that brings `current` to what we want, or why there is none. */
export function conversionPatch(current: CrdConversion | undefined, caBundleBase64: string, service?: WebhookService): ConversionPatch {
    if (!service) {
        if (current?.strategy !== 'Webhook') return { skip: 'not-webhook' };
        if (current.webhook?.clientConfig?.caBundle === caBundleBase64) return { skip: 'in-sync' };
        return { patch: { spec: { conversion: { webhook: { clientConfig: { caBundle: caBundleBase64 } } } } } };
    }
    const wanted: CrdConversion = {
        strategy: 'Webhook',
        webhook: {
            conversionReviewVersions: ['v1'],
            clientConfig: { caBundle: caBundleBase64, service: { namespace: service.namespace, name: service.name, path: CONVERT_PATH, port: service.port } },
        },
    };
    const have = current?.webhook?.clientConfig;
    const same =
        current?.strategy === 'Webhook' &&
        have?.caBundle === caBundleBase64 &&
        have.url === undefined &&
        isDeepStrictEqual(have.service, wanted.webhook!.clientConfig!.service) &&
        isDeepStrictEqual(current.webhook?.conversionReviewVersions, ['v1']);
    if (same) return { skip: 'in-sync' };
    // url and service exclude each other; null removes a url in a merge patch.
    return { patch: { spec: { conversion: { ...wanted, webhook: { ...wanted.webhook, clientConfig: { ...wanted.webhook!.clientConfig, url: null as never } } } } } };
}
