// The objects cluster-scale and its write baselines lay out: Services of ExternalWorkloads, named
// and addressed the same way everywhere, and the reads a controller's informers make of them at start-up.
import type { BenchCluster } from './local-cluster.js';
import { collectionPath, ExternalWorkloads, Services } from '../src/kube/resources.js';
import { inParallel } from './async.js';

/** How many workloads are created at a time. */
const CONCURRENCY = 16;

export const wlName = (service: string, i: number) => `${service}-vm-${String(i).padStart(5, '0')}`;
/** Addresses from 10/8, distinct per (service, workload); never connected to. */
export const ipOf = (n: number) => `10.${(n >> 16) & 255}.${(n >> 8) & 255}.${(n & 255) || 1}`;

export interface ServiceSpec {
    name: string;
    workloads: number;
}

/** Endpoints per slice the controller writes (upstream's default). */
const SLICE_SIZE = 100;
export const slicesFor = (workloads: number) => Math.ceil(workloads / SLICE_SIZE);
/** The endpoints of each slice an initial sync of `services` writes, in their order. */
export const sliceSizesOf = (services: ServiceSpec[]) =>
    services.flatMap((s) => Array.from({ length: slicesFor(s.workloads) }, (_, k) => Math.min(SLICE_SIZE, s.workloads - k * SLICE_SIZE)));

/**
 * The Services and their ExternalWorkloads (without status: not ready until a benchmark flips
 * them, half the set-up writes). Returns the workloads made.
 */
export async function createClusterScaleObjects(cluster: BenchCluster, ns: string, services: ServiceSpec[]): Promise<number> {
    let n = 0;
    const workloads = services.flatMap((svc) => Array.from({ length: svc.workloads }, (_, i) => ({ service: svc.name, name: wlName(svc.name, i), ip: ipOf(++n) })));
    await inParallel(workloads, CONCURRENCY, async (w) => {
        await cluster.admin.create(collectionPath(ExternalWorkloads, ns), {
            apiVersion: 'workload.linkerd.io/v1beta1',
            kind: 'ExternalWorkload',
            metadata: { name: w.name, labels: { app: w.service } },
            spec: {
                meshTLS: { identity: `${w.name}.${ns}.serviceaccount.identity.linkerd.cluster.local`, serverName: w.name },
                workloadIPs: [{ ip: w.ip }],
                ports: [{ name: 'http', port: 8080 }],
            },
        });
    });
    await inParallel(services, CONCURRENCY, async (svc) => {
        await cluster.admin.create(collectionPath(Services, ns), {
            apiVersion: 'v1',
            kind: 'Service',
            metadata: { name: svc.name },
            spec: { selector: { app: svc.name }, ports: [{ name: 'http', port: 80, targetPort: 'http' }] },
        });
    });
    return workloads.length;
}

/** Every ExternalWorkload and Service of `ns`, in pages of 500 as the controller's informers list them at start-up. */
export async function listAsInformers(cluster: BenchCluster, ns: string): Promise<void> {
    for (const path of [collectionPath(ExternalWorkloads, ns), collectionPath(Services, ns)]) {
        let token: string | undefined;
        do {
            const page = await cluster.admin.get<{ metadata: { continue?: string } }>(path, { limit: 500, continue: token });
            token = page.metadata.continue || undefined;
        } while (token);
    }
}
