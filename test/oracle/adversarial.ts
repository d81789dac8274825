// Hostile input for the property tests: addresses, names, labels and ports of every awkward
// kind. "Valid" arbitraries give what a source may legitimately hold (possibly written in an
// odd but equivalent way); "invalid" ones give what must never reach a slice. Objects the
// apiserver itself validates (Services, labels, object names) are generated within its
// rules, because no adapter can ever be handed anything else. Written without src/ip.
import type { DiscoveryV1EndpointPort, V1Endpoint, V1EndpointSlice, V1Service, V1ServicePort } from '@kubernetes/client-node';
import fc from 'fast-check';

const octet = fc.integer({ min: 1, max: 254 });
const hex16 = fc.integer({ min: 0, max: 0xffff });

/** Unicast IPv4 from documentation and private ranges: always publishable. */
export const validIPv4 = fc
    .tuple(fc.constantFrom('192.0.2', '198.51.100', '203.0.113', '10.1.2', '172.16.9', '100.64.0'), octet)
    .map(([net, host]) => `${net}.${host}`);

/** Unicast IPv6 in 2001:db8::/32, in any of its spellings, or an IPv4 one written as IPv6. */
export const validIPv6Text = fc
    .tuple(hex16, hex16, fc.constantFrom('compressed', 'upper', 'full', 'compatible'), validIPv4)
    .map(([a, b, spelling, v4]) => {
        const full = ['2001', '0db8', a, 0, 0, 0, 0, b].map((g) => (typeof g === 'number' ? g.toString(16).padStart(4, '0') : g)).join(':');
        if (spelling === 'full') return full;
        if (spelling === 'compatible') return `::${v4}`; // IPv4-compatible: the IPv6 address ::c000:2xx
        const compressed = `2001:db8:${a.toString(16)}::${b.toString(16)}`;
        return spelling === 'upper' ? compressed.toUpperCase() : compressed;
    });

export const validIP = fc.oneof(validIPv4, validIPv6Text, validIPv4.map((v4) => `::ffff:${v4}`), validIPv4.map((v4) => `::FFFF:${v4}`));

const specialIPs = [
    '0.0.0.0', '0.1.2.3', '127.0.0.1', '127.8.9.10', '169.254.169.254', '224.0.0.1', '224.0.0.251', '239.255.255.250',
    '255.255.255.255', '::', '::1', 'fe80::1', 'febf::ffff', 'ff02::1', 'ff12::1:2', 'ff05::1:3', '::ffff:127.0.0.1',
    '::ffff:169.254.0.1', '::ffff:0.0.0.0', '::ffff:224.0.0.5',
];
const malformedIPs = [
    '', ' ', '010.1.2.3', '192.0.2.01', '00192.0.2.1', '::ffff:01.2.3.4', '1.2.3', '1.2.3.4.5', '192.0.2.256', '2001:db8:::1',
    '2001:db8::g', '2001:db8::00001', 'fe80::1%eth0', '2001:db8::1%1', 'fe80::1%', ' 192.0.2.1', '192.0.2.1 ', '192.0.2.1\n',
    '١٩٢.٠.٢.١', '１９２.０.２.１', '192.0.2.1/32', '[2001:db8::1]', 'gw.example.com', 'a1b2.elb.us-east-1.amazonaws.com', 'localhost',
    '0x7f.0.0.1', '3221225985',
];
const DOTTED_DECIMAL = /^(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$/;

/** Never publishable: special ranges, zone ids, leading zeros, junk, unicode digits, names. */
export const invalidIP = fc.oneof(
    fc.constantFrom(...specialIPs, ...malformedIPs),
    fc.ipV4Extended().filter((s) => !DOTTED_DECIMAL.test(s)),
    fc.string({ unit: 'grapheme', maxLength: 24 }).filter((s) => !s.includes(':') && !DOTTED_DECIMAL.test(s)),
);

const LABEL_CHARS = 'abcdefghijklmnopqrstuvwxyz0123456789-';

/** A DNS-1123 label of 1–63 characters, often at the limit. */
export const dnsLabel = fc
    .tuple(fc.integer({ min: 1, max: 63 }), fc.nat())
    .chain(([length, seed]) =>
        fc.constantFrom(length, 63, 1).map((n) => {
            let s = '';
            for (let i = 0; i < n; i++) s += LABEL_CHARS[(seed + i * 7) % LABEL_CHARS.length];
            return s.replace(/^-+|-+$/g, 'a').replace(/^$/, 'a');
        }),
    );

/** Object names a workload may carry (DNS subdomains: dotted, long), and some hostnames cannot hold. */
export const workloadName = fc.oneof(
    dnsLabel,
    fc.tuple(dnsLabel, dnsLabel).map(([a, b]) => `${a}.${b}`.slice(0, 253).replace(/[.-]+$/, '')),
    fc.constant('a'.repeat(64)),
    fc.constant(`${'b'.repeat(63)}.${'c'.repeat(63)}.${'d'.repeat(63)}.${'e'.repeat(61)}`),
    fc.constantFrom('vm.example', 'x', 'ünïcode', 'UPPER', 'with_underscore'),
);

/** A valid label set, sometimes very large and at every length limit. */
export const labelSet = fc.oneof(
    fc.dictionary(fc.constantFrom('app', 'tier', 'example.com/owner', `${'p'.repeat(200)}.example/${'k'.repeat(63)}`), fc.constantFrom('', 'web', 'v'.repeat(63), 'A-b_c.D')),
    fc.integer({ min: 100, max: 400 }).map((n) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}.example.com/label-${i}`, `value-${i}`]))),
);

const appProtocol = fc.constantFrom(undefined, 'http', 'HTTP', 'kubernetes.io/h2c', 'kubernetes.io/ws', 'example.com/my-proto', 'linkerd.io/opaque');

/** Service ports as Service validation allows them: unique DNS-label names, unique port+protocol. */
export function servicePorts(max: number, min = 0): fc.Arbitrary<V1ServicePort[]> {
    return fc
        .tuple(fc.integer({ min, max }), fc.nat(), appProtocol, fc.boolean())
        .map(([count, seed, app, namedTargets]) =>
            Array.from({ length: count }, (_, i): V1ServicePort => {
                const protocol = (['TCP', 'UDP', 'SCTP'] as const)[(seed + i) % 3]!;
                const port: V1ServicePort = { name: count === 1 && seed % 2 === 0 ? '' : `p${i}${'x'.repeat((seed + i) % 50)}`, port: 1 + ((seed + i * 3) % 65535), protocol };
                port.targetPort = namedTargets && i % 2 === 0 ? (['http', 'admin', 'nope'] as const)[i % 3] : 1 + ((seed * 7 + i) % 65535);
                if (app !== undefined && i % 2 === 1) port.appProtocol = app;
                return port;
            }),
        );
}

export interface ServiceShape {
    name: string;
    headless: boolean;
    families: Array<'IPv4' | 'IPv6'>;
    selectAll: boolean;
    publishNotReady: boolean;
    labels: Record<string, string>;
    ports: V1ServicePort[];
}

export const serviceShape = (maxPorts: number): fc.Arbitrary<ServiceShape> =>
    fc.record({
        name: fc.constantFrom('web', `s${'v'.repeat(62)}`, 'a-b-c'),
        headless: fc.boolean(),
        families: fc.constantFrom<Array<'IPv4' | 'IPv6'>>(['IPv4'], ['IPv6'], ['IPv4', 'IPv6'], ['IPv6', 'IPv4']),
        selectAll: fc.boolean(),
        publishNotReady: fc.boolean(),
        labels: labelSet,
        ports: servicePorts(maxPorts),
    });

export function buildService(shape: ServiceShape, namespace: string): V1Service {
    return {
        apiVersion: 'v1',
        kind: 'Service',
        metadata: { name: shape.name, namespace, uid: `uid-${shape.name}`, labels: shape.labels },
        spec: {
            clusterIP: shape.headless ? 'None' : shape.families[0] === 'IPv6' ? '2001:db8:ffff::a' : '10.96.0.10',
            ipFamilies: shape.families,
            // {} selects every workload of the namespace.
            selector: shape.selectAll ? {} : { app: 'web' },
            publishNotReadyAddresses: shape.publishNotReady,
            ports: shape.ports,
        },
    };
}

export interface WorkloadShape {
    name: string;
    ips: string[];
    ready: boolean;
    zone: string | undefined;
    labels: Record<string, string>;
    ports: Array<{ name?: string; port: number; protocol?: string }>;
}

/** A workload whose addresses are all publishable (at most one of each family, in any spelling). */
export const validWorkload: fc.Arbitrary<WorkloadShape> = fc.record({
    name: workloadName,
    ips: fc.oneof(
        fc.tuple(validIPv4).map(([a]) => [a]),
        fc.tuple(validIPv6Text).map(([a]) => [a]),
        fc.tuple(validIPv4, validIPv6Text).map(([a, b]) => [a, b]),
        fc.tuple(validIPv6Text, validIPv4).map(([a, b]) => [a, b]),
    ),
    ready: fc.boolean(),
    zone: fc.constantFrom(undefined, '', 'zone-a', 'eu-west-1a', 'z'.repeat(63)),
    labels: labelSet.map((labels) => ({ ...labels, app: 'web' })),
    ports: fc.array(
        fc.record({ name: fc.constantFrom(undefined, 'http', 'admin', 'http'), port: fc.integer({ min: 1, max: 65535 }), protocol: fc.constantFrom(undefined, 'TCP', 'UDP', 'SCTP') }),
        { maxLength: 4 },
    ),
});

/** The raw object, as the informer hands it over. */
export function buildWorkload(shape: WorkloadShape, namespace: string, uid: string): Record<string, unknown> {
    const labels = shape.zone === undefined ? shape.labels : { ...shape.labels, 'topology.kubernetes.io/zone': shape.zone };
    return {
        apiVersion: 'workload.linkerd.io/v1beta1',
        kind: 'ExternalWorkload',
        metadata: { name: shape.name, namespace, uid, labels },
        spec: {
            meshTLS: { identity: `${shape.name}.id`, serverName: `${shape.name}.sn` },
            ports: shape.ports,
            workloadIPs: shape.ips.map((ip) => ({ ip })),
        },
        status: { conditions: [{ type: 'Ready', status: shape.ready ? 'True' : 'False' }] },
    };
}

/** Where invalid addresses go into a valid workload's list: they must change nothing. */
export const noise = fc.array(fc.tuple(fc.nat(), invalidIP), { maxLength: 4 });

export function withNoise(ips: string[], extra: Array<[number, string]>): string[] {
    const out = [...ips];
    for (const [at, ip] of extra) out.splice(at % (out.length + 1), 0, ip);
    return out;
}

/** Text for any name or label field: valid, nearly valid, far off. */
export const awkwardText = fc.oneof(dnsLabel, workloadName, fc.string({ maxLength: 70 }), fc.constantFrom('', '-a', 'a-', 'a..b', 'A', 'a_b', 'a'.repeat(254)));

const anyEndpoint: fc.Arbitrary<V1Endpoint> = fc.record(
    {
        addresses: fc.array(fc.oneof(validIP, invalidIP), { minLength: 0, maxLength: 3 }),
        hostname: awkwardText,
        nodeName: awkwardText,
        zone: awkwardText,
        conditions: fc.record({ ready: fc.boolean(), serving: fc.boolean(), terminating: fc.boolean() }, { requiredKeys: [] }),
        hints: fc.record({ forZones: fc.array(awkwardText.map((name) => ({ name })), { maxLength: 10 }) }),
    },
    { requiredKeys: ['addresses'] },
);

const anyPort: fc.Arbitrary<DiscoveryV1EndpointPort> = fc.record(
    {
        name: fc.oneof(dnsLabel, awkwardText),
        port: fc.oneof(fc.integer({ min: 1, max: 65535 }), fc.constantFrom(0, -1, 65536, 80.5)),
        protocol: fc.constantFrom('TCP', 'UDP', 'SCTP', 'HTTP', 'tcp', ''),
        appProtocol: fc.oneof(fc.constantFrom('http', 'kubernetes.io/h2c', 'HTTP', 'a/b/c', 'my proto', '/x', 'x/'), awkwardText),
    },
    { requiredKeys: [] },
);

/** Any EndpointSlice, valid or not in any field. */
export const anySlice: fc.Arbitrary<V1EndpointSlice> = fc.record({
    metadata: fc.record(
        {
            name: awkwardText,
            generateName: fc.oneof(awkwardText, awkwardText.map((t) => `${t}-`)),
            namespace: fc.oneof(dnsLabel, awkwardText),
            labels: fc.dictionary(fc.oneof(awkwardText, fc.constantFrom('kubernetes.io/service-name', 'example.com/a', 'a/b/c', '/a')), fc.oneof(awkwardText, fc.constant('')), { maxKeys: 4 }),
            annotations: fc.dictionary(fc.oneof(awkwardText, fc.constantFrom('Example.COM/Key', 'a b')), fc.string(), { maxKeys: 3 }),
        },
        { requiredKeys: [] },
    ),
    addressType: fc.constantFrom('IPv4', 'IPv6', 'FQDN', 'IP', ''),
    endpoints: fc.array(anyEndpoint, { maxLength: 4 }),
    ports: fc.array(anyPort, { maxLength: 4 }),
});

