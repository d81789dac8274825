import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { describeTarget, parseProbeTarget, workloadProbe, type ProbeTarget } from './probe-spec.js';

const PROXY_READY: ProbeTarget = { scheme: 'http', port: 4191, path: '/ready' };
const defaults = { periodMs: 10_000, timeoutMs: 1_000, successThreshold: 1, failureThreshold: 3 };

describe('probe annotations', () => {
    it('reads http, https and tcp probes', () => {
        const cases: [string, ProbeTarget | RegExp][] = [
            ['http:4191/ready', PROXY_READY],
            ['https:8443/healthz?full=1', { scheme: 'https', port: 8443, path: '/healthz?full=1' }],
            ['http:8080', { scheme: 'http', port: 8080, path: '/' }],
            ['tcp:8080', { scheme: 'tcp', port: 8080 }],
            [' tcp:22 ', { scheme: 'tcp', port: 22 }],
            ['tcp:8080/ready', /a tcp probe takes no path/],
            ['http:0/ready', /port 0 is not in 1..65535/],
            ['http:70000/', /port 70000 is not in 1..65535/],
            ['grpc:4191', /is not a probe such as http:4191\/ready/],
            ['4191', /is not a probe/],
            ['http://192.0.2.1:4191/ready', /is not a probe/],
            ['', /is not a probe/],
        ];
        for (const [text, want] of cases) {
            const got = parseProbeTarget(text);
            if (want instanceof RegExp) assert.match(String(got), want, text);
            else assert.deepEqual(got, want, text);
        }
    });

    it('applies Kubernetes readiness-probe defaults and the sibling annotations', () => {
        const cases: [string, Record<string, string> | undefined, ProbeTarget | undefined, unknown][] = [
            ['no annotation, no default: not probed', undefined, undefined, { kind: 'none' }],
            ['no annotation, a default probe', {}, PROXY_READY, { kind: 'probe', spec: { target: PROXY_READY, ...defaults } }],
            ['its own probe wins over the default', { 'mesh-endpoints.io/probe': 'tcp:22' }, PROXY_READY, { kind: 'probe', spec: { target: { scheme: 'tcp', port: 22 }, ...defaults } }],
            ['"none" opts out of the default', { 'mesh-endpoints.io/probe': 'none' }, PROXY_READY, { kind: 'none' }],
            ['siblings without a probe do nothing', { 'mesh-endpoints.io/probe-period': '1s' }, undefined, { kind: 'none' }],
            [
                'every sibling',
                {
                    'mesh-endpoints.io/probe': 'http:4191/ready',
                    'mesh-endpoints.io/probe-period': '500ms',
                    'mesh-endpoints.io/probe-timeout': '2',
                    'mesh-endpoints.io/probe-success-threshold': '2',
                    'mesh-endpoints.io/probe-failure-threshold': '5',
                },
                undefined,
                { kind: 'probe', spec: { target: PROXY_READY, periodMs: 500, timeoutMs: 2000, successThreshold: 2, failureThreshold: 5 } },
            ],
        ];
        for (const [name, annotations, defaultProbe, want] of cases) assert.deepEqual(workloadProbe(annotations, defaultProbe), want, name);
    });

    it('says what is wrong with every bad value at once, and that the workload is not probed', () => {
        const got = workloadProbe({
            'mesh-endpoints.io/probe': 'http:4191/ready',
            'mesh-endpoints.io/probe-period': 'often',
            'mesh-endpoints.io/probe-timeout': '10ms',
            'mesh-endpoints.io/probe-success-threshold': '0',
            'mesh-endpoints.io/probe-failure-threshold': '2.5',
        });
        assert.equal(got.kind, 'invalid');
        const message = (got as { message: string }).message;
        for (const part of [
            'mesh-endpoints.io/probe-period: "often" is not a duration',
            'mesh-endpoints.io/probe-timeout: "10ms" is not a duration from 100ms to 1h',
            'mesh-endpoints.io/probe-success-threshold: "0" is not a whole number from 1 to 1000',
            'mesh-endpoints.io/probe-failure-threshold: "2.5" is not a whole number',
            'the workload is not probed until the annotation is fixed',
        ]) {
            assert.ok(message.includes(part), `${part} in ${message}`);
        }
        assert.match(String((workloadProbe({ 'mesh-endpoints.io/probe': 'udp:53' }) as { message: string }).message), /^mesh-endpoints.io\/probe: "udp:53" is not a probe/);
    });

    it('names where a probe goes', () => {
        assert.equal(describeTarget(PROXY_READY, '192.0.2.10'), 'http://192.0.2.10:4191/ready');
        assert.equal(describeTarget({ scheme: 'tcp', port: 8080 }, '2001:db8::1'), 'tcp://[2001:db8::1]:8080');
        assert.equal(describeTarget(PROXY_READY, '127.0.0.1', 9000), 'http://127.0.0.1:9000/ready');
    });
});
