// A real authoritative DNS server on 127.0.0.1 for tests: UDP and TCP on one port, a zone the
// test changes while it runs, per-name failure modes and a log of every query. Test-only:
// it answers A and AAAA from memory and must never listen beyond loopback.
import dgram from 'node:dgram';
import net from 'node:net';
import dnsPacket from 'dns-packet';

export type DnsBehaviour = 'normal' | 'nxdomain' | 'servfail' | 'blackhole';

export interface TestRecord {
    address: string;
    /** Seconds. */
    ttl: number;
}

export interface TestRecordSet {
    A?: TestRecord[];
    AAAA?: TestRecord[];
}

export interface LoggedQuery {
    name: string;
    type: string;
    transport: 'udp' | 'tcp';
    /** When it was answered (ms since the epoch). */
    at: number;
    /** Records in the answer: 0 for a failure, NODATA or silence. */
    answers: number;
    /** The shortest TTL of the answer's records (seconds). */
    ttl?: number;
}

const HOST = '127.0.0.1';
const RCODE = { NOERROR: 0, SERVFAIL: 2, NXDOMAIN: 3 } as const;

export class TestDnsServer {
    private readonly zone = new Map<string, TestRecordSet>();
    private readonly behaviours = new Map<string, DnsBehaviour>();
    private readonly log: LoggedQuery[] = [];
    private readonly connections = new Set<net.Socket>();

    private constructor(
        private readonly udp: dgram.Socket,
        private readonly tcp: net.Server,
        readonly port: number,
        private readonly host: string,
    ) {
        udp.on('message', (message, peer) => {
            const reply = this.answer(message, 'udp');
            if (reply) udp.send(dnsPacket.encode(reply), peer.port, peer.address);
        });
        tcp.on('connection', (socket) => this.serveTcp(socket));
    }

    /**
     * Binds UDP on an ephemeral port, then TCP on the same port (retrying if TCP's is taken).
     * `host`: loopback, or an address of a network namespace the test made (a node's, which its Pods reach).
     */
    static async start(host = HOST): Promise<TestDnsServer> {
        for (let attempt = 0; ; attempt++) {
            const udp = dgram.createSocket('udp4');
            await new Promise<void>((resolve, reject) => {
                udp.once('error', reject);
                udp.bind(0, host, () => resolve());
            });
            const port = udp.address().port;
            const tcp = net.createServer();
            try {
                await new Promise<void>((resolve, reject) => {
                    tcp.once('error', reject);
                    tcp.listen(port, host, () => resolve());
                });
                return new TestDnsServer(udp, tcp, port, host);
            } catch (error) {
                udp.close();
                if (attempt >= 5) throw error;
            }
        }
    }

    /** "127.0.0.1:<port>", the form Resolver.setServers and --dns-servers take. */
    get address(): string {
        return `${this.host}:${this.port}`;
    }

    /** Replaces the name's records; a name set with no records exists and answers NODATA. */
    setRecords(name: string, records: TestRecordSet): void {
        this.zone.set(key(name), { A: [...(records.A ?? [])], AAAA: [...(records.AAAA ?? [])] });
    }

    /** For every query of the name, or only for one type (which then wins over the former). */
    setBehaviour(name: string, behaviour: DnsBehaviour, type?: 'A' | 'AAAA'): void {
        this.behaviours.set(`${key(name)} ${type ?? '*'}`, behaviour);
    }

    get queries(): readonly LoggedQuery[] {
        return [...this.log];
    }

    queryCount(name: string, type?: 'A' | 'AAAA'): number {
        return this.log.filter((q) => q.name === key(name) && (type === undefined || q.type === type)).length;
    }

    clearQueries(): void {
        this.log.length = 0;
    }

    async close(): Promise<void> {
        for (const socket of this.connections) socket.destroy();
        await Promise.all([
            new Promise<void>((resolve) => this.udp.close(() => resolve())),
            new Promise<void>((resolve) => this.tcp.close(() => resolve())),
        ]);
    }

    private serveTcp(socket: net.Socket): void {
        this.connections.add(socket);
        socket.on('close', () => this.connections.delete(socket));
        socket.on('error', () => socket.destroy());
        let pending = Buffer.alloc(0);
        socket.on('data', (chunk) => {
            pending = Buffer.concat([pending, chunk]);
            // TCP DNS: each message is preceded by its length as a 16-bit big-endian integer.
            while (pending.length >= 2) {
                const length = pending.readUInt16BE(0);
                if (pending.length < 2 + length) break;
                const message = pending.subarray(2, 2 + length);
                pending = pending.subarray(2 + length);
                const reply = this.answer(message, 'tcp');
                if (reply) socket.write(dnsPacket.streamEncode(reply));
            }
        });
    }

    /** The response, or undefined to stay silent (black hole, or not a DNS query). */
    private answer(message: Buffer, transport: LoggedQuery['transport']): dnsPacket.Packet | undefined {
        let query: dnsPacket.DecodedPacket;
        try {
            query = dnsPacket.decode(message);
        } catch {
            return undefined;
        }
        const question = query.questions?.[0];
        if (query.type !== 'query' || question === undefined) return undefined;
        const name = key(question.name);
        const logged: LoggedQuery = { name, type: question.type, transport, at: Date.now(), answers: 0 };
        this.log.push(logged);

        const behaviour =
            this.behaviours.get(`${name} ${question.type}`) ?? this.behaviours.get(`${name} *`) ?? 'normal';
        if (behaviour === 'blackhole') return undefined;
        const records = this.zone.get(name);
        let rcode: number = RCODE.NOERROR;
        if (behaviour === 'servfail') rcode = RCODE.SERVFAIL;
        else if (behaviour === 'nxdomain' || records === undefined) rcode = RCODE.NXDOMAIN;

        const answers: dnsPacket.Answer[] = [];
        if (rcode === RCODE.NOERROR && (question.type === 'A' || question.type === 'AAAA')) {
            const answered = records?.[question.type] ?? [];
            for (const record of answered) {
                answers.push({ type: question.type, name: question.name, ttl: record.ttl, data: record.address });
            }
            logged.answers = answered.length;
            if (answered.length > 0) logged.ttl = Math.min(...answered.map((r) => r.ttl));
        }
        const recursionDesired = query.flags !== undefined && (query.flags & dnsPacket.RECURSION_DESIRED) !== 0;
        return {
            type: 'response',
            id: query.id ?? 0,
            // The rcode travels in the low four bits of the header flags.
            flags:
                dnsPacket.AUTHORITATIVE_ANSWER |
                dnsPacket.RECURSION_AVAILABLE |
                (recursionDesired ? dnsPacket.RECURSION_DESIRED : 0) |
                rcode,
            questions: [question],
            answers,
        };
    }
}

function key(name: string): string {
    return name.toLowerCase().replace(/\.$/, '');
}
