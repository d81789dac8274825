import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { convertWorkload } from '../externalworkloads/conversion.js';
import { answerConversionReview } from './review.js';

const review = (request: unknown) => ({ apiVersion: 'apiextensions.k8s.io/v1', kind: 'ConversionReview', request });
const alpha = (name: string) => ({
    apiVersion: 'workload.linkerd.io/v1alpha1',
    kind: 'ExternalWorkload',
    metadata: { name, namespace: 'shop' },
    spec: { meshTls: { identity: 'i', serverName: 's' } },
});

describe('answering a ConversionReview', () => {
    it('converts every object and echoes the uid', () => {
        const outcome = answerConversionReview(review({ uid: 'u-1', desiredAPIVersion: 'workload.linkerd.io/v1beta1', objects: [alpha('a'), alpha('b')] }), convertWorkload);
        assert.ok(outcome.ok);
        assert.deepEqual(outcome.review.response.result, { status: 'Success' });
        assert.equal(outcome.review.response.uid, 'u-1');
        assert.deepEqual(
            outcome.review.response.convertedObjects?.map((o) => (o as { spec: unknown }).spec),
            [{ meshTLS: { identity: 'i', serverName: 's' } }, { meshTLS: { identity: 'i', serverName: 's' } }],
        );
    });

    it('fails the whole review, naming the object, when one cannot be converted', () => {
        const bad = { ...alpha('b'), apiVersion: 'workload.linkerd.io/v9' };
        const outcome = answerConversionReview(review({ uid: 'u-2', desiredAPIVersion: 'workload.linkerd.io/v1beta1', objects: [alpha('a'), bad] }), convertWorkload);
        assert.ok(outcome.ok);
        assert.equal(outcome.review.response.convertedObjects, undefined);
        assert.deepEqual(outcome.review.response.result, {
            status: 'Failure',
            message: 'shop/b: cannot convert from apiVersion "workload.linkerd.io/v9": not an ExternalWorkload version',
        });
    });

    it('refuses what is not a v1 ConversionReview with a request', () => {
        for (const body of [null, {}, { ...review({}), apiVersion: 'apiextensions.k8s.io/v1beta1' }, review({ uid: 'x' }), review({ uid: 'x', desiredAPIVersion: 'v', objects: {} })]) {
            const outcome = answerConversionReview(body, convertWorkload);
            assert.equal(outcome.ok, false, JSON.stringify(body));
        }
    });
});
