// Seeded randomness for the soak: one seed replays the same sequence of choices (the timing
// of a loaded machine still varies). mulberry32: 32 bits of state, plenty for picking actions.
export class Random {
    private state: number;

    constructor(readonly seed: number) {
        this.state = seed >>> 0;
    }

    /** In [0, 1). */
    next(): number {
        this.state = (this.state + 0x6d2b79f5) >>> 0;
        let t = this.state;
        t = Math.imul(t ^ (t >>> 15), t | 1);
        t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
        return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    }

    /** An integer in [min, max]. */
    int(min: number, max: number): number {
        return min + Math.floor(this.next() * (max - min + 1));
    }

    chance(p: number): boolean {
        return this.next() < p;
    }

    pick<T>(items: readonly T[]): T {
        if (items.length === 0) throw new Error('pick from nothing');
        return items[Math.floor(this.next() * items.length)]!;
    }

    /** A key of `weights`, with probability proportional to its weight. */
    weighted<K extends string>(weights: Record<K, number>): K {
        const entries = Object.entries(weights) as [K, number][];
        let left = this.next() * entries.reduce((sum, [, w]) => sum + w, 0);
        for (const [key, weight] of entries) if ((left -= weight) < 0) return key;
        return entries.at(-1)![0];
    }
}

/** SOAK_SEED when given (to replay a run), else a fresh one. */
export function soakSeed(): number {
    const given = process.env.SOAK_SEED;
    if (given !== undefined && given !== '') {
        const seed = Number(given);
        if (!Number.isInteger(seed) || seed < 0) throw new Error(`SOAK_SEED must be a non-negative integer, not ${given}`);
        return seed;
    }
    return Math.floor(Math.random() * 2 ** 31);
}
