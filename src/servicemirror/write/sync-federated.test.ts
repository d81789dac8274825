import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1Service } from '@kubernetes/client-node';
import { FederatedSync, type FederationLink } from './sync-federated.js';
import { testLink } from '../api/testkit.js';

const member = (labels: Record<string, string> = { 'mirror.linkerd.io/federated': 'member' }, spec: V1Service['spec'] = { ports: [{ port: 80 }] }): V1Service => ({
    metadata: { name: 'web', namespace: 'ns1', labels },
    spec,
});

/** The writes FederatedSync asks for, against an in-memory map of local Services. */
class Writes {
    readonly local = new Map<string, V1Service>();
    readonly log: string[] = [];
    async ensureService(namespace: string, name: string, desired: V1Service, owner: (svc: V1Service) => string | null) {
        const have = this.local.get(name);
        const problem = have && owner(have);
        if (problem) return { problem, reason: 'NotOwned' as const };
        this.log.push(`${have ? 'update' : 'create'} ${namespace}/${name}`);
        this.local.set(name, desired);
        return { service: desired };
    }
    async deleteService(service: V1Service) {
        this.log.push(`delete ${service.metadata?.name}`);
        this.local.delete(service.metadata!.name!);
    }
}

function setup(links: FederationLink[], localMember?: V1Service, federation?: string) {
    const writes = new Writes();
    const sync = new FederatedSync({
        federation,
        writes,
        links: () => links,
        local: { get: () => localMember, excludedLabels: [], excludedAnnotations: [] },
        existing: (_, name) => writes.local.get(name),
        ensureNamespace: async () => true,
    });
    return { writes, sync };
}

const remote = (cluster: string, svc?: V1Service): FederationLink => ({
    cluster,
    remote: { link: testLink({ targetClusterName: cluster, federatedServiceSelector: { matchLabels: { 'mirror.linkerd.io/federated': 'member' } } }), service: () => svc },
});
const discovery = (svc: V1Service | undefined) => svc?.metadata?.annotations?.['multicluster.linkerd.io/remote-discovery'];

describe('FederatedSync', () => {
    it('creates, keeps the entry of a Link that cannot say, and deletes after the last member', async () => {
        const links = [remote('east', member()), remote('west', member())];
        const { writes, sync } = setup(links);
        assert.deepEqual(await sync.sync('ns1', 'web'), { service: 'web-federated', refused: [] });
        assert.equal(discovery(writes.local.get('web-federated')), 'web@east,web@west');
        links[1] = { cluster: 'west' }; // west's remote cannot be read
        links[0] = remote('east', undefined);
        await sync.sync('ns1', 'web');
        assert.equal(discovery(writes.local.get('web-federated')), 'web@west');
        links[1] = remote('west', member({ other: 'label' })); // read again: no longer selected
        assert.deepEqual(await sync.sync('ns1', 'web'), { service: null, refused: [] });
        assert.deepEqual(writes.log, ['create ns1/web-federated', 'update ns1/web-federated', 'delete web-federated']);
    });

    it('lists the members in the order the Links saw them join, whichever Link sees the remote Service first', async () => {
        // Two Links to one remote cluster watch it apart: either may see a new member first.
        // Later members are appended, as Linkerd does on Join: no rewrite to reorder.
        for (const order of [['east', 'west'], ['west', 'east']]) {
            const links = [remote('east', undefined), remote('west', undefined)];
            const { writes, sync } = setup(links);
            const joined: string[] = [];
            for (const cluster of order) {
                links[links.findIndex((l) => l.cluster === cluster)] = remote(cluster, member());
                joined.push(`web@${cluster}`);
                await sync.sync('ns1', 'web');
                assert.equal(discovery(writes.local.get('web-federated')), joined.join(','));
            }
        }
    });

    it('refuses a headless member by cluster, and leaves alone a `<name>-federated` it did not write', async () => {
        const { writes, sync } = setup([remote('east', member(undefined, { clusterIP: 'None', ports: [{ port: 80 }] }))], member());
        const outcome = await sync.sync('ns1', 'web');
        assert.deepEqual(outcome.refused, [{ cluster: 'east', message: 'Headless service cannot join federated service' }]);
        assert.equal(writes.local.get('web-federated')?.metadata?.annotations?.['multicluster.linkerd.io/local-discovery'], 'web');

        const other = setup([remote('east', member())]);
        other.writes.local.set('web-federated', { metadata: { name: 'web-federated', namespace: 'ns1' } });
        assert.match((await other.sync.sync('ns1', 'web')).problem ?? '', /not a federated Service; it is left alone/);
        assert.deepEqual(other.writes.log, []);
    });

    it('says which Links federate it, and leaves alone one another namespace’s Links federate; takes over one without the annotation', async () => {
        const ours = setup([remote('east', member())], undefined, 'mc');
        await ours.sync.sync('ns1', 'web');
        assert.equal(ours.writes.local.get('web-federated')?.metadata?.annotations?.['mesh-endpoints.io/federation'], 'mc');

        const theirs = setup([remote('east', member())], undefined, 'team-b');
        theirs.writes.local.set('web-federated', ours.writes.local.get('web-federated')!);
        assert.match((await theirs.sync.sync('ns1', 'web')).problem ?? '', /^ns1\/web-federated exists and is the federated Service of the Links in namespace mc; it is left alone$/);
        assert.deepEqual(theirs.writes.log, []);

        const linkerds = setup([remote('east', member())], undefined, 'mc');
        const { 'mesh-endpoints.io/federation': _, ...annotations } = ours.writes.local.get('web-federated')!.metadata!.annotations!;
        linkerds.writes.local.set('web-federated', { ...ours.writes.local.get('web-federated')!, metadata: { name: 'web-federated', namespace: 'ns1', labels: { 'mirror.linkerd.io/mirrored-service': 'true' }, annotations } });
        assert.equal((await linkerds.sync.sync('ns1', 'web')).service, 'web-federated');
        assert.deepEqual(linkerds.writes.log, ['update ns1/web-federated']);
    });
});
