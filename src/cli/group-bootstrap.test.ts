import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseAllDocuments } from 'yaml';
import { bootstrapManifests, bootstrapText } from './group-bootstrap.js';

const input = { namespace: 'vms', group: 'web', vm: 'vm-1', server: 'https://203.0.113.10:6443', clusterRole: 'mesh-endpoints-workload-agent', tokenDuration: '24h' };

describe('workload-group bootstrap', () => {
    it('makes the VM’s ServiceAccount <group>.<vm> and binds it to the agents’ ClusterRole in the group’s namespace', () => {
        const objects = parseAllDocuments(bootstrapManifests(input)).map((d) => d.toJS() as { kind: string; metadata: { name: string; namespace: string }; roleRef?: { name: string } });
        assert.deepEqual(objects.map((o) => [o.kind, o.metadata.namespace, o.metadata.name]), [['ServiceAccount', 'vms', 'web.vm-1'], ['RoleBinding', 'vms', 'web.vm-1']]);
        assert.equal(objects[1]!.roleRef!.name, 'mesh-endpoints-workload-agent');
    });

    it('says how to make the token and gives the systemd unit with the agent’s flags', () => {
        const text = bootstrapText(input);
        assert.match(text, /kubectl create token web\.vm-1 -n vms --duration 24h/);
        assert.match(text, /ExecStart=\/usr\/local\/bin\/mesh-endpoints workload-agent --server https:\/\/203\.0\.113\.10:6443 .*--token-file \/etc\/mesh-endpoints\/token .*--group web --vm-id vm-1/);
        assert.match(text, /KillSignal=SIGTERM/);
    });
});
