// The local apiserver's audit log (Metadata for every write by a replica; the whole body of
// every Lease write and Link status write), read once the run is over: each request's receive
// and completion time on the apiserver's one clock, in microseconds; the holder each successful
// Lease write left; the gateway record each status write left. No clock of ours is compared
// with the apiserver's.
//
// (2) No write by a replica outside its lease term. A replica's term, as the apiserver saw it:
// from a successful Lease write of its own naming it holder (received at r) until
// r + leaseDuration, ended early by a successful Lease write of another replica (another holder
// took it) or its own release. A write is in term when the apiserver received it inside one.
// The tolerance is leaseDuration - renewDeadline (2 s here): a replica stops writing
// renewDeadline after it *began* its last successful renew, before the apiserver received that
// renew, so a write checked in term and sent at once arrives before r + renewDeadline plus its
// transit. Another replica can only take the lease after leaseDuration without a renew, so a
// write received after that takeover completed is a real overlap of two leaders. A write
// received while the takeover was in flight (between its receipt and completion) is given the
// benefit of the doubt.
import { readFileSync } from 'node:fs';
import type { GatewayNameStatus } from '../../src/dns/resolution-status.js';
import { auditUser, LEASE, LEASES, SYSTEM_NS, type SoakEnv } from './env.js';
import type { History } from './history.js';

interface AuditEvent {
    stage: string;
    verb: string;
    user?: { username?: string };
    objectRef?: { resource?: string; subresource?: string; namespace?: string; name?: string };
    responseStatus?: { code?: number; message?: string };
    requestReceivedTimestamp: string;
    stageTimestamp: string;
    responseObject?: {
        kind?: string;
        metadata?: { name?: string };
        spec?: { holderIdentity?: string | null };
        status?: { gatewayResolution?: GatewayNameStatus[] };
    };
}

export interface LeaseWrite {
    replica: string;
    /** The holder it left: the replica itself (acquire, renew), or '' (a release). */
    holder: string;
    receivedUs: number;
    completedUs: number;
}

export interface Write {
    replica: string;
    resource: string;
    namespace: string;
    name: string;
    what: string;
    code: number;
    receivedUs: number;
}

/** What the local apiserver's audit log says the replicas did. */
export interface Audit {
    /** Successful Lease writes by lease name, in completion order. */
    leaseWrites: Map<string, LeaseWrite[]>;
    /** Failed ones too. */
    leaseWriteCount: number;
    /** Every other write. */
    writes: Write[];
    /** The Link status as each successful status write left it: the record a new leader starts from. */
    linkStatus: { completedUs: number; gatewayResolution: GatewayNameStatus[] }[];
}

export interface LeaseAuditFigures {
    /** Writes by replicas (Lease writes aside), by resource and verb. */
    writes: Record<string, number>;
    /** Successful Lease writes that changed the holder, per controller. */
    leaderChanges: Record<string, number>;
    leaseWrites: number;
}

const WRITE_VERBS = new Set(['create', 'update', 'patch', 'delete', 'deletecollection']);

/** "2026-12-01T05:00:00.123456Z" → microseconds since the epoch (Date.parse keeps only ms). */
export function microseconds(timestamp: string): number {
    const match = /^(.*T\d\d:\d\d:\d\d)(?:\.(\d+))?Z$/.exec(timestamp);
    if (!match) throw new Error(`not an RFC 3339 UTC time: ${timestamp}`);
    return Date.parse(`${match[1]}Z`) * 1000 + Number((match[2] ?? '').padEnd(6, '0').slice(0, 6));
}

export function readAudit(env: SoakEnv, history: History): Audit {
    const replicaOf = new Map(env.replicas.map((r) => [auditUser(r.name), r.name]));
    const audit: Audit = { leaseWrites: new Map(Object.values(LEASES).map((lease) => [lease, []])), leaseWriteCount: 0, writes: [], linkStatus: [] };
    for (const line of readFileSync(env.auditLog, 'utf8').split('\n')) {
        if (!line) continue;
        const event = JSON.parse(line) as AuditEvent;
        const replica = replicaOf.get(event.user?.username ?? '');
        if (event.stage !== 'ResponseComplete' || !replica || !WRITE_VERBS.has(event.verb)) continue;
        const ref = event.objectRef ?? {};
        const code = event.responseStatus?.code ?? 0;
        const ok = code >= 200 && code <= 299;
        const receivedUs = microseconds(event.requestReceivedTimestamp);
        const completedUs = microseconds(event.stageTimestamp);
        if (ref.resource === 'leases' && ref.namespace === SYSTEM_NS) {
            audit.leaseWriteCount++;
            const lease = ref.name ?? event.responseObject?.metadata?.name ?? '';
            if (!ok || event.responseObject?.kind !== 'Lease') continue;
            const holder = event.responseObject.spec?.holderIdentity ?? '';
            audit.leaseWrites.get(lease)?.push({ replica, holder, receivedUs, completedUs });
            continue;
        }
        if (ref.resource === 'links' && ref.subresource === 'status' && ok) {
            audit.linkStatus.push({ completedUs, gatewayResolution: event.responseObject?.status?.gatewayResolution ?? [] });
        }
        const what = `${event.verb} ${ref.resource}${ref.subresource ? `/${ref.subresource}` : ''}`;
        audit.writes.push({ replica, resource: ref.resource ?? '', namespace: ref.namespace ?? '', name: ref.name ?? '', what, code, receivedUs });
        if (ref.resource === 'endpointslices' && (code === 400 || code === 422)) {
            history.violation('valid-slices', `the apiserver refused ${replica}'s ${what} ${ref.namespace}/${ref.name}: ${event.responseStatus?.message ?? code}`, receivedUs / 1000);
        }
    }
    for (const writes of audit.leaseWrites.values()) writes.sort((a, b) => a.completedUs - b.completedUs);
    audit.linkStatus.sort((a, b) => a.completedUs - b.completedUs);
    return audit;
}

/** The holder of a Lease at `us` as its writes left it ('' when released or never held); lease expiry aside. */
export function holderAt(leaseWrites: readonly LeaseWrite[], us: number): string {
    return leaseWrites.filter((t) => t.completedUs <= us).at(-1)?.holder ?? '';
}

export function auditLeaseTerms(env: SoakEnv, audit: Audit, history: History): LeaseAuditFigures {
    const figures: LeaseAuditFigures = { writes: {}, leaderChanges: {}, leaseWrites: audit.leaseWriteCount };
    for (const w of audit.writes) figures.writes[w.what] = (figures.writes[w.what] ?? 0) + 1;
    for (const [controller, lease] of Object.entries(LEASES)) {
        const terms = audit.leaseWrites.get(lease)!;
        let holder = '';
        let changes = 0;
        for (const t of terms) {
            if (t.holder !== holder && t.holder !== '') changes++;
            holder = t.holder;
        }
        figures.leaderChanges[controller] = changes;
        const replicas = env.replicas.filter((r) => r.command === controller).map((r) => r.name);
        for (const w of audit.writes.filter((w) => replicas.includes(w.replica))) {
            const problem = outsideTerm(w, terms);
            if (!problem) continue;
            const detail = `${w.replica} ${w.what} ${w.namespace}/${w.name} (HTTP ${w.code}) received at ${iso(w.receivedUs)}: ${problem}`;
            const replica = env.replicas.find((r) => r.name === w.replica)!;
            if (resumedJustBefore(replica.pauses, w.receivedUs / 1000)) history.pausedInFlight.push(detail);
            else history.violation('lease-term', detail, w.receivedUs / 1000);
        }
    }
    return figures;
}

/**
 * The write reached the apiserver within a second of its replica's SIGCONT: it was on its way
 * (checked in term, bytes not yet sent) when the process was frozen. No check in the process can
 * stop such a write, in client-go neither; only fencing by the server could, which Lease-based
 * election does not have. These are counted and listed apart, not as violations.
 */
function resumedJustBefore(pauses: readonly { from: number; to?: number }[], atMs: number): boolean {
    return pauses.some((p) => p.to !== undefined && p.to <= atMs && atMs - p.to < 1000);
}

/** Why the write was outside every term of its replica, or undefined when it was inside one. */
function outsideTerm(w: Write, leaseWrites: readonly LeaseWrite[]): string | undefined {
    const own = leaseWrites.filter((t) => t.replica === w.replica && t.holder === w.replica && t.receivedUs <= w.receivedUs);
    const term = own.at(-1);
    if (!term) return 'it never held the lease before';
    const end = term.receivedUs + LEASE.durationMs * 1000;
    const ended = leaseWrites.find(
        (t) => t.completedUs > term.receivedUs && t.completedUs < w.receivedUs && (t.replica !== w.replica || t.holder === ''),
    );
    if (ended) {
        const how = ended.replica === w.replica ? 'it released the lease' : `${ended.replica} took the lease`;
        return `${how} at ${iso(ended.completedUs)}, after its renew received at ${iso(term.receivedUs)}`;
    }
    if (w.receivedUs > end) return `its last renew was received at ${iso(term.receivedUs)}; its term ended at ${iso(end)}`;
    return undefined;
}

function iso(us: number): string {
    return `${new Date(Math.floor(us / 1000)).toISOString().slice(0, -1)}${String(Math.floor(us % 1000)).padStart(3, '0')}Z`;
}
