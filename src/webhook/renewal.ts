// When the self-signed CA and serving certificate must be issued anew (controller-runtime's
// cert rotation rules: renew well before expiry, reissue when the hosts or the CA no longer
// match), and how a new bundle is issued. The clock is an argument; issuing only makes keys.
import { certFacts, createCA, createServingCert, isSignedBy, normaliseHost, splitPem, type ServingBundle } from './certs.js';

export interface RenewalPolicy {
    caValidityMs: number;
    servingValidityMs: number;
    /** Renew once less than this fraction of a certificate's lifetime remains (1/3: at two thirds of its life). */
    renewFraction: number;
}

const DAY = 24 * 3600 * 1000;
export const DEFAULT_RENEWAL: RenewalPolicy = { caValidityMs: 10 * 365 * DAY, servingValidityMs: 365 * DAY, renewFraction: 1 / 3 };

export type Renewal =
    | { action: 'keep'; renewAt: Date }
    | { action: 'new-serving'; reason: string }
    | { action: 'new-ca'; reason: string };

function renewPoint(notBefore: Date, notAfter: Date, policy: RenewalPolicy): Date {
    const life = notAfter.getTime() - notBefore.getTime();
    return new Date(notAfter.getTime() - life * policy.renewFraction);
}

/** What to do with the bundle found in the Secret (undefined: none there). */
export function decideRenewal(stored: ServingBundle | undefined, hosts: readonly string[], now: Date, policy: RenewalPolicy): Renewal {
    if (!stored?.ca.key) return { action: 'new-ca', reason: 'no CA yet' };
    const ca = certFacts(stored.ca.cert);
    if (!ca?.isCA) return { action: 'new-ca', reason: 'the stored CA does not parse as a CA certificate' };
    const caRenewAt = renewPoint(ca.notBefore, ca.notAfter, policy);
    if (now >= caRenewAt) return { action: 'new-ca', reason: `the CA expires at ${ca.notAfter.toISOString()}` };
    const serving = certFacts(stored.serving.cert);
    if (!serving) return { action: 'new-serving', reason: 'the serving certificate does not parse' };
    if (!isSignedBy(stored.serving, stored.ca.cert)) return { action: 'new-serving', reason: 'the serving certificate is not signed by the CA or does not match its key' };
    const missing = hosts.map(normaliseHost).filter((h) => !serving.hosts.includes(h));
    if (missing.length) return { action: 'new-serving', reason: `the serving certificate does not name ${missing.join(', ')}` };
    const servingRenewAt = renewPoint(serving.notBefore, serving.notAfter, policy);
    if (now >= servingRenewAt) return { action: 'new-serving', reason: `the serving certificate expires at ${serving.notAfter.toISOString()}` };
    return { action: 'keep', renewAt: new Date(Math.min(caRenewAt.getTime(), servingRenewAt.getTime())) };
}

/**
 * Issues what `renewal` asks for. A new CA is put first in the bundle and the previous one
 * stays behind it until it expires, so replicas still serving a certificate of the old CA
 * are trusted while they catch up.
 */
export async function issue(
    stored: ServingBundle | undefined,
    renewal: Exclude<Renewal, { action: 'keep' }>,
    hosts: readonly string[],
    now: Date,
    policy: RenewalPolicy,
): Promise<ServingBundle> {
    const stillValid = (pem: string) => (certFacts(pem)?.notAfter ?? now) > now;
    const previous = stored ? splitPem(stored.caBundle).filter(stillValid) : [];
    if (renewal.action === 'new-ca' || !stored?.ca.key) {
        const ca = await createCA(now, policy.caValidityMs);
        return { ca, caBundle: [ca.cert, ...previous.slice(0, 1)].join(''), serving: await createServingCert(ca, hosts, now, policy.servingValidityMs) };
    }
    const ca = { cert: stored.ca.cert, key: stored.ca.key };
    return { ca, caBundle: previous.join('') || ca.cert, serving: await createServingCert(ca, hosts, now, policy.servingValidityMs) };
}
