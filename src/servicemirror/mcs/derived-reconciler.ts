// The derived Service reconciler: one imported Service's derived Service here and its slices,
// one set per source cluster (through the SliceOwner every controller owns its slices with). It
// plans from the caches (plan-derived.ts) and writes the derived Service first (the import's
// `ips` are its ClusterIPs: the import reconciler waits for it), then the slices of the Service
// as written. The echoes of its writes queue nothing.
import type { V1Service } from '@kubernetes/client-node';
import { writesPlan } from '../../endpointslice/reconciler.js';
import { systemClock } from '../../time/clock.js';
import type { Reconciler } from '../../kube/controller.js';
import { OwnWrites } from '../../kube/own-writes.js';
import { collectionPath, objectPath, Services } from '../../kube/resources.js';
import type { SliceOwner } from '../../kube/slice-owner.js';
import { confirmUnexported, type McsWriterDeps } from './import-reconciler.js';
import { membersOf } from './members.js';
import { planDerived, planDerivedSlices, type DerivedPlan, type DerivedPlanInput } from './plan-derived.js';
import { derivedServiceName, MCS_MANAGED_BY } from './types.js';

const QUERY = { fieldManager: MCS_MANAGED_BY };

export class DerivedReconciler implements Reconciler<string> {
    /** The derived Services this reconciler wrote. */
    readonly serviceWrites = new OwnWrites();

    constructor(
        private readonly deps: McsWriterDeps,
        private readonly slices: SliceOwner,
        private readonly maxEndpointsPerSlice: number,
    ) {}

    async reconcile(key: string): Promise<void> {
        const cluster = this.deps.serving();
        if (!cluster) return;
        const [namespace, name] = key.split('/') as [string, string];
        const { caches } = this.deps;
        const derivedName = derivedServiceName(name);
        const derived = caches.services.store.get(namespace, derivedName) as V1Service | undefined;
        const input: DerivedPlanInput = {
            namespace,
            name,
            members: membersOf(caches, namespace, name, cluster, systemClock.now()),
            existingImport: caches.imports.store.get(namespace, name),
            derived,
            // Throws while the cache lacks a slice write of ours (retried): planning from it would undo it.
            slices: this.slices.currentSlices({ namespace, name: derivedName, uid: derived?.metadata?.uid ?? '' }),
            maxEndpointsPerSlice: this.maxEndpointsPerSlice,
        };
        const plan = planDerived(input);
        if (plan.derived.action === 'delete' || plan.deletes.length > 0) await confirmUnexported(this.deps, namespace, name);
        const [current] = await Promise.all([this.writeDerived(plan, namespace, derivedName), plan.deletes.length > 0 ? this.slices.apply(writesPlan({ deletes: plan.deletes })) : undefined]);
        if (plan.endpoints && current) await this.slices.apply(planDerivedSlices(input, current, plan.endpoints));
    }

    /** The derived Service as it is once the plan's write is done; undefined when there is none. */
    private async writeDerived(plan: DerivedPlan, namespace: string, derivedName: string): Promise<V1Service | undefined> {
        const { rest, caches } = this.deps;
        const write = plan.derived;
        switch (write.action) {
            case 'none':
                return caches.services.store.get(namespace, derivedName) as V1Service | undefined;
            case 'create':
                return this.serviceWrites.write(namespace, derivedName, () => rest.create<V1Service>(collectionPath(Services, namespace), write.object, QUERY));
            case 'update':
                return this.serviceWrites.write(namespace, derivedName, () => rest.replace<V1Service>(objectPath(Services, namespace, derivedName), write.object, QUERY));
            case 'delete': {
                await rest.deleteExactly(objectPath(Services, namespace, derivedName), write.object.metadata?.uid);
                return undefined;
            }
        }
    }
}
