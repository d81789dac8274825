// Installs our CRDs (the YAML in charts/mesh-endpoints/crds/, as a user would apply it), and
// on request the Multi-Cluster Services CRDs the chart installs (files/mcs-crds/), into a test
// cluster and waits until the apiserver serves them.
import { readFileSync, readdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments } from 'yaml';
import { isAlreadyExists, type KubeRest } from '../kube/rest.js';
import { eventually } from './harness.js';

const chartDir = resolve(dirname(fileURLToPath(import.meta.url)), '../../charts/mesh-endpoints');
const crdDir = join(chartDir, 'crds');
/** Upstream's ServiceExport and ServiceImport (sigs.k8s.io/mcs-api) and the About API's ClusterProperty. */
export const mcsCrdDir = join(chartDir, 'files/mcs-crds');
const crdPath = '/apis/apiextensions.k8s.io/v1/customresourcedefinitions';

interface Crd {
    metadata: { name: string; resourceVersion?: string };
    status?: { conditions?: { type: string; status: string }[] };
}

function readDir(dir: string): Crd[] {
    return readdirSync(dir)
        .filter((f) => f.endsWith('.yaml'))
        .sort()
        .flatMap((f) => parseAllDocuments(readFileSync(join(dir, f), 'utf8')).map((d) => d.toJS() as Crd))
        .filter(Boolean);
}

/** The product's own CRDs (ExternalWorkload, Link). */
export function readCrds(): Crd[] {
    return readDir(crdDir);
}

/** ServiceExport, ServiceImport (multicluster.x-k8s.io) and ClusterProperty (about.k8s.io). */
export function readMcsCrds(): Crd[] {
    return readDir(mcsCrdDir);
}

/** Creates or replaces each CRD of ours (optionally transformed) and waits for Established. */
export async function installCrds(rest: KubeRest, transform: (crd: Crd) => Crd = (c) => c): Promise<void> {
    await apply(rest, readCrds().map(transform));
}

/** The Multi-Cluster Services CRDs, as the chart installs them by default (mcs.installCRDs). */
export async function installMcsCrds(rest: KubeRest): Promise<void> {
    await apply(rest, readMcsCrds());
}

async function apply(rest: KubeRest, crds: Crd[]): Promise<void> {
    for (const crd of crds) {
        try {
            await rest.create(crdPath, crd);
        } catch (err) {
            if (!isAlreadyExists(err)) throw err;
            const current = await rest.get<Crd>(`${crdPath}/${crd.metadata.name}`);
            await rest.replace(`${crdPath}/${crd.metadata.name}`, {
                ...crd,
                metadata: { ...crd.metadata, resourceVersion: current.metadata.resourceVersion },
            });
        }
        await eventually(`CRD ${crd.metadata.name} established`, async () => {
            const got = await rest.get<Crd>(`${crdPath}/${crd.metadata.name}`);
            return got.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True') ?? false;
        });
    }
}
