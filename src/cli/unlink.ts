// `mesh-endpoints unlink --cluster-name NAME`: prints the removal of a Link, its credentials
// Secret, Linkerd destination's Secret for that cluster (in --control-plane-namespace) and its
// mirrors (Services and EndpointSlices) as YAML, for `kubectl delete --ignore-not-found -f -`,
// as `linkerd multicluster unlink` does; --apply deletes them itself. The read-only access
// `link` set up on the remote cluster is not touched (it is the remote's to remove).
import type { Command } from 'commander';
import { isNotFound } from '../kube/errors.js';
import { EndpointSlices, Links, objectPath, Secrets, Services, type ResourceType } from '../kube/resources.js';
import { findLink, unlinkObjects, unlinkYaml, type DestinationSecretObject } from '../ops/unlink.js';
import { credentialsSecretName } from './link-gen.js';
import { fail } from './common.js';
import { operatorCommand, withClient, type OperatorFlags } from './operator-options.js';
import { getIfExists, listLinks, readMirrors } from './read.js';

interface Flags extends OperatorFlags {
    clusterName: string;
    controlPlaneNamespace: string;
    apply?: boolean;
}

const RESOURCES: Record<string, ResourceType> = { Link: Links, Secret: Secrets, Service: Services, EndpointSlice: EndpointSlices };

export function unlinkCommand(program: Command): void {
    operatorCommand(program, 'unlink', 'print the removal of a Link, its credentials Secret and its mirrors, for kubectl delete --ignore-not-found -f -', ['yaml', 'json'])
        .requiredOption('--cluster-name <name>', 'the cluster whose Link goes (the Link of that name, else the one targeting it)')
        .option('--control-plane-namespace <ns>', "Linkerd's control-plane namespace, where the destination's Secret for the cluster is", 'linkerd')
        .option('--apply', 'delete them now instead of printing them')
        .action((flags: Flags) => run(flags).catch(fail));
}

async function run(flags: Flags): Promise<void> {
    await withClient(flags, async (rest) => {
        const links = await listLinks(rest, flags.namespace);
        if (links === undefined) throw new Error('the Link CRD (links.multicluster.linkerd.io) is not installed');
        const found = findLink(links, flags.clusterName, flags.namespace);
        if ('error' in found) throw new Error(found.error);
        const { services, slices } = await readMirrors(rest);
        const cluster = (found.link.spec?.targetClusterName as string | undefined) ?? '';
        const destination = cluster === '' ? undefined : await getIfExists<DestinationSecretObject>(rest, objectPath(Secrets, flags.controlPlaneNamespace, credentialsSecretName(cluster)));
        const objects = unlinkObjects(found.link, services, slices, destination);
        if (!flags.apply) {
            process.stdout.write(flags.output === 'json' ? `${JSON.stringify({ apiVersion: 'v1', kind: 'List', items: objects }, null, 2)}\n` : unlinkYaml(objects));
            return;
        }
        for (const object of objects) {
            const deleted = await rest.delete(objectPath(RESOURCES[object.kind]!, object.metadata.namespace, object.metadata.name)).then(
                () => true,
                (err: unknown) => {
                    // The service mirror may have deleted a mirror first: what is gone is done.
                    if (isNotFound(err)) return false;
                    throw err;
                },
            );
            process.stdout.write(`${object.kind.toLowerCase()} ${object.metadata.namespace}/${object.metadata.name} ${deleted ? 'deleted' : 'already gone'}\n`);
        }
    });
}
