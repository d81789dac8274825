// Reads for the operator commands: whole lists (following `continue`), and the objects a
// Link report is built from. A resource whose CRD is not installed reads as undefined, so a
// command can say so instead of failing.
import type { V1EndpointSlice, V1Service } from '@kubernetes/client-node';
import { LABEL_MANAGED_BY } from '../endpointslice/slice.js';
import type { KubeRest, Query } from '../kube/rest.js';
import { isNotFound } from '../kube/errors.js';
import { apiVersionOf, collectionPath, EndpointSlices, Events, Links, Services, ServiceExports, ServiceImports } from '../kube/resources.js';
import { linkReport, type LinkEventObject, type LinkReport } from '../ops/links-report.js';
import { MIRROR_SLICE_MANAGED_BY, MIRRORED_SERVICE_LABEL } from '../servicemirror/api/keys.js';
import { MCS_MANAGED_BY, type ServiceExport, type ServiceImport } from '../servicemirror/mcs/types.js';
import { mcsReport, type McsReport } from '../ops/mcs-report.js';

export async function listAll<T>(rest: KubeRest, path: string, query: Query = {}): Promise<T[]> {
    const items: T[] = [];
    let next: string | undefined;
    do {
        const page = await rest.get<{ items?: T[]; metadata?: { continue?: string } }>(path, { ...query, limit: 500, continue: next });
        items.push(...(page.items ?? []));
        next = page.metadata?.continue || undefined;
    } while (next);
    return items;
}

/** The list, or undefined when the apiserver does not serve the resource (its CRD is missing). */
export const listIfServed = <T>(rest: KubeRest, path: string, query: Query = {}): Promise<T[] | undefined> => orUndefined(listAll<T>(rest, path, query));

/** The object, or undefined when it (or its resource) does not exist. */
export const getIfExists = <T>(rest: KubeRest, path: string): Promise<T | undefined> => orUndefined(rest.get<T>(path));

function orUndefined<T>(read: Promise<T>): Promise<T | undefined> {
    return read.catch((err: unknown) => {
        if (isNotFound(err)) return undefined;
        throw err;
    });
}

export interface LinksView {
    /** Undefined: the Link CRD is not installed. */
    links?: object[];
    reports: LinkReport[];
}

/** The Links of a namespace, or undefined when the Link CRD is not installed. */
export async function listLinks(rest: KubeRest, namespace: string): Promise<object[] | undefined> {
    // Items of a list may lack apiVersion and kind; parseLink wants both.
    const links = await listIfServed<object>(rest, collectionPath(Links, namespace));
    return links?.map((link) => ({ apiVersion: apiVersionOf(Links), kind: Links.kind, ...link }));
}

/** Every Link of the namespace, with its mirrors (in any namespace), their slices and the Link Events. */
export async function readLinks(rest: KubeRest, namespace: string): Promise<LinksView> {
    const links = await listLinks(rest, namespace);
    if (links === undefined || links.length === 0) return { links, reports: [] };
    const [{ services, slices }, events] = await Promise.all([
        readMirrors(rest),
        listAll<LinkEventObject>(rest, collectionPath(Events, namespace), { fieldSelector: 'involvedObject.kind=Link' }),
    ]);
    return { links, reports: links.map((link) => linkReport({ link, services, slices, events })) };
}

/** Every mirror Service and mirror EndpointSlice, in every namespace (a Link's are picked out in ops/). */
export async function readMirrors(rest: KubeRest): Promise<{ services: V1Service[]; slices: V1EndpointSlice[] }> {
    const [services, slices] = await Promise.all([
        listAll<V1Service>(rest, collectionPath(Services), { labelSelector: `${MIRRORED_SERVICE_LABEL}=true` }),
        listAll<V1EndpointSlice>(rest, collectionPath(EndpointSlices), { labelSelector: `${LABEL_MANAGED_BY}=${MIRROR_SLICE_MANAGED_BY}` }),
    ]);
    return { services, slices };
}

/** This cluster's ServiceExports and ServiceImports and the MCS slices, or undefined when the MCS CRDs are not installed. */
export async function readMcs(rest: KubeRest): Promise<McsReport | undefined> {
    const [exports, imports] = await Promise.all([listIfServed<ServiceExport>(rest, collectionPath(ServiceExports)), listIfServed<ServiceImport>(rest, collectionPath(ServiceImports))]);
    if (exports === undefined || imports === undefined) return undefined;
    const slices = await listAll<V1EndpointSlice>(rest, collectionPath(EndpointSlices), { labelSelector: `${LABEL_MANAGED_BY}=${MCS_MANAGED_BY}` });
    return mcsReport({ exports, imports, slices });
}
