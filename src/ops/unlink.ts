// `unlink`: what removing a Link means, as `linkerd multicluster unlink` prints it: the Link,
// its credentials Secret, Linkerd destination's Secret for the cluster (when `link` wrote one),
// its mirror Services and their EndpointSlices, as a YAML stream for `kubectl delete -f -`.
// Pure: the command reads the objects and prints or deletes these.
import type { V1EndpointSlice, V1Service } from '@kubernetes/client-node';
import { stringify } from 'yaml';
import { LABEL_MANAGED_BY, LABEL_SERVICE_NAME } from '../endpointslice/slice.js';
import { MIRROR_SLICE_MANAGED_BY } from '../servicemirror/api/keys.js';
import { LINK_GROUP } from '../servicemirror/api/link.js';
import { DESTINATION_CLUSTER_NAME_LABEL } from '../servicemirror/link/remote-access.js';
import { mirrorsOfLink } from './links-report.js';
import { compare } from './workloads-report.js';

/** Just enough of an object to name it for deletion. */
export interface ObjectToDelete {
    apiVersion: string;
    kind: string;
    metadata: { name: string; namespace: string };
}

interface RawLink {
    apiVersion?: string;
    metadata?: { name?: string; namespace?: string };
    spec?: { targetClusterName?: string; clusterCredentialsSecret?: string };
}

/**
 * The Link of a cluster: the one named after it (as `link` names them), else the one whose
 * targetClusterName it is. An error names the Links there are.
 */
export function findLink(links: readonly unknown[], clusterName: string, namespace: string): { link: RawLink } | { error: string } {
    const raw = links as RawLink[];
    const link = raw.find((l) => l.metadata?.name === clusterName) ?? raw.find((l) => l.spec?.targetClusterName === clusterName);
    if (link) return { link };
    const names = raw.map((l) => l.metadata?.name ?? '').sort(compare);
    return { error: `no Link for cluster ${clusterName} in namespace ${namespace} (Links there: ${names.join(', ') || 'none'})` };
}

/** A Secret of the control-plane namespace, as read: the destination's is the one labelled with the cluster. */
export interface DestinationSecretObject {
    metadata?: { name?: string; namespace?: string; labels?: Record<string, string> };
}

/**
 * In deletion order: the Link first, so a running service mirror stops serving it (and
 * deletes the mirrors itself) before anything else goes; then the Secrets (the destination's
 * only if it is labelled as this cluster's: a Secret of that name for another cluster stays),
 * the mirrors and their slices, which matter when no service mirror runs. Invalid Links are
 * unlinked too: only the names are read.
 */
export function unlinkObjects(link: RawLink, services: readonly V1Service[], slices: readonly V1EndpointSlice[], destinationSecret?: DestinationSecretObject): ObjectToDelete[] {
    const namespace = link.metadata?.namespace ?? '';
    const name = link.metadata?.name ?? '';
    const objects: ObjectToDelete[] = [{ apiVersion: link.apiVersion ?? `${LINK_GROUP}/v1alpha3`, kind: 'Link', metadata: { name, namespace } }];
    const secret = link.spec?.clusterCredentialsSecret ?? '';
    if (secret !== '') objects.push({ apiVersion: 'v1', kind: 'Secret', metadata: { name: secret, namespace } });
    const cluster = link.spec?.targetClusterName ?? '';
    const destination = destinationSecret?.metadata;
    if (cluster !== '' && destination?.name && destination.namespace && destination.labels?.[DESTINATION_CLUSTER_NAME_LABEL] === cluster) {
        objects.push({ apiVersion: 'v1', kind: 'Secret', metadata: { name: destination.name, namespace: destination.namespace } });
    }
    const mirrors = mirrorsOfLink({ namespace, name, targetClusterName: link.spec?.targetClusterName ?? '' }, services);
    const named = (o: { metadata?: { name?: string; namespace?: string } }) => ({ name: o.metadata?.name ?? '', namespace: o.metadata?.namespace ?? '' });
    const byKey = (a: ObjectToDelete, b: ObjectToDelete) => compare(`${a.metadata.namespace}/${a.metadata.name}`, `${b.metadata.namespace}/${b.metadata.name}`);
    objects.push(...mirrors.map((svc): ObjectToDelete => ({ apiVersion: 'v1', kind: 'Service', metadata: named(svc) })).sort(byKey));
    const mirrorKeys = new Set(mirrors.map((svc) => `${svc.metadata?.namespace}/${svc.metadata?.name}`));
    const mirrorSlices = slices.filter(
        (s) => s.metadata?.labels?.[LABEL_MANAGED_BY] === MIRROR_SLICE_MANAGED_BY && mirrorKeys.has(`${s.metadata?.namespace}/${s.metadata?.labels?.[LABEL_SERVICE_NAME]}`),
    );
    objects.push(...mirrorSlices.map((s): ObjectToDelete => ({ apiVersion: 'discovery.k8s.io/v1', kind: 'EndpointSlice', metadata: named(s) })).sort(byKey));
    return objects;
}

/** One YAML document per object, for `kubectl delete --ignore-not-found -f -`. */
export function unlinkYaml(objects: readonly ObjectToDelete[]): string {
    return objects.map((o) => stringify(o)).join('---\n');
}
