import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { formatDuration, parseDurationMs } from './duration.js';

describe('parseDurationMs', () => {
    it('reads Go durations as Linkerd writes them', () => {
        assert.equal(parseDurationMs('3s'), 3000);
        assert.equal(parseDurationMs('1m30s'), 90_000);
        assert.equal(parseDurationMs('1.5s'), 1500);
        assert.equal(parseDurationMs('500ms'), 500);
        assert.equal(parseDurationMs('1h'), 3_600_000);
        assert.equal(parseDurationMs('250us'), 0.25);
        assert.equal(parseDurationMs('0'), 0);
    });

    it('reads a bare number as seconds, as v1alpha1 Links may hold', () => {
        assert.equal(parseDurationMs('3'), 3000);
    });

    it('refuses text that is not a duration', () => {
        for (const text of ['', 's', '3x', '3 s', 'three seconds', '1m-3s']) assert.equal(parseDurationMs(text), null, text);
    });
});

describe('durations in messages', () => {
    it('are written the way the flags take them', () => {
        assert.deepEqual([300_000, 3_600_000, 5000, 1500, 0].map(formatDuration), ['5m', '1h', '5s', '1500ms', '0s']);
    });
});
