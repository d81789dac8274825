// Watches the MCS objects of both clusters for the whole soak (its own watches, as the
// WatchChecker's): the ServiceExports and Services of the app namespace in the local and the
// remote cluster, and the local ServiceImports and MCS EndpointSlices. Each violation is
// recorded at once, with its evidence:
// (5) no ServiceImport deleted and created again (its uid changed) while a valid export of it
//     existed throughout, in a cluster that could be read: the local one, or the remote one
//     while the Link was in place and its apiserver up (and some seconds after either came
//     back). Each export's validity is the checker's own view, from its watches, so every
//     interval of it is shortened by a margin at both ends before the gap is compared;
// (6) the ClusterSetIP of an import (spec.ips) never changes while the import exists (the same
//     uid): empty to set is the allocation, anything else a change;
// (7) no MCS slice carries a port (name and protocol) the ServiceImport of its
//     multicluster.kubernetes.io/service-name does not have. Checked at each slice version
//     against the import as last seen; the two watches need not deliver in the order of the
//     writes, so only a port still on the slice and still missing from the import 2 s later,
//     as the apiserver has it then (the checker's watch of imports may lag), is a violation.
import type { V1EndpointSlice, V1Service } from '@kubernetes/client-node';
import { Informer } from '../../src/kube/informer.js';
import { isNotFound } from '../../src/kube/errors.js';
import { EndpointSlices, objectPath, Services } from '../../src/kube/resources.js';
import type { KubeRest } from '../../src/kube/rest.js';
import type { KubeObject } from '../../src/kube/store.js';
import { APP_NS, LOCAL_CLUSTER, REMOTE_CLUSTER, type SoakEnv } from './env.js';
import type { History, Interval } from './history.js';
import { MCS_MANAGED_BY, MCS_SERVICE_NAME, portName, ServiceExportType, ServiceImportType, SOURCE_CLUSTER, validExport, type ServiceExport, type ServiceImport } from './mcs.js';

type Slice = V1EndpointSlice & KubeObject;
type Service = V1Service & KubeObject;
type Export = ServiceExport & KubeObject;
type Import = ServiceImport & KubeObject;

/** The watches of two clusters (and of two resources) are seen this far apart at most, in the checks' reckoning. */
const WATCH_MARGIN_MS = 2000;
/** After the Link is back or the remote apiserver restarted, the remote counts as readable again only after this. */
const READABLE_AFTER_MS = 15_000;
/** (7): how long a slice may carry a port before its import is seen with it. */
const SLICE_PORT_GRACE_MS = 2000;

interface Member {
    cluster: string;
    exports: Informer<Export>;
    services: Informer<Service>;
    /** Per Service name: the intervals its export was valid in, as this checker saw it. */
    valid: Map<string, Interval[]>;
}

export interface McsFigures {
    exportVersions: number;
    /** Names whose import listed both clusters at some point. */
    importedFromBoth: Set<string>;
    importsCreated: number;
    importsRecreated: number;
    sliceVersionsChecked: number;
    slicePortsLate: number;
    /** The first few slice versions seen with a port before their import had it: the slice, the port, how long until the import was seen with it. */
    lateExamples: string[];
}

const iso = (ms: number) => new Date(ms).toISOString();

export class McsChecker {
    private readonly members: Member[];
    private readonly imports: Informer<Import>;
    private readonly slices: Informer<Slice>;
    /** Each import deleted and not (yet) seen created again, by name. */
    private readonly deleted = new Map<string, { uid: string; at: number; ips: string }>();
    /** When each import was last seen as it is (its last event): the earliest it can have been deleted. */
    private readonly lastSeen = new Map<string, number>();
    private readonly timers = new Set<NodeJS.Timeout>();
    private stopped = false;
    /** Per Service name: what the checker saw of it (validity per cluster, import created and deleted), for the evidence of a violation. */
    private readonly timeline = new Map<string, string[]>();
    /** Names with a violation of (5) or (6): their timelines are printed at the end. */
    readonly flagged = new Set<string>();
    readonly figures: McsFigures = { exportVersions: 0, importedFromBoth: new Set(), importsCreated: 0, importsRecreated: 0, sliceVersionsChecked: 0, slicePortsLate: 0, lateExamples: [] };
    /** Slice versions with ports their import lacked when seen, by import name: until the import is seen with them. */
    private readonly ahead = new Map<string, { slice: string; ports: string[]; at: number }[]>();

    /** The local apiserver: a slice's import is read there when the verdict is due (the checker's own watch may lag). */
    private readonly local: KubeRest;

    constructor(
        env: SoakEnv,
        private readonly history: History,
    ) {
        this.local = env.local.admin;
        this.members = [this.member(LOCAL_CLUSTER, env.local.admin), this.member(REMOTE_CLUSTER, env.remote.admin)];
        this.imports = new Informer<Import>(env.local.admin, { resource: ServiceImportType, namespace: APP_NS, watchTimeoutSeconds: 60 });
        this.imports.on({
            add: (i) => (this.countClusters(i), this.importAdded(i), this.seen(i)),
            update: (old, i) => {
                this.countClusters(i);
                if (old.metadata?.uid !== i.metadata?.uid) {
                    // Replaced between two lists (the checker's watch was cut): deleted at some
                    // moment since the old one was last seen, which is all we know.
                    this.importDeleted(old, this.lastSeen.get(i.metadata?.name ?? '') ?? Date.now());
                    this.importAdded(i);
                } else this.importUpdated(old, i);
                this.seen(i);
            },
            delete: (i) => this.importDeleted(i),
        });
        this.slices = new Informer<Slice>(env.local.admin, { resource: EndpointSlices, labelSelector: `endpointslice.kubernetes.io/managed-by=${MCS_MANAGED_BY}`, watchTimeoutSeconds: 60 });
        this.slices.on({ add: (s) => this.sliceChanged(s), update: (_, s) => this.sliceChanged(s) });
    }

    private member(cluster: string, rest: KubeRest): Member {
        const m: Member = {
            cluster,
            exports: new Informer<Export>(rest, { resource: ServiceExportType, namespace: APP_NS, watchTimeoutSeconds: 60 }),
            services: new Informer<Service>(rest, { resource: Services, namespace: APP_NS, watchTimeoutSeconds: 60 }),
            valid: new Map(),
        };
        const changed = (name: string | undefined, replaced = false) => name && this.validityChanged(m, name, replaced);
        m.exports.on({
            add: (e) => (this.figures.exportVersions++, changed(e.metadata?.name)),
            update: (old, e) => changed(e.metadata?.name, old.metadata?.uid !== e.metadata?.uid),
            delete: (e) => changed(e.metadata?.name),
        });
        m.services.on({
            add: (s) => changed(s.metadata?.name),
            update: (old, s) => changed(s.metadata?.name, old.metadata?.uid !== s.metadata?.uid),
            delete: (s) => changed(s.metadata?.name),
        });
        return m;
    }

    async start(): Promise<void> {
        const informers = [this.imports, this.slices, ...this.members.flatMap((m) => [m.exports, m.services])];
        for (const i of informers) i.start();
        await Promise.all(informers.map((i) => i.synced));
    }

    async stop(): Promise<void> {
        this.stopped = true;
        for (const t of this.timers) clearTimeout(t);
        await Promise.all([this.imports, this.slices, ...this.members.flatMap((m) => [m.exports, m.services])].map((i) => i.stop()));
    }

    /** An export or Service of `name` changed in `m`: open or close its validity interval (a replaced object closes and opens one). */
    private validityChanged(m: Member, name: string, replaced: boolean): void {
        const now = Date.now();
        const valid = validExport(m.exports.store.get(APP_NS, name), m.services.store.get(APP_NS, name));
        const intervals = m.valid.get(name) ?? [];
        m.valid.set(name, intervals);
        const open = intervals.at(-1)?.to === undefined ? intervals.at(-1) : undefined;
        if (open && (!valid || replaced)) open.to = now;
        if (valid && (!open || replaced)) intervals.push({ from: now });
        if (!!open !== valid || replaced) this.note(name, `${m.cluster} export ${valid ? 'valid' : 'not valid'}${replaced ? ' (replaced)' : ''} (export ${m.exports.store.get(APP_NS, name) ? 'present' : 'absent'}, Service ${m.services.store.get(APP_NS, name) ? 'present' : 'absent'})`);
    }

    /** When the remote cluster could not be read (and a while after), as the driver and the chaos loop recorded it. */
    private unreadable(cluster: string): Interval[] {
        if (cluster !== REMOTE_CLUSTER) return [];
        return [...this.history.linkDown, ...this.history.remoteDown].map((d) => ({ from: d.from, to: d.to === undefined ? undefined : d.to + READABLE_AFTER_MS }));
    }

    /**
     * Whether a valid export of `name` existed in a readable cluster at every moment of
     * [from, to], each interval of validity shortened by the margin at both ends.
     */
    private exportedThroughout(name: string, from: number, to: number): { covered: boolean; evidence: string } {
        const pieces: Interval[] = [];
        const evidence: string[] = [];
        for (const m of this.members) {
            const valid = m.valid.get(name) ?? [];
            evidence.push(`${m.cluster} valid ${valid.map((v) => `${iso(v.from)}..${v.to === undefined ? 'now' : iso(v.to)}`).join(', ') || 'never'}`);
            for (const v of valid) pieces.push(...subtract({ from: v.from + WATCH_MARGIN_MS, to: (v.to ?? Infinity) - WATCH_MARGIN_MS }, this.unreadable(m.cluster)));
        }
        pieces.sort((a, b) => a.from - b.from);
        let reached = from;
        for (const p of pieces) {
            if (p.from > reached) break;
            reached = Math.max(reached, p.to ?? Infinity);
            if (reached >= to) return { covered: true, evidence: evidence.join('; ') };
        }
        return { covered: false, evidence: evidence.join('; ') };
    }

    private note(name: string, what: string): void {
        const lines = this.timeline.get(name) ?? [];
        this.timeline.set(name, lines);
        lines.push(`${iso(Date.now())} ${what}`);
    }

    /** The timelines of the names with a violation, to print at the end. */
    evidence(): string[] {
        return [...this.flagged].flatMap((name) => [`${APP_NS}/${name}, as the MCS checker saw it:`, ...(this.timeline.get(name) ?? []).map((l) => `    ${l}`)]);
    }

    private countClusters(i: Import): void {
        if ((i.status?.clusters ?? []).length >= 2) this.figures.importedFromBoth.add(i.metadata?.name ?? '');
        const name = i.metadata?.name ?? '';
        const pending = this.ahead.get(name);
        if (!pending) return;
        const has = new Set((i.spec?.ports ?? []).map(portName));
        const now = Date.now();
        for (const p of pending.filter((p) => p.ports.every((port) => has.has(port)))) {
            if (this.figures.lateExamples.length < 5) this.figures.lateExamples.push(`${p.slice} had ${p.ports.join(', ')} at ${iso(p.at)}, the import ${now - p.at} ms later`);
        }
        const left = pending.filter((p) => !p.ports.every((port) => has.has(port)) && now - p.at < 10_000);
        if (left.length > 0) this.ahead.set(name, left);
        else this.ahead.delete(name);
    }

    private importAdded(i: Import): void {
        const name = i.metadata?.name ?? '';
        const now = Date.now();
        this.figures.importsCreated++;
        this.note(name, `ServiceImport created (uid ${i.metadata?.uid}, ips ${ipsOf(i)}, clusters ${(i.status?.clusters ?? []).map((c) => c.cluster).join('+') || 'none yet'})`);
        const gone = this.deleted.get(name);
        this.deleted.delete(name);
        if (!gone) return;
        this.figures.importsRecreated++;
        const { covered, evidence } = this.exportedThroughout(name, gone.at, now);
        if (covered) {
            this.flagged.add(name);
            this.history.violation(
                'import-kept',
                `ServiceImport ${APP_NS}/${name} deleted at ${iso(gone.at)} (uid ${gone.uid}, ips ${gone.ips}) and created again at ${iso(now)} (uid ${i.metadata?.uid}, ips ${ipsOf(i)}) while a valid export existed throughout (${evidence})`,
                gone.at,
            );
        }
    }

    private importUpdated(old: Import, i: Import): void {
        const name = i.metadata?.name ?? '';
        const before = ipsOf(old);
        const after = ipsOf(i);
        if (before === after || before === '[]') return;
        this.flagged.add(name);
        this.note(name, `ServiceImport ips ${before} -> ${after}`);
        this.history.violation(
            'clusterset-ip-kept',
            `ServiceImport ${APP_NS}/${name} (uid ${i.metadata?.uid}) changed its ips from ${before} to ${after} at ${iso(Date.now())} (resourceVersion ${old.metadata?.resourceVersion} -> ${i.metadata?.resourceVersion})`,
        );
    }

    private seen(i: Import): void {
        this.lastSeen.set(i.metadata?.name ?? '', Date.now());
    }

    private importDeleted(i: Import, at = Date.now()): void {
        const name = i.metadata?.name ?? '';
        this.deleted.set(name, { uid: i.metadata?.uid ?? '', at, ips: ipsOf(i) });
        this.note(name, `ServiceImport deleted (uid ${i.metadata?.uid})`);
    }

    /** (7) at a slice version: its ports the import lacks, looked at again 2 s later. */
    private sliceChanged(slice: Slice): void {
        this.figures.sliceVersionsChecked++;
        const missing = this.portsMissing(slice);
        if (missing.length === 0) return;
        const at = Date.now();
        const importThen = this.importPorts(slice);
        const forImport = slice.metadata?.labels?.[MCS_SERVICE_NAME] ?? '';
        this.ahead.set(forImport, [...(this.ahead.get(forImport) ?? []), { slice: `${slice.metadata?.name} (${slice.metadata?.labels?.[SOURCE_CLUSTER]}, resourceVersion ${slice.metadata?.resourceVersion})`, ports: missing, at }]);
        const timer = setTimeout(async () => {
            this.timers.delete(timer);
            if (this.stopped) return;
            const now = this.slices.store.get(slice.metadata?.namespace, slice.metadata?.name ?? '');
            if (!now || now.metadata?.uid !== slice.metadata?.uid) return;
            // The import as the apiserver has it now: the checker's watch of imports may be behind
            // its watch of slices (one reconnects after an apiserver restart before the other).
            const live = await this.liveImport(now);
            if (this.stopped || live === 'unknown') return;
            const livePorts = new Set((live?.spec?.ports ?? []).map(portName));
            const still = (now.ports ?? []).map(portName).filter((p) => missing.includes(p) && !livePorts.has(p));
            if (still.length === 0) {
                this.figures.slicePortsLate++;
                return;
            }
            this.history.violation(
                'slice-ports-in-import',
                `EndpointSlice ${slice.metadata?.namespace}/${slice.metadata?.name} (source ${slice.metadata?.labels?.[SOURCE_CLUSTER]}, resourceVersion ${slice.metadata?.resourceVersion} seen at ${iso(at)}, now ${now.metadata?.resourceVersion}) carries ${still.join(', ')}, which the ServiceImport ${importName(slice)} has not: it had ${importThen} then (as the checker's watch saw it), ${describeImport(live)} ${SLICE_PORT_GRACE_MS / 1000} s later (read from the apiserver)`,
                at,
            );
        }, SLICE_PORT_GRACE_MS);
        this.timers.add(timer);
    }

    /** The slice's import read from the local apiserver; 'unknown' when it cannot be read now (a fault): no verdict. */
    private async liveImport(slice: Slice): Promise<Import | undefined | 'unknown'> {
        const name = slice.metadata?.labels?.[MCS_SERVICE_NAME];
        if (name === undefined) return undefined;
        try {
            return await this.local.get<Import>(objectPath(ServiceImportType, slice.metadata!.namespace!, name));
        } catch (err) {
            return isNotFound(err) ? undefined : 'unknown';
        }
    }

    private importOf(slice: Slice): Import | undefined {
        const name = slice.metadata?.labels?.[MCS_SERVICE_NAME];
        return name === undefined ? undefined : this.imports.store.get(slice.metadata?.namespace, name);
    }

    private portsMissing(slice: Slice): string[] {
        const imported = new Set((this.importOf(slice)?.spec?.ports ?? []).map(portName));
        return (slice.ports ?? []).map(portName).filter((p) => !imported.has(p));
    }

    private importPorts(slice: Slice): string {
        return describeImport(this.importOf(slice));
    }
}

function describeImport(i: Import | undefined): string {
    return i ? `[${(i.spec?.ports ?? []).map(portName).join(', ')}] (uid ${i.metadata?.uid}, resourceVersion ${i.metadata?.resourceVersion})` : 'no import';
}

function importName(slice: Slice): string {
    return `${slice.metadata?.namespace}/${slice.metadata?.labels?.[MCS_SERVICE_NAME] ?? '(no service-name label)'}`;
}

function ipsOf(i: Import): string {
    return JSON.stringify([...(i.spec?.ips ?? [])].sort());
}

/** `span` less every interval of `holes` (open ends reach to infinity). */
function subtract(span: Interval, holes: readonly Interval[]): Interval[] {
    let pieces: Interval[] = span.from < (span.to ?? Infinity) ? [span] : [];
    for (const h of holes) {
        const hTo = h.to ?? Infinity;
        pieces = pieces.flatMap((p) => {
            const pTo = p.to ?? Infinity;
            if (hTo <= p.from || h.from >= pTo) return [p];
            const out: Interval[] = [];
            if (h.from > p.from) out.push({ from: p.from, to: h.from });
            if (hTo < pTo) out.push({ from: hTo, to: p.to });
            return out;
        });
    }
    return pieces;
}
