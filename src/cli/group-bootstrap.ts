// What `workload-group bootstrap` prints for one VM of a group: the ServiceAccount it
// authenticates as and the RoleBinding that gives it the agents' rights (for kubectl apply),
// the command that makes its token, and, for the VM, the agent's flags as a systemd unit.
// Pure, beside the command: the test reads what an operator would copy.
import { stringify } from 'yaml';
import { registrationName } from '../externalworkloads/groups/types.js';

export interface BootstrapInput {
    namespace: string;
    group: string;
    vm: string;
    /** The apiserver as the VM reaches it. */
    server: string;
    /** The agents' ClusterRole the chart installs. */
    clusterRole: string;
    tokenDuration: string;
}

export const AGENT_DIR = '/etc/mesh-endpoints';

export function bootstrapManifests(input: BootstrapInput): string {
    const account = registrationName(input.group, input.vm);
    const labels = { 'mesh-endpoints.io/workload-group': input.group };
    const objects = [
        { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: account, namespace: input.namespace, labels } },
        {
            apiVersion: 'rbac.authorization.k8s.io/v1',
            kind: 'RoleBinding',
            metadata: { name: account, namespace: input.namespace, labels },
            roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: input.clusterRole },
            subjects: [{ kind: 'ServiceAccount', name: account, namespace: input.namespace }],
        },
    ];
    return objects.map((o) => `---\n${stringify(o)}`).join('');
}

export function bootstrapText(input: BootstrapInput): string {
    const account = registrationName(input.group, input.vm);
    const flags = [
        `--server ${input.server}`,
        `--certificate-authority ${AGENT_DIR}/ca.crt`,
        `--token-file ${AGENT_DIR}/token`,
        `--namespace ${input.namespace}`,
        `--group ${input.group}`,
        `--vm-id ${input.vm}`,
        '--addresses auto',
    ];
    return [
        `# VM ${input.vm} of ExternalWorkloadGroup ${input.namespace}/${input.group}: it authenticates as the`,
        `# ServiceAccount ${input.namespace}/${account} and may write only the Lease ${account} (the chart's admission policies).`,
        '#',
        '# 1. On a machine with kubectl, as a cluster admin: its ServiceAccount and rights.',
        `mesh-endpoints workload-group bootstrap -n ${input.namespace} --group ${input.group} --vm ${input.vm} -o manifests | kubectl apply -f -`,
        '#',
        `# 2. Its token (a bound token; make a new one before it expires: the agent re-reads ${AGENT_DIR}/token),`,
        "#    and the apiserver's CA, copied to the VM:",
        `kubectl create token ${account} -n ${input.namespace} --duration ${input.tokenDuration} > token`,
        `kubectl config view --raw --minify -o jsonpath='{.clusters[0].cluster.certificate-authority-data}' | base64 -d > ca.crt`,
        `#    on the VM: install -m 0600 token ${AGENT_DIR}/token; install -m 0644 ca.crt ${AGENT_DIR}/ca.crt`,
        '#',
        '# 3. On the VM: /etc/systemd/system/mesh-endpoints-workload-agent.service, then',
        '#    systemctl daemon-reload && systemctl enable --now mesh-endpoints-workload-agent',
        '[Unit]',
        'Description=mesh-endpoints workload agent: registers this VM into its ExternalWorkloadGroup',
        'After=network-online.target',
        'Wants=network-online.target',
        '',
        '[Service]',
        `ExecStart=/usr/local/bin/mesh-endpoints workload-agent ${flags.join(' ')}`,
        '# SIGTERM withdraws the registration (not ready at once) before the agent exits.',
        'KillSignal=SIGTERM',
        'TimeoutStopSec=10',
        'Restart=always',
        'RestartSec=2',
        'DynamicUser=yes',
        `ReadOnlyPaths=${AGENT_DIR}`,
        'NoNewPrivileges=yes',
        '',
        '[Install]',
        'WantedBy=multi-user.target',
    ].join('\n');
}
