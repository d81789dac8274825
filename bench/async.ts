// The benchmarks' small async helpers, one copy each.

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Runs `each` over `items`, at most `concurrency` at a time. */
export async function inParallel<T>(items: readonly T[], concurrency: number, each: (item: T) => Promise<void>): Promise<void> {
    let next = 0;
    const worker = async () => {
        while (next < items.length) await each(items[next++]!);
    };
    await Promise.all(Array.from({ length: concurrency }, worker));
}
