// What @kubernetes/client-node's config module imports from node-fetch, for the CLI bundle
// (hack/bundle.ts): node-fetch 2 and its URL tables cost every process about 2 MB of heap,
// and neither import is used at start. Headers is node's own (the same interface) and fetch,
// used only by client-node's generated API clients, loads node-fetch on its first call.
// Both are reached only when used: node loads its fetch implementation (undici) on the first
// read of globalThis.Headers, which costs a process 13 MB of RSS.
import type nodeFetch from 'node-fetch';

export const Headers = function Headers(init?: HeadersInit): globalThis.Headers {
    return new globalThis.Headers(init);
} as unknown as typeof globalThis.Headers;

export default async function fetch(...args: Parameters<typeof nodeFetch>): ReturnType<typeof nodeFetch> {
    const { default: realFetch } = await import('node-fetch');
    return realFetch(...args);
}
