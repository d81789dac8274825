// The ServiceImport reconciler: one imported Service's ServiceImport here, its status, and the
// conditions of this cluster's own ServiceExport of it (the other clusters' controllers write
// theirs). It plans from the caches (plan-import.ts) and writes at most: the import (created
// once the derived Service has its ClusterIPs, so with its `ips` complete), then its status and
// the export's conditions, side by side. The echoes of its writes queue nothing.
import type { V1Service } from '@kubernetes/client-node';
import { systemClock } from '../../time/clock.js';
import type { Reconciler } from '../../kube/controller.js';
import { isNotFound, StaleCacheError } from '../../kube/errors.js';
import type { EventSink } from '../../kube/events.js';
import type { Logger } from '../../kube/log.js';
import { OwnWrites } from '../../kube/own-writes.js';
import type { KubeRest } from '../../kube/rest.js';
import { collectionPath, objectPath, ServiceExports, ServiceImports, Services } from '../../kube/resources.js';
import type { KubeObject } from '../../kube/store.js';
import { membersOf, type McsCaches } from './members.js';
import { conditionsChanged, planImport, type ImportPlan } from './plan-import.js';
import { derivedServiceName, MCS_MANAGED_BY, type ServiceExport, type ServiceImport } from './types.js';

export interface McsWriterDeps {
    rest: KubeRest;
    caches: McsCaches;
    /** This cluster's name while MCS is served; undefined: every key waits for the next resync. */
    serving(): string | undefined;
    log: Logger;
    events: EventSink;
}

const QUERY = { fieldManager: MCS_MANAGED_BY };

/**
 * Before deleting what the local ServiceExport's absence from the cache seems to allow, the
 * apiserver is asked: a replica that just took the lease may hold a cache its stalled watch left
 * behind, and an import deleted on such a guess comes back with another ClusterSetIP. Throws
 * StaleCacheError (retried with backoff) when the export exists.
 */
export async function confirmUnexported(deps: McsWriterDeps, namespace: string, name: string): Promise<void> {
    if (deps.caches.exports.store.get(namespace, name)) return;
    try {
        await deps.rest.get(objectPath(ServiceExports, namespace, name));
    } catch (err) {
        if (isNotFound(err)) return;
        throw err;
    }
    throw new StaleCacheError(`ServiceExport ${namespace}/${name} exists but is not in the cache yet: nothing of its import is deleted`);
}

/**
 * Before an import is created with the derived Service's ClusterIPs as its `ips`, the apiserver
 * is asked that this derived Service still exists: the cache may still hold one deleted a moment
 * ago (the soak saw an import created with such an address, then changed to the new derived
 * Service's: a ClusterSetIP that changed). Throws StaleCacheError (retried) when it is gone or
 * was made anew.
 */
async function confirmDerived(deps: McsWriterDeps, namespace: string, name: string): Promise<void> {
    const cached = deps.caches.services.store.get(namespace, derivedServiceName(name));
    const live = await deps.rest.get<V1Service>(objectPath(Services, namespace, derivedServiceName(name))).catch((err: unknown) => {
        if (isNotFound(err)) return undefined;
        throw err;
    });
    if (!live || live.metadata?.uid !== cached?.metadata?.uid) throw new StaleCacheError(`the derived Service of ${namespace}/${name} is not the one cached yet: its import waits`);
}

export class ImportReconciler implements Reconciler<string> {
    /** The imports this reconciler wrote, and the ServiceExport statuses. */
    readonly importWrites = new OwnWrites();
    readonly exportWrites = new OwnWrites();

    constructor(private readonly deps: McsWriterDeps) {}

    eventTarget(key: string): KubeObject | undefined {
        const [namespace, name] = key.split('/') as [string, string];
        return this.deps.caches.exports.store.get(namespace, name);
    }

    async reconcile(key: string): Promise<void> {
        const cluster = this.deps.serving();
        if (!cluster) return;
        const [namespace, name] = key.split('/') as [string, string];
        const { caches } = this.deps;
        const existingImport = caches.imports.store.get(namespace, name);
        const plan = planImport({
            namespace,
            name,
            members: membersOf(caches, namespace, name, cluster, systemClock.now()),
            existingImport,
            derived: caches.services.store.get(namespace, derivedServiceName(name)) as V1Service | undefined,
            now: new Date(systemClock.now()).toISOString(),
        });
        const written = await this.writeImport(plan, namespace, name);
        const current = written ?? existingImport;
        await Promise.all([
            plan.importStatus && current && plan.import.action !== 'delete' ? this.writeImportStatus(current, plan.importStatus) : undefined,
            this.writeExportStatus(plan, caches.exports.store.get(namespace, name), cluster),
        ]);
        this.report(plan, namespace, name);
    }

    /** The import as written, or undefined when it was not written (or deleted). */
    private async writeImport(plan: ImportPlan, namespace: string, name: string): Promise<ServiceImport | undefined> {
        const { rest, log } = this.deps;
        const write = plan.import;
        if (write.action === 'none') return undefined;
        if (write.action === 'delete') {
            await confirmUnexported(this.deps, namespace, name);
            const uid = write.object.metadata?.uid;
            await rest.deleteExactly(objectPath(ServiceImports, namespace, name), uid);
            log.info({ namespace, name }, 'no cluster exports it any more: ServiceImport deleted');
            return undefined;
        }
        if (write.action === 'create') await confirmDerived(this.deps, namespace, name);
        const send =
            write.action === 'create'
                ? () => rest.create<ServiceImport>(collectionPath(ServiceImports, namespace), write.object, QUERY)
                : () => rest.replace<ServiceImport>(objectPath(ServiceImports, namespace, name), write.object, QUERY);
        const written = await this.importWrites.write(namespace, name, send);
        if (write.action === 'create') log.info({ namespace, name, exporters: plan.exporters, ips: written.spec?.ips }, 'ServiceImport created');
        return written;
    }

    private async writeImportStatus(current: ServiceImport, status: NonNullable<ImportPlan['importStatus']>): Promise<void> {
        const { namespace, name } = current.metadata as { namespace: string; name: string };
        await this.importWrites.write(namespace, name, () =>
            this.deps.rest.replace<ServiceImport>(objectPath(ServiceImports, namespace, name, 'status'), { ...current, status }, QUERY),
        );
    }

    /** This cluster's ServiceExport says what the plan found. */
    private async writeExportStatus(plan: ImportPlan, exp: ServiceExport | undefined, cluster: string): Promise<void> {
        const conditions = plan.exportConditions.get(cluster);
        if (!exp || !conditions || !conditionsChanged(exp, conditions)) return;
        const ours = new Set(conditions.map((c) => c.type));
        const status = { conditions: [...(exp.status?.conditions ?? []).filter((c) => !ours.has(c.type)), ...conditions] };
        const { namespace, name } = exp.metadata as { namespace: string; name: string };
        await this.exportWrites.write(namespace, name, () => this.deps.rest.replace<ServiceExport>(objectPath(ServiceExports, namespace, name, 'status'), { ...exp, status }, QUERY));
    }

    private report(plan: ImportPlan, namespace: string, name: string): void {
        if (plan.problems.length === 0) return;
        const message = plan.problems.join('; ');
        this.deps.log.warn({ namespace, name, problem: message }, 'import not converged');
        const exp = this.deps.caches.exports.store.get(namespace, name);
        if (exp) this.deps.events.record(exp, 'Warning', 'ImportBlocked', message);
    }
}
