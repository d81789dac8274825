// Where one imported Service stands in the clusterset, from what every member exports now and the
// ServiceImport here: the valid exporters, their resolution, the clusters that cannot be read yet
// but the import lists, and whether the import waits for them. Both plans (plan-import.ts,
// plan-derived.ts) start from it, so they agree on what is imported. Pure.
import { exportersOf, resolveImport, type Resolution } from './resolve.js';
import { MCS_OWNED_LABEL, type MemberCluster, type ServiceImport } from './types.js';

export interface ImportState {
    /** The clusters whose export is valid, oldest first (the first wins conflicts). */
    exporters: string[];
    /** Their resolution; undefined when no cluster that can be read exports the Service. */
    resolution?: Resolution;
    /** The ServiceImport here is ours (what is not ours is never written). */
    importOurs: boolean;
    /** Clusters that cannot be read yet and may export the Service (the import lists them). */
    pending: string[];
    /**
     * Something is, or may be, exported: the import should exist. While a member cannot be read
     * our import stays even when it does not list that member: the member may have begun
     * exporting while no leader ran. Nothing is deleted on a guess.
     */
    imported: boolean;
    /**
     * A cluster the import lists cannot be read yet (a restart, its Link's watch starting): the
     * import and the conflicts are resolved once it can be. Resolving without it would flip a
     * conflict's winner, its type and the derived Service, and back again moments later.
     */
    holding: boolean;
}

export function importState(name: string, members: readonly MemberCluster[], existingImport: ServiceImport | undefined): ImportState {
    const exporters = exportersOf(members);
    const importOurs = existingImport !== undefined && isOurs(existingImport, name);
    // Clusters that cannot be read yet keep what the import says they export. An import of ours
    // with no clusters in its status was created by a process that died before writing the status
    // (a separate write): any unreadable cluster may be what it imports.
    const listed = new Set((importOurs ? existingImport.status?.clusters ?? [] : []).map((c) => c.cluster));
    const statusUnwritten = importOurs && listed.size === 0;
    const pending = members.filter((m) => !m.known && (statusUnwritten || listed.has(m.name))).map((m) => m.name);
    const resolution = exporters.length > 0 ? resolveImport(exporters) : undefined;
    return {
        exporters: exporters.map((e) => e.cluster),
        resolution,
        importOurs,
        pending,
        imported: resolution !== undefined || pending.length > 0 || (importOurs && members.some((m) => !m.known)),
        holding: importOurs && pending.length > 0,
    };
}

/** Whether the object is one this controller created for the imported Service `name`. */
export function isOurs(obj: { metadata?: { labels?: Record<string, string> } }, name: string): boolean {
    return obj.metadata?.labels?.[MCS_OWNED_LABEL] === name;
}

/** JSON with keys sorted at every level: the apiserver may return fields in another order. */
export function canonical(value: unknown): string {
    return JSON.stringify(value, (_key, v: unknown) => (v && typeof v === 'object' && !Array.isArray(v) ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : 1))) : v));
}
