// The ExternalWorkload conversion webhook as one piece the manager runs on every replica:
// its certificate source and its HTTPS server. /readyz waits for it to serve with a valid
// certificate.
import type { Registry } from 'prom-client';
import { convertWorkload } from '../externalworkloads/conversion.js';
import type { Logger } from '../kube/log.js';
import type { ReplicaService } from '../kube/manager.js';
import type { KubeRest } from '../kube/rest.js';
import { WebhookCertificates, type CertificateSource } from './certificates.js';
import type { WebhookService } from './crd-conversion.js';
import { WebhookServer } from './server.js';

export const WORKLOAD_CRD_NAME = 'externalworkloads.workload.linkerd.io';

export interface ConversionWebhookOptions {
    rest: KubeRest;
    logger: Logger;
    registry: Registry;
    /** The controller's namespace (where a Secret source lives). */
    namespace: string;
    /** HOST:PORT to serve HTTPS on. */
    addr: string;
    source: CertificateSource;
    /** Keep this CRD's caBundle in sync; undefined leaves the CRD alone. */
    crdName?: string;
    /** Point the CRD's conversion at this Service (with crdName). */
    service?: WebhookService;
    checkIntervalMs: number;
}

export class ConversionWebhook implements ReplicaService {
    readonly name = 'conversion-webhook';
    private readonly server: WebhookServer;
    private readonly certificates: WebhookCertificates;
    /** Resolves once the first certificate is served (or the webhook stopped before). */
    certificatesReady: Promise<void> = Promise.resolve();

    constructor(opts: ConversionWebhookOptions) {
        const logger = opts.logger.child({ component: this.name });
        this.server = new WebhookServer({ addr: opts.addr, registry: opts.registry, logger, convert: convertWorkload });
        this.certificates = new WebhookCertificates({
            rest: opts.rest,
            namespace: opts.namespace,
            source: opts.source,
            crdName: opts.crdName,
            service: opts.service,
            checkIntervalMs: opts.checkIntervalMs,
            logger,
            onCertificate: (serving) => this.server.setCertificate(serving),
        });
    }

    /**
     * Binds the port now (a bad --webhook-addr stops the process); the certificate comes in
     * the background, retried, so a Secret or CRD problem never holds up the controller:
     * /readyz says so until it is solved.
     */
    async start(): Promise<void> {
        await this.server.start();
        this.certificatesReady = this.certificates.start();
    }

    ready(): boolean {
        return this.server.serving() && this.certificates.valid();
    }

    async stop(): Promise<void> {
        await this.certificates.stop();
        await this.server.stop();
    }
}
