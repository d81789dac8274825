// Installs our CRDs (the YAML in charts/mesh-endpoints/crds/, as a user would apply it), and
// on request the Multi-Cluster Services CRDs the chart installs (files/mcs-crds/), into a test
// cluster and waits until the apiserver serves them.
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import type { KubeRest } from '../kube/rest.js';
import { isAlreadyExists } from '../kube/errors.js';
import { chartDir, CRD_PATH, waitEstablished } from './chart.js';

const crdDir = join(chartDir, 'crds');
/** Upstream's ServiceExport and ServiceImport (sigs.k8s.io/mcs-api) and the About API's ClusterProperty. */
export const mcsCrdDir = join(chartDir, 'files/mcs-crds');

interface Crd {
    metadata: { name: string; resourceVersion?: string };
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
            await rest.create(CRD_PATH, crd);
        } catch (err) {
            if (!isAlreadyExists(err)) throw err;
            const current = await rest.get<Crd>(`${CRD_PATH}/${crd.metadata.name}`);
            await rest.replace(`${CRD_PATH}/${crd.metadata.name}`, {
                ...crd,
                metadata: { ...crd.metadata, resourceVersion: current.metadata.resourceVersion },
            });
        }
        await waitEstablished(rest, crd.metadata.name);
    }
}
