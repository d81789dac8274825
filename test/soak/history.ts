// What the driver and the chaos loop did, when: the figures of the report, and what the
// invariant checker needs to tell a legitimate emptied mirror from a lost one.

export interface Interval {
    from: number;
    to?: number;
}

export interface Violation {
    invariant: string;
    at: number;
    detail: string;
}

export class History {
    readonly violations: Violation[] = [];
    /** Writes outside a lease term that were in flight when their replica was SIGSTOPped (see audit.ts). */
    readonly pausedInFlight: string[] = [];
    /** How long each SIGTERMed replica took to exit. */
    readonly sigtermExitMs: number[] = [];
    readonly changes: Record<string, number> = {};
    /** Changes the apiserver refused or that failed in transit (e.g. during an apiserver restart). */
    readonly failedChanges: Record<string, number> = {};
    readonly faults: Record<string, number> = {};
    /** When the last fault ended (a replica restarted, a stall lifted, an apiserver back). */
    lastFaultEndAt = 0;
    /** Remote Service name → each time it started or stopped being exported (created, deleted, label). */
    readonly exportChanges = new Map<string, number[]>();
    /** While the remote apiserver was down (restarting). */
    readonly remoteDown: Interval[] = [];
    /** While the driver had the Link removed: from its delete request until it was created again. */
    readonly linkDown: Interval[] = [];

    violation(invariant: string, detail: string, at = Date.now()): void {
        this.violations.push({ invariant, at, detail });
    }

    change(kind: string): void {
        this.changes[kind] = (this.changes[kind] ?? 0) + 1;
    }

    failed(kind: string): void {
        this.failedChanges[kind] = (this.failedChanges[kind] ?? 0) + 1;
    }

    fault(kind: string): void {
        this.faults[kind] = (this.faults[kind] ?? 0) + 1;
    }

    faultEnded(at = Date.now()): void {
        this.lastFaultEndAt = Math.max(this.lastFaultEndAt, at);
    }

    exportChanged(service: string, at = Date.now()): void {
        this.exportChanges.set(service, [...(this.exportChanges.get(service) ?? []), at]);
    }

    /** The export of `service` changed within [from, to]. */
    exportChangedWithin(service: string, from: number, to: number): boolean {
        return (this.exportChanges.get(service) ?? []).some((at) => at >= from && at <= to);
    }

    remoteDownWithin(from: number, to: number): boolean {
        return this.remoteDown.some((d) => d.from <= to && (d.to ?? Infinity) >= from);
    }

    linkDownWithin(from: number, to: number): boolean {
        return this.linkDown.some((d) => d.from <= to && (d.to ?? Infinity) >= from);
    }
}

/** "a 3, b 1": a count table on one line, largest first. */
export function countLine(counts: Record<string, number>): string {
    const entries = Object.entries(counts).sort(([, a], [, b]) => b - a);
    const total = entries.reduce((sum, [, n]) => sum + n, 0);
    return entries.length === 0 ? 'none' : `${total} (${entries.map(([k, n]) => `${k} ${n}`).join(', ')})`;
}
