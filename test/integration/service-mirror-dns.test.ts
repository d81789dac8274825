// Gateway hostnames resolved by the service mirror through the DNS wire protocol, against a
// real DNS server on 127.0.0.1 whose records, TTLs and failures the tests change, with two real
// clusters. Policy in these tests: --dns-min-ttl 1s, --dns-max-ttl 3s, --dns-stale-window 2s.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { DnsBehaviour } from '../../src/testing/dns-server.js';
import { eventually, setUp } from '../../src/testing/harness.js';
import {
    createLink,
    createRemoteService,
    EXPORTED,
    endpointsOf,
    getLink,
    hasEvent,
    mirrorService,
    mirrorSlices,
    pairedNamespace,
    runServiceMirror,
    startMirrorEnv,
    TEST_DNS,
} from './mirror-support.js';

const env = await startMirrorEnv('dns');
const linkNs = await setUp('a namespace', () => env.local.namespace('mc'));
const running = await setUp('the service mirror', () => runServiceMirror(env, linkNs));

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
let links = 0;

/**
 * A Link of its own and a namespace on both clusters. The Link exports only the Services of its
 * own test (all tests share one remote cluster), so no test's names or failures reach another.
 */
async function linked(gatewayAddress: string): Promise<{ link: string; ns: string; labels: Record<string, string> }> {
    const link = `dns${++links}`;
    const labels = { ...EXPORTED, 'e2e.mesh-endpoints.io/link': link };
    await createLink(env, linkNs, { name: link, gatewayAddress, selector: { matchLabels: labels } });
    return { link, ns: await pairedNamespace(env), labels };
}

async function resolution(link: string, name: string) {
    return (await getLink(env, linkNs, link)).status?.gatewayResolution?.find((r) => r.name === name);
}

const seconds = (text: string | undefined) => Date.parse(text ?? '') / 1000;

describe('gateway hostnames', () => {
    it('gives a name with three A records three ready endpoints', async () => {
        env.dns.setRecords('three.gw.test', { A: ['192.0.2.3', '192.0.2.1', '192.0.2.2'].map((address) => ({ address, ttl: 30 })) });
        const { link, ns, labels } = await linked('three.gw.test');
        await createRemoteService(env, ns, 'web', { labels });
        await eventually('three endpoints', async () => (await endpointsOf(env, ns, `web-${link}`)).length === 3);
        assert.deepEqual(await endpointsOf(env, ns, `web-${link}`), ['IPv4 192.0.2.1 ready', 'IPv4 192.0.2.2 ready', 'IPv4 192.0.2.3 ready']);
        const [slice] = await mirrorSlices(env, ns, `web-${link}`);
        assert.ok(slice!.endpoints!.every((e) => !e.hostname), 'no name is ever written into an endpoint');
    });

    it('gives IPv4-only, IPv6-only and dual-stack mirrors the A and AAAA answers of their own families', async () => {
        env.dns.setRecords('dual.gw.test', { A: [{ address: '192.0.2.21', ttl: 30 }], AAAA: [{ address: '2001:db8::21', ttl: 30 }] });
        const { link, ns, labels } = await linked('dual.gw.test');
        await createRemoteService(env, ns, 'v4', { labels, families: ['IPv4'] });
        await createRemoteService(env, ns, 'v6', { labels, families: ['IPv6'] });
        await createRemoteService(env, ns, 'both', { labels, families: ['IPv4', 'IPv6'] });
        await eventually('the dual-stack mirror', async () => (await endpointsOf(env, ns, `both-${link}`)).length === 2);
        assert.deepEqual(await endpointsOf(env, ns, `v4-${link}`), ['IPv4 192.0.2.21 ready']);
        assert.deepEqual(await endpointsOf(env, ns, `v6-${link}`), ['IPv6 2001:db8::21 ready']);
        assert.deepEqual(await endpointsOf(env, ns, `both-${link}`), ['IPv4 192.0.2.21 ready', 'IPv6 2001:db8::21 ready']);
        assert.deepEqual((await mirrorSlices(env, ns, `both-${link}`)).map((s) => s.addressType).sort(), ['IPv4', 'IPv6']);
    });

    it('follows a changed record within its TTL plus one second, writing only the slice that changed', async (t) => {
        env.dns.setRecords('moving.gw.test', { A: [{ address: '192.0.2.31', ttl: 1 }], AAAA: [{ address: '2001:db8::31', ttl: 1 }] });
        const { link, ns, labels } = await linked('moving.gw.test');
        await createRemoteService(env, ns, 'web', { labels, families: ['IPv4', 'IPv6'] });
        const mirror = `web-${link}`;
        await eventually('both families', async () => (await endpointsOf(env, ns, mirror)).length === 2);
        await sleep(300);
        const v6Before = (await mirrorSlices(env, ns, mirror)).find((s) => s.addressType === 'IPv6')!;
        const writesBefore = running.rest.writesMatching(`/namespaces/${ns}/`).length;

        const latencies: number[] = [];
        for (const [address, gapMs] of [['192.0.2.32', 100], ['192.0.2.33', 450], ['192.0.2.34', 800]] as const) {
            env.dns.setRecords('moving.gw.test', { A: [{ address, ttl: 1 }], AAAA: [{ address: '2001:db8::31', ttl: 1 }] });
            const changedAt = Date.now();
            await eventually('the new address', async () => (await endpointsOf(env, ns, mirror)).includes(`IPv4 ${address} ready`), 5000);
            latencies.push(Date.now() - changedAt);
            // Each change lands at another point of the 1 s refresh cycle.
            await sleep(gapMs);
        }
        t.diagnostic(`DNS record change to updated slice (TTL 1 s, polled every 100 ms): ${latencies.join(', ')} ms`);
        assert.ok(Math.max(...latencies) <= 2000, `slices followed after ${latencies.join(', ')} ms; more than TTL + 1 s`);
        assert.deepEqual(await endpointsOf(env, ns, mirror), ['IPv4 192.0.2.34 ready', 'IPv6 2001:db8::31 ready']);
        const v6After = (await mirrorSlices(env, ns, mirror)).find((s) => s.addressType === 'IPv6')!;
        assert.equal(v6After.metadata?.resourceVersion, v6Before.metadata?.resourceVersion, 'the IPv6 slice was never rewritten');
        const writes = running.rest.writesMatching(`/namespaces/${ns}/`).slice(writesBefore);
        assert.deepEqual(writes.map((w) => w.method), ['PUT', 'PUT', 'PUT'], 'one slice update per change and nothing else');
    });

    it('writes no slice and no Service while the answers stay the same, over several TTLs; only the record of the last good answer', async (t) => {
        env.dns.setRecords('steady.gw.test', { A: [{ address: '192.0.2.41', ttl: 1 }, { address: '192.0.2.42', ttl: 1 }] });
        const { link, ns, labels } = await linked('steady.gw.test');
        await createRemoteService(env, ns, 'web', { labels });
        await createRemoteService(env, ns, 'api', { labels, families: ['IPv4', 'IPv6'] });
        await eventually('both mirrored', async () => (await endpointsOf(env, ns, `web-${link}`)).length === 2 && (await endpointsOf(env, ns, `api-${link}`)).length === 2);
        await eventually('both counted in the status', async () => (await getLink(env, linkNs, link)).status?.mirrorSummary?.mirrored === 2);
        await eventually('the name in the status', async () => (await resolution(link, 'steady.gw.test'))?.addresses.length === 2);
        await sleep(1000);
        const [writesBefore, queriesBefore] = [running.rest.writes.length, env.dns.queryCount('steady.gw.test', 'A')];
        await sleep(4500);
        const refreshes = env.dns.queryCount('steady.gw.test', 'A') - queriesBefore;
        const writes = running.rest.writes.slice(writesBefore);
        t.diagnostic(`steady state over 4.5 s: ${refreshes} resolutions of the name, ${writes.length} writes by the controller`);
        assert.ok(refreshes >= 3, `only ${refreshes} resolutions in 4.5 s with a 1 s TTL`);
        // The time of the last good answer is recorded once it is a quarter window old (0.5 s
        // here; 75 s with the default window), so a restarted process can count the window from it.
        const records = writes.filter((w) => w.method === 'PATCH' && /\/links\/[^/]+\/status$/.test(w.path));
        assert.deepEqual(writes.filter((w) => !records.includes(w)), [], 'not a slice, not a Service');
        const ofThisLink = records.filter((w) => w.path.endsWith(`/links/${link}/status`)).length;
        assert.ok(ofThisLink <= 4500 / (TEST_DNS.staleWindowMs / 4) + 1, `${ofThisLink} status writes in 4.5 s`);
    });

    it('clamps a TTL of 0 to --dns-min-ttl and a TTL of a day to --dns-max-ttl', async () => {
        env.dns.setRecords('zero.gw.test', { A: [{ address: '192.0.2.51', ttl: 0 }] });
        env.dns.setRecords('day.gw.test', { A: [{ address: '192.0.2.52', ttl: 86400 }] });
        const { link, ns, labels } = await linked('zero.gw.test,day.gw.test');
        await createRemoteService(env, ns, 'web', { labels });
        await eventually('both names in the status', async () => (await resolution(link, 'zero.gw.test'))?.ttlSeconds === 0 && (await resolution(link, 'day.gw.test'))?.ttlSeconds === 86400);
        const [zero, day] = [(await resolution(link, 'zero.gw.test'))!, (await resolution(link, 'day.gw.test'))!];
        assert.equal(seconds(zero.nextRefreshAt) - seconds(zero.resolvedAt), TEST_DNS.minTtlMs / 1000);
        assert.equal(seconds(day.nextRefreshAt) - seconds(day.resolvedAt), TEST_DNS.maxTtlMs / 1000);
        const [zero0, day0] = [env.dns.queryCount('zero.gw.test', 'A'), env.dns.queryCount('day.gw.test', 'A')];
        await sleep(3500);
        const [zeroQueries, dayQueries] = [env.dns.queryCount('zero.gw.test', 'A') - zero0, env.dns.queryCount('day.gw.test', 'A') - day0];
        assert.ok(zeroQueries >= 2 && zeroQueries <= 5, `TTL 0: ${zeroQueries} queries in 3.5 s (expected one per second)`);
        assert.ok(dayQueries >= 1 && dayQueries <= 2, `TTL of a day: ${dayQueries} queries in 3.5 s (expected one per 3 s)`);
        assert.deepEqual(await endpointsOf(env, ns, `web-${link}`), ['IPv4 192.0.2.51 ready', 'IPv4 192.0.2.52 ready']);
    });

    describe('a failing name keeps its last good addresses, then turns them not ready after the stale window, then recovers', { concurrency: true }, () => {
        const failures: [DnsBehaviour, string][] = [
            ['nxdomain', 'NXDOMAIN'],
            ['servfail', 'SERVFAIL'],
            ['blackhole', 'TIMEOUT'],
        ];
        for (const [behaviour, code] of failures) {
            it(`on ${code}`, async () => {
                const name = `${behaviour}.gw.test`;
                env.dns.setRecords(name, { A: [{ address: '192.0.2.61', ttl: 1 }] });
                const { link, ns, labels } = await linked(name);
                await createRemoteService(env, ns, 'web', { labels });
                const mirror = `web-${link}`;
                await eventually('ready endpoint', async () => (await endpointsOf(env, ns, mirror)).join() === 'IPv4 192.0.2.61 ready');

                env.dns.setBehaviour(name, behaviour);
                await eventually(`${code} in the status`, async () => (await resolution(link, name))?.lastError?.startsWith(code) ?? false, 5000);
                assert.deepEqual(await endpointsOf(env, ns, mirror), ['IPv4 192.0.2.61 ready'], 'last good address kept, ready');
                await eventually('the failure Event', () => hasEvent(env, linkNs, link, 'GatewayResolutionFailed', code));

                await eventually('not ready after the window', async () => (await endpointsOf(env, ns, mirror)).join() === 'IPv4 192.0.2.61 not-ready', 8000);
                // The window counts from when the last good answer expired (its TTL after it was
                // sent), not from the change of behaviour: a refresh due before the change may be
                // sent after it on a loaded machine, and then fails with the window partly run.
                const lastGood = env.dns.queries.filter((q) => q.name === name && q.answers > 0).at(-1)!;
                const elapsed = Date.now() - (lastGood.at + Math.max(lastGood.ttl! * 1000, TEST_DNS.minTtlMs));
                assert.ok(elapsed >= TEST_DNS.staleWindowMs, `not ready ${elapsed} ms after the last good answer expired, within the ${TEST_DNS.staleWindowMs} ms window`);
                await eventually('the not-ready Event', () => hasEvent(env, linkNs, link, 'GatewayAddressesNotReady', '192.0.2.61'));
                await eventually('not ready in the status', async () => (await resolution(link, name))?.notReadyAddresses?.join() === '192.0.2.61');

                env.dns.setBehaviour(name, 'normal');
                await eventually('recovery', async () => (await endpointsOf(env, ns, mirror)).join() === 'IPv4 192.0.2.61 ready', 8000);
                await eventually('the recovery Event', () => hasEvent(env, linkNs, link, 'GatewayResolutionRecovered', name));
                await eventually('the error cleared from the status', async () => (await resolution(link, name))?.lastError === undefined);
            });
        }
    });

    it("keeps one name's addresses ready while another name of the same Link fails", async () => {
        env.dns.setRecords('good.gw.test', { A: [{ address: '192.0.2.71', ttl: 1 }] });
        env.dns.setRecords('bad.gw.test', { A: [{ address: '192.0.2.72', ttl: 1 }] });
        const { link, ns, labels } = await linked('good.gw.test, bad.gw.test');
        await createRemoteService(env, ns, 'web', { labels });
        await eventually('both ready', async () => (await endpointsOf(env, ns, `web-${link}`)).length === 2);
        env.dns.setBehaviour('bad.gw.test', 'servfail');
        await eventually('only the failing name not ready', async () => {
            const lines = await endpointsOf(env, ns, `web-${link}`);
            return lines.join() === 'IPv4 192.0.2.71 ready,IPv4 192.0.2.72 not-ready';
        }, 8000);
        assert.equal((await resolution(link, 'good.gw.test'))?.lastError, undefined);
    });

    it('drops a loopback answer with a Warning Event and publishes the others', async () => {
        env.dns.setRecords('loop.gw.test', { A: [{ address: '127.0.0.1', ttl: 30 }, { address: '192.0.2.81', ttl: 30 }] });
        const { link, ns, labels } = await linked('loop.gw.test');
        await createRemoteService(env, ns, 'web', { labels });
        await eventually('the usable address', async () => (await endpointsOf(env, ns, `web-${link}`)).length === 1);
        assert.deepEqual(await endpointsOf(env, ns, `web-${link}`), ['IPv4 192.0.2.81 ready']);
        await eventually('the Warning Event', () => hasEvent(env, linkNs, link, 'GatewayAnswerDropped', '127.0.0.1 (loopback)'));
        const metric = await running.registry.getSingleMetric('mesh_endpoints_service_mirror_dns_dropped_answers_total')?.get();
        assert.ok((metric?.values.find((v) => v.labels.link === link && v.labels.reason === 'loopback')?.value ?? 0) >= 1);
    });

    it('uses an IP literal as written and sends no DNS query for it', async () => {
        env.dns.setRecords('named.gw.test', { A: [{ address: '192.0.2.92', ttl: 30 }] });
        const { link, ns, labels } = await linked('named.gw.test, 192.0.2.91');
        await createRemoteService(env, ns, 'web', { labels });
        await eventually('both addresses', async () => (await endpointsOf(env, ns, `web-${link}`)).length === 2);
        assert.deepEqual(await endpointsOf(env, ns, `web-${link}`), ['IPv4 192.0.2.91 ready', 'IPv4 192.0.2.92 ready']);
        assert.ok(env.dns.queryCount('named.gw.test') > 0);
        assert.deepEqual(env.dns.queries.filter((q) => q.name.includes('192.0.2.91') || q.name.includes('91.2.0.192')), []);
        await eventually('the status in spec order', async () => (await getLink(env, linkNs, link)).status?.gatewayResolution?.length === 2);
        const entries = (await getLink(env, linkNs, link)).status!.gatewayResolution!;
        assert.deepEqual(entries.map((e) => e.name), ['named.gw.test', '192.0.2.91']);
        assert.deepEqual(entries[1], { name: '192.0.2.91', addresses: ['192.0.2.91'] });
    });

    it('creates the mirror Service while the name does not resolve, and its endpoints as soon as it does', async () => {
        const { link, ns, labels } = await linked('late.gw.test');
        await createRemoteService(env, ns, 'web', { labels });
        await eventually('the mirror Service', async () => Boolean(await mirrorService(env, ns, `web-${link}`)));
        await eventually('the failure reported', () => hasEvent(env, linkNs, link, 'GatewayResolutionFailed', 'no addresses yet'));
        assert.deepEqual(await mirrorSlices(env, ns, `web-${link}`), []);
        env.dns.setRecords('late.gw.test', { A: [{ address: '192.0.2.101', ttl: 1 }] });
        await eventually('endpoints once it resolves', async () => (await endpointsOf(env, ns, `web-${link}`)).join() === 'IPv4 192.0.2.101 ready', 8000);
    });
});
