import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseAllDocuments } from 'yaml';
import { findLink, unlinkObjects, unlinkYaml } from './unlink.js';
import { LINK_NS, mirrorService, mirrorSlice, rawLink } from './testkit.js';

describe('unlink', () => {
    it('finds the Link named after the cluster, else the one targeting it, else says which Links there are', () => {
        const links = [rawLink({ name: 'east' }), rawLink({ name: 'link-2', cluster: 'west' })];
        assert.equal((findLink(links, 'east', LINK_NS) as { link: { metadata: { name: string } } }).link.metadata.name, 'east');
        assert.equal((findLink(links, 'west', LINK_NS) as { link: { metadata: { name: string } } }).link.metadata.name, 'link-2');
        assert.deepEqual(findLink(links, 'north', LINK_NS), { error: `no Link for cluster north in namespace ${LINK_NS} (Links there: east, link-2)` });
    });

    it("removes the Link, its Secret, its mirrors and their slices, and not another Link's", () => {
        const services = [
            mirrorService('shop', 'web-east', 'east'),
            mirrorService('bank', 'api-east', 'east', null),
            mirrorService('shop', 'web-west', 'west'),
            mirrorService('shop', 'db-east', 'east', 'other-ns/east'),
        ];
        const slices = [mirrorSlice('shop', 'web-east-x1', 'web-east', [true]), mirrorSlice('shop', 'web-west-x1', 'web-west', [true]), mirrorSlice('shop', 'db-east-x1', 'db-east', [true])];
        const names = unlinkObjects(rawLink(), services, slices).map((o) => `${o.kind} ${o.metadata.namespace}/${o.metadata.name}`);
        assert.deepEqual(names, [
            `Link ${LINK_NS}/east`,
            `Secret ${LINK_NS}/cluster-credentials-east`,
            'Service bank/api-east',
            'Service shop/web-east',
            'EndpointSlice shop/web-east-x1',
        ]);
    });

    it('prints one YAML document per object, each naming what kubectl deletes', () => {
        const objects = unlinkObjects(rawLink(), [mirrorService('shop', 'web-east', 'east')], []);
        const docs = parseAllDocuments(unlinkYaml(objects)).map((d) => d.toJS());
        assert.deepEqual(docs, [
            { apiVersion: 'multicluster.linkerd.io/v1alpha3', kind: 'Link', metadata: { name: 'east', namespace: LINK_NS } },
            { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'cluster-credentials-east', namespace: LINK_NS } },
            { apiVersion: 'v1', kind: 'Service', metadata: { name: 'web-east', namespace: 'shop' } },
        ]);
    });

    it("removes Linkerd destination's Secret of the cluster too, and not a Secret of that name labelled for another cluster", () => {
        const destination = (cluster: string) => ({ metadata: { name: 'cluster-credentials-east', namespace: 'linkerd', labels: { 'multicluster.linkerd.io/cluster-name': cluster } } });
        const names = (secret?: object) => unlinkObjects(rawLink(), [], [], secret).map((o) => `${o.kind} ${o.metadata.namespace}/${o.metadata.name}`);
        assert.deepEqual(names(destination('east')), [`Link ${LINK_NS}/east`, `Secret ${LINK_NS}/cluster-credentials-east`, 'Secret linkerd/cluster-credentials-east']);
        assert.deepEqual(names(destination('west')), [`Link ${LINK_NS}/east`, `Secret ${LINK_NS}/cluster-credentials-east`]);
        assert.deepEqual(names(undefined), [`Link ${LINK_NS}/east`, `Secret ${LINK_NS}/cluster-credentials-east`]);
    });
});
