import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { microTime, rfc3339 } from './format.js';

describe('API times', () => {
    it('formats metav1.Time with whole seconds, cutting the fraction', () => {
        assert.equal(rfc3339(Date.parse('2026-11-29T18:00:00.999Z')), '2026-11-29T18:00:00Z');
        assert.equal(rfc3339(new Date('2026-11-29T18:00:01.000Z')), '2026-11-29T18:00:01Z');
    });

    it('formats MicroTime with six fractional digits', () => {
        assert.equal(microTime(new Date('2026-11-29T18:00:00.123Z')), '2026-11-29T18:00:00.123000Z');
    });
});
