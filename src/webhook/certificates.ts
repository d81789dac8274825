// Where the webhook's certificate comes from, kept current:
// - self-signed (the default): a CA and serving certificate in a Secret of the controller's
//   namespace, created if absent and renewed before expiry. Replicas agree through the
//   apiserver: create-if-absent and update-with-resourceVersion, and a replica that loses
//   the race (AlreadyExists, Conflict) reads and serves the winner's.
// - a Secret someone else keeps (cert-manager's Certificate: tls.crt, tls.key, ca.crt);
// - files (tls.crt, tls.key, ca.crt in a folder, e.g. a mounted Secret).
// Each check re-reads the source, hands a changed serving certificate to the server, and,
// when the CRD converts through a webhook, writes the CA bundle (never a key) into its
// spec.conversion.webhook.clientConfig.caBundle if it differs, as controller-runtime's
// cert rotation does. A later `kubectl apply` of the CRD that drops the bundle is undone
// at the next check.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from '../kube/log.js';
import type { KubeRest } from '../kube/rest.js';
import { isAlreadyExists, isConflict, isNotFound } from '../kube/errors.js';
import { collectionPath, objectPath, Secrets } from '../kube/resources.js';
import { certFacts, splitPem, type KeyPair, type ServingBundle } from './certs.js';
import { conversionPatch, type CrdConversion, type WebhookService } from './crd-conversion.js';
import { decideRenewal, DEFAULT_RENEWAL, issue, type RenewalPolicy } from './renewal.js';
import { backgroundClock, sleep, systemClock } from '../time/clock.js';

export type CertificateSource =
    | { kind: 'self-signed'; secretName: string; hosts: string[]; policy?: RenewalPolicy }
    | { kind: 'secret'; secretName: string }
    | { kind: 'files'; dir: string };

export interface WebhookCertificatesOptions {
    rest: KubeRest;
    /** The controller's namespace: where the Secret is. */
    namespace: string;
    source: CertificateSource;
    /** The CRD whose caBundle is kept in sync; undefined leaves every CRD alone. */
    crdName?: string;
    /** Point the CRD's conversion at this Service too (see crd-conversion.ts). */
    service?: WebhookService;
    /** How often the source and the CRD are checked again (a renewal due sooner comes sooner). */
    checkIntervalMs: number;
    logger: Logger;
    onCertificate: (serving: KeyPair) => void;
}

interface SecretObject {
    metadata: { name: string; namespace?: string; resourceVersion?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
    type?: string;
    data?: Record<string, string>;
}

const CRD_PATH = '/apis/apiextensions.k8s.io/v1/customresourcedefinitions';
const b64 = (text: string) => Buffer.from(text).toString('base64');
const unb64 = (text: string | undefined) => (text ? Buffer.from(text, 'base64').toString('utf8') : '');

/** The bundle a Secret holds (kubernetes.io/tls layout plus ca.crt and, when we keep it, ca.key). */
function bundleOfSecret(secret: SecretObject | undefined): ServingBundle | undefined {
    const data = secret?.data ?? {};
    if (!data['tls.crt'] || !data['tls.key']) return undefined;
    const caBundle = unb64(data['ca.crt']);
    const caKey = unb64(data['ca.key']);
    return { serving: { cert: unb64(data['tls.crt']), key: unb64(data['tls.key']) }, ca: { cert: splitPem(caBundle)[0] ?? '', key: caKey || undefined }, caBundle };
}

/**
 * The Secret holding `bundle`. Over an existing one (`current`), its labels and annotations stay:
 * the chart makes it empty for us to fill, and Helm knows it by them.
 */
function secretOfBundle(name: string, bundle: ServingBundle, current?: SecretObject): SecretObject & { apiVersion: string; kind: string } {
    const labels = { ...current?.metadata.labels, 'app.kubernetes.io/part-of': 'mesh-endpoints', 'app.kubernetes.io/component': 'conversion-webhook' };
    return {
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name, resourceVersion: current?.metadata.resourceVersion, labels, ...(current?.metadata.annotations && { annotations: current.metadata.annotations }) },
        type: 'kubernetes.io/tls',
        data: { 'tls.crt': b64(bundle.serving.cert), 'tls.key': b64(bundle.serving.key), 'ca.crt': b64(bundle.caBundle), 'ca.key': b64(bundle.ca.key ?? '') },
    };
}

export class WebhookCertificates {
    private current: ServingBundle | undefined;
    private cancelTimer: (() => void) | undefined;
    private running = false;
    private inFlight: Promise<void> | undefined;
    private crdNoticeLogged = false;

    constructor(private readonly opts: WebhookCertificatesOptions) {}

    /** The serving certificate in use is there and not expired. */
    valid(): boolean {
        const facts = this.current && certFacts(this.current.serving.cert);
        return facts !== undefined && facts.notAfter > new Date(systemClock.now());
    }

    /** The first check, retried until it succeeds (or stop()); later checks run on a timer. */
    async start(): Promise<void> {
        this.running = true;
        for (let delay = 500; ; delay = Math.min(delay * 2, 30_000)) {
            try {
                this.scheduleAfter(await this.check());
                return;
            } catch (err) {
                if (!this.running) return;
                this.opts.logger.error({ err }, 'webhook certificate not ready; retrying');
                await sleep(delay, backgroundClock);
            }
        }
    }

    async stop(): Promise<void> {
        this.running = false;
        this.cancelTimer?.();
        await this.inFlight;
    }

    private scheduleAfter(renewInMs: number | undefined): void {
        if (!this.running) return;
        const delay = Math.max(1000, Math.min(this.opts.checkIntervalMs, renewInMs ?? Infinity));
        this.cancelTimer = backgroundClock.schedule(() => {
            this.inFlight = this.check()
                .then(
                    (next) => this.scheduleAfter(next),
                    (err: Error) => {
                        this.opts.logger.error({ err }, 'webhook certificate check failed; retrying');
                        this.scheduleAfter(5000);
                    },
                )
                .finally(() => (this.inFlight = undefined));
        }, delay);
    }

    /** One round; resolves with the time until the next check is due sooner than the interval, if it is. */
    async check(): Promise<number | undefined> {
        const { bundle, renewInMs } = await this.load();
        // The CRD first: during a CA rollover the bundle holds the new CA and the old one, so
        // the apiserver trusts the new certificate before any replica serves it.
        let nextInMs = renewInMs;
        if (this.opts.crdName && bundle.caBundle) {
            // Not fatal: the webhook still serves (a CA someone else injects, or a CRD not yet
            // installed); the next check, soon, tries again.
            await this.syncCrd(this.opts.crdName, bundle.caBundle).catch((err: Error) => {
                this.opts.logger.error({ err, crd: this.opts.crdName }, 'could not write the CA bundle into the CRD');
                nextInMs = Math.min(nextInMs ?? Infinity, 5000);
            });
        }
        if (bundle.serving.cert !== this.current?.serving.cert || bundle.serving.key !== this.current?.serving.key) {
            this.opts.logger.info({ notAfter: certFacts(bundle.serving.cert)?.notAfter }, 'serving the webhook certificate');
            this.opts.onCertificate(bundle.serving);
        }
        this.current = bundle;
        return nextInMs;
    }

    private async load(): Promise<{ bundle: ServingBundle; renewInMs?: number }> {
        const source = this.opts.source;
        if (source.kind === 'files') {
            const read = (file: string) => readFile(join(source.dir, file), 'utf8');
            const [cert, key, caBundle] = await Promise.all([read('tls.crt'), read('tls.key'), read('ca.crt').catch(() => '')]);
            return { bundle: { serving: { cert, key }, ca: { cert: splitPem(caBundle)[0] ?? '' }, caBundle } };
        }
        if (source.kind === 'secret') {
            const bundle = bundleOfSecret(await this.getSecret(source.secretName));
            if (!bundle) throw new Error(`Secret ${this.opts.namespace}/${source.secretName} has no tls.crt and tls.key yet`);
            return { bundle };
        }
        return this.selfSigned(source.secretName, source.hosts, source.policy ?? DEFAULT_RENEWAL);
    }

    private async selfSigned(name: string, hosts: string[], policy: RenewalPolicy): Promise<{ bundle: ServingBundle; renewInMs?: number }> {
        const path = objectPath(Secrets, this.opts.namespace, name);
        for (let attempt = 0; attempt < 5; attempt++) {
            const secret = await this.getSecret(name);
            const stored = bundleOfSecret(secret);
            const now = new Date(systemClock.now());
            const renewal = decideRenewal(stored, hosts, now, policy);
            if (renewal.action === 'keep') return { bundle: stored!, renewInMs: renewal.renewAt.getTime() - now.getTime() };
            this.opts.logger.info({ secret: `${this.opts.namespace}/${name}`, action: renewal.action, reason: renewal.reason }, 'issuing webhook certificate');
            const fresh = await issue(stored, renewal, hosts, now, policy);
            try {
                if (secret) await this.opts.rest.replace(path, secretOfBundle(name, fresh, secret));
                else await this.opts.rest.create(collectionPath(Secrets, this.opts.namespace), secretOfBundle(name, fresh));
            } catch (err) {
                // Another replica wrote first: read and judge theirs.
                if (isAlreadyExists(err) || isConflict(err)) continue;
                throw err;
            }
        }
        throw new Error(`Secret ${this.opts.namespace}/${name} kept changing under us`);
    }

    private async getSecret(name: string): Promise<SecretObject | undefined> {
        try {
            return await this.opts.rest.get<SecretObject>(objectPath(Secrets, this.opts.namespace, name));
        } catch (err) {
            if (isNotFound(err)) return undefined;
            throw err;
        }
    }

    private async syncCrd(crdName: string, caBundle: string): Promise<void> {
        const path = `${CRD_PATH}/${crdName}`;
        const crd = await this.opts.rest.get<{ spec?: { conversion?: CrdConversion } }>(path);
        const outcome = conversionPatch(crd.spec?.conversion, b64(caBundle), this.opts.service);
        if ('skip' in outcome) {
            if (outcome.skip === 'not-webhook' && !this.crdNoticeLogged) {
                this.opts.logger.info({ crd: crdName }, 'the CRD does not convert through a webhook (spec.conversion.strategy); its caBundle is left alone');
            }
            this.crdNoticeLogged = outcome.skip === 'not-webhook';
            return;
        }
        await this.opts.rest.mergePatch(path, outcome.patch);
        this.opts.logger.info({ crd: crdName, service: this.opts.service }, 'wrote the webhook CA bundle into the CRD');
    }
}
