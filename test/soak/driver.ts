// The soak's driver: random changes to what the controllers read. Local ExternalWorkloads and
// the Services selecting them; remote Services and their export label; the DNS answers of the
// gateway name. MCS: local Services of the remote ones' names (ports that conflict with theirs
// at times), ServiceExports beside local and remote Services and their removal, a Service
// deleted under its export; and, rarely and for a few seconds, the Link removed and created
// again. It keeps a rough model only to choose sensible actions: the cluster is the truth (the
// final check reads it), and a failed write (an apiserver restarting) is counted.
import { collectionPath, EndpointSlices, ExternalWorkloads, Links, objectPath, Services } from '../../src/kube/resources.js';
import type { KubeRest } from '../../src/kube/rest.js';
import { isAlreadyExists, isNotFound } from '../../src/kube/errors.js';
import type { TestRecord } from '../../src/testing/dns-server.js';
import { EXPORTED } from '../integration/mirror-support.js';
import { APP_NS, EW_NS, GATEWAY_NAME, LINK, linkBody, SYSTEM_NS, type SoakEnv } from './env.js';
import { LOCAL_PORTS, LOCAL_SLICE_PORTS, ServiceExportType, UPSTREAM_MANAGED_BY } from './mcs.js';
import type { History } from './history.js';
import type { Random } from './random.js';

const APPS = ['a', 'b', 'c'];
const SERVICE_PORTS = [
    [{ name: 'http', port: 80, targetPort: 'http' }],
    [{ name: 'http', port: 80, targetPort: 'http' }, { name: 'admin', port: 9090, targetPort: 'admin' }],
    [{ name: 'web', port: 8080, targetPort: 8080 }],
];
const REMOTE_PORTS = [[{ name: 'http', port: 80 }], [{ name: 'http', port: 80 }, { name: 'grpc', port: 9000 }], [{ name: 'tcp', port: 5432 }]];
const MAX_WORKLOADS = 14;
const MAX_SERVICES = 4;
const MAX_REMOTE = 4;
/** DNS outages come in this share of the steps; the rest change the answer. */
const OUTAGE_CHANCE = 0.3;
/** Local Services in the app namespace (MCS exporters beside the remote ones). */
const MAX_LOCAL = 4;
/** The Link is removed rarely (the first time 20-50 s in, then every 90-240 s) and briefly. */
const LINK_FIRST_MS = [20_000, 50_000] as const;
const LINK_GAP_MS = [90_000, 240_000] as const;
const LINK_DOWN_MS = [2000, 6000] as const;

interface Workload {
    app: string;
    /** Declares the admin port some Service ports target by name. */
    admin: boolean;
    ips: string[];
    ready: boolean;
}

export class Driver {
    private stopped = false;
    private readonly workloads = new Map<string, Workload>();
    private readonly services = new Set<string>();
    private readonly remotes = new Map<string, { exported: boolean }>();
    /** Local Services of the app namespace (MCS), by name. */
    private readonly locals = new Set<string>();
    /** ServiceExports, by cluster. */
    private readonly exports = { local: new Set<string>(), remote: new Set<string>() };
    private loops: Promise<void>[] = [];

    constructor(
        private readonly env: SoakEnv,
        private readonly random: Random,
        private readonly history: History,
    ) {}

    start(): void {
        this.loops = [this.objectLoop(), this.dnsLoop(), this.linkLoop()];
    }

    /** Stops changing things and leaves the gateway name answering (and the Link in place). */
    async stop(): Promise<void> {
        this.stopped = true;
        await Promise.all(this.loops);
        this.env.dns.setBehaviour(GATEWAY_NAME, 'normal');
        this.env.dns.setRecords(GATEWAY_NAME, { A: [{ address: '192.0.2.201', ttl: 2 }] });
    }

    private async sleep(ms: number): Promise<void> {
        const until = Date.now() + ms;
        while (!this.stopped && Date.now() < until) await new Promise((r) => setTimeout(r, Math.min(100, until - Date.now())));
    }

    private async objectLoop(): Promise<void> {
        while (!this.stopped) {
            const action = this.random.weighted({ workload: 6, service: 2, remote: 3, mcs: 4 });
            const kind =
                action === 'workload' ? this.workloadChange() : action === 'service' ? this.serviceChange() : action === 'remote' ? this.remoteChange() : this.mcsChange();
            try {
                await kind.run();
                this.history.change(kind.name);
            } catch (err) {
                this.history.failed(kind.name);
                if (!isNotFound(err) && !isAlreadyExists(err)) await this.sleep(500);
            }
            await this.sleep(this.random.int(150, 600));
        }
    }

    private get local(): KubeRest {
        return this.env.local.admin;
    }

    private get remote(): KubeRest {
        return this.env.remote.admin;
    }

    private ip(): string {
        return `192.0.2.${this.random.int(1, 120)}`;
    }

    private workloadChange(): { name: string; run: () => Promise<void> } {
        const names = [...this.workloads.keys()];
        const name = names.length > 0 ? this.random.pick(names) : '';
        const w = this.workloads.get(name);
        const path = objectPath(ExternalWorkloads, EW_NS, name);
        const op = names.length < 3 ? 'create' : this.random.weighted({ create: names.length < MAX_WORKLOADS ? 2 : 0, delete: 1, ready: 3, ip: 2, labels: 2 });
        switch (op) {
            case 'create': {
                const fresh = `vm-${this.random.int(1, 99)}`;
                const workload: Workload = { app: this.random.pick(APPS), admin: this.random.chance(0.5), ips: this.random.chance(0.3) ? [this.ip(), `2001:db8::${this.random.int(1, 255).toString(16)}`] : [this.ip()], ready: this.random.chance(0.8) };
                return {
                    name: 'workload-create',
                    run: async () => {
                        await this.local.create(collectionPath(ExternalWorkloads, EW_NS), workloadObject(fresh, workload)).catch((err) => {
                            if (isAlreadyExists(err)) this.workloads.set(fresh, workload);
                            throw err;
                        });
                        this.workloads.set(fresh, workload);
                        await this.setReady(fresh, workload.ready);
                    },
                };
            }
            case 'delete':
                return { name: 'workload-delete', run: () => this.forget(this.workloads, name, this.local.delete(path)).then(() => void this.workloads.delete(name)) };
            case 'ready':
                return { name: 'workload-ready-flip', run: () => this.forget(this.workloads, name, this.setReady(name, !w!.ready).then(() => void (w!.ready = !w!.ready))) };
            case 'ip': {
                const ips = [this.ip(), ...w!.ips.slice(1)];
                return { name: 'workload-ip', run: () => this.forget(this.workloads, name, this.local.mergePatch(path, { spec: { workloadIPs: ips.map((ip) => ({ ip })) } }).then(() => void (w!.ips = ips))) };
            }
            default: {
                const app = this.random.pick([...APPS, 'none']);
                return { name: 'workload-labels', run: () => this.forget(this.workloads, name, this.local.mergePatch(path, { metadata: { labels: { app } } }).then(() => void (w!.app = app))) };
            }
        }
    }

    private async setReady(name: string, ready: boolean): Promise<void> {
        await this.local.mergePatch(`${objectPath(ExternalWorkloads, EW_NS, name)}/status`, {
            status: { conditions: [{ type: 'Ready', status: ready ? 'True' : 'False', lastTransitionTime: new Date().toISOString().replace(/\.\d+Z$/, 'Z') }] },
        });
    }

    /** Runs a write of `name`; a 404 means it is gone, so the model forgets it. */
    private async forget<T>(model: Map<string, T> | Set<string>, name: string, write: Promise<unknown>): Promise<void> {
        try {
            await write;
        } catch (err) {
            if (isNotFound(err)) model.delete(name);
            throw err;
        }
    }

    private serviceChange(): { name: string; run: () => Promise<void> } {
        const names = [...this.services];
        const name = names.length > 0 ? this.random.pick(names) : '';
        const path = objectPath(Services, EW_NS, name);
        const op = names.length < 2 ? 'create' : this.random.weighted({ create: names.length < MAX_SERVICES ? 1 : 0, delete: 1, selector: 2, ports: 2 });
        if (op === 'create') {
            const fresh = `svc-${this.random.int(1, 9)}`;
            const dual = this.random.chance(0.3);
            const body = {
                apiVersion: 'v1',
                kind: 'Service',
                metadata: { name: fresh },
                spec: { selector: { app: this.random.pick(APPS) }, ports: this.random.pick(SERVICE_PORTS), ...(dual ? { ipFamilyPolicy: 'PreferDualStack' } : {}) },
            };
            return {
                name: 'service-create',
                run: async () => {
                    await this.local.create(collectionPath(Services, EW_NS), body).catch((err) => {
                        if (isAlreadyExists(err)) this.services.add(fresh);
                        throw err;
                    });
                    this.services.add(fresh);
                },
            };
        }
        if (op === 'delete') return { name: 'service-delete', run: () => this.forget(this.services, name, this.local.delete(path)).then(() => void this.services.delete(name)) };
        if (op === 'selector') return { name: 'service-selector', run: () => this.forget(this.services, name, this.local.mergePatch(path, { spec: { selector: { app: this.random.pick(APPS) } } })) };
        return { name: 'service-ports', run: () => this.forget(this.services, name, this.local.mergePatch(path, { spec: { ports: this.random.pick(SERVICE_PORTS) } })) };
    }

    private remoteChange(): { name: string; run: () => Promise<void> } {
        const names = [...this.remotes.keys()];
        const name = names.length > 0 ? this.random.pick(names) : '';
        const path = objectPath(Services, APP_NS, name);
        const op = names.length < 2 ? 'create' : this.random.weighted({ create: names.length < MAX_REMOTE ? 1 : 0, delete: 1, export: 2, ports: 2 });
        const exportChanged = () => this.history.exportChanged(name);
        if (op === 'create') {
            const fresh = `r-${this.random.int(1, 9)}`;
            return {
                name: 'remote-create',
                run: async () => {
                    await this.createRemote(fresh);
                    this.remotes.set(fresh, { exported: true });
                    this.history.exportChanged(fresh);
                },
            };
        }
        if (op === 'delete') {
            return {
                name: 'remote-delete',
                run: async () => {
                    exportChanged();
                    await this.forget(this.remotes, name, this.remote.delete(path));
                    this.remotes.delete(name);
                    exportChanged();
                },
            };
        }
        if (op === 'export') {
            const exported = !this.remotes.get(name)!.exported;
            return {
                name: exported ? 'remote-export-on' : 'remote-export-off',
                run: async () => {
                    exportChanged();
                    await this.forget(this.remotes, name, this.remote.mergePatch(path, { metadata: { labels: { 'mirror.linkerd.io/exported': exported ? 'true' : null } } }));
                    this.remotes.get(name)!.exported = exported;
                    exportChanged();
                },
            };
        }
        return { name: 'remote-ports', run: () => this.forget(this.remotes, name, this.remote.mergePatch(path, { spec: { ports: this.random.pick(REMOTE_PORTS) } })) };
    }

    /** A remote Service with one ready endpoint (no endpoint controller runs in the test clusters). */
    private async createRemote(name: string): Promise<void> {
        await this.remote.create(collectionPath(Services, APP_NS), { apiVersion: 'v1', kind: 'Service', metadata: { name, labels: EXPORTED }, spec: { ports: this.random.pick(REMOTE_PORTS) } }).catch((err) => {
            if (!isAlreadyExists(err)) throw err;
        });
        await this.remote
            .create(collectionPath(EndpointSlices, APP_NS), {
                apiVersion: 'discovery.k8s.io/v1',
                kind: 'EndpointSlice',
                metadata: { name: `${name}-remote-endpoints`, labels: { 'kubernetes.io/service-name': name, 'endpointslice.kubernetes.io/managed-by': 'soak' } },
                addressType: 'IPv4',
                endpoints: [{ addresses: ['10.1.0.1'], conditions: { ready: true } }],
                ports: [{ name: 'http', port: 8080, protocol: 'TCP' }],
            })
            .catch((err) => {
                if (!isAlreadyExists(err)) throw err;
            });
    }

    /**
     * MCS: a local Service (of a remote one's name more often than not), its ports changed
     * (`http` 80 or 8080: a conflict with the remote's 80 at times), deleted (under its export
     * when it has one); a ServiceExport created beside a local or remote Service, or removed.
     */
    private mcsChange(): { name: string; run: () => Promise<void> } {
        const locals = [...this.locals];
        const op = this.random.weighted({
            'local-create': locals.length < MAX_LOCAL ? (locals.length < 2 ? 4 : 1) : 0,
            'local-delete': locals.length > 1 ? 1 : 0,
            'local-ports': locals.length > 0 ? 2 : 0,
            export: 3,
            unexport: this.exports.local.size + this.exports.remote.size > 0 ? 2 : 0,
        });
        const path = (name: string) => objectPath(Services, APP_NS, name);
        if (op === 'local-create') {
            const remotes = [...this.remotes.keys()].filter((n) => !this.locals.has(n));
            const fresh = remotes.length > 0 && this.random.chance(0.7) ? this.random.pick(remotes) : `r-${this.random.int(1, 9)}`;
            return { name: 'mcs-local-create', run: () => this.createLocal(fresh) };
        }
        if (op === 'local-delete') {
            const exported = locals.filter((n) => this.exports.local.has(n));
            const name = exported.length > 0 && this.random.chance(0.7) ? this.random.pick(exported) : this.random.pick(locals);
            return {
                name: this.exports.local.has(name) ? 'mcs-local-delete-under-export' : 'mcs-local-delete',
                run: async () => {
                    await this.forget(this.locals, name, this.local.delete(path(name)));
                    this.locals.delete(name);
                    await this.local.delete(objectPath(EndpointSlices, APP_NS, `${name}-upstream`)).catch((err) => {
                        if (!isNotFound(err)) throw err;
                    });
                },
            };
        }
        if (op === 'local-ports') {
            const name = this.random.pick(locals);
            const ports = this.random.pick(LOCAL_PORTS);
            return { name: 'mcs-local-ports', run: () => this.forget(this.locals, name, this.local.mergePatch(path(name), { spec: { ports } })) };
        }
        const cluster = this.random.chance(0.5) ? 'local' : 'remote';
        const exports = this.exports[cluster];
        const rest = cluster === 'local' ? this.local : this.remote;
        if (op === 'export') {
            const services = cluster === 'local' ? locals : [...this.remotes.keys()];
            const candidates = services.filter((n) => !exports.has(n));
            // More often than not a Service the other cluster exports too (the two then conflict, or agree).
            const other = this.exports[cluster === 'local' ? 'remote' : 'local'];
            const shared = candidates.filter((n) => other.has(n));
            // Now and then an export of no Service (invalid until one of its name appears).
            const name =
                shared.length > 0 && this.random.chance(0.6)
                    ? this.random.pick(shared)
                    : candidates.length > 0 && this.random.chance(0.9)
                      ? this.random.pick(candidates)
                      : `r-${this.random.int(1, 9)}`;
            return {
                name: `mcs-export-${cluster}`,
                run: async () => {
                    await rest.create(collectionPath(ServiceExportType, APP_NS), { apiVersion: 'multicluster.x-k8s.io/v1beta1', kind: 'ServiceExport', metadata: { name } }).catch((err) => {
                        if (isAlreadyExists(err)) exports.add(name);
                        throw err;
                    });
                    exports.add(name);
                },
            };
        }
        const names: ['local' | 'remote', string][] = [...[...this.exports.local].map((n) => ['local', n] as ['local', string]), ...[...this.exports.remote].map((n) => ['remote', n] as ['remote', string])];
        const [from, name] = this.random.pick(names);
        return {
            name: `mcs-unexport-${from}`,
            run: async () => {
                await this.forget(this.exports[from], name, (from === 'local' ? this.local : this.remote).delete(objectPath(ServiceExportType, APP_NS, name)));
                this.exports[from].delete(name);
            },
        };
    }

    /** A local Service with one ready endpoint in a slice as upstream's controller would write it (MCS copies those). */
    private async createLocal(name: string): Promise<void> {
        await this.local.create(collectionPath(Services, APP_NS), { apiVersion: 'v1', kind: 'Service', metadata: { name }, spec: { ports: this.random.pick(LOCAL_PORTS) } }).catch((err) => {
            if (isAlreadyExists(err)) this.locals.add(name);
            throw err;
        });
        this.locals.add(name);
        await this.local
            .create(collectionPath(EndpointSlices, APP_NS), {
                apiVersion: 'discovery.k8s.io/v1',
                kind: 'EndpointSlice',
                metadata: { name: `${name}-upstream`, labels: { 'kubernetes.io/service-name': name, 'endpointslice.kubernetes.io/managed-by': UPSTREAM_MANAGED_BY } },
                addressType: 'IPv4',
                endpoints: [{ addresses: [`10.2.0.${this.random.int(1, 200)}`], conditions: { ready: true } }],
                ports: LOCAL_SLICE_PORTS,
            })
            .catch((err) => {
                if (!isAlreadyExists(err)) throw err;
            });
    }

    /**
     * The Link removed for a few seconds, then the same Link created again (a new object: its
     * status starts empty). Each step is retried until it is done (an apiserver may be
     * restarting); the Link is always back when the loop ends.
     */
    private async linkLoop(): Promise<void> {
        const path = objectPath(Links, SYSTEM_NS, LINK);
        await this.sleep(this.random.int(...LINK_FIRST_MS));
        while (!this.stopped) {
            const down = { from: Date.now(), to: undefined as number | undefined };
            this.history.linkDown.push(down);
            await this.retry('link-remove', () => this.local.delete(path).catch((err) => {
                    if (!isNotFound(err)) throw err;
                }));
            await this.sleep(this.random.int(...LINK_DOWN_MS));
            await this.retry('link-restore', () => this.local.create(collectionPath(Links, SYSTEM_NS), linkBody()).catch((err) => {
                    if (!isAlreadyExists(err)) throw err;
                }));
            down.to = Date.now();
            await this.sleep(this.random.int(...LINK_GAP_MS));
        }
    }

    /** Until it succeeds, whether or not the driver is stopping. */
    private async retry(name: string, write: () => Promise<unknown>): Promise<void> {
        for (;;) {
            try {
                await write();
                this.history.change(name);
                return;
            } catch {
                this.history.failed(name);
                await new Promise((r) => setTimeout(r, 500));
            }
        }
    }

    /** The gateway name: a new answer (addresses, TTL) or an outage of a few to 28 s, then an answer again. */
    private async dnsLoop(): Promise<void> {
        const { dns } = this.env;
        while (!this.stopped) {
            await this.sleep(this.random.int(3000, 8000));
            if (this.stopped) break;
            if (this.random.chance(OUTAGE_CHANCE)) {
                dns.setBehaviour(GATEWAY_NAME, this.random.pick(['servfail', 'nxdomain', 'blackhole'] as const));
                this.history.change('dns-outage');
                await this.sleep(this.random.int(2000, 28_000));
                dns.setBehaviour(GATEWAY_NAME, 'normal');
            }
            const ttl = this.random.int(1, 4);
            const a: TestRecord[] = [];
            for (let i = this.random.int(1, 3); i > 0; i--) a.push({ address: `192.0.2.${this.random.int(200, 209)}`, ttl });
            const aaaa: TestRecord[] = this.random.chance(0.3) ? [{ address: `2001:db8::c${this.random.int(0, 9)}`, ttl }] : [];
            dns.setRecords(GATEWAY_NAME, { A: a, AAAA: aaaa });
            this.history.change('dns-answer');
        }
    }
}

function workloadObject(name: string, w: Workload): object {
    return {
        apiVersion: 'workload.linkerd.io/v1beta1',
        kind: 'ExternalWorkload',
        metadata: { name, labels: { app: w.app } },
        spec: {
            meshTLS: { identity: `${name}.${EW_NS}.serviceaccount.identity.linkerd.cluster.local`, serverName: name },
            workloadIPs: w.ips.map((ip) => ({ ip })),
            ports: [{ name: 'http', port: 8080 }, ...(w.admin ? [{ name: 'admin', port: 9090 }] : [])],
        },
    };
}
