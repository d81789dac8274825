// The workload agent's loop: renew the VM's Lease every heartbeat period; on a failure retry
// with backoff (never slower than the heartbeat, never giving up: the registration outlives a
// transient apiserver failure, because the controller keeps it for the group's grace period);
// on stop, withdraw it (not ready at once) and return. The token file is read before every
// heartbeat and a new client made when it changed: a bound token rotates under the agent.
import { readFile } from 'node:fs/promises';
import { KubeConfig } from '../kube/kubeconfig.js';
import type { Logger } from '../kube/log.js';
import { KubeRest } from '../kube/rest.js';
import { isConflict, isNotFound, isRefused } from '../kube/errors.js';
import { ExternalWorkloadGroups, Leases, collectionPath, objectPath } from '../kube/resources.js';
import { DEFAULT_HEARTBEAT_MS, DEFAULT_LEASE_DURATION_MS, registrationName } from '../externalworkloads/groups/types.js';
import { parseDurationMs } from '../time/duration.js';
import { checkIdentity, identityFromToken, type AgentIdentity } from './identity.js';
import { registrationLease, type RegistrationLeaseObject } from './lease.js';
import { sleep, systemClock } from '../time/clock.js';

export interface AgentOptions {
    server: string;
    /** PEM of the apiserver's CA; the system's roots when undefined. */
    caData?: string;
    tokenFile: string;
    flags: { namespace?: string; group?: string; vmId?: string };
    addresses: string[];
    /** Override the group's heartbeat period and lease duration (else read from the group, else the defaults). */
    heartbeatMs?: number;
    leaseDurationMs?: number;
    logger: Logger;
}

const FIRST_RETRY_MS = 250;

export class WorkloadAgent {
    private token = '';
    private rest: KubeRest | undefined;
    private identity: AgentIdentity | undefined;
    private stored: { resourceVersion?: string; acquireTime?: string } | undefined;
    private heartbeatMs: number;
    private leaseDurationMs: number;
    private timingRead = false;
    private failures = 0;

    constructor(private readonly opts: AgentOptions) {
        this.heartbeatMs = opts.heartbeatMs ?? DEFAULT_HEARTBEAT_MS;
        this.leaseDurationMs = opts.leaseDurationMs ?? DEFAULT_LEASE_DURATION_MS;
    }

    /** Renews until `signal` aborts, then withdraws. Throws only when the token names no VM. */
    async run(signal: AbortSignal): Promise<void> {
        // A renewal in flight when the signal comes is aborted: the withdrawal goes out at once.
        signal.addEventListener('abort', () => this.rest?.close(), { once: true });
        while (!signal.aborted) {
            // Up to a tenth early, never late: agents started together do not renew in step.
            let waitMs = this.heartbeatMs * (0.9 + Math.random() * 0.1);
            try {
                await this.renew(false);
                if (this.failures > 0) this.opts.logger.info({ failures: this.failures }, 'heartbeat renewed again');
                this.failures = 0;
            } catch (err) {
                if (err instanceof IdentityError) throw err;
                if (signal.aborted) break;
                this.failures++;
                // Exponential from 250 ms, jittered, capped at the heartbeat period.
                waitMs = Math.min(this.heartbeatMs, FIRST_RETRY_MS * 2 ** Math.min(this.failures - 1, 10)) * (0.8 + Math.random() * 0.4);
                this.opts.logger.warn({ err: describe(err), failures: this.failures, retryInMs: Math.round(waitMs) }, 'heartbeat failed; retrying');
            }
            await sleep(waitMs, systemClock, signal);
        }
        await this.withdraw();
    }

    /** The Lease marked withdrawn, a few tries within 5 s; the registration lapses anyway if none succeeds. */
    async withdraw(): Promise<void> {
        const deadline = systemClock.now() + 5000;
        for (let attempt = 1; systemClock.now() < deadline; attempt++) {
            try {
                await this.renew(true);
                this.opts.logger.info('registration withdrawn');
                return;
            } catch (err) {
                this.opts.logger.warn({ err: describe(err), attempt }, 'withdrawal failed');
                await sleep(Math.min(1000, 200 * attempt));
            }
        }
    }

    /** One write of the Lease: a replace at the version last written (one request), a create when there is none. */
    private async renew(withdrawn: boolean): Promise<void> {
        const { rest, identity } = await this.client();
        if (!this.timingRead) await this.readTiming(rest, identity);
        const name = registrationName(identity.group, identity.vm);
        const body = (): RegistrationLeaseObject => registrationLease(identity, this.opts.addresses, { now: new Date(systemClock.now()), leaseDurationMs: this.leaseDurationMs, withdrawn, previous: this.stored });
        try {
            if (this.stored?.resourceVersion) return this.remember(await rest.replace(objectPath(Leases, identity.namespace, name), body()));
        } catch (err) {
            // Someone else's write (or ours, unanswered): read it and write over it; or it was deleted after the grace period.
            if (!isConflict(err) && !isNotFound(err)) throw err;
            this.stored = undefined;
        }
        const current = await rest.get<RegistrationLeaseObject>(objectPath(Leases, identity.namespace, name)).catch((err: unknown) => {
            if (isNotFound(err)) return undefined;
            throw err;
        });
        if (current) {
            this.stored = { resourceVersion: current.metadata.resourceVersion, acquireTime: current.spec.acquireTime };
            return this.remember(await rest.replace(objectPath(Leases, identity.namespace, name), body()));
        }
        this.remember(await rest.create(collectionPath(Leases, identity.namespace), body()));
        this.opts.logger.info({ lease: `${identity.namespace}/${name}`, addresses: this.opts.addresses }, 'registered');
    }

    private remember(lease: RegistrationLeaseObject): void {
        this.stored = { resourceVersion: lease.metadata.resourceVersion, acquireTime: lease.spec.acquireTime };
    }

    /** The client for the token in the file now; a new one when the token rotated. */
    private async client(): Promise<{ rest: KubeRest; identity: AgentIdentity }> {
        const token = (await readFile(this.opts.tokenFile, 'utf8')).trim();
        if (token !== this.token || !this.rest || !this.identity) {
            const identity = identityFromToken(token);
            if (typeof identity === 'string') throw new IdentityError(`${this.opts.tokenFile}: ${identity}`);
            const mismatch = checkIdentity(identity, this.opts.flags);
            if (mismatch) throw new IdentityError(mismatch);
            if (this.token !== '') this.opts.logger.info('token file changed: using the new token');
            this.rest?.close();
            this.rest = new KubeRest(kubeConfig(this.opts.server, this.opts.caData, token, identity.username), { component: 'workload-agent', timeoutMs: Math.max(2000, Math.min(this.heartbeatMs, 10_000)) });
            this.identity = identity;
            this.token = token;
        }
        return { rest: this.rest, identity: this.identity };
    }

    /** The group's heartbeat period and lease duration, unless the flags set them; the defaults when the group cannot be read. */
    private async readTiming(rest: KubeRest, identity: AgentIdentity): Promise<void> {
        if (this.opts.heartbeatMs !== undefined && this.opts.leaseDurationMs !== undefined) return void (this.timingRead = true);
        try {
            const group = await rest.get<{ spec?: { heartbeatPeriod?: string; leaseDuration?: string } }>(objectPath(ExternalWorkloadGroups, identity.namespace, identity.group));
            this.heartbeatMs = this.opts.heartbeatMs ?? parseDurationMs(group.spec?.heartbeatPeriod ?? '') ?? this.heartbeatMs;
            this.leaseDurationMs = this.opts.leaseDurationMs ?? parseDurationMs(group.spec?.leaseDuration ?? '') ?? this.leaseDurationMs;
            this.opts.logger.info({ group: identity.group, heartbeatMs: this.heartbeatMs, leaseDurationMs: this.leaseDurationMs }, 'group read');
        } catch (err) {
            if (!isRefused(err)) throw err;
            this.opts.logger.warn({ err: describe(err) }, 'cannot read the group; using the heartbeat period of the flags or the default');
        }
        this.timingRead = true;
    }
}

export class IdentityError extends Error {}

function kubeConfig(server: string, caData: string | undefined, token: string, user: string): KubeConfig {
    const kc = new KubeConfig();
    kc.loadFromOptions({
        clusters: [{ name: 'cluster', server, caData: caData ? Buffer.from(caData).toString('base64') : undefined, skipTLSVerify: false }],
        users: [{ name: user, token }],
        contexts: [{ name: 'agent', cluster: 'cluster', user }],
        currentContext: 'agent',
    });
    return kc;
}

function describe(err: unknown): string {
    return err instanceof Error ? err.message : String(err);
}
