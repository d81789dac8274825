// Watches the local apiserver for the whole soak (through its own watches, re-listing across
// apiserver restarts and compactions, as any client does):
// (1) every EndpointSlice version is checked with the independent validation oracle
//     (test/oracle/), and a refused one is a violation at once;
// (3) every moment a mirror stops having a ready endpoint (its slices emptied or deleted, or
//     the mirror gone) is recorded, to be judged by judgeEmptiedMirrors once the run's DNS
//     answers, export changes and lease history are all known.
import type { V1EndpointSlice, V1Service } from '@kubernetes/client-node';
import { Informer } from '../../src/kube/informer.js';
import { EndpointSlices, Services } from '../../src/kube/resources.js';
import type { KubeObject } from '../../src/kube/store.js';
import { MIRROR_SLICE_MANAGED_BY, MIRRORED_SERVICE_LABEL } from '../../src/servicemirror/api/keys.js';
import type { GatewayNameStatus } from '../../src/dns/resolution-status.js';
import type { LoggedQuery } from '../../src/testing/dns-server.js';
import { validateEndpointSlice } from '../oracle/endpointslice-validation.js';
import { APP_NS, DNS, GATEWAY_NAME, LEASES, LINK, type SoakEnv } from './env.js';
import type { History } from './history.js';
import { holderAt, type Audit } from './audit.js';
import type { Replica } from './replica.js';

type Slice = V1EndpointSlice & KubeObject;
type Service = V1Service & KubeObject;

export interface EmptiedMirror {
    mirror: string;
    at: number;
    /** Deleted, or present without a ready endpoint. */
    how: 'deleted' | 'not ready';
}

export class WatchChecker {
    private readonly slices: Informer<Slice>;
    private readonly mirrors: Informer<Service>;
    private readonly checked = new Set<string>();
    private readonly ready = new Map<string, boolean>();
    readonly emptied: EmptiedMirror[] = [];

    constructor(
        env: SoakEnv,
        private readonly history: History,
    ) {
        this.slices = new Informer<Slice>(env.local.admin, { resource: EndpointSlices, watchTimeoutSeconds: 60, inactivityMs: 90_000 });
        this.mirrors = new Informer<Service>(env.local.admin, { resource: Services, namespace: APP_NS, labelSelector: `${MIRRORED_SERVICE_LABEL}=true` });
        const slice = (s: Slice) => {
            this.validate(s);
            const service = s.metadata?.labels?.['kubernetes.io/service-name'];
            if (s.metadata?.namespace === APP_NS && service) this.mirrorChanged(service);
        };
        this.slices.on({ add: slice, update: (_, s) => slice(s), delete: slice });
        const mirror = (svc: Service) => this.mirrorChanged(svc.metadata!.name!);
        this.mirrors.on({ add: mirror, update: (_, svc) => mirror(svc), delete: mirror });
    }

    /** Slice versions the oracle has judged. */
    get slicesChecked(): number {
        return this.checked.size;
    }

    async start(): Promise<void> {
        this.slices.start();
        this.mirrors.start();
        await Promise.all([this.slices.synced, this.mirrors.synced]);
    }

    async stop(): Promise<void> {
        await Promise.all([this.slices.stop(), this.mirrors.stop()]);
    }

    private validate(slice: Slice): void {
        const version = `${slice.metadata?.uid}/${slice.metadata?.resourceVersion}`;
        if (this.checked.has(version)) return;
        this.checked.add(version);
        const errors = validateEndpointSlice(slice);
        if (errors.length > 0) this.history.violation('valid-slices', `${slice.metadata?.namespace}/${slice.metadata?.name}: ${errors.join('; ')}`);
    }

    private mirrorChanged(name: string): void {
        const exists = this.mirrors.store.get(APP_NS, name) !== undefined;
        const ready =
            exists &&
            this.slices.store
                .list()
                .some(
                    (s) =>
                        s.metadata?.namespace === APP_NS &&
                        s.metadata.labels?.['kubernetes.io/service-name'] === name &&
                        s.metadata.labels?.['endpointslice.kubernetes.io/managed-by'] === MIRROR_SLICE_MANAGED_BY &&
                        (s.endpoints ?? []).some((e) => e.conditions?.ready === true),
                );
        if (this.ready.get(name) === true && !ready) this.emptied.push({ mirror: name, at: Date.now(), how: exists ? 'not ready' : 'deleted' });
        this.ready.set(name, ready);
    }
}

/** An emptying this long after an export change of its remote Service is put down to that change. */
export const EXPORT_CHANGE_GRACE_MS = 30_000;
/** Timers and the watch's delivery: the flip is seen a little after the controller decides it. */
const OBSERVATION_MARGIN_MS = 500;

export interface EmptyingJudgement {
    /** Emptyings explained, by reason. */
    explained: Record<string, number>;
}

const clampTtlMs = (ttlSeconds: number | undefined) => Math.min(Math.max((ttlSeconds ?? 0) * 1000, DNS.minTtlMs), DNS.maxTtlMs);

/** When a record of the name lets its IPv4 addresses go not ready: the window after they went stale. */
function recordedReadyUntil(record: GatewayNameStatus | undefined): number {
    if (!record || !record.addresses.some((a) => !a.includes(':')) || record.resolvedAt === undefined) return -Infinity;
    const staleSince = record.staleSince?.IPv4 === undefined ? Infinity : Date.parse(record.staleSince.IPv4);
    return Math.min(staleSince, Date.parse(record.resolvedAt) + clampTtlMs(record.ttlSeconds)) + DNS.staleWindowMs;
}

/**
 * (3) No mirror emptied while its gateway name has a last good answer within the stale window.
 * Only the service mirror's leader resolves the name, and a new leader learns earlier answers
 * from the Link status record alone, so "the last good answer" is the newest of: the record
 * (as the audit log shows each status write left it) and the answers the DNS server gave the
 * replica that wrote the emptying, in this process's life, while it held the lease. The mirror
 * must stay ready until that answer's TTL (clamped to the DNS policy) plus the stale window;
 * an emptying earlier than that (less 0.5 s for timers and the watch) is a violation. Emptyings
 * explained otherwise: the remote Service's export changed (or it was created or deleted)
 * within 30 s, the driver removed the Link within 30 s, or the remote apiserver was down within
 * the window (a Link that cannot be served is withdrawn after it). A deleted mirror is explained
 * only by an export change or the Link's removal.
 */
export function judgeEmptiedMirrors(
    emptied: readonly EmptiedMirror[],
    queries: readonly LoggedQuery[],
    audit: Audit,
    replicas: readonly Replica[],
    history: History,
): EmptyingJudgement {
    const explained: Record<string, number> = {};
    const explain = (reason: string) => (explained[reason] = (explained[reason] ?? 0) + 1);
    const good = queries.filter((q) => q.name === GATEWAY_NAME && q.type === 'A' && q.answers > 0);
    const lease = audit.leaseWrites.get(LEASES['service-mirror']) ?? [];
    const mirrorReplicas = new Map(replicas.filter((r) => r.command === 'service-mirror').map((r) => [r.name, r]));
    for (const seen of emptied) {
        const e = whenWritten(seen, audit, mirrorReplicas);
        const remote = e.mirror.endsWith(`-${LINK}`) ? e.mirror.slice(0, -LINK.length - 1) : e.mirror;
        if (history.exportChangedWithin(remote, e.at - EXPORT_CHANGE_GRACE_MS, e.at)) {
            explain('export changed');
            continue;
        }
        if (history.linkDownWithin(e.at - EXPORT_CHANGE_GRACE_MS, e.at)) {
            explain('Link removed');
            continue;
        }
        if (e.how === 'deleted') {
            history.violation('mirror-kept', `${APP_NS}/${e.mirror} deleted at ${iso(e.at)} although its remote Service stayed exported`, e.at);
            continue;
        }
        if (history.remoteDownWithin(e.at - DNS.staleWindowMs - EXPORT_CHANGE_GRACE_MS, e.at)) {
            explain('remote apiserver restarted');
            continue;
        }
        const atUs = e.at * 1000;
        const writer = e.writer;
        const processStart = mirrorReplicas.get(writer)?.startedAt.filter((t) => t <= e.at).at(-1) ?? Infinity;
        const own = good.filter((q) => q.at >= processStart && q.at <= e.at && holderAt(lease, q.at * 1000) === writer).at(-1);
        const record = audit.linkStatus.filter((r) => r.completedUs <= atUs).at(-1)?.gatewayResolution.find((g) => g.name === GATEWAY_NAME);
        const ownUntil = own ? own.at + clampTtlMs(own.ttl) + DNS.staleWindowMs : -Infinity;
        const readyUntil = Math.max(ownUntil, recordedReadyUntil(record));
        if (readyUntil === -Infinity) {
            explain('gateway never answered');
            continue;
        }
        if (e.at >= readyUntil - OBSERVATION_MARGIN_MS) {
            explain('stale window over');
            continue;
        }
        const knew = ownUntil >= recordedReadyUntil(record) ? `${writer} itself got an answer at ${iso(own!.at)} (TTL ${own!.ttl} s)` : `the Link status recorded ${JSON.stringify(record)}`;
        history.violation('mirror-kept', `${APP_NS}/${e.mirror} not ready at ${iso(e.at)} (written by ${writer || 'no replica'}), but ${knew}: ready until ${iso(readyUntil)}`, e.at);
    }
    return { explained };
}

/**
 * The emptying as the apiserver made it: at the last successful write by a service-mirror
 * replica to the mirror or its slices before the checker saw it, and by whom. The checker's
 * own watch can notice it seconds late (a relist after an apiserver restart delivers the
 * slices' deletions before the mirror's), and an emptying judged at the moment it was noticed
 * misses the export change that explains it.
 */
function whenWritten(seen: EmptiedMirror, audit: Audit, mirrorReplicas: ReadonlyMap<string, Replica>): EmptiedMirror & { writer: string } {
    const seenUs = seen.at * 1000;
    const cause = audit.writes
        .filter(
            (w) =>
                mirrorReplicas.has(w.replica) &&
                w.code < 300 &&
                w.namespace === APP_NS &&
                w.receivedUs <= seenUs &&
                ((w.resource === 'services' && w.name === seen.mirror) || (w.resource === 'endpointslices' && w.name.startsWith(`${seen.mirror}-`))),
        )
        .at(-1);
    if (!cause) return { ...seen, writer: '' };
    const deleted = cause.resource === 'services' && cause.what.startsWith('delete');
    return { mirror: seen.mirror, at: cause.receivedUs / 1000, how: deleted ? 'deleted' : seen.how, writer: cause.replica };
}

function iso(ms: number): string {
    return new Date(ms).toISOString();
}
