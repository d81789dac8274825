import assert from 'node:assert/strict';
import dgram from 'node:dgram';
import net from 'node:net';
import { after, before, describe, it } from 'node:test';
import dnsPacket from 'dns-packet';
import { TestDnsServer } from './dns-server.js';

const NXDOMAIN = 3;
const SERVFAIL = 2;

function udpQuery(port: number, name: string, type: 'A' | 'AAAA', timeoutMs = 1000): Promise<dnsPacket.DecodedPacket | undefined> {
    const socket = dgram.createSocket('udp4');
    return new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
            socket.close();
            resolve(undefined);
        }, timeoutMs);
        socket.on('error', reject);
        socket.on('message', (message) => {
            clearTimeout(timer);
            socket.close();
            resolve(dnsPacket.decode(message));
        });
        const query = dnsPacket.encode({ type: 'query', id: 4242, flags: dnsPacket.RECURSION_DESIRED, questions: [{ type, name }] });
        socket.send(query, port, '127.0.0.1');
    });
}

function tcpQuery(port: number, name: string, type: 'A' | 'AAAA'): Promise<dnsPacket.DecodedPacket> {
    return new Promise((resolve, reject) => {
        const socket = net.connect(port, '127.0.0.1');
        let received = Buffer.alloc(0);
        socket.on('error', reject);
        socket.on('data', (chunk) => {
            received = Buffer.concat([received, chunk]);
            if (received.length >= 2 && received.length >= 2 + received.readUInt16BE(0)) {
                socket.end();
                resolve(dnsPacket.decode(received.subarray(2)));
            }
        });
        socket.write(dnsPacket.streamEncode({ type: 'query', id: 7, questions: [{ type, name }] }));
    });
}

const rcodeOf = (packet: dnsPacket.DecodedPacket) => (packet.flags ?? 0) & 0xf;

describe('test DNS server', () => {
    let server: TestDnsServer;
    before(async () => {
        server = await TestDnsServer.start();
    });
    after(async () => {
        await server.close();
    });

    it('listens on an ephemeral loopback port and names it in the form setServers takes', () => {
        assert.ok(server.port > 0);
        assert.equal(server.address, `127.0.0.1:${server.port}`);
    });

    it('answers an A query over UDP with the zone records, their TTLs and the query id', async () => {
        server.setRecords('gw.example.test', { A: [{ address: '192.0.2.10', ttl: 30 }, { address: '192.0.2.11', ttl: 45 }] });
        const reply = await udpQuery(server.port, 'gw.example.test', 'A');
        assert.ok(reply);
        assert.equal(reply.id, 4242);
        assert.equal(rcodeOf(reply), 0);
        assert.equal(reply.flag_rd, true);
        assert.deepEqual(
            reply.answers?.map((a) => ('data' in a ? [a.data, a.ttl] : [])),
            [['192.0.2.10', 30], ['192.0.2.11', 45]],
        );
    });

    it('answers NODATA (NOERROR, no answers) when the name exists without records of that type', async () => {
        server.setRecords('v4only.example.test', { A: [{ address: '192.0.2.20', ttl: 5 }] });
        const reply = await udpQuery(server.port, 'v4only.example.test', 'AAAA');
        assert.ok(reply);
        assert.equal(rcodeOf(reply), 0);
        assert.deepEqual(reply.answers, []);
    });

    it('answers NXDOMAIN for a name it does not know, or one set to nxdomain', async () => {
        const unknown = await udpQuery(server.port, 'nowhere.example.test', 'A');
        assert.equal(unknown && rcodeOf(unknown), NXDOMAIN);
        server.setRecords('gone.example.test', { A: [{ address: '192.0.2.30', ttl: 5 }] });
        server.setBehaviour('gone.example.test', 'nxdomain');
        const forced = await udpQuery(server.port, 'gone.example.test', 'A');
        assert.equal(forced && rcodeOf(forced), NXDOMAIN);
    });

    it('answers SERVFAIL for a name set to servfail and stays silent for a black-holed one', async () => {
        server.setRecords('broken.example.test', { A: [{ address: '192.0.2.40', ttl: 5 }] });
        server.setBehaviour('broken.example.test', 'servfail');
        const failed = await udpQuery(server.port, 'broken.example.test', 'A');
        assert.equal(failed && rcodeOf(failed), SERVFAIL);
        server.setBehaviour('broken.example.test', 'blackhole');
        assert.equal(await udpQuery(server.port, 'broken.example.test', 'A', 150), undefined);
        server.setBehaviour('broken.example.test', 'normal');
        const healed = await udpQuery(server.port, 'broken.example.test', 'A');
        assert.equal(healed?.answers?.length, 1);
    });

    it('fails only the queried type when a behaviour is set for that type', async () => {
        server.setRecords('dual.example.test', { A: [{ address: '192.0.2.60', ttl: 5 }], AAAA: [{ address: '2001:db8::60', ttl: 5 }] });
        server.setBehaviour('dual.example.test', 'servfail', 'AAAA');
        const v4 = await udpQuery(server.port, 'dual.example.test', 'A');
        const v6 = await udpQuery(server.port, 'dual.example.test', 'AAAA');
        assert.equal(v4?.answers?.length, 1);
        assert.equal(v6 && rcodeOf(v6), SERVFAIL);
    });

    it('answers a length-prefixed query over TCP on the same port', async () => {
        server.setRecords('tcp.example.test', { AAAA: [{ address: '2001:db8::1', ttl: 60 }] });
        const reply = await tcpQuery(server.port, 'tcp.example.test', 'AAAA');
        assert.equal(reply.id, 7);
        const answer = reply.answers?.[0];
        assert.ok(answer && 'data' in answer);
        assert.equal(answer.data, '2001:db8::1');
        assert.equal(answer.ttl, 60);
    });

    it('logs each query by lowercased name, type and transport', async () => {
        server.clearQueries();
        server.setRecords('log.example.test', { A: [{ address: '192.0.2.50', ttl: 5 }] });
        await udpQuery(server.port, 'LOG.example.test.', 'A');
        await udpQuery(server.port, 'log.example.test', 'AAAA');
        await tcpQuery(server.port, 'log.example.test', 'A');
        assert.equal(server.queryCount('log.example.test'), 3);
        assert.equal(server.queryCount('log.example.test', 'A'), 2);
        assert.deepEqual(
            server.queries.map((q) => `${q.name} ${q.type} ${q.transport}`),
            ['log.example.test A udp', 'log.example.test AAAA udp', 'log.example.test A tcp'],
        );
    });
});
