// (2) No write by a replica outside its lease term, judged from the apiserver's side: its audit
// log (Metadata for every write by a replica, the whole body of every Lease write) gives each
// request's receive and completion time on the apiserver's one clock, in microseconds, and the
// holder each successful Lease write left. So no clock of ours is compared with the apiserver's.
//
// A replica's term, as the apiserver saw it: from a successful Lease write of its own naming it
// holder (received at r) until r + leaseDuration, ended early by a successful Lease write of
// another replica (another holder took it) or its own release. A write it sends is in term
// when the apiserver received it inside one. The tolerance is leaseDuration - renewDeadline
// (2 s here): a replica stops writing renewDeadline after it *began* its last successful renew,
// which was before the apiserver received that renew, so a write checked in term arrives at
// most (leaseDuration - renewDeadline) plus its own transit later. Another replica can only
// take the lease after leaseDuration without a renew, so a write received after that
// takeover completed is a real overlap of two leaders. A write received while the takeover was
// in flight (between its receipt and completion) is given the benefit of the doubt.
import { readFileSync } from 'node:fs';
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
    responseObject?: { kind?: string; metadata?: { name?: string }; spec?: { holderIdentity?: string | null } };
}

interface LeaseWrite {
    replica: string;
    /** The holder it left: the replica itself (acquire, renew), or '' (a release). */
    holder: string;
    receivedUs: number;
    completedUs: number;
}

interface Write {
    replica: string;
    what: string;
    code: number;
    receivedUs: number;
}

export interface LeaseAuditFigures {
    /** Writes by replicas (Lease writes aside), by resource and verb. */
    writes: Record<string, number>;
    /** Successful Lease writes that changed the holder, per controller. */
    leaderChanges: Record<string, number>;
    /** Completion times (ms) of holder changes of the service mirror's Lease. */
    mirrorLeaderChangesAt: number[];
    leaseWrites: number;
}

const WRITE_VERBS = new Set(['create', 'update', 'patch', 'delete', 'deletecollection']);

/** "2026-12-01T05:00:00.123456Z" → microseconds since the epoch (Date.parse keeps only ms). */
export function microseconds(timestamp: string): number {
    const match = /^(.*T\d\d:\d\d:\d\d)(?:\.(\d+))?Z$/.exec(timestamp);
    if (!match) throw new Error(`not an RFC 3339 UTC time: ${timestamp}`);
    return Date.parse(`${match[1]}Z`) * 1000 + Number((match[2] ?? '').padEnd(6, '0').slice(0, 6));
}

export function auditLeaseTerms(env: SoakEnv, history: History): LeaseAuditFigures {
    const replicaOf = new Map(env.replicas.map((r) => [auditUser(r.name), r]));
    const leaseWrites = new Map<string, LeaseWrite[]>(Object.values(LEASES).map((lease) => [lease, []]));
    const writes: Write[] = [];
    const figures: LeaseAuditFigures = { writes: {}, leaderChanges: {}, mirrorLeaderChangesAt: [], leaseWrites: 0 };

    for (const line of readFileSync(env.auditLog, 'utf8').split('\n')) {
        if (!line) continue;
        const event = JSON.parse(line) as AuditEvent;
        const replica = replicaOf.get(event.user?.username ?? '');
        if (event.stage !== 'ResponseComplete' || !replica || !WRITE_VERBS.has(event.verb)) continue;
        const ref = event.objectRef ?? {};
        const code = event.responseStatus?.code ?? 0;
        const receivedUs = microseconds(event.requestReceivedTimestamp);
        if (ref.resource === 'leases' && ref.namespace === SYSTEM_NS) {
            const lease = ref.name ?? event.responseObject?.metadata?.name ?? '';
            figures.leaseWrites++;
            if (code < 200 || code > 299 || event.responseObject?.kind !== 'Lease') continue;
            const holder = event.responseObject.spec?.holderIdentity ?? '';
            leaseWrites.get(lease)?.push({ replica: replica.name, holder, receivedUs, completedUs: microseconds(event.stageTimestamp) });
            continue;
        }
        const what = `${event.verb} ${ref.resource}${ref.subresource ? `/${ref.subresource}` : ''}`;
        figures.writes[what] = (figures.writes[what] ?? 0) + 1;
        writes.push({ replica: replica.name, what: `${what} ${ref.namespace}/${ref.name ?? ''}`, code, receivedUs });
        if (ref.resource === 'endpointslices' && (code === 400 || code === 422)) {
            history.violation('valid-slices', `the apiserver refused ${replica.name}'s ${what} ${ref.namespace}/${ref.name}: ${event.responseStatus?.message ?? code}`, receivedUs / 1000);
        }
    }

    for (const [controller, lease] of Object.entries(LEASES)) {
        const terms = leaseWrites.get(lease)!.sort((a, b) => a.completedUs - b.completedUs);
        let holder = '';
        let changes = 0;
        for (const t of terms) {
            if (t.holder !== holder && t.holder !== '') {
                changes++;
                if (controller === 'service-mirror') figures.mirrorLeaderChangesAt.push(t.completedUs / 1000);
            }
            holder = t.holder;
        }
        figures.leaderChanges[controller] = changes;
        const replicas = env.replicas.filter((r) => r.command === controller).map((r) => r.name);
        for (const w of writes.filter((w) => replicas.includes(w.replica))) {
            const problem = outsideTerm(w, terms);
            if (problem) history.violation('lease-term', `${w.replica} ${w.what} (HTTP ${w.code}) received at ${iso(w.receivedUs)}: ${problem}`, w.receivedUs / 1000);
        }
    }
    return figures;
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
