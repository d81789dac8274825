// The chart's RBAC (templates/*/rbac.yaml, the only copy) is enough and every rule of it is
// needed: each controller runs as its rendered ServiceAccount with exactly those rights and
// converges, refused nothing; then once per rule, with that one rule taken out, the apiserver
// refuses the controller what the rule grants. The local apiservers run the
// OwnerReferencesPermissionEnforcement admission plugin, so services/finalizers is proved too.
// The service mirror serves MCS here (its CRDs and a ClusterProperty), so its rules are proved too.
import assert from 'node:assert/strict';
import { createServer, type AddressInfo } from 'node:net';
import { after, describe, it } from 'node:test';
import { EventRecorder } from '../../src/kube/events.js';
import { logFn, newLogger } from '../../src/kube/log.js';
import type { RequestOpts } from '../../src/kube/rest.js';
import { ApiError } from '../../src/kube/errors.js';
import { collectionPath, objectPath, Services, ClusterProperties, ServiceExports } from '../../src/kube/resources.js';
import { CLUSTER_ID_PROPERTY, type ServiceExport } from '../../src/servicemirror/mcs/types.js';
import { installMcsCrds } from '../../src/testing/crds.js';
import { applyObjects, renderChart, type ManifestObject } from '../../src/testing/chart.js';
import { eventually, setUp, type TestCluster } from '../../src/testing/harness.js';
import { createLink, createRemoteService, deleteRemoteService, endpointsOf, mirrorService, pairedNamespace, patchRemoteService, runServiceMirror, startMirrorEnv } from './mirror-support.js';
import { createGroup, groupStatusOf, leaseBody, leaseExists, writeLease } from './group-support.js';
import { addressesOf, CountingRest, createService, createWorkload, runExternalWorkloads, slicesOf, workloadReady } from './support.js';

const env = await startMirrorEnv('rbac');
// MCS is served here (its CRDs, and this cluster named by its ClusterProperty), so its rules are proved too.
await setUp('the MCS CRDs and the ClusterProperty', async () => {
    await installMcsCrds(env.local.admin);
    await env.local.admin.create(collectionPath(ClusterProperties), { apiVersion: 'about.k8s.io/v1alpha1', kind: 'ClusterProperty', metadata: { name: CLUSTER_ID_PROPERTY }, spec: { value: 'local' } });
});

const verbs: Record<string, string> = { POST: 'create', PUT: 'update', PATCH: 'patch', DELETE: 'delete' };

/** "verb resource[/subresource]" of a request, as the apiserver's authorizer sees it. */
function verbAndResource(method: string, path: string): string {
    const parts = path.split('?')[0]!.split('/').filter(Boolean);
    const rest = parts.slice(parts[0] === 'api' ? 2 : 3);
    const [resource, name, sub] = rest[0] === 'namespaces' && rest.length > 2 ? rest.slice(2) : rest;
    const verb = method === 'GET' ? (name ? 'get' : 'list') : method === 'WATCH' ? 'watch' : verbs[method]!;
    return `${verb} ${resource}${sub ? `/${sub}` : ''}`;
}

/** A client that keeps what it asked for, and every request refused for lack of rights (reads included). */
class RefusalLog extends CountingRest {
    readonly forbidden: string[] = [];
    readonly used = new Set<string>();
    override async request<T>(method: string, path: string, o?: RequestOpts): Promise<T> {
        this.used.add(verbAndResource(method, path));
        try {
            return await super.request<T>(method, path, o);
        } catch (err) {
            if (err instanceof ApiError && err.code === 403) this.forbidden.push(`${method} ${path}: ${err.message}`);
            throw err;
        }
    }
    override watch(...args: Parameters<CountingRest['watch']>): Promise<void> {
        this.used.add(verbAndResource('WATCH', args[0]));
        return super.watch(...args);
    }
}

interface Rule {
    apiGroups: string[];
    resources: string[];
    verbs: string[];
}
type RbacObject = ManifestObject & { rules?: Rule[] };
const rbacKinds = new Set(['ServiceAccount', 'ClusterRole', 'ClusterRoleBinding', 'Role', 'RoleBinding']);

let releases = 0;
/** The chart's ServiceAccount and RBAC for one controller, in a release (and namespace) of its own. */
async function chartRbac(cluster: TestCluster, component: string): Promise<{ namespace: string; objects: RbacObject[] }> {
    const namespace = await cluster.namespace('rbac');
    const objects = await renderChart({ release: `r${++releases}`, namespace });
    const own = objects.filter((o) => rbacKinds.has(o.kind) && o.metadata.labels?.['app.kubernetes.io/component'] === component);
    assert.ok(own.some((o) => o.kind === 'ServiceAccount') && own.some((o) => o.kind === 'ClusterRole'), `the chart renders RBAC for ${component}`);
    return { namespace, objects: own };
}

/** Applies the objects and returns a client acting as their ServiceAccount. */
async function grant(cluster: TestCluster, namespace: string, objects: RbacObject[]): Promise<RefusalLog> {
    await applyObjects(cluster.admin, objects);
    const account = objects.find((o) => o.kind === 'ServiceAccount')!.metadata.name;
    const sa = await cluster.serviceAccountClient(namespace, account);
    sa.close();
    return new RefusalLog(sa.kubeConfig);
}

/**
 * Granted verbs the run did not use (shown, not failed: some serve rarer paths, such as patch on
 * events for a repeated Event, or are checked by admission rather than called, such as update on
 * services/finalizers). Each rule as a whole is proved needed by the rule-by-rule test.
 */
function unused(objects: RbacObject[], used: Set<string>): string {
    const granted = objects.flatMap((o) => (o.rules ?? []).flatMap((r) => r.resources.flatMap((res) => r.verbs.map((v) => `${v} ${res}`))));
    return granted.filter((g) => !used.has(g)).join(', ') || 'none';
}

/** Every rule of every role, each as the objects with that rule taken out. */
function withoutEachRule(objects: RbacObject[]): { rule: string; resources: string[]; objects: RbacObject[] }[] {
    return objects.flatMap((role, roleIndex) =>
        (role.rules ?? []).map((rule, ruleIndex) => ({
            rule: `${role.kind} ${rule.resources.join(',')} [${rule.verbs.join(',')}]`,
            resources: rule.resources,
            objects: objects.map((o, i) => (i === roleIndex ? { ...o, rules: o.rules!.filter((_, j) => j !== ruleIndex) } : o)),
        })),
    );
}

/** The first refusal naming a resource the missing rule grants (admission names the owner's finalizers). */
function refusalFor(forbidden: string[], resources: string[]): string | undefined {
    return forbidden.find((line) => resources.some((r) => (r.endsWith('/finalizers') ? line.includes('finalizers') : line.includes(`"${r}"`))));
}

describe('the chart RBAC, external-workloads', () => {
    const component = 'external-workloads';
    let dataNs = '';
    // What a health-checked workload's probe reaches (through the address override): a loopback listener.
    const probed = createServer((socket) => socket.end()).listen(0, '127.0.0.1');
    after(() => probed.close());
    const healthChecks = { addressOverride: { host: '127.0.0.1', port: 0 } };
    const scenario = async () => {
        healthChecks.addressOverride.port = (probed.address() as AddressInfo).port;
        dataNs = await env.local.namespace();
        await createService(env.local, dataNs, { metadata: { name: 'web' }, spec: { selector: { app: 'web' }, ports: [{ name: 'http', port: 80, targetPort: 'http' as never }] } });
        await createWorkload(env.local, dataNs, { name: 'vm-1', ips: ['192.0.2.1'] });
        await createWorkload(env.local, dataNs, { name: 'vm-bad', ips: ['192.0.2.2'], ports: [{ name: 'other', port: 1 }] }); // an Event to write
        await probedWorkload('vm-probed');
        await createGroup(env.local.admin, dataNs, 'web', { leaseDuration: '3s', heartbeatPeriod: '1s', gracePeriod: '2s' });
        await registration('vm-0');
    };
    /** A health-checked workload without a Ready condition yet: one to write. */
    /** A VM's registration that lapses soon (lease 3s, grace 2s): its workload to create, mark, delete, with its Lease. */
    const registration = async (vm: string) => {
        await writeLease(env.local.admin, dataNs, leaseBody(dataNs, 'web', vm, ['10.20.0.9']));
    };
    const probedWorkload = (name: string) =>
        createWorkload(env.local, dataNs, { name, labels: { app: 'probed' }, ips: ['192.0.2.4'], ready: false, annotations: { 'mesh-endpoints.io/probe': 'tcp:4191', 'mesh-endpoints.io/probe-period': '1s' } });

    it('is enough: it runs, leads and converges, refused nothing', async (t) => {
        const { namespace, objects } = await chartRbac(env.local, component);
        const rest = await grant(env.local, namespace, objects);
        await scenario();
        const { controller, stop } = await runExternalWorkloads(env.local, { rest, leaseNamespace: namespace, healthChecks, workloadGroups: true });
        await eventually('the leader publishes vm-1', async () => addressesOf(await slicesOf(env.local, dataNs, 'web')).includes('192.0.2.1'));
        await eventually('the probed workload ready', async () => (await workloadReady(env.local, dataNs, 'vm-probed')) === 'True');
        await eventually('the registration materialised, lapsed and deleted with its Lease', async () => (await groupStatusOf(env.local.admin, dataNs, 'web')).observedGeneration === 1 && !(await leaseExists(env.local.admin, dataNs, 'web.vm-0')), 20_000);
        await createWorkload(env.local, dataNs, { name: 'vm-2', ips: ['192.0.2.3'] });
        await eventually('a slice updated with vm-2', async () => addressesOf(await slicesOf(env.local, dataNs, 'web')).includes('192.0.2.3'));
        await env.local.admin.delete(objectPath(Services, dataNs, 'web'));
        await eventually('its slices deleted with the Service', async () => (await slicesOf(env.local, dataNs, 'web')).length === 0);
        await stop();
        assert.deepEqual(rest.forbidden, [], 'nothing refused');
        assert.deepEqual([...controller.informers, ...controller.optionalInformers].map((i) => i.stats.errors), [0, 0, 0, 0, 0, 0], 'no list or watch failed');
        t.diagnostic(`granted and not used here: ${unused(objects, rest.used)}`);
    });

    it('needs every rule: without one, the apiserver refuses what it grants', async (t) => {
        await scenario(); // a Service with a workload to publish and one to warn about
        const rules = withoutEachRule((await chartRbac(env.local, component)).objects).length;
        assert.ok(rules >= 6, 'rules found');
        for (let i = 0; i < rules; i++) {
            const { namespace, objects } = await chartRbac(env.local, component);
            const { rule, resources, objects: fewer } = withoutEachRule(objects)[i]!;
            const rest = await grant(env.local, namespace, fewer);
            await probedWorkload(`vm-probed-${i}`);
            await registration(`vm-${i + 1}`);
            const running = await runExternalWorkloads(env.local, { rest, leaseNamespace: namespace, waitForSync: false, healthChecks, workloadGroups: true });
            await eventually(`a refusal without ${rule}`, () => refusalFor(rest.forbidden, resources) !== undefined, 30_000).finally(() => running.stop());
            t.diagnostic(`without ${rule}: ${refusalFor(rest.forbidden, resources)}`);
        }
    });
});

describe('the chart RBAC, service-mirror', () => {
    const component = 'service-mirror';
    const silentEvents = (rest: RefusalLog) => new EventRecorder(rest, 'mesh-endpoints-service-mirror', logFn(newLogger('silent')), 0);
    const scenario = async (linkNs: string) => {
        await createLink(env, linkNs, { name: 'east', gatewayAddress: '192.0.2.1' });
        const ns = await pairedNamespace(env);
        await createRemoteService(env, ns, 'web');
        // Its namespace exists only there: a Warning Event on the Link.
        await createRemoteService(env, await env.remote.namespace('remote-only'), 'lonely');
        // A local export: its ServiceImport, derived Service and both statuses to write.
        await env.local.admin.create(collectionPath(Services, ns), { metadata: { name: 'hello' }, spec: { ports: [{ name: 'http', port: 80 }] } });
        await env.local.admin.create(collectionPath(ServiceExports, ns), { apiVersion: 'multicluster.x-k8s.io/v1beta1', kind: 'ServiceExport', metadata: { name: 'hello' } });
        return ns;
    };

    it('is enough: it mirrors and writes the Link status, refused nothing', async (t) => {
        const { namespace, objects } = await chartRbac(env.local, component);
        const rest = await grant(env.local, namespace, objects);
        const ns = await scenario(namespace);
        const running = await runServiceMirror(env, namespace, { rest, events: silentEvents(rest), leaderElection: true, mcs: {} });
        await eventually('the mirror with its endpoint', async () => (await endpointsOf(env, ns, 'web-east')).join() === 'IPv4 192.0.2.1 ready');
        await eventually('the export imported, its status written', async () => {
            const exp = await env.local.admin.get<ServiceExport>(objectPath(ServiceExports, ns, 'hello'));
            return exp.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
        });
        await eventually('the Link status written', async () => (rest.counts.PATCH ?? 0) > 0);
        await patchRemoteService(env, ns, 'web', { spec: { ports: [{ name: 'http', port: 80 }, { name: 'admin', port: 9990 }] } });
        await eventually('the mirror updated', async () => (await mirrorService(env, ns, 'web-east'))?.spec?.ports?.length === 2);
        await deleteRemoteService(env, ns, 'web');
        await eventually('the mirror deleted', async () => (await mirrorService(env, ns, 'web-east')) === undefined);
        await running.stop();
        assert.deepEqual(rest.forbidden, [], 'nothing refused');
        t.diagnostic(`granted and not used here: ${unused(objects, rest.used)}`);
        const informers = [...running.controller.informers, ...running.controller.optionalInformers];
        assert.deepEqual(informers.map((i) => i.stats.errors), informers.map(() => 0), 'no list or watch failed');
    });

    it('needs every rule: without one, the apiserver refuses what it grants', async (t) => {
        const rules = withoutEachRule((await chartRbac(env.local, component)).objects).length;
        assert.ok(rules >= 9, 'rules found');
        for (let i = 0; i < rules; i++) {
            const { namespace, objects } = await chartRbac(env.local, component);
            const { rule, resources, objects: fewer } = withoutEachRule(objects)[i]!;
            const rest = await grant(env.local, namespace, fewer);
            await scenario(namespace);
            const running = await runServiceMirror(env, namespace, { rest, events: silentEvents(rest), leaderElection: true, waitForSync: false, mcs: {} });
            await eventually(`a refusal without ${rule}`, () => refusalFor(rest.forbidden, resources) !== undefined, 30_000).finally(() => running.stop());
            t.diagnostic(`without ${rule}: ${refusalFor(rest.forbidden, resources)}`);
        }
    });
});
