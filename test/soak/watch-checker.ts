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
import { MIRROR_SLICE_MANAGED_BY, MIRRORED_SERVICE_LABEL } from '../../src/servicemirror/mirror.js';
import type { LoggedQuery } from '../../src/testing/dns-server.js';
import { validateEndpointSlice } from '../oracle/endpointslice-validation.js';
import { APP_NS, DNS, GATEWAY_NAME, LINK, type SoakEnv } from './env.js';
import type { History } from './history.js';

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

/**
 * (3) No mirror emptied while its gateway name has a last good answer within the stale window.
 * The service mirror counts the window from when the last good answer expired (its TTL,
 * clamped to the DNS policy); a new leader counts it from the Link status's record of that
 * answer, which may be older by the record interval (window/4) and is written in whole seconds.
 * So an emptying at `at` is a violation when the last good A answer the DNS server gave before
 * `at` (its own log) is younger than TTL + window, less that record slack when the
 * service-mirror lease changed hands since the answer. Emptyings explained otherwise: the
 * remote Service's export changed (or it was created or deleted) within 30 s, or the remote
 * apiserver was down within the window (a Link that cannot be served is withdrawn after it).
 */
export function judgeEmptiedMirrors(
    emptied: readonly EmptiedMirror[],
    queries: readonly LoggedQuery[],
    leaderChanges: readonly number[],
    history: History,
): EmptyingJudgement {
    const explained: Record<string, number> = {};
    const explain = (reason: string) => (explained[reason] = (explained[reason] ?? 0) + 1);
    const good = queries.filter((q) => q.name === GATEWAY_NAME && q.type === 'A' && q.answers > 0);
    for (const e of emptied) {
        const remote = e.mirror.endsWith(`-${LINK}`) ? e.mirror.slice(0, -LINK.length - 1) : e.mirror;
        if (history.exportChangedWithin(remote, e.at - EXPORT_CHANGE_GRACE_MS, e.at)) {
            explain('export changed');
            continue;
        }
        if (history.remoteDownWithin(e.at - DNS.staleWindowMs - EXPORT_CHANGE_GRACE_MS, e.at)) {
            explain('remote apiserver restarted');
            continue;
        }
        const last = good.filter((q) => q.at <= e.at).at(-1);
        if (!last) {
            explain('gateway never answered');
            continue;
        }
        const ttlMs = Math.min(Math.max((last.ttl ?? 0) * 1000, DNS.minTtlMs), DNS.maxTtlMs);
        const failover = leaderChanges.some((t) => t > last.at && t <= e.at);
        const recordSlack = failover ? DNS.staleWindowMs / 4 + 1000 : 0;
        const earliest = last.at + ttlMs + DNS.staleWindowMs - recordSlack - OBSERVATION_MARGIN_MS;
        if (e.at >= earliest) {
            explain('stale window over');
            continue;
        }
        history.violation(
            'mirror-kept',
            `${APP_NS}/${e.mirror} ${e.how} at ${iso(e.at)}, but ${GATEWAY_NAME} answered at ${iso(last.at)} (TTL ${last.ttl} s${failover ? ', leader changed since' : ''}): not before ${iso(earliest)}`,
            e.at,
        );
    }
    return { explained };
}

function iso(ms: number): string {
    return new Date(ms).toISOString();
}
