import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { KubeRest } from '../../kube/rest.js';
import { newLogger } from '../../kube/log.js';
import type { LinkStatus } from '../api/link.js';
import { LinkStatusBook } from './link-status.js';
import { mirrorLimitCondition, mirrorServiceStatus, type MirrorOutcome } from '../plan/status.js';

const T0 = Date.UTC(2026, 0, 1, 12, 0, 0);
const outcome = (name: string, mirrored: boolean): MirrorOutcome => ({
    namespace: 'app',
    remoteName: name,
    mirrored,
    reason: mirrored ? 'Mirrored' : 'InvalidService',
    message: mirrored ? `mirrored as app/${name}-east` : 'no ports',
    localName: mirrored ? `${name}-east` : undefined,
});

/** record() never writes; write() patches through `rest`. */
function book(stored: () => LinkStatus | undefined = () => undefined, rest = {} as KubeRest) {
    return new LinkStatusBook({
        rest,
        namespace: 'mc',
        name: 'east',
        stored: () => ({ metadata: { name: 'east', uid: 'u1' }, status: stored() }),
        policy: { minTtlMs: 1000, maxTtlMs: 3000, staleWindowMs: 2000, retryInitialMs: 1000, retryMaxMs: 30_000 },
        event: () => undefined,
        written: () => undefined,
        logger: newLogger('silent'),
        now: () => T0,
    });
}

describe('LinkStatusBook.record', () => {
    it('counts the mirrored entries as they are recorded, changed and removed', () => {
        const status = book();
        assert.equal(status.record(outcome('a', true), 'app/a'), true);
        assert.equal(status.record(outcome('b', true), 'app/b'), true);
        assert.equal(status.record(outcome('a', true), 'app/a'), false, 'the same outcome is no news');
        assert.equal(status.mirrored, 2);
        assert.equal(status.record(outcome('a', false), 'app/a'), true);
        assert.equal(status.mirrored, 1);
        assert.equal(status.record(null, 'app/b'), true);
        assert.equal(status.record(null, 'app/b'), false, 'already gone');
        assert.equal(status.mirrored, 0);
        assert.equal(status.record(outcome('a', true), 'app/a'), true);
        assert.equal(status.mirrored, 1);
    });

    it('keeps the transition time of the stored entry of each listed remote Service, as the stored status changes', async () => {
        let stored: LinkStatus = { mirrorServices: [mirrorServiceStatus(outcome('a', false), undefined, T0 - 60_000)] };
        const patches: { status: LinkStatus }[] = [];
        const rest = { mergePatch: async (_path: string, patch: { status: LinkStatus }) => (patches.push(patch), patch) } as unknown as KubeRest;
        const status = book(() => stored, rest);
        status.record(outcome('a', false), 'app/a');
        stored = { mirrorServices: [mirrorServiceStatus(outcome('b', false), undefined, T0 - 30_000)] };
        status.record(outcome('b', false), 'app/b');
        status.record(outcome('c', false), 'app/c');
        status.record(outcome('d', true), 'app/d');
        assert.equal(await status.write({ complete: true, entries: undefined, nameStates: new Map(), remote: undefined }), true);
        const times = patches[0]!.status.mirrorServices!.map((e) => `${e.remoteRef.name} ${e.conditions?.[0]?.lastTransitionTime}`);
        assert.deepEqual(times, ['a 2026-01-01T11:59:00Z', 'b 2026-01-01T11:59:30Z', 'c 2026-01-01T12:00:00Z'], 'the mirrored one is counted, not listed');
        assert.equal(patches[0]!.status.mirrorSummary?.mirrored, 1);
    });
});

describe('LinkStatusBook, a Service mirrored then not', () => {
    it('lists it with the time it stopped being mirrored, not an older stored one, and warns each time', async () => {
        // The stored status still lists `a` as not mirrored since an hour ago (before it was mirrored).
        const stored: LinkStatus = { mirrorServices: [mirrorServiceStatus(outcome('a', false), undefined, T0 - 3_600_000)] };
        const patches: { status: LinkStatus }[] = [];
        const rest = { mergePatch: async (_path: string, patch: { status: LinkStatus }) => (patches.push(patch), patch) } as unknown as KubeRest;
        const warnings: string[] = [];
        const status = new LinkStatusBook({
            rest,
            namespace: 'mc',
            name: 'east',
            stored: () => ({ metadata: { name: 'east', uid: 'u1' }, status: stored }),
            policy: { minTtlMs: 1000, maxTtlMs: 3000, staleWindowMs: 2000, retryInitialMs: 1000, retryMaxMs: 30_000 },
            event: (event) => warnings.push(event.message),
            written: () => undefined,
            logger: newLogger('silent'),
            now: () => T0,
        });
        assert.equal(status.record(outcome('a', true), 'app/a'), true);
        assert.equal(status.record(outcome('a', false), 'app/a'), true);
        assert.equal(status.record(outcome('a', false), 'app/a'), false, 'the same failure is no news');
        assert.equal(status.record(outcome('a', true), 'app/a'), true);
        assert.equal(status.record(outcome('a', false), 'app/a'), true);
        assert.equal(warnings.length, 2, 'one Warning per time it stopped being mirrored');
        assert.equal(await status.write({ complete: true, entries: undefined, nameStates: new Map(), remote: undefined }), true);
        assert.deepEqual(patches[0]!.status.mirrorServices!.map((e) => e.conditions?.[0]?.lastTransitionTime), ['2026-01-01T12:00:00Z']);
        assert.equal(patches[0]!.status.mirrorSummary?.mirrored, 0);
    });
});

describe('LinkStatusBook.write', () => {
    const remote = { readable: true, since: T0 };
    const complete = { complete: true, entries: undefined, nameStates: new Map(), remote };

    it('writes once, then nothing while nothing changes; an incomplete write of RemoteReadable keeps ServicesMirrored', async () => {
        let stored: LinkStatus | undefined;
        const patches: { status: LinkStatus }[] = [];
        const rest = {
            mergePatch: async (_path: string, patch: { status: LinkStatus }) => {
                patches.push(patch);
                stored = { ...stored, ...patch.status };
                return { status: stored };
            },
        } as unknown as KubeRest;
        const status = book(() => stored, rest);
        status.record(outcome('a', true), 'app/a');
        assert.equal(await status.write(complete), true);
        assert.deepEqual(stored?.conditions?.map((c) => `${c.type}=${c.status}`), ['RemoteReadable=True', 'ServicesMirrored=True']);
        assert.equal(await status.write(complete), false);
        assert.equal(await status.write({ ...complete, complete: false, remote: { readable: false, since: T0 + 1000, error: 'connect ECONNREFUSED' } }), true);
        assert.deepEqual(patches[1], { status: { conditions: [stored!.conditions![0]!, patches[0]!.status.conditions![1]!] } });
        assert.deepEqual(stored?.conditions?.map((c) => `${c.type}=${c.status}`), ['RemoteReadable=False', 'ServicesMirrored=True']);
    });
});

describe('what a Link status says of the limit and of what was left out of mirrors', () => {
    it('says MirrorLimitReached only past the limit, keeping its transition time while it holds', () => {
        assert.equal(mirrorLimitCondition(20, 20, undefined, T0), undefined);
        const reached = mirrorLimitCondition(20, 60, undefined, T0)!;
        assert.deepEqual([reached.type, reached.status, reached.reason], ['MirrorLimitReached', 'True', 'TooManyExports']);
        assert.match(reached.message!, /exports 60 Services, more than --max-mirrors-per-link=20: the 20 oldest .* the other 40 are not/);
        assert.equal(mirrorLimitCondition(20, 61, reached, T0 + 60_000)!.lastTransitionTime, reached.lastTransitionTime);
    });

    it('tells each warning of a mirror once while it lasts, and again once it comes back', () => {
        const events: string[] = [];
        const status = new LinkStatusBook({
            rest: {} as KubeRest,
            namespace: 'mc',
            name: 'east',
            stored: () => ({ metadata: { name: 'east', uid: 'u1' } }),
            policy: { minTtlMs: 1000, maxTtlMs: 3000, staleWindowMs: 2000, retryInitialMs: 1000, retryMaxMs: 30_000 },
            event: (e) => events.push(`${e.reason}: ${e.message}`),
            written: () => undefined,
            logger: newLogger('silent'),
            now: () => T0,
        });
        const refused = { reason: 'RemoteEndpointsRefused' as const, message: 'remote EndpointSlice app/a-1: left out "127.0.0.1" (loopback)' };
        const taken = { reason: 'NotOwned' as const, message: 'hostname "pod-1" has no endpoint mirror: app/pod-1-east exists and is not a mirror of Link east' };
        status.record({ ...outcome('a', true), warnings: [refused] }, 'app/a');
        status.record({ ...outcome('a', true), warnings: [refused, taken] }, 'app/a');
        status.record({ ...outcome('a', true), warnings: [refused, taken] }, 'app/a');
        status.record(outcome('a', true), 'app/a');
        status.record({ ...outcome('a', true), warnings: [refused] }, 'app/a');
        assert.deepEqual(events, [
            `RemoteEndpointsRefused: remote Service app/a: ${refused.message}`,
            `NotOwned: remote Service app/a: ${taken.message}`,
            `RemoteEndpointsRefused: remote Service app/a: ${refused.message}`,
        ]);
    });
});
