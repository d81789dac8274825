// The ExternalWorkload conversion webhook on a real apiserver: the CRD converts through
// `clientConfig.url` on loopback, served by `mesh-endpoints external-workloads
// --webhook-addr` replicas (separate processes, killed for real), with the self-signed
// CA the replicas keep in a Secret and write into the CRD.
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { request } from 'node:https';
import { connect } from 'node:tls';
import { after, describe, it } from 'node:test';
import { parseAllDocuments } from 'yaml';
import { SAVED_WORKLOAD_IPS } from '../../src/externalworkloads/conversion.js';
import { newLogger } from '../../src/kube/log.js';
import { ApiError, isAlreadyExists } from '../../src/kube/errors.js';
import { objectPath, Secrets } from '../../src/kube/resources.js';
import { splitPem } from '../../src/webhook/certs.js';
import { ConversionWebhook, WORKLOAD_CRD_NAME } from '../../src/webhook/conversion-webhook.js';
import { freePort } from '../../src/testing/cluster.js';
import { installCrds } from '../../src/testing/crds.js';
import { eventually, setUp, startTestCluster } from '../../src/testing/harness.js';
import { Registry } from 'prom-client';
import { ControllerProcess } from './process-support.js';

const cluster = await startTestCluster('webhook');
await setUp('the CRDs', () => installCrds(cluster.admin));
const ns = await setUp('a namespace', () => cluster.namespace());
const controllerNs = await setUp('a namespace', () => cluster.namespace('system'));
const SECRET = 'mesh-endpoints-conversion-webhook-cert';
const CRD = `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${WORKLOAD_CRD_NAME}`;

type Version = 'v1alpha1' | 'v1beta1';
interface Workload {
    apiVersion: string;
    kind: string;
    metadata: { name: string; resourceVersion?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
    spec: Record<string, unknown>;
}
const path = (version: Version, name?: string) => `/apis/workload.linkerd.io/${version}/namespaces/${ns}/externalworkloads${name ? `/${name}` : ''}`;
const get = (version: Version, name: string) => cluster.admin.get<Workload>(path(version, name));
const tls = { identity: 'vm.ns.serviceaccount.identity.linkerd.cluster.local', serverName: 'vm.ns.svc' };

function startReplica(identity: string, webhookPort: number): ControllerProcess {
    return ControllerProcess.externalWorkloads(cluster.state.kubeconfig, controllerNs, identity, [
        '--webhook-addr', `127.0.0.1:${webhookPort}`,
        '--webhook-hosts', '127.0.0.1',
        '--webhook-check-interval', '1s',
        '--log-level', 'warn',
    ]);
}

/** The certificate a TLS server on loopback presents. */
function servedCertificate(port: number): Promise<X509Certificate> {
    return new Promise((resolve, reject) => {
        const socket = connect({ host: '127.0.0.1', port, rejectUnauthorized: false }, () => {
            const raw = socket.getPeerCertificate().raw;
            socket.end();
            resolve(new X509Certificate(raw));
        });
        socket.on('error', reject);
    });
}

async function secretData(name: string): Promise<Record<string, string>> {
    const secret = await cluster.admin.get<{ data: Record<string, string> }>(objectPath(Secrets, controllerNs, name));
    return Object.fromEntries(Object.entries(secret.data).map(([k, v]) => [k, Buffer.from(v, 'base64').toString('utf8')]));
}

async function crdCaBundle(): Promise<string> {
    const crd = await cluster.admin.get<{ spec: { conversion?: { webhook?: { clientConfig?: { caBundle?: string } } } } }>(CRD);
    return Buffer.from(crd.spec.conversion?.webhook?.clientConfig?.caBundle ?? '', 'base64').toString('utf8');
}

/** Points the CRD's conversion at a webhook on loopback, keeping the caBundle already there. */
async function convertThrough(port: number): Promise<void> {
    await cluster.admin.mergePatch(CRD, {
        spec: { conversion: { strategy: 'Webhook', webhook: { conversionReviewVersions: ['v1'], clientConfig: { url: `https://127.0.0.1:${port}/convert` } } } },
    });
}

const replicas: ControllerProcess[] = [];
// A failed test must not leave replicas behind.
after(() => {
    for (const r of replicas) r.proc.kill('SIGKILL');
});
const portA = await freePort();
const portB = await freePort();

describe('the ExternalWorkload conversion webhook', () => {
    it('without a webhook the CRD works as today: an object written as v1alpha1 loses meshTls', async () => {
        await cluster.admin.create(path('v1alpha1'), { apiVersion: 'workload.linkerd.io/v1alpha1', kind: 'ExternalWorkload', metadata: { name: 'before' }, spec: { meshTls: tls, workloadIPs: [{ ip: '192.0.2.10' }] } });
        const beta = await get('v1beta1', 'before');
        assert.equal(beta.spec.meshTLS, undefined);
        assert.deepEqual(beta.spec.workloadIPs, [{ ip: '192.0.2.10' }]);
    });

    it('two replicas started together agree on one self-signed certificate, write its CA (only) into the CRD, and report ready', async () => {
        await convertThrough(portA);
        replicas.push(startReplica('replica-a', portA), startReplica('replica-b', portB));
        await eventually('both replicas ready', async () => (await replicas[0]!.ready()) && (await replicas[1]!.ready()), 90_000);
        const data = await secretData(SECRET);
        const [servedA, servedB] = [await servedCertificate(portA), await servedCertificate(portB)];
        assert.equal(servedA.fingerprint256, servedB.fingerprint256, 'both serve the certificate of the one Secret');
        assert.equal(servedA.fingerprint256, new X509Certificate(data['tls.crt']!).fingerprint256);
        assert.ok(servedA.checkIP('127.0.0.1'));
        assert.ok(servedA.verify(new X509Certificate(data['ca.crt']!).publicKey), 'signed by the CA of the Secret');
        await eventually('the CA bundle in the CRD', async () => (await crdCaBundle()) === data['ca.crt']);
        const bundle = await crdCaBundle();
        assert.equal(splitPem(bundle).length, 1);
        assert.ok(!bundle.includes('PRIVATE KEY'), 'no key in the CRD');
    });

    it('the repository’s v1alpha1 example keeps its mesh identity when read as v1beta1', async () => {
        const example = parseAllDocuments(readFileSync('examples/nginx.yaml', 'utf8'))
            .map((d) => d.toJS() as Workload)
            .find((o) => o.kind === 'ExternalWorkload')!;
        await eventually('the apiserver to convert through the webhook', async () => {
            // A create whose answer failed to convert back may still have been stored.
            await cluster.admin.create(path('v1alpha1'), example).catch((err: unknown) => {
                if (!isAlreadyExists(err)) throw err;
            });
            return true;
        }, 60_000);
        const beta = await get('v1beta1', example.metadata.name);
        assert.deepEqual(beta.spec.meshTLS, { serverName: 'foo', identity: 'foo' });
        assert.equal(beta.spec.meshTls, undefined);
        const alpha = await get('v1alpha1', example.metadata.name);
        assert.deepEqual(alpha.spec.meshTls, { serverName: 'foo', identity: 'foo' });
        assert.deepEqual(alpha.spec.workloadIPs, [{ ip: '192.0.2.0' }]);
    });

    it('a v1beta1 workload with two IPs survives a v1alpha1 client’s read-modify-write', async () => {
        const created = await cluster.admin.create<Workload>(path('v1beta1'), {
            apiVersion: 'workload.linkerd.io/v1beta1',
            kind: 'ExternalWorkload',
            metadata: { name: 'dual', labels: { app: 'web' } },
            spec: { meshTLS: tls, workloadIPs: [{ ip: '192.0.2.1' }, { ip: '2001:db8::1' }], ports: [{ name: 'http', port: 8080, protocol: 'TCP' }] },
        });
        const alpha = await get('v1alpha1', 'dual');
        assert.deepEqual(alpha.spec.workloadIPs, [{ ip: '192.0.2.1' }], 'v1alpha1 holds one IP');
        assert.equal(alpha.metadata.annotations?.[SAVED_WORKLOAD_IPS], '[{"ip":"192.0.2.1"},{"ip":"2001:db8::1"}]');
        await cluster.admin.replace(path('v1alpha1', 'dual'), { ...alpha, metadata: { ...alpha.metadata, labels: { app: 'web', tier: 'a' } } });
        const beta = await get('v1beta1', 'dual');
        assert.deepEqual(beta.spec, created.spec, 'both IPs and the TLS block are back');
        assert.deepEqual(beta.metadata.labels, { app: 'web', tier: 'a' });
        assert.equal(beta.metadata.annotations, undefined, 'the saved list is not stored');
    });

    it('a v1alpha1 workload survives a v1beta1 client’s read-modify-write', async () => {
        const created = await cluster.admin.create<Workload>(path('v1alpha1'), {
            apiVersion: 'workload.linkerd.io/v1alpha1',
            kind: 'ExternalWorkload',
            metadata: { name: 'old', labels: { app: 'web' } },
            spec: { meshTls: tls, workloadIPs: [{ ip: '192.0.2.2' }], ports: [{ port: 80, protocol: 'TCP' }] },
        });
        const beta = await get('v1beta1', 'old');
        await cluster.admin.replace(path('v1beta1', 'old'), { ...beta, metadata: { ...beta.metadata, labels: { app: 'web', tier: 'b' } } });
        const alpha = await get('v1alpha1', 'old');
        assert.deepEqual(alpha.spec, created.spec);
        assert.deepEqual(alpha.metadata.labels, { app: 'web', tier: 'b' });
    });

    it('answers what is not the apiserver’s review (GET, another path, 17 MiB, not JSON, TLS 1.1) and goes on converting for the apiserver', async () => {
        const send = (method: string, urlPath: string, body: string, headers: Record<string, string | number> = {}) =>
            new Promise<number>((resolve, reject) => {
                const req = request({ host: '127.0.0.1', port: portA, method, path: urlPath, rejectUnauthorized: false, agent: false, headers }, (res) => (res.resume(), resolve(res.statusCode ?? 0)));
                req.on('error', reject);
                req.end(body);
            });
        const readsConvert = async (what: string) => {
            // Stored as v1beta1: each v1alpha1 read goes through the webhook.
            assert.deepEqual((await get('v1alpha1', 'old')).spec.meshTls, tls, `after ${what}`);
            assert.deepEqual((await get('v1alpha1', 'dual')).spec.workloadIPs, [{ ip: '192.0.2.1' }], `after ${what}`);
        };
        assert.equal(await send('GET', '/convert', ''), 405);
        await readsConvert('GET /convert');
        assert.equal(await send('POST', '/other', '{}'), 404);
        await readsConvert('POST /other');
        assert.equal(await send('POST', '/convert', 'x', { 'Content-Length': 17 << 20 }).catch(() => 413), 413);
        await readsConvert('a 17 MiB body');
        assert.equal(await send('POST', '/convert', '{"kind": "ConversionReview", '), 400);
        await readsConvert('a body that is not JSON');
        const tls11 = await new Promise<string>((resolve) => {
            const socket = connect({ host: '127.0.0.1', port: portA, rejectUnauthorized: false, minVersion: 'TLSv1.1', maxVersion: 'TLSv1.1', ciphers: 'DEFAULT@SECLEVEL=0' }, () => {
                resolve('connected');
                socket.end();
            });
            socket.on('error', (err) => resolve(err.message));
        });
        assert.match(tls11, /protocol version|unsupported protocol/i);
        await readsConvert('a TLS 1.1 handshake');
        assert.equal(await replicas[0]!.metric('mesh_endpoints_conversion_reviews_total{result="bad_request"}'), 1);
    });

    it('with the webhook down, a read that needs conversion fails with a clear error and nothing is lost; a new process serves again', async () => {
        const [a] = replicas;
        a!.proc.kill('SIGKILL');
        await a!.exit;
        const err = await get('v1alpha1', 'dual').then(
            () => undefined,
            (e: unknown) => e,
        );
        assert.ok(err instanceof ApiError, `expected the read to fail, got ${String(err)}`);
        assert.ok(err.code >= 500, `${err.code} ${err.message}`);
        assert.match(err.message, /conversion webhook for workload\.linkerd\.io\/v1beta1, Kind=ExternalWorkload failed/);
        // The stored version needs no conversion: readable and intact.
        const beta = await get('v1beta1', 'dual');
        assert.deepEqual(beta.spec.workloadIPs, [{ ip: '192.0.2.1' }, { ip: '2001:db8::1' }]);
        assert.deepEqual(beta.spec.meshTLS, tls);

        const restarted = startReplica('replica-a2', portA);
        replicas[0] = restarted;
        await eventually('the restarted replica ready', () => restarted.ready(), 90_000);
        assert.equal((await servedCertificate(portA)).fingerprint256, new X509Certificate((await secretData(SECRET))['tls.crt']!).fingerprint256, 'the same certificate, from the Secret');
        const alpha = await get('v1alpha1', 'dual');
        assert.deepEqual(alpha.spec.meshTls, tls);
        assert.deepEqual(alpha.spec.workloadIPs, [{ ip: '192.0.2.1' }]);
    });

    it('renews the serving certificate and rolls the CA before they expire, and conversion keeps working', async () => {
        for (const r of replicas) r.proc.kill('SIGTERM');
        assert.deepEqual(await Promise.all(replicas.map((r) => r.exit)), [0, 0], 'graceful shutdown exits 0');
        const port = await freePort();
        const SECOND = 1000;
        const webhook = new ConversionWebhook({
            rest: cluster.admin,
            logger: newLogger(process.env.TEST_LOG_LEVEL ?? 'silent'),
            registry: new Registry(),
            namespace: controllerNs,
            addr: `127.0.0.1:${port}`,
            source: {
                kind: 'self-signed',
                secretName: 'short-lived',
                hosts: ['127.0.0.1'],
                // Renewal at half of a lifetime that starts a tenth of the validity early (clock
                // slack): the serving certificate after 4.5 s, the CA after 13.5 s.
                policy: { caValidityMs: 30 * SECOND, servingValidityMs: 10 * SECOND, renewFraction: 0.5 },
            },
            crdName: WORKLOAD_CRD_NAME,
            checkIntervalMs: 1000,
        });
        try {
            await webhook.start();
            await webhook.certificatesReady;
            assert.ok(webhook.ready());
            await convertThrough(port);
            const first = await secretData('short-lived');
            await eventually('conversion through the new webhook', async () => (await get('v1alpha1', 'dual')).spec.meshTls !== undefined, 60_000);
            await eventually('a renewed serving certificate, same CA', async () => {
                const now = await secretData('short-lived');
                return now['tls.crt'] !== first['tls.crt'] && now['ca.key'] === first['ca.key'];
            }, 60_000);
            await eventually('conversion after the renewal', async () => (await get('v1alpha1', 'dual')).spec.meshTls !== undefined, 30_000);
            await eventually('a new CA, the old one still trusted beside it', async () => {
                const now = await secretData('short-lived');
                return now['ca.key'] !== first['ca.key'] && splitPem(now['ca.crt']!).length === 2 && splitPem(now['ca.crt']!)[1] === first['ca.crt'];
            }, 90_000);
            await eventually('the CRD trusting both', async () => (await crdCaBundle()) === (await secretData('short-lived'))['ca.crt'], 60_000);
            await eventually('the new certificate served', async () => (await servedCertificate(port)).fingerprint256 === new X509Certificate((await secretData('short-lived'))['tls.crt']!).fingerprint256);
            const alpha = await get('v1alpha1', 'dual');
            assert.deepEqual(alpha.spec.meshTls, tls);
        } finally {
            await webhook.stop();
        }
        assert.equal(webhook.ready(), false);
    });

    it('with --webhook-service, writes the whole conversion stanza (as the chart uses it) and the apiserver takes it', async () => {
        const webhook = new ConversionWebhook({
            rest: cluster.admin,
            logger: newLogger(process.env.TEST_LOG_LEVEL ?? 'silent'),
            registry: new Registry(),
            namespace: controllerNs,
            addr: '127.0.0.1:0',
            source: { kind: 'self-signed', secretName: 'in-cluster', hosts: ['mesh-endpoints-webhook.system.svc'] },
            crdName: WORKLOAD_CRD_NAME,
            service: { namespace: controllerNs, name: 'mesh-endpoints-webhook', port: 443 },
            checkIntervalMs: 1000,
        });
        try {
            await webhook.start();
            await webhook.certificatesReady;
            const crd = await cluster.admin.get<{ spec: { conversion: unknown } }>(CRD);
            assert.deepEqual(crd.spec.conversion, {
                strategy: 'Webhook',
                webhook: {
                    conversionReviewVersions: ['v1'],
                    clientConfig: {
                        service: { namespace: controllerNs, name: 'mesh-endpoints-webhook', path: '/convert', port: 443 },
                        caBundle: Buffer.from((await secretData('in-cluster'))['ca.crt']!).toString('base64'),
                    },
                },
            });
        } finally {
            await webhook.stop();
        }
    });
});
