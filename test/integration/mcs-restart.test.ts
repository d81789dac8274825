// A service-mirror process SIGKILLed in the middle of each MCS change (export, a steady import,
// conflict, unexport, a cluster leaving the set) and a new one started: the end state is right,
// and no ServiceImport or slice that should persist is deleted and recreated. Real watches opened
// before the kill see every DELETED event; uids are compared across the restart.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { derivedServiceName } from '../../src/servicemirror/mcs/types.js';
import { eventually } from '../../src/testing/harness.js';
import {
    createLinkTo,
    createService,
    deleteLinkTo,
    exportCondition,
    exportService,
    getImport,
    importedEndpoints,
    killController,
    mcsUids,
    sharedNamespace,
    startController,
    startMcsSet,
    unexportService,
    watchMcs,
    type McsMember,
} from './mcs-support.js';

const set = await startMcsSet('mcsr');
const { east, west } = set;
const both = [east, west];

async function endpointsBecome(member: McsMember, ns: string, name: string, expected: string[]): Promise<void> {
    let last: string[] = [];
    await eventually(`${member.name}: endpoints ${expected.join(', ')}`, async () => {
        last = await importedEndpoints(member, ns, name);
        return JSON.stringify(last) === JSON.stringify(expected);
    }).catch(() => assert.deepEqual(last, expected, `${member.name}'s MCS endpoints`));
}

async function clustersListed(member: McsMember, ns: string, name: string, clusters: string[]): Promise<void> {
    await eventually(`${member.name}: ${name} imported from ${clusters.join(',')}`, async () => {
        const listed = ((await getImport(member, ns, name))?.status?.clusters ?? []).map((c) => c.cluster).sort();
        return JSON.stringify(listed) === JSON.stringify(clusters);
    });
}

async function kill(...members: McsMember[]): Promise<void> {
    await Promise.all(members.map((m) => killController(m)));
}

async function start(...members: McsMember[]): Promise<void> {
    await Promise.all(members.map((m) => startController(m)));
}

/**
 * The new controllers have listed everything and act: a probe exported from east is imported in
 * both clusters. Anything a restart would delete would be deleted by then.
 */
async function newControllersActing(ns: string): Promise<void> {
    await createService(east, ns, 'probe');
    await exportService(east, ns, 'probe');
    await endpointsBecome(west, ns, 'probe', ['east 192.0.2.10:4143 ready']);
    await endpointsBecome(east, ns, 'probe', ['east 10.1.0.1:8080 ready']);
}

/** `hello` exported from both clusters, each importing the other's endpoints and its own. */
async function exportedFromBoth(ns: string): Promise<void> {
    await createService(east, ns, 'hello');
    await createService(west, ns, 'hello', { endpoints: ['10.2.0.1'] });
    await exportService(east, ns, 'hello');
    await exportService(west, ns, 'hello');
    await endpointsBecome(east, ns, 'hello', ['east 10.1.0.1:8080 ready', 'west 192.0.2.20:4143 ready']);
    await endpointsBecome(west, ns, 'hello', ['east 192.0.2.10:4143 ready', 'west 10.2.0.1:8080 ready']);
}

/** The probe's import and slices (named after its derived Service) are new by design. */
const withoutProbe = (uids: string[]) => uids.filter((line) => !line.includes(' probe ') && !line.includes(` ${derivedServiceName('probe')}`));

describe('MCS: a service-mirror process SIGKILLed during each change', () => {
    it('export: both killed right after the export; the new ones import it, and what the old ones made is never deleted', async () => {
        const ns = await sharedNamespace(set, 'rx-export');
        await createService(east, ns, 'hello', { endpoints: ['10.1.0.1', '10.1.0.2'] });
        const watch = await watchMcs(set, ns);
        try {
            await exportService(east, ns, 'hello');
            await kill(east, west);
            await start(east, west);
            for (const member of both) await clustersListed(member, ns, 'hello', ['east']);
            await endpointsBecome(east, ns, 'hello', ['east 10.1.0.1:8080 ready', 'east 10.1.0.2:8080 ready']);
            await endpointsBecome(west, ns, 'hello', ['east 192.0.2.10:4143 ready']);
            await newControllersActing(ns);
            assert.deepEqual(watch.deleted(), [], 'nothing deleted during an export');
            // Whatever the killed process created is what is there now: one uid per object.
            const current = await mcsUids(set, ns);
            for (const ev of watch.events.filter((e) => e.type === 'ADDED')) {
                assert.ok(current.some((line) => line.startsWith(`${ev.cluster} ${ev.kind} ${ev.name} `)), `${ev.cluster} ${ev.kind} ${ev.name} still there`);
                assert.ok(current.includes(`${ev.cluster} ${ev.kind} ${ev.name} ${ev.uid}`), `${ev.cluster} ${ev.kind} ${ev.name} kept its uid`);
            }
        } finally {
            watch.stop();
        }
    });

    it('steady import: both killed and restarted; every ServiceImport and slice keeps its uid, no DELETED event', async () => {
        const ns = await sharedNamespace(set, 'rx-steady');
        await exportedFromBoth(ns);
        const before = await mcsUids(set, ns);
        const watch = await watchMcs(set, ns);
        try {
            await kill(east, west);
            await start(east, west);
            await newControllersActing(ns);
            assert.deepEqual(watch.deleted(), []);
            assert.deepEqual(withoutProbe(await mcsUids(set, ns)), before);
        } finally {
            watch.stop();
        }
    });

    it('conflict: a conflicting export from west, both killed at once; the new ones report it on both, the import persists', async () => {
        const ns = await sharedNamespace(set, 'rx-conflict');
        await createService(east, ns, 'hello');
        await exportService(east, ns, 'hello');
        for (const member of both) await clustersListed(member, ns, 'hello', ['east']);
        await endpointsBecome(west, ns, 'hello', ['east 192.0.2.10:4143 ready']);
        const before = await mcsUids(set, ns);
        await new Promise((r) => setTimeout(r, 1100)); // creation timestamps have seconds: west's is younger
        const watch = await watchMcs(set, ns);
        try {
            await createService(west, ns, 'hello', { ports: [{ name: 'http', port: 81 }], endpoints: ['10.2.0.1'] });
            await exportService(west, ns, 'hello');
            await kill(east, west);
            await start(east, west);
            for (const member of both) {
                await eventually(`${member.name}: Conflict=True`, async () => (await exportCondition(member, ns, 'hello', 'Conflict'))?.status === 'True');
                assert.equal((await exportCondition(member, ns, 'hello', 'Conflict'))?.reason, 'PortConflict');
                await clustersListed(member, ns, 'hello', ['east', 'west']);
            }
            // West serves http on 81, not the import's 80: none of its endpoints carry a port of the import.
            await endpointsBecome(east, ns, 'hello', ['east 10.1.0.1:8080 ready']);
            await endpointsBecome(west, ns, 'hello', ['east 192.0.2.10:4143 ready']);
            await newControllersActing(ns);
            assert.deepEqual(watch.deleted(), [], 'nothing deleted when a conflicting export joins');
            const now = await mcsUids(set, ns);
            for (const line of before) assert.ok(now.includes(line), `${line} kept`);
        } finally {
            watch.stop();
        }
    });

    it('unexport: west unexports, both killed at once; west\'s slices go everywhere, the imports and east\'s slices persist', async () => {
        const ns = await sharedNamespace(set, 'rx-unexport');
        await exportedFromBoth(ns);
        const before = await mcsUids(set, ns);
        const watch = await watchMcs(set, ns);
        try {
            await unexportService(west, ns, 'hello');
            await kill(east, west);
            await start(east, west);
            await endpointsBecome(east, ns, 'hello', ['east 10.1.0.1:8080 ready']);
            await endpointsBecome(west, ns, 'hello', ['east 192.0.2.10:4143 ready']);
            for (const member of both) await clustersListed(member, ns, 'hello', ['east']);
            await newControllersActing(ns);
            const deleted = watch.deleted();
            assert.ok(deleted.length > 0, 'west\'s slices were deleted');
            assert.deepEqual(deleted.filter((e) => e.kind !== 'EndpointSlice' || e.source !== 'west'), [], 'only west\'s slices deleted');
            const now = await mcsUids(set, ns);
            const persisting = before.filter((line) => line.includes(' ServiceImport ') || !deleted.some((e) => line.includes(e.uid)));
            assert.ok(persisting.some((line) => line.includes(' ServiceImport ')));
            for (const line of persisting) assert.ok(now.includes(line), `${line} kept`);
        } finally {
            watch.stop();
        }
    });

    it('leaving: east killed, its Link to west deleted, a new east started; west\'s slices leave east, east\'s import and slices persist', async () => {
        const ns = await sharedNamespace(set, 'rx-leave');
        await exportedFromBoth(ns);
        const before = await mcsUids(set, ns);
        const watch = await watchMcs(set, ns);
        try {
            await kill(east);
            await deleteLinkTo(east, west);
            await start(east);
            await endpointsBecome(east, ns, 'hello', ['east 10.1.0.1:8080 ready']);
            await clustersListed(east, ns, 'hello', ['east']);
            // west still links east: its import is unchanged.
            await endpointsBecome(west, ns, 'hello', ['east 192.0.2.10:4143 ready', 'west 10.2.0.1:8080 ready']);
            const deleted = watch.deleted();
            assert.ok(deleted.length > 0, 'west\'s slices left east');
            assert.deepEqual(deleted.filter((e) => !(e.cluster === 'east' && e.kind === 'EndpointSlice' && e.source === 'west')), [], 'only west\'s slices in east deleted');
            const now = await mcsUids(set, ns);
            for (const line of before.filter((l) => !deleted.some((e) => l.includes(e.uid)))) assert.ok(now.includes(line), `${line} kept`);
        } finally {
            watch.stop();
            await createLinkTo(east, west);
        }
    });
});
