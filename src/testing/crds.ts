// Installs our CRDs (the YAML in charts/mesh-endpoints/crds/, as a user would apply it)
// into a test cluster and waits until the apiserver serves them.
import { readFileSync, readdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments } from 'yaml';
import { isAlreadyExists, type KubeRest } from '../kube/rest.js';
import { eventually } from './harness.js';

const crdDir = resolve(dirname(fileURLToPath(import.meta.url)), '../../charts/mesh-endpoints/crds');
const crdPath = '/apis/apiextensions.k8s.io/v1/customresourcedefinitions';

interface Crd {
    metadata: { name: string; resourceVersion?: string };
    status?: { conditions?: { type: string; status: string }[] };
}

export function readCrds(): Crd[] {
    return readdirSync(crdDir)
        .filter((f) => f.endsWith('.yaml'))
        .flatMap((f) => parseAllDocuments(readFileSync(join(crdDir, f), 'utf8')).map((d) => d.toJS() as Crd))
        .filter(Boolean);
}

/** Creates or replaces each CRD (optionally transformed) and waits for Established. */
export async function installCrds(rest: KubeRest, transform: (crd: Crd) => Crd = (c) => c): Promise<void> {
    for (const crd of readCrds().map(transform)) {
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
