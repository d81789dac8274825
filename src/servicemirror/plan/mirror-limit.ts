// --max-mirrors-per-link: which of a Link's exports are mirrored when its remote exports more.
// The oldest win (creationTimestamp, then namespace/name): a Service exported later cannot push
// out one mirrored before it, and every replica, restart and resync picks the same ones.
// Kept incrementally (one remote Service changes at a time) because a remote may export
// 100 000 Services: a full sort per watch event would cost more than the mirrors.
import type { V1Service } from '@kubernetes/client-node';
import type { Link } from '../api/link.js';
import { exportMode, mirrorProblem } from './mirror.js';

/** Default of --max-mirrors-per-link; docs/configuration.md gives the memory it stands for. */
export const DEFAULT_MAX_MIRRORS_PER_LINK = 5_000;

/**
 * The order a Service is admitted in: its creation time (RFC 3339 in UTC, as every apiserver
 * writes it, so text order is time order), then namespace/name. One without a time goes last.
 * Undefined for a Service that would not become a mirror (not exported, or invalid): it takes
 * no place.
 */
export function exportRank(remote: V1Service, link: Link): string | undefined {
    if (exportMode(remote, link) === 'none' || mirrorProblem(remote, link) !== null) return undefined;
    const created = remote.metadata?.creationTimestamp as unknown;
    const time = typeof created === 'string' ? created : created instanceof Date ? created.toISOString().replace('.000Z', 'Z') : '~';
    return `${time} ${remote.metadata?.namespace}/${remote.metadata?.name}`;
}

/** The exports of one Link and the at most `max` of them admitted. Keys are "namespace/name". */
export class MirrorLimit {
    /** Every export's rank. */
    private readonly ranks = new Map<string, string>();
    private readonly admittedKeys = new Set<string>();
    /** The youngest admitted export, kept while it stays so: most new exports are younger still. */
    private youngestAdmitted: string | undefined;

    constructor(readonly max: number) {}

    get exported(): number {
        return this.ranks.size;
    }

    get reached(): boolean {
        return this.ranks.size > this.max;
    }

    admitted(key: string): boolean {
        return this.admittedKeys.has(key);
    }

    clear(): void {
        this.ranks.clear();
        this.admittedKeys.clear();
        this.youngestAdmitted = undefined;
    }

    /**
     * The remote Service `key` now has this rank (undefined: no longer an export). Returns the
     * other keys whose admission changed, to be synced again.
     */
    set(key: string, rank: string | undefined): string[] {
        const before = this.ranks.get(key);
        if (before === rank) return [];
        if (rank === undefined) {
            this.ranks.delete(key);
            if (!this.admittedKeys.delete(key)) return [];
            if (this.youngestAdmitted === key) this.youngestAdmitted = undefined;
            const next = this.youngest(false);
            if (next === undefined) return [];
            this.addAdmitted(next);
            return [next];
        }
        if (before !== undefined) {
            // A rank never changes (creation time and name are immutable) unless the Service was
            // deleted and created again under the same name: it then competes again.
            const wereAdmitted = new Set(this.admittedKeys);
            const candidates = new Set([...this.set(key, undefined), ...this.set(key, rank)]);
            return [...candidates].filter((other) => other !== key && this.admittedKeys.has(other) !== wereAdmitted.has(other));
        }
        this.ranks.set(key, rank);
        return this.admit(key, rank);
    }

    private admit(key: string, rank: string): string[] {
        if (this.admittedKeys.size < this.max) {
            this.addAdmitted(key);
            return [];
        }
        this.youngestAdmitted ??= this.youngest(true);
        const evict = this.youngestAdmitted;
        if (evict === undefined || this.ranks.get(evict)! < rank) return [];
        this.admittedKeys.delete(evict);
        this.admittedKeys.add(key);
        this.youngestAdmitted = undefined;
        return [evict];
    }

    private addAdmitted(key: string): void {
        this.admittedKeys.add(key);
        if (this.youngestAdmitted !== undefined && this.ranks.get(key)! > this.ranks.get(this.youngestAdmitted)!) this.youngestAdmitted = key;
    }

    /** The youngest admitted export (`admitted`), or the oldest one not admitted. */
    private youngest(admitted: boolean): string | undefined {
        let found: string | undefined;
        let foundRank: string | undefined;
        if (admitted) {
            for (const key of this.admittedKeys) {
                const rank = this.ranks.get(key)!;
                if (foundRank === undefined || rank > foundRank) [found, foundRank] = [key, rank];
            }
            return found;
        }
        for (const [key, rank] of this.ranks) {
            if (this.admittedKeys.has(key)) continue;
            if (foundRank === undefined || rank < foundRank) [found, foundRank] = [key, rank];
        }
        return found;
    }
}
