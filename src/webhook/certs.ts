// The webhook's self-signed CA and serving certificate, and what we read back from them.
//
// Node 20 can parse and verify X.509 (crypto.X509Certificate) but not issue it. Keys are
// made by node:crypto (native RSA); node-forge only assembles and signs the certificates.
// node-forge was chosen over @peculiar/x509 (which needs a global reflect-metadata
// polyfill through tsyringe, and some twenty packages) and selfsigned (a wrapper around
// either): it has no dependencies, is pure JavaScript, and has a long record of security
// releases. RSA 2048 with SHA-256 is what every apiserver accepts.
import { createPrivateKey, generateKeyPair, randomBytes, X509Certificate } from 'node:crypto';
import { promisify } from 'node:util';
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';
import type forge from 'node-forge';

type Forge = typeof forge;

/** PEM text of a certificate (possibly followed by others) and its private key. */
export interface KeyPair {
    cert: string;
    key: string;
}

/** What the webhook serves with, and the CA bundle the apiserver must trust for it. */
export interface ServingBundle {
    /** The serving certificate and its key. */
    serving: KeyPair;
    /** The CA that signed `serving` (key included when we keep it ourselves). */
    ca: { cert: string; key?: string };
    /** PEM the apiserver trusts: the signing CA, then a previous CA still valid during a CA rollover. */
    caBundle: string;
}

const CA_COMMON_NAME = 'mesh-endpoints-webhook-ca';

const generateRsa = promisify(generateKeyPair);

/** node-forge is loaded when a certificate is made, not at start: most processes never make one, and loading it costs each of them about 9 MB (docs/benchmarks.md). */
async function loadForge(): Promise<Forge> {
    return (await import('node-forge')).default;
}

/** Off the event loop: a 2048-bit key takes 50–500 ms, which must not stall serving or the Lease. */
async function newKey(forge: Forge): Promise<{ forgeKey: forge.pki.rsa.PrivateKey; forgePublic: forge.pki.rsa.PublicKey; pem: string }> {
    const { privateKey, publicKey } = await generateRsa('rsa', { modulusLength: 2048 });
    const pem = privateKey.export({ type: 'pkcs8', format: 'pem' }) as string;
    return {
        pem,
        forgeKey: forge.pki.privateKeyFromPem(pem),
        forgePublic: forge.pki.publicKeyFromPem(publicKey.export({ type: 'spki', format: 'pem' }) as string),
    };
}

function serial(): string {
    // Positive (high bit clear) and unique enough that two replicas never collide.
    const bytes = randomBytes(16);
    bytes[0]! &= 0x7f;
    return bytes.toString('hex');
}

/** A certificate with a new key and serial, valid from `now`: the caller sets the rest and signs it. */
async function newCertificate(now: Date, validityMs: number) {
    const forge = await loadForge();
    const key = await newKey(forge);
    const cert = forge.pki.createCertificate();
    cert.publicKey = key.forgePublic;
    cert.serialNumber = serial();
    // From a little before now, for clocks a little behind ours (a minute, less for short lives).
    cert.validity.notBefore = new Date(now.getTime() - Math.min(60_000, validityMs / 10));
    return { forge, key, cert };
}

/** A self-signed CA valid from `now` for `validityMs`. */
export async function createCA(now: Date, validityMs: number): Promise<KeyPair> {
    const { forge, key, cert } = await newCertificate(now, validityMs);
    cert.validity.notAfter = new Date(now.getTime() + validityMs);
    const name = [{ name: 'commonName', value: CA_COMMON_NAME }, { name: 'organizationName', value: `mesh-endpoints ${now.toISOString()}` }];
    cert.setSubject(name);
    cert.setIssuer(name);
    cert.setExtensions([
        { name: 'basicConstraints', cA: true, pathLenConstraint: 0, critical: true },
        { name: 'keyUsage', keyCertSign: true, cRLSign: true, digitalSignature: true, critical: true },
        { name: 'subjectKeyIdentifier' },
    ]);
    cert.sign(key.forgeKey, forge.md.sha256.create());
    return { cert: certificatePem(forge, cert), key: key.pem };
}

/** A serving certificate for `hosts` (DNS names and IPs), signed by `ca`. */
export async function createServingCert(ca: KeyPair, hosts: readonly string[], now: Date, validityMs: number): Promise<KeyPair> {
    const { forge, key, cert } = await newCertificate(now, validityMs);
    const caCert = forge.pki.certificateFromPem(ca.cert);
    const caKey = forge.pki.privateKeyFromPem(ca.key);
    // Never past the CA: a leaf outliving its issuer would stop verifying first.
    cert.validity.notAfter = new Date(Math.min(now.getTime() + validityMs, caCert.validity.notAfter.getTime()));
    cert.setSubject([{ name: 'commonName', value: hosts[0] ?? 'mesh-endpoints-webhook' }]);
    cert.setIssuer(caCert.subject.attributes);
    cert.setExtensions([
        { name: 'basicConstraints', cA: false, critical: true },
        { name: 'keyUsage', digitalSignature: true, keyEncipherment: true, critical: true },
        { name: 'extKeyUsage', serverAuth: true },
        { name: 'subjectAltName', altNames: hosts.map((h) => (isIP(h) ? { type: 7, ip: h } : { type: 2, value: h })) },
        { name: 'authorityKeyIdentifier', keyIdentifier: caCert.generateSubjectKeyIdentifier().getBytes() },
    ]);
    cert.sign(caKey, forge.md.sha256.create());
    return { cert: certificatePem(forge, cert), key: key.pem };
}

/** forge writes CRLF line ends; everything else here (and kubectl) uses LF. */
function certificatePem(forge: Forge, cert: forge.pki.Certificate): string {
    return forge.pki.certificateToPem(cert).replace(/\r\n/g, '\n');
}

/** The PEM certificates in `text`, in order. */
export function splitPem(text: string): string[] {
    return text.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----\n?/g)?.map((c) => (c.endsWith('\n') ? c : `${c}\n`)) ?? [];
}

/** What the renewal decision needs to know of a certificate. */
export interface CertFacts {
    notBefore: Date;
    notAfter: Date;
    /** DNS names and IPs of its subjectAltName. */
    hosts: string[];
    isCA: boolean;
}

/** Facts of the first certificate in `pem`; undefined when it does not parse. */
export function certFacts(pem: string): CertFacts | undefined {
    try {
        const x = new X509Certificate(pem);
        const hosts = (x.subjectAltName ?? '')
            .split(', ')
            .filter(Boolean)
            .map((entry) => entry.replace(/^(DNS|IP Address):/, ''))
            .map(normaliseHost);
        return { notBefore: new Date(x.validFrom), notAfter: new Date(x.validTo), hosts, isCA: x.ca };
    } catch {
        return undefined;
    }
}

/** True when `leaf` was signed by the first certificate of `caPem`, and `key` is the leaf's key. */
export function isSignedBy(leaf: KeyPair, caPem: string): boolean {
    try {
        const cert = new X509Certificate(leaf.cert);
        return cert.verify(new X509Certificate(caPem).publicKey) && cert.checkPrivateKey(createPrivateKey(leaf.key));
    } catch {
        return false;
    }
}

/** IPv6 literals as node prints them (0:0:0:0:0:0:0:1) and as users write them (::1) compare equal. */
export function normaliseHost(host: string): string {
    return isIP(host) ? ipaddr.parse(host).toNormalizedString() : host.toLowerCase();
}
