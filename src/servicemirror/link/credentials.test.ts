// A Link's credentials Secret as the service mirror and `check` both read it: one problem,
// in one set of words, for the condition, the Event and the check.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { stringify } from 'yaml';
import { STRICT_POLICY } from '../../kube/untrusted-kubeconfig.js';
import { credentialsFromSecret, remoteCredentialsCondition } from './credentials.js';

const kubeconfig = (user: object) =>
    Buffer.from(
        stringify({
            'current-context': 'c',
            clusters: [{ name: 'east', cluster: { server: 'https://127.0.0.1:6443' } }],
            contexts: [{ name: 'c', context: { cluster: 'east', user: 'u' } }],
            users: [{ name: 'u', user }],
        }),
    ).toString('base64');

describe('a Link credentials Secret', () => {
    it('says what is missing: the Secret name, the Secret, its key, a usable kubeconfig', () => {
        const problem = (name: string, secret: Parameters<typeof credentialsFromSecret>[2]) => {
            const result = credentialsFromSecret('mc', name, secret, STRICT_POLICY);
            return 'problem' in result ? [result.problem.reason, result.problem.message] : ['loaded'];
        };
        assert.deepEqual(problem('', undefined), ['MissingCredentials', 'spec.clusterCredentialsSecret is empty']);
        assert.deepEqual(problem('creds', undefined), ['MissingCredentials', 'credentials Secret mc/creds not found']);
        assert.deepEqual(problem('creds', { data: {} }), ['InvalidCredentials', 'credentials Secret mc/creds has no key kubeconfig']);
        assert.match(problem('creds', { data: { kubeconfig: Buffer.from('{').toString('base64') } })[1]!, /^credentials Secret mc\/creds: key kubeconfig is not a usable kubeconfig: not YAML/);
        assert.deepEqual(problem('creds', { data: { kubeconfig: kubeconfig({ token: 't' }) } }), ['loaded']);
    });

    it('refuses an exec plugin with a reason naming it, in the words the condition then shows', () => {
        const result = credentialsFromSecret('mc', 'creds', { data: { kubeconfig: kubeconfig({ exec: { command: 'touch' } }) } }, STRICT_POLICY);
        assert.ok('problem' in result);
        assert.equal(result.problem.reason, 'ExecNotAllowed');
        assert.match(result.problem.message, /^credentials Secret mc\/creds: users\["u"\]\.user\.exec is refused: .*--allow-kubeconfig-exec allows it$/);
        const condition = remoteCredentialsCondition(result.problem, undefined, Date.parse('2026-01-01T00:00:00Z'));
        assert.deepEqual(condition, {
            type: 'RemoteCredentialsValid',
            status: 'False',
            lastTransitionTime: '2026-01-01T00:00:00Z',
            reason: 'ExecNotAllowed',
            message: `${result.problem.message}; the Link is not served`,
        });
        // The transition time stays while the status does.
        assert.equal(remoteCredentialsCondition(result.problem, condition, Date.parse('2026-01-02T00:00:00Z')).lastTransitionTime, '2026-01-01T00:00:00Z');
        assert.equal(remoteCredentialsCondition(undefined, condition, Date.parse('2026-01-02T00:00:00Z')).lastTransitionTime, '2026-01-02T00:00:00Z');
    });
});
