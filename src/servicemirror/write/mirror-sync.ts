// Converges one mirror: the local Service `<name>-<cluster>` and its EndpointSlices, for one
// remote Service of one Link (and, for a headless mirror, its endpoint mirrors). Reads caches,
// decides with the pure plans (plan/mirror-plan.ts, plan/headless.ts; the slices, which need
// the written Service, with plan/endpoints.ts and endpointslice/), then writes through
// tolerant calls, every slice write through SliceOwner. Returns what happened for the Link
// status; recording Events and status is the controller's job.
import type { V1Service } from '@kubernetes/client-node';
import { planSlices, writesPlan } from '../../endpointslice/reconciler.js';
import { LABEL_SERVICE_NAME } from '../../endpointslice/slice.js';
import type { Informer } from '../../kube/informer.js';
import type { KubeRest } from '../../kube/rest.js';
import { isAlreadyExists, isNotFound, StaleCacheError } from '../../kube/errors.js';
import { collectionPath, Namespaces, objectPath, Services } from '../../kube/resources.js';
import type { SliceOwner } from '../../kube/slice-owner.js';
import { OwnWrites } from '../../kube/own-writes.js';
import type { KubeObject } from '../../kube/store.js';
import type { CompactService } from '../cache/compact.js';
import { desiredMirrorGroups, mirrorAddressTypes, withoutReadiness, type MirrorGroups } from '../plan/endpoints.js';
import type { RemoteSlice } from '../link/remote-watch.js';
import type { RemoteCluster } from '../mcs/clusterset.js';
import { buildMirrorNamespace, hasReadyEndpoints, planMirrorService, type OwnerCheck } from '../plan/mirror.js';
import { CLUSTER_NAME_LABEL, HEADLESS_MIRROR_SVC_NAME_LABEL, linkKey, MIRRORED_SERVICE_LABEL, MIRROR_SLICE_MANAGED_BY, mirrorLinkKey, parseLinkKey } from '../api/keys.js';
import { planMirror } from '../plan/mirror-plan.js';
import type { ServiceMirrorMetrics } from '../link/metrics.js';
import type { MirrorOutcome, MirrorWarning } from '../plan/status.js';
import { endpointMirrorsToDelete, headlessMirrorGroups, planHeadless, type HeadlessPlan } from '../plan/headless.js';

/** The default owner of a mirror being deleted: a Service labelled a mirror of this cluster. */
function clusterOwner(cluster: string): OwnerCheck {
    return (svc) => {
        const labels = svc.metadata?.labels ?? {};
        return labels[MIRRORED_SERVICE_LABEL] === 'true' && labels[CLUSTER_NAME_LABEL] === cluster ? null : `not a mirror of cluster ${cluster}`;
    };
}

export interface MirrorSyncDeps {
    rest: KubeRest;
    owner: SliceOwner;
    services: Informer<CompactService>;
    namespaces: Informer<KubeObject>;
    metrics: ServiceMirrorMetrics;
    maxEndpointsPerSlice: number;
    /** Linkerd's --enable-headless-services: headless remotes with hostnames get headless mirrors. */
    enableHeadlessServices?: boolean;
    /** Linkerd's --enable-namespace-creation: a missing namespace is created, not waited for. */
    enableNamespaceCreation?: boolean;
    now?: () => number;
}


/** The stored Service, or why there is none: a Service of that name that is not ours is `NotOwned`. */
export type EnsuredService = { service: V1Service } | { problem: string; reason: 'MissingNamespace' | 'NotOwned' | 'Error' };

export class MirrorSync {
    private readonly query = { fieldManager: MIRROR_SLICE_MANAGED_BY };
    /** The Services we created or updated last, so their watch events do not queue a sync again. */
    readonly ownWrites = new OwnWrites();

    constructor(private readonly deps: MirrorSyncDeps) {}

    /**
     * Converges the mirror of remote Service namespace/remoteName. Returns the outcome for the
     * Link status, or null when the Service is not exported (any mirror of it is gone).
     */
    async sync(source: RemoteCluster, namespace: string, remoteName: string): Promise<MirrorOutcome | null> {
        const link = source.link;
        const cluster = link.spec.targetClusterName;
        const remote = source.services.get(namespace, remoteName);
        const remoteSlices = source.slices.byLabel(LABEL_SERVICE_NAME, remoteName, namespace);
        const plan = planMirror({
            link,
            namespace,
            remoteName,
            remote,
            remoteSlices,
            admitted: source.admitted(namespace, remoteName),
            stored: (name) => this.deps.services.store.get(namespace, name),
            enableHeadlessServices: this.deps.enableHeadlessServices === true,
        });
        const warnings = plan.warnings;
        const outcome = (mirrored: boolean, reason: MirrorOutcome['reason'], message: string, localName?: string): MirrorOutcome => ({
            namespace,
            remoteName,
            mirrored,
            reason,
            message,
            localName,
            ...(warnings.length > 0 && { warnings }),
        });
        if (plan.action === 'none') return null;
        if (plan.action === 'refuse') return outcome(false, 'InvalidService', plan.refused);
        const name = plan.name;
        if (plan.action === 'delete') {
            await this.deleteMirror(namespace, name, cluster, undefined, plan.owner, linkKey(link.metadata));
            return plan.refused === undefined ? null : outcome(false, 'InvalidService', plan.refused);
        }
        if (!(await this.ensureNamespace(namespace, cluster))) {
            return outcome(false, 'MissingNamespace', `namespace ${namespace} does not exist in this cluster; mirrored when it is created`);
        }
        const ensured = await this.ensureService(namespace, name, plan.desired, plan.owner);
        if ('problem' in ensured) return outcome(false, ensured.reason, ensured.problem);
        const mirror = ensured.service;
        const where = `${namespace}/${name}`;
        if (plan.headless) {
            // Planned once its Service is written: a recreate deletes the endpoint mirrors with the old one.
            const headless = planHeadless({ link, remote: remote!, remoteSlices, name, endpointMirrors: this.endpointMirrorsOf(namespace, name) });
            const applied = await this.applyHeadless(source, headless, mirror, remoteSlices);
            warnings.push(...headless.warnings, ...applied.warnings);
            return outcome(true, 'Mirrored', [`mirrored as ${where} (headless)`, ...applied.hostnames].join('; '), name);
        }
        await this.deleteEndpointMirrors(endpointMirrorsToDelete(this.endpointMirrorsOf(namespace, name), name, cluster, linkKey(link.metadata)), cluster);
        await this.applySlices(mirror, this.gatewayGroups(source, mirror, hasReadyEndpoints(remoteSlices)));
        return outcome(true, 'Mirrored', plan.mode === 'remote-discovery' ? `mirrored as ${where} (remote discovery)` : `mirrored as ${where}`, name);
    }

    /**
     * Whether the namespace exists here, creating it (labelled as Linkerd does) when namespace
     * creation is on. A namespace is never updated or deleted: it may hold anything by now.
     */
    async ensureNamespace(namespace: string, cluster: string): Promise<boolean> {
        if (this.deps.namespaces.store.get(undefined, namespace)) return true;
        if (!this.deps.enableNamespaceCreation) return false;
        try {
            await this.deps.rest.create(collectionPath(Namespaces), buildMirrorNamespace(namespace, cluster), this.query);
        } catch (err) {
            if (!isAlreadyExists(err)) throw err;
        }
        return true;
    }

    private endpointMirrorsOf(namespace: string, headlessName: string): V1Service[] {
        // The controller indexes its Services by this label.
        return this.deps.services.store.byLabel(HEADLESS_MIRROR_SVC_NAME_LABEL, headlessName, namespace);
    }

    /**
     * Creates, updates or recreates the mirror Service as planMirrorService decides; the stored
     * object comes back. A Service the cache does not hold (it holds only Services labelled as
     * mirrors) is learnt of when the create finds it, and planned again as it is stored.
     */
    async ensureService(namespace: string, name: string, desired: V1Service, owner: OwnerCheck): Promise<EnsuredService> {
        const path = objectPath(Services, namespace, name);
        let local: V1Service | undefined = this.deps.services.store.get(namespace, name);
        let plan = planMirrorService(local, desired, owner);
        if (plan.action === 'create') {
            try {
                return { service: await this.createService(namespace, desired) };
            } catch (err) {
                if (isNotFound(err)) return { reason: 'MissingNamespace', problem: `namespace ${namespace} does not exist in this cluster` };
                if (!isAlreadyExists(err)) throw err;
                local = await this.deps.rest.get<V1Service>(path);
                plan = planMirrorService(local, desired, owner);
            }
        }
        if (plan.action === 'refuse') return { reason: 'NotOwned', problem: plan.problem };
        if (plan.action === 'create') throw new StaleCacheError(`Service ${namespace}/${name} was deleted while being created`);
        if (plan.action === 'keep') return { service: local! };
        if (plan.action === 'recreate') {
            const cluster = desired.metadata?.labels?.[CLUSTER_NAME_LABEL];
            // A federated Service belongs to no one cluster and has no slices.
            if (cluster === undefined) await this.deleteService(local!);
            else await this.deleteMirror(namespace, name, cluster, local, owner);
            return { service: await this.createService(namespace, desired) };
        }
        // The cache holds only what the mirror reads (compact.ts); the update starts from the
        // Service as stored, at the version the decision was made from.
        const whole = await this.deps.rest.get<V1Service>(path);
        if (whole.metadata?.resourceVersion !== local!.metadata?.resourceVersion) {
            // The informer saw this answer too: if its watch stays silent now, it is restarted.
            throw new StaleCacheError(`Service ${namespace}/${name} changed since it was cached`);
        }
        const { managedFields: _, ...metadata } = whole.metadata!;
        const spec: V1Service['spec'] = { ...whole.spec, type: desired.spec?.type, ports: desired.spec?.ports };
        delete spec.selector;
        if (desired.spec?.ipFamilyPolicy) spec.ipFamilyPolicy = desired.spec.ipFamilyPolicy;
        if (desired.spec?.ipFamilies) spec.ipFamilies = desired.spec.ipFamilies;
        const updated: V1Service = { ...whole, metadata: { ...metadata, labels: desired.metadata?.labels, annotations: desired.metadata?.annotations }, spec };
        // resourceVersion rides along: a conflict means someone wrote since our read; retried.
        const stored = await this.ownWrites.write(namespace, name, () => this.deps.rest.replace<V1Service>(path, updated, this.query));
        this.deps.metrics.serviceWrites.inc({ operation: 'update' });
        return { service: stored };
    }

    private async createService(namespace: string, desired: V1Service): Promise<V1Service> {
        const created = await this.ownWrites.write(namespace, desired.metadata!.name!, () =>
            this.deps.rest.create<V1Service>(collectionPath(Services, namespace), desired, this.query),
        );
        this.deps.metrics.serviceWrites.inc({ operation: 'create' });
        return created;
    }

    /** The slices of a stored mirror (or endpoint mirror) at the gateway as it is now. */
    private gatewayGroups(source: RemoteCluster, mirror: V1Service, remoteHasReadyEndpoints: boolean): MirrorGroups {
        return desiredMirrorGroups({
            mirror,
            link: source.link,
            gatewayAddresses: source.gatewayAddresses(mirrorAddressTypes(mirror), (this.deps.now ?? Date.now)()),
            remoteHasReadyEndpoints,
            gatewayAlive: source.gatewayAlive,
        });
    }

    /**
     * Writes planHeadless's plan past the headless mirror's Service. Returns, for the Link
     * status, the hostnames left out and why, and the endpoint mirror names taken by Services
     * not ours.
     */
    private async applyHeadless(source: RemoteCluster, plan: HeadlessPlan, mirror: V1Service, remoteSlices: readonly RemoteSlice[]): Promise<{ hostnames: string[]; warnings: MirrorWarning[] }> {
        const result = { hostnames: [...plan.problems], warnings: [] as MirrorWarning[] };
        const stored = new Map<string, V1Service>();
        for (const want of plan.mirrors) {
            const ensured = await this.ensureService(mirror.metadata!.namespace!, want.service.metadata!.name!, want.service, plan.owner);
            if ('problem' in ensured) {
                result.hostnames.push(`hostname ${JSON.stringify(want.hostname)}: ${ensured.problem}`);
                if (ensured.reason === 'NotOwned') result.warnings.push({ reason: 'NotOwned', message: `hostname ${JSON.stringify(want.hostname)} has no endpoint mirror: ${ensured.problem}` });
                continue;
            }
            stored.set(want.hostname, ensured.service);
            await this.applySlices(ensured.service, this.gatewayGroups(source, ensured.service, want.ready));
        }
        await this.deleteEndpointMirrors(plan.deletes, source.link.spec.targetClusterName);
        await this.applySlices(mirror, headlessMirrorGroups({ mirror, link: source.link, remoteSlices, endpointMirrors: stored }));
        return result;
    }

    private async deleteEndpointMirrors(endpointMirrors: readonly V1Service[], cluster: string): Promise<void> {
        for (const svc of endpointMirrors) await this.deleteMirror(svc.metadata!.namespace!, svc.metadata!.name!, cluster, svc);
    }

    /** Plans the slices of a stored mirror Service from its cached slices, then writes them. */
    async applySlices(mirror: V1Service, groups: MirrorGroups): Promise<void> {
        const { namespace, name, uid, labels } = mirror.metadata!;
        const owner = { name: name!, namespace: namespace!, uid: uid!, labels: labels ?? {}, headless: mirror.spec?.clusterIP === 'None' };
        const plan = planSlices({
            owner,
            addressTypes: groups.addressTypes,
            desired: groups.groups,
            existing: this.deps.owner.currentSlices(owner),
            maxEndpointsPerSlice: this.deps.maxEndpointsPerSlice,
            managedBy: MIRROR_SLICE_MANAGED_BY,
            extraLabels: groups.extraLabels,
            annotations: groups.annotations,
        });
        await this.deps.owner.apply(plan);
    }

    /**
     * Deletes the mirror's slices, then the mirror Service. Slices go first and explicitly:
     * garbage collection may be slow or (in a bare control plane) absent, and a slice of a
     * deleted mirror would keep routing to the gateway. Only objects labelled with this
     * cluster name are touched, and nothing at all when the Service under this name is not
     * one `owner` may change (by default: labelled a mirror of this cluster).
     */
    async deleteMirror(namespace: string, name: string, cluster: string, known?: V1Service, owner: OwnerCheck = clusterOwner(cluster), link?: string): Promise<void> {
        const local = known ?? this.deps.services.store.get(namespace, name);
        if (local && owner(local) !== null) return;
        // Endpoint mirrors of another Link's headless mirror of this name stay (this one may not even exist).
        const linkOf = link ?? (local && mirrorLinkKey(local));
        await this.deleteEndpointMirrors(endpointMirrorsToDelete(this.endpointMirrorsOf(namespace, name), name, cluster, linkOf), cluster);
        // A slice we just created may not be in the cache yet (currentSlices throws): deleting
        // now would leave it behind. Without the Service there is no uid to check against.
        const uid = local?.metadata?.uid;
        const slices = uid ? this.deps.owner.currentSlices({ namespace, name, uid }) : this.deps.owner.slicesOf(namespace, name);
        await this.deps.owner.deleteAll(slices.filter((s) => s.metadata?.labels?.[CLUSTER_NAME_LABEL] === cluster));
        if (local) await this.deleteService(local);
    }

    /**
     * Every endpoint of these mirrors not ready (their Link has not been served for longer
     * than the stale window), planned from their cached slices; returns the writes made.
     */
    async withdrawReadiness(mirrors: readonly V1Service[]): Promise<number> {
        const updates = mirrors.flatMap(({ metadata }) =>
            this.deps.owner.currentSlices({ namespace: metadata!.namespace!, name: metadata!.name!, uid: metadata!.uid! }).flatMap((slice) => withoutReadiness(slice) ?? []),
        );
        return this.deps.owner.apply(writesPlan({ updates }));
    }

    /** Deletes this very Service (uid precondition); gone already is fine. */
    async deleteService(service: V1Service): Promise<void> {
        const { namespace, name, uid } = service.metadata!;
        if (await this.deps.rest.deleteExactly(objectPath(Services, namespace!, name!), uid)) this.deps.metrics.serviceWrites.inc({ operation: 'delete' });
        this.deps.owner.forgetService(namespace!, name!);
    }

    /**
     * Every mirror and slice of one cluster name: its Link is gone. Mirrors that name a Link
     * of another namespace belong to that namespace's controller.
     */
    async deleteClusterMirrors(cluster: string, linkNamespace: string): Promise<number> {
        const services = this.deps.services.store.byLabel(CLUSTER_NAME_LABEL, cluster).filter((svc) => {
            const link = mirrorLinkKey(svc);
            return link === undefined || parseLinkKey(link)?.namespace === linkNamespace;
        });
        for (const svc of services) await this.deleteMirror(svc.metadata!.namespace!, svc.metadata!.name!, cluster, svc);
        // Slices whose Service is already gone.
        const leftover = this.deps.owner.informer.store
            .byLabel(CLUSTER_NAME_LABEL, cluster)
            .filter((slice) => !this.deps.services.store.get(slice.metadata?.namespace, slice.metadata?.labels?.[LABEL_SERVICE_NAME] ?? ''));
        await this.deps.owner.deleteAll(leftover);
        return services.length;
    }
}
