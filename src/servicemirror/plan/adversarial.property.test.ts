// Hostile gateway answers through the mirror's pure path (DNS answers → gateway addresses →
// mirror groups → plan): every slice planned is one the apiserver accepts (an independent
// oracle, test/oracle/), and invalid answers added to valid ones change nothing published.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1Service, V1ServicePort } from '@kubernetes/client-node';
import fc from 'fast-check';
import { invalidIP, labelSet, servicePorts, validIPv4, validIPv6Text, withNoise } from '../../../test/oracle/adversarial.js';
import { validateEndpointSlice } from '../../../test/oracle/endpointslice-validation.js';
import { mirrorPlan } from '../../../test/oracle/pipelines.js';
import { DEFAULT_DNS_POLICY, addressesOf, initialNameState, onAnswer } from '../../dns/index.js';
import { FakeApiserver } from '../../endpointslice/testkit.js';
import { sliceProblems } from '../../endpointslice/validate.js';
import type { GatewayAddress } from './endpoints.js';
import { buildMirrorService } from './mirror.js';
import { testLink } from '../api/testkit.js';

const T0 = 1_000_000;

/** A gateway address as src/dns/ hands it over, its family declared as the text means it. */
const validGateway = fc.oneof(
    validIPv4.map((address) => ({ address, family: 'IPv4' as const })),
    validIPv4.map((address) => ({ address: `::ffff:${address}`, family: 'IPv4' as const })),
    validIPv6Text.map((address) => ({ address, family: 'IPv6' as const })),
);
/** What src/dns/ must never hand over, or hands over under the wrong family. */
const invalidGateway = fc.oneof(
    fc.tuple(invalidIP, fc.constantFrom<'IPv4' | 'IPv6'>('IPv4', 'IPv6')).map(([address, family]) => ({ address, family })),
    validIPv4.map((address) => ({ address, family: 'IPv6' as const })),
    validIPv6Text.filter((a) => !a.startsWith('::')).map((address) => ({ address, family: 'IPv4' as const })),
);

const shape = fc.record({
    families: fc.constantFrom<Array<'IPv4' | 'IPv6'>>(['IPv4'], ['IPv6'], ['IPv4', 'IPv6']),
    labels: labelSet,
    ports: servicePorts(40, 1), // a Service without ports is not mirrored
    cluster: fc.constantFrom('remote', 'east-1', 'c'.repeat(40)),
    valid: fc.array(fc.tuple(validGateway, fc.boolean()), { maxLength: 8 }),
    invalid: fc.array(fc.tuple(fc.nat(), invalidGateway), { maxLength: 8 }),
    alive: fc.boolean(),
});

function mirrorOf(g: { families: Array<'IPv4' | 'IPv6'>; labels: Record<string, string>; ports: V1ServicePort[]; cluster: string }) {
    const link = testLink({ targetClusterName: g.cluster });
    const remote: V1Service = {
        metadata: { name: 'service-one', namespace: 'ns1', labels: { ...g.labels, 'mirror.linkerd.io/exported': 'true' } },
        spec: { ports: g.ports, ipFamilies: g.families, ipFamilyPolicy: g.families.length > 1 ? 'PreferDualStack' : 'SingleStack' },
    };
    const mirror = buildMirrorService(remote, link);
    mirror.metadata!.uid = 'mirror-uid';
    return { mirror, link };
}

describe('the service mirror under hostile gateway answers', () => {
    it('plans only slices the apiserver accepts, and invalid answers change no write', () => {
        let published = 0;
        fc.assert(
            fc.property(shape, (g) => {
                const { mirror, link } = mirrorOf(g);
                const input = { mirror, link, remoteHasReadyEndpoints: true, gatewayAlive: g.alive };
                const good: GatewayAddress[] = g.valid.map(([a, ready]) => ({ ...a, ready }));
                const plan = mirrorPlan({ ...input, gatewayAddresses: good }, []);
                for (const slice of plan.creates) {
                    assert.deepEqual(validateEndpointSlice(slice), [], JSON.stringify(slice).slice(0, 300));
                    assert.deepEqual(sliceProblems(slice), []);
                    published += slice.endpoints.length;
                }
                const noisy = withNoise(
                    good.map((a) => JSON.stringify(a)),
                    g.invalid.map(([at, a]) => [at, JSON.stringify({ ...a, ready: true })]),
                ).map((text) => JSON.parse(text) as GatewayAddress);
                assert.deepEqual(mirrorPlan({ ...input, gatewayAddresses: noisy }, []), plan);
                const stored = new FakeApiserver().apply(plan);
                const again = mirrorPlan({ ...input, gatewayAddresses: noisy }, stored);
                assert.deepEqual([again.creates.length, again.updates.length, again.deletes.length], [0, 0, 0]);
            }),
            { numRuns: 200, seed: 31 },
        );
        assert.ok(published > 200, `only ${published} endpoints published in all runs`);
    });

    it('publishes from any DNS answer only addresses the apiserver accepts', () => {
        const answer = fc.array(
            fc.record({ address: fc.oneof(validIPv4, validIPv6Text, invalidIP, fc.ipV4(), fc.ipV6()), ttl: fc.nat(100_000) }),
            { maxLength: 6 },
        );
        fc.assert(
            fc.property(shape, answer, answer, (g, a4, a6) => {
                const state = onAnswer(initialNameState('gw.example.test', T0), a4, a6, T0, DEFAULT_DNS_POLICY).state;
                const addresses = addressesOf(state, T0, DEFAULT_DNS_POLICY);
                const { mirror, link } = mirrorOf(g);
                const plan = mirrorPlan({ mirror, link, gatewayAddresses: addresses, remoteHasReadyEndpoints: true, gatewayAlive: true }, []);
                // Every usable answer of a family the mirror serves is published.
                const served = addresses.filter((a) => g.families.includes(a.family));
                assert.equal(plan.creates.reduce((n, s) => n + s.endpoints.length, 0), served.length);
                for (const slice of plan.creates) assert.deepEqual(validateEndpointSlice(slice), []);
            }),
            { numRuns: 200, seed: 32 },
        );
    });
});
