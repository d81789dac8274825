// The leader guard of a write: a replica whose term ended writes nothing, not even a write that
// had waited seconds for a token of the client-side rate limit. One option every writer passes
// and one check, made by the transport (rest.ts) as late as a request can be stopped, so a
// writer never tests leadership itself.
import { NotLeaderError } from './errors.js';

/** Options of a write: the leader guard it is sent under. */
export interface WriteOpts {
    /**
     * Asked once the request may go out (after the rate limiter's wait and the credentials):
     * false cancels it with NotLeaderError. A leader's write can wait seconds for a token of
     * the client-side limit, and must not leave after its term ended.
     */
    whileLeader?: () => boolean;
}

/** Throws NotLeaderError when the write's term is over. */
export function checkLeader(write: WriteOpts): void {
    if (write.whileLeader && !write.whileLeader()) throw new NotLeaderError();
}
