// `make image`: the product's OCI image without Docker or a registry, from parts the package
// registries serve, written as an OCI archive (hack/image/config.ts says where):
// - /nodejs/bin/node: the Node 20 linux-x64 binary from its npm package (nodePackage),
// - the shared libraries that binary loads (ldd), taken from the Debian packages that own them
//   (apt-get download + dpkg-deb -x), and the dynamic loader,
// - /app/dist: the CLI bundled as `npm run build` bundles it (hack/bundle.ts), /app/package.json,
// - /etc/passwd and /etc/group with root and nonroot (65532), /tmp, /home/nonroot;
// and nothing else: no shell, no package manager. umoci (a Debian package) writes the layer and
// the config; the archive is the OCI layout as a tar, as `ctr images import` and
// `skopeo copy oci-archive:` read it (oci.ts; the Debian parts are debian.ts's, both shared with
// the MCS suite's stand-in images, standins.ts). The Dockerfile stays the way to build it with
// Docker. Downloads are cached in $MESH_ENDPOINTS_CACHE/image. Prints the archive's path last.
import { chmodSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { bundle } from '../bundle.js';
import { appVersion, imageArchive, imageConfig, nodePackage, repoRoot } from './config.js';
import { addLibraries, imageCache as cache, run } from './debian.js';
import { writeOciArchive } from './oci.js';

/** The node binary of the pinned npm package, unpacked once into the cache. */
function nodeBinary(): string {
    const dir = join(cache, `${nodePackage.name}-${nodePackage.version}`);
    const bin = join(dir, 'package/bin/node');
    if (existsSync(bin)) return bin;
    mkdirSync(dir, { recursive: true });
    // npm checks the tarball against the registry's integrity hash.
    const tgz = run('npm', ['pack', '--silent', `${nodePackage.name}@${nodePackage.version}`, '--pack-destination', dir]).trim().split('\n').at(-1)!;
    run('tar', ['-xzf', join(dir, tgz), '-C', dir, 'package/bin/node']);
    rmSync(join(dir, tgz));
    return bin;
}

function addSystemFiles(rootfs: string): void {
    for (const dir of ['etc', 'tmp', 'home/nonroot', 'app']) mkdirSync(join(rootfs, dir), { recursive: true });
    chmodSync(join(rootfs, 'tmp'), 0o1777);
    // As in distroless: the controller runs as nonroot; nothing needs a login shell.
    writeFileSync(join(rootfs, 'etc/passwd'), 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n');
    writeFileSync(join(rootfs, 'etc/group'), 'root:x:0:\nnonroot:x:65532:\n');
    writeFileSync(join(rootfs, 'etc/nsswitch.conf'), 'passwd: files\ngroup: files\nhosts: files dns\n');
    run('chown', ['65532:65532', join(rootfs, 'home/nonroot')]);
}

async function main(): Promise<void> {
    const rootfs = mkdtempSync(join(tmpdir(), 'mesh-endpoints-image-'));
    try {
        const root = join(rootfs, 'rootfs');
        mkdirSync(join(root, 'nodejs/bin'), { recursive: true });
        const node = nodeBinary();
        copyFileSync(node, join(root, 'nodejs/bin/node'));
        chmodSync(join(root, 'nodejs/bin/node'), 0o755);
        const packages = addLibraries(root, node);
        addSystemFiles(root);
        copyFileSync(join(repoRoot, 'package.json'), join(root, 'app/package.json'));
        await bundle('src/cli/main.ts', join(root, 'app/dist'));

        const out = imageArchive();
        writeOciArchive({
            rootfs: root,
            tag: appVersion(),
            out,
            layerCreatedBy: `node ${nodePackage.version} + ${packages.join(' ')} + dist/`,
            configCreatedBy: 'hack/image/build.ts',
            config: imageConfig,
        });
        const mb = (statSync(out).size / 1e6).toFixed(1);
        process.stderr.write(`image ${appVersion()}: ${out} (${mb} MB; node ${nodePackage.version}, libraries from ${packages.join(', ')})\n`);
        process.stdout.write(`${out}\n`);
    } finally {
        rmSync(rootfs, { recursive: true, force: true });
    }
}

await main();
