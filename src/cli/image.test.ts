// The image `make image` builds (hack/image/config.ts) and the Dockerfile's runtime stage
// describe the same container: entrypoint, user, working directory, environment and ports.
// That the built archive carries this config and runs: test/integration/image.test.ts.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { imageConfig, repoRoot } from '../../hack/image/config.js';

/** The instructions of the Dockerfile's last stage, by name (ENV and EXPOSE may repeat). */
function runtimeStage(): Map<string, string[]> {
    const text = readFileSync(join(repoRoot, 'Dockerfile'), 'utf8');
    const stages = text.split(/^FROM /m);
    const last = stages.at(-1)!;
    const byName = new Map<string, string[]>();
    for (const line of last.split('\n').slice(1)) {
        const m = /^([A-Z]+)\s+(.*)$/.exec(line.trim());
        if (!m) continue;
        byName.set(m[1]!, [...(byName.get(m[1]!) ?? []), m[2]!]);
    }
    return byName;
}

describe('the image make image builds', () => {
    const stage = runtimeStage();

    it('has the Dockerfile entrypoint, user and working directory', () => {
        assert.deepEqual(imageConfig.entrypoint, JSON.parse(stage.get('ENTRYPOINT')!.at(-1)!));
        assert.equal(imageConfig.user, stage.get('USER')!.at(-1));
        assert.equal(imageConfig.workingDir, stage.get('WORKDIR')!.at(-1));
    });

    it('exposes the Dockerfile ports and sets its environment', () => {
        const ports = stage.get('EXPOSE')!.flatMap((line) => line.split(/\s+/)).map((p) => (p.includes('/') ? p : `${p}/tcp`));
        assert.deepEqual([...imageConfig.exposedPorts].sort(), ports.sort());
        const env = stage.get('ENV')!.map((line) => line.replace(/^(\S+)\s+/, '$1='));
        for (const e of env) assert.ok(imageConfig.env.includes(e), `ENV ${e}`);
    });
});
