import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { describe, it } from 'node:test';
import { certFacts, isSignedBy, splitPem } from './certs.js';
import { decideRenewal, issue, type RenewalPolicy } from './renewal.js';

const HOUR = 3600_000;
const policy: RenewalPolicy = { caValidityMs: 300 * HOUR, servingValidityMs: 30 * HOUR, renewFraction: 1 / 3 };
const hosts = ['mesh-endpoints-webhook.mesh-endpoints.svc', '127.0.0.1', '::1'];
const t0 = new Date('2026-12-01T00:00:00Z');
const at = (hours: number) => new Date(t0.getTime() + hours * HOUR);

const first = await issue(undefined, { action: 'new-ca', reason: 'none' }, hosts, t0, policy);

describe('webhook certificates: issuing', () => {
    it('issues a CA and a serving certificate for the hosts, signed by it, that Node verifies', async () => {
        const serving = new X509Certificate(first.serving.cert);
        assert.ok(serving.checkHost('mesh-endpoints-webhook.mesh-endpoints.svc'));
        assert.ok(serving.checkIP('127.0.0.1'));
        assert.ok(serving.checkIP('::1'));
        assert.ok(isSignedBy(first.serving, first.ca.cert));
        assert.ok(certFacts(first.ca.cert)?.isCA);
        assert.equal(certFacts(first.serving.cert)?.isCA, false);
        assert.deepEqual(splitPem(first.caBundle), [first.ca.cert]);
    });
});

describe('webhook certificates: when to renew', () => {
    it('issues a CA when there is none', async () => {
        assert.equal(decideRenewal(undefined, hosts, t0, policy).action, 'new-ca');
        assert.equal(decideRenewal({ ...first, ca: { cert: first.ca.cert } }, hosts, t0, policy).action, 'new-ca');
    });

    it('keeps a fresh bundle until two thirds of the serving certificate’s life', async () => {
        const kept = decideRenewal(first, hosts, at(1), policy);
        assert.equal(kept.action, 'keep');
        const renewAt = kept.action === 'keep' ? kept.renewAt.getTime() : 0;
        assert.ok(Math.abs(renewAt - at(20).getTime()) < 2 * 60_000, `renews at ${new Date(renewAt).toISOString()}`);
        assert.equal(decideRenewal(first, hosts, at(20.1), policy).action, 'new-serving');
    });

    it('reissues the serving certificate (same CA) when a host is added', async () => {
        const renewal = decideRenewal(first, [...hosts, 'other.example'], at(1), policy);
        assert.deepEqual(renewal, { action: 'new-serving', reason: 'the serving certificate does not name other.example' });
        const next = await issue(first, renewal as Exclude<typeof renewal, { action: 'keep' }>, [...hosts, 'other.example'], at(1), policy);
        assert.equal(next.ca.cert, first.ca.cert);
        assert.equal(next.caBundle, first.caBundle);
        assert.ok(new X509Certificate(next.serving.cert).checkHost('other.example'));
    });

    it('reissues a serving certificate that another CA signed or whose key does not match', async () => {
        const other = await issue(undefined, { action: 'new-ca', reason: 'none' }, hosts, t0, policy);
        assert.equal(decideRenewal({ ...first, serving: other.serving }, hosts, at(1), policy).action, 'new-serving');
        assert.equal(decideRenewal({ ...first, serving: { cert: first.serving.cert, key: other.serving.key } }, hosts, at(1), policy).action, 'new-serving');
    });

    it('rolls the CA at two thirds of its life, keeping the old CA in the bundle while it is valid', async () => {
        const renewal = decideRenewal(first, hosts, at(201), policy);
        assert.equal(renewal.action, 'new-ca');
        const next = await issue(first, renewal as Exclude<typeof renewal, { action: 'keep' }>, hosts, at(201), policy);
        assert.notEqual(next.ca.cert, first.ca.cert);
        assert.deepEqual(splitPem(next.caBundle), [next.ca.cert, first.ca.cert]);
        assert.ok(isSignedBy(next.serving, next.ca.cert));
        // After the old CA expires, the next reissue drops it.
        const later = await issue(next, { action: 'new-serving', reason: 'test' }, hosts, at(301), policy);
        assert.deepEqual(splitPem(later.caBundle), [next.ca.cert]);
    });

    it('never issues a serving certificate that outlives its CA', async () => {
        const shortCA = await issue(undefined, { action: 'new-ca', reason: 'none' }, hosts, t0, { ...policy, caValidityMs: 10 * HOUR });
        assert.ok(certFacts(shortCA.serving.cert)!.notAfter <= certFacts(shortCA.ca.cert)!.notAfter);
    });
});
