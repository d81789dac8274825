// The CRD file is plain YAML applied by kubectl or Helm; these tests pin what makes it
// Linkerd-compatible and what we add. Whether a kube-apiserver accepts the CRD and what its
// CEL rules refuse can only be seen against a real one; that belongs to test/integration/.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { parse } from 'yaml';

type Schema = {
    type?: string;
    required?: string[];
    properties?: Record<string, Schema>;
    items?: Schema;
    maxItems?: number;
    maxLength?: number;
    default?: unknown;
    'x-kubernetes-validations'?: Array<{ rule: string; message: string }>;
};
interface Version {
    name: string;
    served: boolean;
    storage: boolean;
    subresources?: Record<string, unknown>;
    additionalPrinterColumns: Array<{ name: string; jsonPath: string }>;
    schema: { openAPIV3Schema: Schema };
}

const crd = parse(readFileSync(new URL('../../charts/mesh-endpoints/crds/externalworkloads.yaml', import.meta.url), 'utf8')) as {
    apiVersion: string;
    kind: string;
    metadata: { name: string };
    spec: { group: string; scope: string; names: Record<string, unknown>; versions: Version[] };
};
const version = (name: string) => crd.spec.versions.find((v) => v.name === name)!;
const spec = (name: string) => version(name).schema.openAPIV3Schema.properties!.spec!;
const rules = (schema: Schema | undefined) => (schema?.['x-kubernetes-validations'] ?? []).map((r) => r.rule);

describe('the ExternalWorkload CRD', () => {
    it('is Linkerd’s: externalworkloads.workload.linkerd.io, namespaced, kind ExternalWorkload in category external', () => {
        assert.equal(crd.apiVersion, 'apiextensions.k8s.io/v1');
        assert.equal(crd.metadata.name, 'externalworkloads.workload.linkerd.io');
        assert.equal(crd.spec.group, 'workload.linkerd.io');
        assert.equal(crd.spec.scope, 'Namespaced');
        assert.deepEqual(crd.spec.names, {
            kind: 'ExternalWorkload',
            listKind: 'ExternalWorkloadList',
            plural: 'externalworkloads',
            singular: 'externalworkload',
            categories: ['external'],
        });
    });

    it('serves v1alpha1 without status subresource and v1beta1 as the stored version with one', () => {
        assert.deepEqual(
            crd.spec.versions.map((v) => [v.name, v.served, v.storage, v.subresources ?? null]),
            [
                ['v1alpha1', true, false, null],
                ['v1beta1', true, true, { status: {} }],
            ],
        );
    });

    it('requires meshTls in v1alpha1 and meshTLS in v1beta1, each with identity and serverName of 1 to 253 characters', () => {
        for (const [name, field] of [['v1alpha1', 'meshTls'], ['v1beta1', 'meshTLS']] as const) {
            assert.deepEqual(spec(name).required, [field]);
            const tls = spec(name).properties![field]!;
            assert.deepEqual(tls.required, ['identity', 'serverName']);
            for (const key of ['identity', 'serverName']) {
                const { type, minLength, maxLength } = tls.properties![key] as Schema & { minLength?: number };
                assert.deepEqual([type, minLength, maxLength], ['string', 1, 253]);
            }
        }
    });

    it('allows one workload IP in v1alpha1 and two in v1beta1, each checked to be a usable IP', () => {
        assert.equal(spec('v1alpha1').properties!.workloadIPs!.maxItems, 1);
        assert.equal(spec('v1beta1').properties!.workloadIPs!.maxItems, 2);
        for (const name of ['v1alpha1', 'v1beta1']) {
            const ip = spec(name).properties!.workloadIPs!.items!.properties!.ip!;
            assert.deepEqual(rules(ip), ['isIP(self)', '!isIP(self) || ip(self).isGlobalUnicast()']);
        }
    });

    it('refuses two v1beta1 workload IPs of one family, without erroring on an invalid IP', () => {
        const familyRules = rules(spec('v1beta1').properties!.workloadIPs);
        assert.deepEqual(familyRules, [4, 6].map((f) => `self.filter(x, isIP(x.ip) && ip(x.ip).family() == ${f}).size() <= 1`));
    });

    it('defaults port protocols to TCP, bounds port numbers, and refuses a port name used twice', () => {
        for (const name of ['v1alpha1', 'v1beta1']) {
            const ports = spec(name).properties!.ports!;
            const port = ports.items!;
            assert.deepEqual(port.required, ['port']);
            assert.equal(port.properties!.protocol!.default, 'TCP');
            assert.deepEqual([port.properties!.port!.type, (port.properties!.port as { minimum?: number }).minimum, (port.properties!.port as { maximum?: number }).maximum], ['integer', 1, 65535]);
            assert.match(rules(ports)[0]!, /exists_one/);
            // Bounds the CEL cost estimator needs to accept an all-pairs rule.
            assert.ok(ports.maxItems! <= 100 && port.properties!.name!.maxLength! <= 63);
        }
    });

    it('has Identity and Age printer columns in both versions', () => {
        assert.deepEqual(version('v1alpha1').additionalPrinterColumns.map((c) => [c.name, c.jsonPath]), [
            ['Identity', '.spec.meshTls.identity'],
            ['Age', '.metadata.creationTimestamp'],
        ]);
        assert.deepEqual(version('v1beta1').additionalPrinterColumns.map((c) => [c.name, c.jsonPath]), [
            ['Identity', '.spec.meshTLS.identity'],
            ['Age', '.metadata.creationTimestamp'],
        ]);
    });

    it('requires type and status of each status condition, status being True, False or Unknown', () => {
        for (const name of ['v1alpha1', 'v1beta1']) {
            const condition = version(name).schema.openAPIV3Schema.properties!.status!.properties!.conditions!.items!;
            assert.deepEqual(condition.required, ['status', 'type']);
            assert.deepEqual((condition.properties!.status as { enum?: string[] }).enum, ['True', 'False', 'Unknown']);
        }
    });
});
