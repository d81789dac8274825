// The MCS conformance suite's images as the stand-ins built here from Debian packages
// (hack/image/standins.ts, src/testing/suite-images.ts), read back from their archives and run by
// runc as the suite runs them: the request Pod's Args as they are, the commands the specs exec
// (nslookup through `sh -c`, whose output must be what the suite's regexes read; `echo hi | nc`),
// and the hello Pod's own script from the suite's k8s_objects.go answering "pod ip ...".
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import dgram from 'node:dgram';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import dnsPacket from 'dns-packet';
import { repoRoot } from '../../hack/image/config.js';
import { cannotRunContainers, type Container, readImage, startContainer } from '../../src/testing/image.js';
import { suiteImages } from '../../src/testing/suite-images.js';

const images = await suiteImages();
const archiveOf = (baseName: string) => images.find((i) => i.baseName === baseName)!.archive;
const netshoot = archiveOf('docker.io/nicolaka/netshoot');
const socat = archiveOf('docker.io/alpine/socat');
const unsupported = await cannotRunContainers();
const skip = unsupported && `cannot run containers here: ${unsupported}`;
const suiteDir = process.env.MCS_CONFORMANCE_DIR ?? join(dirname(repoRoot), 'shared/mcs-conformance');

// k8s_objects.go, newRequestPod: the request Pod's container has Args only.
const REQUEST_ARGS = ['/bin/sh', '-ec', "while :; do echo '.'; sleep 5 ; done"];
// The suite's parsers (Go regexps, read the same way here: no \r in runc exec's output):
// headless_service_dns.go addressesRegEx and clusterip_service_dns.go srvRecordRegEx.
const ADDRESSES = /Name:.*\s*Address:\s*(.*)/g;
const SRV = /.*=\s*\d*\s*\d*\s*(\d*)\s*([a-zA-Z0-9-.]*)/g;

const NAME = 'hello.mcs-conformance-1.svc.clusterset.local';

/** A DNS server on loopback answering the specs' queries: two A records, one SRV (as CoreDNS for tcp/42 and udp/42), no AAAA; NXDOMAIN elsewhere. */
async function suiteDns(): Promise<{ address: string; close(): void }> {
    const udp = dgram.createSocket('udp4');
    udp.on('message', (message, peer) => {
        const query = dnsPacket.decode(message);
        const q = query.questions![0]!;
        const known = q.name === NAME;
        const answers: dnsPacket.Answer[] = !known
            ? []
            : q.type === 'A'
              ? ['10.244.0.52', '10.244.0.51'].map((data) => ({ type: 'A' as const, name: q.name, ttl: 5, data }))
              : q.type === 'SRV'
                ? [{ type: 'SRV', name: q.name, ttl: 5, data: { priority: 0, weight: 100, port: 42, target: NAME } }]
                : [];
        const flags = dnsPacket.AUTHORITATIVE_ANSWER | (known ? 0 : 3);
        udp.send(dnsPacket.encode({ type: 'response', id: query.id, flags, questions: query.questions, answers }), peer.port, peer.address);
    });
    await new Promise<void>((resolve) => udp.bind(0, '127.0.0.1', resolve));
    return { address: `127.0.0.1:${udp.address().port}`, close: () => udp.close() };
}

describe("the MCS suite's images, stand-ins built from Debian packages", () => {
    it('are named as the suite names them; netshoot has a Cmd and no Entrypoint, and both the tools the specs run', async () => {
        const request = await readImage(netshoot);
        assert.equal(request.refName, 'v0.15');
        assert.equal(request.config.Entrypoint, undefined);
        assert.deepEqual(request.config.Cmd, ['/bin/sh']);
        for (const f of ['bin/busybox', 'bin/sh', 'bin/sleep', 'bin/echo', 'bin/grep', 'usr/bin/tail', 'usr/bin/awk', 'usr/bin/tr', 'usr/bin/nslookup', 'usr/bin/nc', 'lib/x86_64-linux-gnu/libbsd.so.0', 'lib64/ld-linux-x86-64.so.2', 'etc/nsswitch.conf', 'etc/passwd', 'tmp']) {
            assert.ok(request.files.includes(f), f);
        }
        assert.ok(!request.files.includes('bin/nc'), "busybox's nc is not installed beside netcat-openbsd's");
        const hello = await readImage(socat);
        assert.equal(hello.refName, '1.7.4.4');
        for (const f of ['bin/sh', 'bin/grep', 'usr/bin/tr', 'usr/bin/awk', 'bin/echo', 'usr/bin/socat', 'lib/x86_64-linux-gnu/libssl.so.3']) assert.ok(hello.files.includes(f), f);
    });

    describe('run by runc', { skip }, () => {
        const started: Container[] = [];
        const start = async (archive: string, options: Parameters<typeof startContainer>[1]) => {
            const c = await startContainer(archive, options);
            started.push(c);
            return c;
        };
        let dns: Awaited<ReturnType<typeof suiteDns>>;
        let dir: string;
        before(async () => {
            dns = await suiteDns();
            dir = mkdtempSync(join(tmpdir(), 'mesh-endpoints-suite-images-'));
        });
        after(async () => {
            await Promise.all(started.map((c) => c.stop()));
            dns?.close();
            if (dir) rmSync(dir, { recursive: true, force: true });
        });

        it("the request Pod's nslookup -type=A|SRV|AAAA prints what the suite's regexes read", async () => {
            // Only a client of the loopback server above: it shares this namespace and listens on nothing.
            const request = await start(netshoot, { args: REQUEST_ARGS, network: 'host' });
            const lookup = async (type: string, name: string) => {
                const command = `nslookup -type=${type} ${name}. ${dns.address}`;
                const { stdout, code } = await request.exec(['sh', '-c', command]);
                process.stderr.write(`# $ ${command} (exit ${code})\n${stdout.replace(/^/gm, '#   ')}\n`);
                return stdout;
            };
            const a = await lookup('A', NAME);
            assert.deepEqual([...a.matchAll(ADDRESSES)].map((m) => m[1]!.trim()).sort(), ['10.244.0.51', '10.244.0.52']);
            const srv = await lookup('SRV', NAME);
            assert.deepEqual([...srv.matchAll(SRV)].map((m) => [m[1], m[2]!.replace(/\.$/, '')]), [['42', NAME]]);
            assert.deepEqual([...(await lookup('AAAA', NAME)).matchAll(ADDRESSES)], []);
            assert.match(await lookup('A', 'nothere.mcs-conformance-1.svc.clusterset.local'), /NXDOMAIN/);
            assert.match(request.log(), /^\.$/m, "the request Pod's loop runs");
        });

        it('socat is 1.7.4.4', async () => {
            const hello = await start(socat, { command: ['/bin/sh'], args: ['-c', 'sleep 60'] });
            const { stdout } = await hello.exec(['socat', '-V']);
            process.stderr.write(`# $ socat -V\n${stdout.split('\n').slice(0, 2).join('\n').replace(/^/gm, '#   ')}\n`);
            assert.match(stdout, /^socat version 1\.7\.4\.4 /m);
        });

        const objects = join(suiteDir, 'k8s_objects.go');
        it("the hello Pod's script answers `echo hi | nc -v -w 2 -4 <name> 42` with its pod ip", { skip: !existsSync(objects) && `no suite at ${suiteDir} (MCS_CONFORMANCE_DIR)` }, async () => {
            // k8s_objects.go's socatListenerScript("TCP"), run as the hello-tcp container runs it.
            const go = /func socatListenerScript\(protocol string\) string \{\n\treturn `([\s\S]*?)`\n\}/.exec(readFileSync(objects, 'utf8'));
            assert.ok(go, 'socatListenerScript in k8s_objects.go');
            const script = go[1]!.replaceAll('` + protocol + `', 'TCP');
            const hello = await start(socat, { command: ['/bin/sh'], args: ['-c', script], env: { MY_POD_IPS: '10.244.0.52' } });
            // The request container in the hello container's network namespace, the name in its
            // /etc/hosts (as the kubelet mounts one): nc resolves it through nsswitch.conf.
            writeFileSync(join(dir, 'hosts'), `127.0.0.1\tlocalhost\n127.0.0.1\t${NAME}\n`);
            const request = await start(netshoot, { args: REQUEST_ARGS, network: hello, files: { '/etc/hosts': join(dir, 'hosts') } });
            for (let i = 0; (await request.exec(['nc', '-z', '-w', '1', '127.0.0.1', '42'])).code !== 0; i++) {
                assert.ok(i < 50, `socat never listened: ${hello.log()}`);
                await new Promise((resolve) => setTimeout(resolve, 100));
            }
            // conformance_suite.go ncCommand(IPv4, ...), exec'd through sh -c as connectivity.go does.
            const command = `echo hi | nc -v -w 2 -4 ${NAME} 42 2>&1`;
            const t0 = Date.now();
            const { stdout } = await request.exec(['sh', '-c', command]);
            const ms = Date.now() - t0;
            process.stderr.write(`# $ ${command} (${ms} ms)\n${stdout.trimEnd().replace(/^/gm, '#   ')}\n# hello-tcp's log:\n${hello.log().trimEnd().replace(/^/gm, '#   ')}\n`);
            assert.match(stdout, /succeeded!/);
            assert.match(stdout, /^pod ip 10\.244\.0\.52\r?$/m);
            // The suite gives each exec 4 s (framework.go).
            assert.ok(ms < 4000, `${ms} ms`);
            assert.match(hello.log(), /DEBUG: has_ipv4=true, has_ipv6=false/);
        });
    });
});
