// The chart's Multi-Cluster Services CRDs are upstream's own: byte for byte the config/crd/ of the
// sigs.k8s.io/mcs-api module version their label names (when the module cache holds it;
// hack/mcs-crds/sync.sh fetches it), and they serve and store the versions the MCS API defines.
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { mcsCrdDir, readMcsCrds } from './crds.js';

interface Crd {
    metadata: { name: string; labels?: Record<string, string>; annotations?: Record<string, string> };
    spec: { group: string; scope: string; names: { kind: string }; versions: { name: string; served: boolean; storage: boolean }[] };
}

const upstreamFiles = ['multicluster.x-k8s.io_serviceexports.yaml', 'multicluster.x-k8s.io_serviceimports.yaml'];
const crds = readMcsCrds() as unknown as Crd[];
const byKind = (kind: string) => crds.find((c) => c.spec.names.kind === kind)!;

function moduleCache(): string {
    if (process.env.GOMODCACHE) return process.env.GOMODCACHE;
    const gopath = (process.env.GOPATH ?? join(homedir(), 'go')).split(':')[0]!;
    return join(gopath, 'pkg/mod');
}

describe('charts/mesh-endpoints/files/mcs-crds', () => {
    const version = byKind('ServiceExport').metadata.labels?.['multicluster.x-k8s.io/release-version'];

    it('holds ServiceExport and ServiceImport of one mcs-api release, v1alpha1 and v1beta1 served, v1beta1 stored', () => {
        assert.match(version ?? '', /^v\d+\.\d+\.\d+$/);
        for (const kind of ['ServiceExport', 'ServiceImport']) {
            const crd = byKind(kind);
            assert.equal(crd.spec.group, 'multicluster.x-k8s.io');
            assert.equal(crd.spec.scope, 'Namespaced');
            assert.equal(crd.metadata.labels?.['multicluster.x-k8s.io/release-version'], version, `${kind} of the same release`);
            assert.deepEqual(crd.spec.versions.filter((v) => v.served).map((v) => v.name), ['v1alpha1', 'v1beta1']);
            assert.deepEqual(crd.spec.versions.filter((v) => v.storage).map((v) => v.name), ['v1beta1']);
        }
    });

    it('holds the About API ClusterProperty, cluster-scoped, with its API approval', () => {
        const crd = byKind('ClusterProperty');
        assert.equal(crd.metadata.name, 'clusterproperties.about.k8s.io');
        assert.equal(crd.spec.scope, 'Cluster');
        assert.ok(crd.metadata.annotations?.['api-approved.kubernetes.io'], 'a *.k8s.io group needs it, or the apiserver flags the CRD');
        assert.deepEqual(crd.spec.versions.filter((v) => v.served && v.storage).map((v) => v.name), ['v1alpha1']);
        assert.equal(crds.length, 3);
    });

    it("is byte for byte the module's config/crd/ (skipped when the module cache lacks that version)", (t) => {
        const upstream = join(moduleCache(), `sigs.k8s.io/mcs-api@${version}`, 'config/crd');
        if (!existsSync(upstream)) {
            t.skip(`${upstream} absent: hack/mcs-crds/sync.sh fetches it`);
            return;
        }
        for (const file of upstreamFiles) {
            assert.equal(readFileSync(join(mcsCrdDir, file), 'utf8'), readFileSync(join(upstream, file), 'utf8'), `${file}: run hack/mcs-crds/sync.sh`);
        }
    });
});
