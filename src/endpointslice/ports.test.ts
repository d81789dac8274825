import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { normalisePort, normalisePorts, portMapKey } from './ports.js';

describe('port groups', () => {
    it('defaults a port the way the apiserver does: name "" and protocol TCP, appProtocol kept', () => {
        assert.deepEqual(normalisePort({ port: 80 }), { name: '', port: 80, protocol: 'TCP' });
        assert.deepEqual(normalisePort({ name: 'dns', port: 53, protocol: 'UDP', appProtocol: 'dns' }), {
            name: 'dns',
            port: 53,
            protocol: 'UDP',
            appProtocol: 'dns',
        });
    });

    it('keeps an absent port number absent (it means all ports)', () => {
        assert.equal(Object.hasOwn(normalisePort({ name: 'all' }), 'port'), false);
    });

    it('keys a port list the same before and after defaulting', () => {
        assert.equal(portMapKey([{ port: 80 }]), portMapKey([{ name: '', port: 80, protocol: 'TCP' }]));
    });

    it('keys a port list independently of its order', () => {
        const a = [
            { name: 'http', port: 80, protocol: 'TCP' },
            { name: 'dns', port: 53, protocol: 'UDP' },
        ];
        assert.equal(portMapKey(a), portMapKey([...a].reverse()));
    });

    it('tells apart port lists that differ in number, protocol, name or appProtocol', () => {
        const base = { name: 'http', port: 80, protocol: 'TCP' };
        const keys = [
            [base],
            [{ ...base, port: 81 }],
            [{ ...base, protocol: 'UDP' }],
            [{ ...base, name: 'web' }],
            [{ ...base, appProtocol: 'http' }],
            [base, base],
            [],
        ].map(portMapKey);
        assert.equal(new Set(keys).size, keys.length);
    });

    it('keys no ports like an empty port list (a headless Service without ports)', () => {
        assert.equal(portMapKey(undefined), portMapKey([]));
        assert.equal(portMapKey(null as unknown as undefined), portMapKey([]), 'as the apiserver serves a slice without ports');
        assert.deepEqual(normalisePorts(undefined), []);
    });

    it('cannot be confused by names that contain what separates ports in a key', () => {
        const keys = [
            [{ name: 'a\n["b",80,"TCP",null]', port: 80 }],
            [{ name: 'a', port: 80 }, { name: 'b', port: 80 }],
            [{ name: 'a","b', port: 80 }],
            [{ name: 'a', port: 80, appProtocol: '' }],
        ].map(portMapKey);
        assert.equal(new Set(keys).size, keys.length);
        assert.equal(keys[3], portMapKey([{ name: 'a', port: 80 }]), 'an empty appProtocol is no appProtocol');
    });
});
