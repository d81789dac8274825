// The Link status as the service mirror keeps it: the latest outcome of every mirror of each
// Link, and the write of status.mirrorServices + status.gatewayResolution (a merge patch on
// the status subresource) when, and only when, it differs from what is stored.
import type { Informer } from '../kube/informer.js';
import type { KubeRest } from '../kube/rest.js';
import { Links, objectPath } from '../kube/resources.js';
import { NotLeaderError } from '../kube/slice-writer.js';
import type { Logger } from '../kube/log.js';
import type { KubeObject } from '../kube/store.js';
import { recordIntervalMs, type DnsPolicy } from '../dns/name-state.js';
import { gatewayResolutionStatus } from '../dns/resolution-status.js';
import type { LinkWatch } from './controller-watch.js';
import type { LinkEvent } from './gateway-events.js';
import type { LinkStatus, ServiceStatus } from './link.js';
import type { ServiceMirrorMetrics } from './metrics.js';
import {
    desiredLinkStatus,
    linkStatusDiffers,
    linkStatusPatch,
    mirrorServiceStatus,
    sameServiceStatus,
    type MirrorOutcome,
} from './status.js';

export interface LinkStatusBookDeps {
    rest: KubeRest;
    links: Informer<KubeObject & { status?: LinkStatus }>;
    namespace: string;
    isLeader: () => boolean;
    metrics: ServiceMirrorMetrics;
    policy: DnsPolicy;
    /** Asks for a status write of the Link soon (batched by the controller's queue). */
    statusChanged: (link: string) => void;
    event: (link: string, event: LinkEvent) => void;
    logger: Logger;
    now?: () => number;
}

export class LinkStatusBook {
    /** Link name → remote "namespace/name" → its status entry. */
    private readonly entries = new Map<string, Map<string, ServiceStatus>>();
    /** Link name → uid and the status our last write returned: the informer may not have it yet. */
    private readonly written = new Map<string, { uid: string; status: LinkStatus }>();

    constructor(private readonly deps: LinkStatusBookDeps) {}

    private now(): number {
        return (this.deps.now ?? Date.now)();
    }

    /** Records how a mirror sync went; reports a failure once per change of reason. */
    record(watch: LinkWatch, outcome: MirrorOutcome | null, remoteKey: string): void {
        const link = watch.link.metadata.name;
        let entries = this.entries.get(link);
        if (!entries) this.entries.set(link, (entries = new Map()));
        const current = entries.get(remoteKey);
        if (outcome === null) {
            if (entries.delete(remoteKey)) this.changed(watch, entries);
            return;
        }
        const next = mirrorServiceStatus(outcome, current ?? this.stored(link, remoteKey), this.now());
        if (current !== undefined && sameServiceStatus(current, next)) return;
        const before = current?.conditions?.[0];
        if (!outcome.mirrored && (before?.reason !== outcome.reason || before.message !== outcome.message)) {
            this.deps.event(link, { type: 'Warning', reason: outcome.reason, message: `remote Service ${remoteKey} not mirrored: ${outcome.message}` });
        }
        entries.set(remoteKey, next);
        this.changed(watch, entries);
    }

    forget(link: string): void {
        this.entries.delete(link);
        this.written.delete(link);
    }

    private changed(watch: LinkWatch, entries: Map<string, ServiceStatus>): void {
        const mirrored = [...entries.values()].filter((e) => e.conditions?.[0]?.status === 'True').length;
        this.deps.metrics.mirroredServices.set(
            { link: watch.link.metadata.name, target_cluster_name: watch.link.spec.targetClusterName },
            mirrored,
        );
        this.deps.statusChanged(watch.link.metadata.name);
    }

    /** The entry in the stored status, so a restart keeps transition times. */
    private stored(link: string, remoteKey: string): ServiceStatus | undefined {
        const obj = this.deps.links.store.get(this.deps.namespace, link);
        return obj?.status?.mirrorServices?.find((s) => `${s.remoteRef.namespace}/${s.remoteRef.name}` === remoteKey);
    }

    /** Writes the Link's status if it differs from both the stored one and our last write. */
    async write(watch: LinkWatch): Promise<boolean> {
        const name = watch.link.metadata.name;
        const obj = this.deps.links.store.get(this.deps.namespace, name);
        const uid = obj?.metadata?.uid;
        // Before the remote caches synced, the entries are incomplete: writing would drop some.
        if (!obj || !uid || !watch.synced) return false;
        const resolution = watch.link.gateway ? gatewayResolutionStatus(watch.entries, watch.nameStates, this.now(), this.deps.policy) : undefined;
        const desired = desiredLinkStatus(this.entries.get(name)?.values() ?? [], resolution);
        const written = this.written.get(name);
        const ours = written?.uid === uid ? written.status : undefined;
        const interval = recordIntervalMs(this.deps.policy);
        if (!linkStatusDiffers(obj.status, desired, interval) || (ours && !linkStatusDiffers(ours, desired, interval))) {
            this.deps.logger.debug({ link: name, mirrorServices: desired.mirrorServices?.length }, 'link status unchanged');
            return false;
        }
        if (!this.deps.isLeader()) throw new NotLeaderError();
        const stored = await this.deps.rest.mergePatch<{ status?: LinkStatus }>(
            objectPath(Links, this.deps.namespace, name, 'status'),
            linkStatusPatch(desired),
        );
        this.written.set(name, { uid, status: stored.status ?? {} });
        this.deps.metrics.statusWrites.inc({ link: name });
        this.deps.logger.debug({ link: name, mirrorServices: desired.mirrorServices?.length }, 'link status written');
        return true;
    }
}
