// A rootfs written as a one-layer OCI image by umoci (a Debian package), then tarred: the OCI
// layout as `ctr images import` and `skopeo copy oci-archive:` read it. The index names the image
// by its tag alone (org.opencontainers.image.ref.name), so `ctr images import --base-name
// docker.io/some/repo` names it docker.io/some/repo:<tag>, as hack/node/build.sh's pause image.
import { mkdirSync, mkdtempSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { needTool, run } from './debian.js';

/** The image config umoci writes; a field left out stays unset (no Entrypoint unless given). */
export interface OciConfig {
    entrypoint?: string[];
    cmd?: string[];
    user?: string;
    workingDir?: string;
    env?: string[];
    exposedPorts?: string[];
}

export interface OciArchive {
    /** The folder holding the image's files, inserted at /. */
    rootfs: string;
    tag: string;
    /** Where the archive goes (written beside it first, then renamed). */
    out: string;
    /** The history entries of the layer and of the config. */
    layerCreatedBy: string;
    configCreatedBy: string;
    config: OciConfig;
}

export function writeOciArchive(image: OciArchive): void {
    needTool('umoci', 'umoci');
    const dir = mkdtempSync(join(tmpdir(), 'mesh-endpoints-layout-'));
    try {
        const layout = join(dir, 'layout');
        const ref = `${layout}:${image.tag}`;
        const c = image.config;
        run('umoci', ['init', '--layout', layout]);
        run('umoci', ['new', '--image', ref]);
        run('umoci', ['insert', '--image', ref, '--history.created_by', image.layerCreatedBy, image.rootfs, '/']);
        run('umoci', [
            'config',
            '--image',
            ref,
            '--history.created_by',
            image.configCreatedBy,
            ...(c.user === undefined ? [] : ['--config.user', c.user]),
            ...(c.workingDir === undefined ? [] : ['--config.workingdir', c.workingDir]),
            ...(c.entrypoint ?? []).flatMap((a) => ['--config.entrypoint', a]),
            ...(c.cmd ?? []).flatMap((a) => ['--config.cmd', a]),
            ...(c.env ?? []).flatMap((e) => ['--config.env', e]),
            ...(c.exposedPorts ?? []).flatMap((p) => ['--config.exposedports', p]),
        ]);
        run('umoci', ['gc', '--layout', layout]);
        mkdirSync(dirname(image.out), { recursive: true });
        run('tar', ['-cf', `${image.out}.tmp`, '-C', layout, '--owner=0', '--group=0', '--numeric-owner', '.']);
        renameSync(`${image.out}.tmp`, image.out);
    } finally {
        rmSync(dir, { recursive: true, force: true });
    }
}
