// Turning a workload's `workloadIPs` into at most one canonical address per family.
// The apiserver rejects a whole EndpointSlice for one bad address, so every address is
// checked here and the bad ones are left out with a reason, never passed on.
import type { AddressType } from '../endpointslice/types.js';
import { parseIP, usableEndpointIP } from '../ip/address.js';
import type { ExternalWorkload, ProblemDetail } from './types.js';

export interface WorkloadAddresses {
    /** The first usable address of each family, in canonical form. */
    byFamily: Partial<Record<AddressType, string>>;
    problems: ProblemDetail[];
    /**
     * The IPs left out because no endpoint may hold them (loopback, link-local, ...), canonical:
     * the workload's own all the same, so a health probe may still go there when the operator
     * allows it (--probe-allow-cidrs).
     */
    unpublished: string[];
}

/**
 * The addresses a workload can publish. A workload holds one address per family (the
 * v1beta1 description says so); a second one of a family already filled is left out, so
 * the result does not depend on which consumer reads which address of an endpoint.
 */
export function workloadAddresses(workload: ExternalWorkload): WorkloadAddresses {
    const byFamily: Partial<Record<AddressType, string>> = {};
    const filledBy: Partial<Record<AddressType, string>> = {};
    const problems: ProblemDetail[] = [];
    const unpublished: string[] = [];
    (workload.spec.workloadIPs ?? []).forEach((entry, index) => {
        const field = `workloadIPs[${index}].ip`;
        const text = entry.ip;
        if (typeof text !== 'string' || text === '') {
            problems.push({ reason: 'InvalidIP', message: `${field} is empty; it is left out of the endpoints` });
            return;
        }
        const parsed = usableEndpointIP(text);
        if (!parsed.usable) {
            const reason = parsed.reason === 'invalid' ? 'InvalidIP' : 'UnusableIP';
            problems.push({ reason, message: `${field} ${JSON.stringify(text)} ${parsed.why}; it is left out of the endpoints` });
            const ip = parseIP(text);
            if (ip.ok) unpublished.push(ip.address);
            return;
        }
        const first = filledBy[parsed.family];
        if (first !== undefined) {
            problems.push({
                reason: 'DuplicateIPFamily',
                message: `${field} ${JSON.stringify(text)} is a second ${parsed.family} address after ${first}; only one address per family is published, so it is left out`,
            });
            return;
        }
        byFamily[parsed.family] = parsed.address;
        filledBy[parsed.family] = `${field} ${JSON.stringify(text)}`;
    });
    return { byFamily, problems, unpublished };
}
