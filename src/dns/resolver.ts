// The one place that sends DNS queries for gateway names: A and AAAA with TTLs through
// c-ares (node:dns/promises Resolver), so TTLs are real and /etc/hosts is not consulted.
// It reports what DNS said; keeping, expiring and retrying belong to name-state and the watcher.
import { Resolver } from 'node:dns/promises';
import type { AddressType } from '../endpointslice/types.js';
import type { AddressRecord, FamilyErrors, NameResolution, ResolutionError, ResolutionErrorCode } from './name-state.js';

export interface NameResolver {
    resolve(name: string): Promise<NameResolution>;
}

export interface GatewayResolverOptions {
    /** "ip" or "ip:port" ("[v6]:port"); the system's servers when absent or empty. A malformed entry throws. */
    servers?: readonly string[];
    /** Per-try timeout in ms (c-ares backs off between tries). */
    timeoutMs?: number;
    /** Tries per server. */
    tries?: number;
}

type QueryOutcome = { records: AddressRecord[] } | { error: ResolutionError };

const CODES: Record<string, ResolutionErrorCode> = {
    ENOTFOUND: 'NXDOMAIN',
    ENODATA: 'NODATA',
    ESERVFAIL: 'SERVFAIL',
    ETIMEOUT: 'TIMEOUT',
    EREFUSED: 'REFUSED',
    ECONNREFUSED: 'UNREACHABLE',
};

export class GatewayResolver implements NameResolver {
    private readonly resolver: Resolver;
    private sent = 0;

    constructor(options: GatewayResolverOptions = {}) {
        this.resolver = new Resolver({ timeout: options.timeoutMs ?? 2000, tries: options.tries ?? 2 });
        if (options.servers !== undefined && options.servers.length > 0) this.resolver.setServers([...options.servers]);
    }

    /** DNS queries sent so far (two per resolve: A and AAAA). */
    get queriesSent(): number {
        return this.sent;
    }

    async resolve(name: string): Promise<NameResolution> {
        const [a, aaaa] = await Promise.all([this.query(name, 'IPv4'), this.query(name, 'IPv6')]);
        return combineQueries(name, a, aaaa);
    }

    /** Ends pending queries; they report an OTHER error (ECANCELLED). */
    cancel(): void {
        this.resolver.cancel();
    }

    private async query(name: string, family: AddressType): Promise<QueryOutcome> {
        this.sent++;
        try {
            const records =
                family === 'IPv4'
                    ? await this.resolver.resolve4(name, { ttl: true })
                    : await this.resolver.resolve6(name, { ttl: true });
            return { records: records.map((r) => ({ address: r.address, ttl: r.ttl })) };
        } catch (error) {
            return { error: resolutionErrorOf(error, `${family === 'IPv4' ? 'A' : 'AAAA'} ${name}`) };
        }
    }
}

/** Maps a c-ares error (err.code) to our codes; the message keeps the query and the raw code. */
export function resolutionErrorOf(error: unknown, query: string): ResolutionError {
    const raw = typeof error === 'object' && error !== null && 'code' in error ? String(error.code) : 'EUNKNOWN';
    const code = CODES[raw] ?? 'OTHER';
    return { code, message: `${query}: ${code === 'OTHER' ? raw : `${code} (${raw})`}` };
}

/**
 * One family with records is a good answer; NODATA for the other just means the name has one
 * family. With no records at all, the most telling error wins: NXDOMAIN, then any hard
 * failure, then NODATA (both families empty).
 */
function combineQueries(name: string, a: QueryOutcome, aaaa: QueryOutcome): NameResolution {
    const v4 = 'records' in a ? a.records : [];
    const v6 = 'records' in aaaa ? aaaa.records : [];
    const hard: FamilyErrors = {};
    if ('error' in a && a.error.code !== 'NODATA') hard.IPv4 = a.error;
    if ('error' in aaaa && aaaa.error.code !== 'NODATA') hard.IPv6 = aaaa.error;
    if (v4.length + v6.length > 0) return { v4, v6, familyErrors: hard };

    const errors = [hard.IPv4, hard.IPv6].filter((e): e is ResolutionError => e !== undefined);
    const error = errors.find((e) => e.code === 'NXDOMAIN') ??
        errors[0] ?? { code: 'NODATA', message: `${name}: no A or AAAA records` };
    return { v4, v6, familyErrors: {}, error };
}
