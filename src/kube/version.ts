// Who is calling, as the apiserver's audit log and metrics show it: read once from package.json,
// apart from the transport that sends it so the CLI and tests can name it without a client.
import { readFileSync } from 'node:fs';

/** This package's version (package.json is two levels up from both src/kube and dist/kube). */
export const VERSION: string = (
    JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }
).version;

/** `mesh-endpoints/0.1.0 (external-workloads)`: who is calling, in the apiserver's audit log and metrics. */
export function userAgent(component?: string): string {
    return `mesh-endpoints/${VERSION}${component ? ` (${component})` : ''}`;
}
