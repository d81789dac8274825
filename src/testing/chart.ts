// The Helm chart in tests: helm itself (built from its Go module by hack/helm/build.sh, cached
// per machine), `helm template` into objects, and applying objects to a local cluster the way
// `kubectl apply` does (API discovery for each kind, CRDs first and waited for).
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { parseAllDocuments } from 'yaml';
import type { KubeRest, Query } from '../kube/rest.js';
import { eventually } from './harness.js';
import { buildScript, repoRoot } from './processes.js';

const run = promisify(execFile);
export const chartDir = join(repoRoot, 'charts/mesh-endpoints');
export const CRD_PATH = '/apis/apiextensions.k8s.io/v1/customresourcedefinitions';

export interface ManifestObject {
    apiVersion: string;
    kind: string;
    metadata: { name: string; namespace?: string; labels?: Record<string, string>; resourceVersion?: string };
    [field: string]: unknown;
}

let helmPath: Promise<string> | undefined;

/** The helm binary, built once per machine (the first build takes minutes). */
export function helm(): Promise<string> {
    return (helmPath ??= buildScript('hack/helm/build.sh'));
}

/** Runs helm with `args`; rejects with helm's own message. */
export async function runHelm(args: string[]): Promise<string> {
    const bin = await helm();
    try {
        const { stdout } = await run(bin, args, { cwd: repoRoot, maxBuffer: 16 << 20 });
        return stdout;
    } catch (err) {
        const e = err as { stderr?: string; stdout?: string; message: string };
        throw new Error(`helm ${args.join(' ')}: ${e.stderr || e.stdout || e.message}`);
    }
}

export interface RenderOptions {
    release?: string;
    namespace: string;
    /** Values on top of the chart's values.yaml (as a `-f` file). */
    values?: object;
    includeCrds?: boolean;
}

/** `helm template`: the chart's objects, CRDs first when asked for. */
export async function renderChart(opts: RenderOptions): Promise<ManifestObject[]> {
    const dir = mkdtempSync(join(tmpdir(), 'mesh-endpoints-values-'));
    try {
        const valuesFile = join(dir, 'values.json');
        writeFileSync(valuesFile, JSON.stringify(opts.values ?? {}));
        const args = ['template', opts.release ?? 'mesh-endpoints', chartDir, '--namespace', opts.namespace, '-f', valuesFile];
        if (opts.includeCrds) args.push('--include-crds');
        return parseManifests(await runHelm(args));
    } finally {
        rmSync(dir, { recursive: true, force: true });
    }
}

export function parseManifests(text: string): ManifestObject[] {
    return parseAllDocuments(text)
        .map((d) => d.toJS() as ManifestObject | null)
        .filter((o): o is ManifestObject => o !== null && typeof o === 'object');
}

interface ApiResource {
    name: string;
    kind: string;
    namespaced: boolean;
}

/** Resource paths by kind, found through API discovery as kubectl does. */
export class ResourcePaths {
    private readonly groups = new Map<string, Promise<ApiResource[]>>();
    constructor(private readonly rest: KubeRest) {}

    async collection(obj: ManifestObject): Promise<string> {
        const base = obj.apiVersion.includes('/') ? `/apis/${obj.apiVersion}` : `/api/${obj.apiVersion}`;
        let listing = this.groups.get(base);
        if (!listing) {
            listing = this.rest.get<{ resources: ApiResource[] }>(base).then((l) => l.resources);
            this.groups.set(base, listing);
        }
        const resource = (await listing).find((r) => r.kind === obj.kind && !r.name.includes('/'));
        if (!resource) {
            this.groups.delete(base); // a CRD may have been established since
            throw new Error(`the apiserver serves no ${obj.kind} in ${obj.apiVersion}`);
        }
        const ns = resource.namespaced ? `/namespaces/${obj.metadata.namespace ?? 'default'}` : '';
        return `${base}${ns}/${resource.name}`;
    }
}

/**
 * Creates every object (CRDs first, each waited for until Established). With `dryRun` the
 * apiserver validates and admits each object fully, unknown fields included, and stores nothing:
 * `kubectl apply --dry-run=server --validate=strict`.
 */
export async function applyObjects(rest: KubeRest, objects: ManifestObject[], opts: { dryRun?: boolean } = {}): Promise<void> {
    const query: Query = { fieldValidation: 'Strict', ...(opts.dryRun ? { dryRun: 'All' } : {}) };
    const paths = new ResourcePaths(rest);
    const isCrd = (o: ManifestObject) => o.kind === 'CustomResourceDefinition';
    for (const crd of objects.filter(isCrd)) {
        await rest.create(await paths.collection(crd), crd, query);
        if (!opts.dryRun) await waitEstablished(rest, crd.metadata.name);
    }
    for (const obj of objects.filter((o) => !isCrd(o))) {
        await rest.create(await paths.collection(obj), obj, query);
    }
}

/** Waits until the apiserver serves the CRD's resource. */
export async function waitEstablished(rest: KubeRest, name: string): Promise<void> {
    await eventually(`CRD ${name} established`, async () => {
        const got = await rest.get<{ status?: { conditions?: { type: string; status: string }[] } }>(`${CRD_PATH}/${name}`);
        return got.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True') ?? false;
    });
}
