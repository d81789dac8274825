import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { formatLabelSelector, isEmptySelector, matchesSelector, parseLabelSelector, selectorProblem } from './selector.js';

describe('Link label selectors', () => {
    it('select a Service whose labels hold every matchLabels pair', () => {
        const selector = { matchLabels: { 'mirror.linkerd.io/exported': 'true', tier: 'web' } };
        assert.equal(matchesSelector(selector, { 'mirror.linkerd.io/exported': 'true', tier: 'web', other: 'x' }), true);
        assert.equal(matchesSelector(selector, { 'mirror.linkerd.io/exported': 'true' }), false);
        assert.equal(matchesSelector(selector, { 'mirror.linkerd.io/exported': 'false', tier: 'web' }), false);
    });

    it('support the In, NotIn, Exists and DoesNotExist operators', () => {
        const inSel = { matchExpressions: [{ key: 'env', operator: 'In' as const, values: ['prod', 'staging'] }] };
        assert.equal(matchesSelector(inSel, { env: 'prod' }), true);
        assert.equal(matchesSelector(inSel, { env: 'dev' }), false);
        assert.equal(matchesSelector(inSel, {}), false);

        const notIn = { matchExpressions: [{ key: 'env', operator: 'NotIn' as const, values: ['dev'] }] };
        assert.equal(matchesSelector(notIn, { env: 'prod' }), true);
        assert.equal(matchesSelector(notIn, { env: 'dev' }), false);
        assert.equal(matchesSelector(notIn, { other: 'x' }), true, 'a missing label satisfies NotIn, as in Kubernetes');

        const exists = { matchExpressions: [{ key: 'mirror.linkerd.io/exported', operator: 'Exists' as const }] };
        assert.equal(matchesSelector(exists, { 'mirror.linkerd.io/exported': '' }), true);
        assert.equal(matchesSelector(exists, {}), false);

        const absent = { matchExpressions: [{ key: 'internal', operator: 'DoesNotExist' as const }] };
        assert.equal(matchesSelector(absent, { app: 'a' }), true);
        assert.equal(matchesSelector(absent, { internal: 'yes' }), false);
    });

    it('require matchLabels and every expression together', () => {
        const selector = {
            matchLabels: { app: 'web' },
            matchExpressions: [{ key: 'env', operator: 'In' as const, values: ['prod'] }],
        };
        assert.equal(matchesSelector(selector, { app: 'web', env: 'prod' }), true);
        assert.equal(matchesSelector(selector, { app: 'web', env: 'dev' }), false);
        assert.equal(matchesSelector(selector, { app: 'api', env: 'prod' }), false);
    });

    it('select nothing when empty or absent, unlike a Kubernetes selector', () => {
        for (const selector of [undefined, null, {}, { matchLabels: {} }, { matchExpressions: [] }, { matchLabels: {}, matchExpressions: [] }]) {
            assert.equal(isEmptySelector(selector), true);
            assert.equal(matchesSelector(selector, { 'mirror.linkerd.io/exported': 'true' }), false);
            assert.equal(matchesSelector(selector, {}), false);
        }
    });

    it('select nothing when invalid, and say why', () => {
        const inWithoutValues = { matchExpressions: [{ key: 'env', operator: 'In' as const, values: [] }] };
        const existsWithValues = { matchExpressions: [{ key: 'env', operator: 'Exists' as const, values: ['x'] }] };
        assert.match(selectorProblem(inWithoutValues) ?? '', /at least one value/);
        assert.match(selectorProblem(existsWithValues) ?? '', /takes no values/);
        assert.equal(matchesSelector(inWithoutValues, { env: 'x' }), false);
        assert.equal(matchesSelector(existsWithValues, { env: 'x' }), false);
    });

    it('do not treat inherited object properties as labels', () => {
        const exists = { matchExpressions: [{ key: 'toString', operator: 'Exists' as const }] };
        assert.equal(matchesSelector(exists, { app: 'a' }), false);
        assert.equal(matchesSelector({ matchExpressions: [{ key: 'constructor', operator: 'DoesNotExist' as const }] }, { app: 'a' }), true);
    });
});

describe('label selectors in text form (--federated-service-selector)', () => {
    const table: { text: string; want: ReturnType<typeof parseLabelSelector> }[] = [
        { text: '', want: { matchLabels: {}, matchExpressions: [] } },
        { text: 'mirror.linkerd.io/federated=member', want: { matchLabels: { 'mirror.linkerd.io/federated': 'member' }, matchExpressions: [] } },
        { text: 'a==b', want: { matchLabels: { a: 'b' }, matchExpressions: [] } },
        { text: 'mirror.linkerd.io/federated', want: { matchLabels: {}, matchExpressions: [{ key: 'mirror.linkerd.io/federated', operator: 'Exists' }] } },
        { text: '!x, a != b', want: { matchLabels: {}, matchExpressions: [{ key: 'x', operator: 'DoesNotExist' }, { key: 'a', operator: 'NotIn', values: ['b'] }] } },
        {
            text: 'env in (prod, staging),tier notin (db),k=v',
            want: {
                matchLabels: { k: 'v' },
                matchExpressions: [
                    { key: 'env', operator: 'In', values: ['prod', 'staging'] },
                    { key: 'tier', operator: 'NotIn', values: ['db'] },
                ],
            },
        },
    ];
    for (const row of table) it(`reads ${JSON.stringify(row.text)}`, () => assert.deepEqual(parseLabelSelector(row.text), row.want));

    for (const bad of ['a=b=c', 'env in prod', 'env in (a,)', 'a b', '=x']) {
        it(`refuses ${JSON.stringify(bad)} with a message`, () => assert.match((parseLabelSelector(bad) as { error: string }).error, /./));
    }

    it('formats back to a form the apiserver reads the same way', () => {
        const text = 'k=v,env in (prod,staging),tier notin (db),x,!y';
        const parsed = parseLabelSelector(text);
        assert.ok(!('error' in parsed));
        assert.equal(formatLabelSelector(parsed), text);
        assert.deepEqual(parseLabelSelector(formatLabelSelector(parsed)), parsed);
    });
});
