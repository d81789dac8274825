// From probe results to the workload's Ready condition. Pure: results and the stored condition
// in, the next state and the condition to write out.
//
// As kubelet's readiness: successThreshold passes in a row make a workload ready,
// failureThreshold failures in a row make it not ready, and nothing in between changes it.
// The state starts from the Ready condition already stored, so a new leader (or a restarted
// one) carries on from what the last one wrote instead of flapping through "unknown".
import { rfc3339 } from '../../time/format.js';
import type { WorkloadCondition } from '../types.js';

export const READY = 'Ready';
export const PROBE_SUCCEEDED = 'ProbeSucceeded';
export const PROBE_FAILED = 'ProbeFailed';

export interface ProbeState {
    /** What the probes have established; undefined until a threshold is first reached. */
    ready: boolean | undefined;
    /** Passes and failures in a row (one of them is 0). */
    successes: number;
    failures: number;
}

export interface Thresholds {
    successThreshold: number;
    failureThreshold: number;
}

/** The Ready condition's status as stored ("True", "False", "Unknown"), undefined without one. */
export function storedReadyStatus(conditions: readonly WorkloadCondition[] | undefined): string | undefined {
    return conditions?.find((c) => c.type === READY)?.status;
}

/** Where probing starts: what the stored condition says, no streak yet. */
export function initialProbeState(storedStatus: string | undefined): ProbeState {
    const ready = storedStatus === 'True' ? true : storedStatus === 'False' ? false : undefined;
    return { ready, successes: 0, failures: 0 };
}

export function afterProbe(state: ProbeState, ok: boolean, thresholds: Thresholds): ProbeState {
    if (ok) {
        const successes = state.successes + 1;
        return { ready: successes >= thresholds.successThreshold ? true : state.ready, successes, failures: 0 };
    }
    const failures = state.failures + 1;
    return { ready: failures >= thresholds.failureThreshold ? false : state.ready, successes: 0, failures };
}

/**
 * Whether the stored condition must be written: the probes have established a status and
 * the stored one says otherwise (a transition, or someone else's write to undo).
 */
export function readyToWrite(state: ProbeState, storedStatus: string | undefined): boolean | undefined {
    if (state.ready === undefined) return undefined;
    return (state.ready ? 'True' : 'False') === storedStatus ? undefined : state.ready;
}

/** The Ready condition to store; the transition time moves only when the status does. */
export function readyCondition(ready: boolean, message: string, now: Date, previous?: WorkloadCondition): WorkloadCondition {
    const status = ready ? 'True' : 'False';
    const at = rfc3339(now);
    const kept = previous?.status === status ? previous.lastTransitionTime : undefined;
    const lastTransitionTime = kept === undefined ? at : rfc3339(new Date(kept));
    return { type: READY, status, reason: ready ? PROBE_SUCCEEDED : PROBE_FAILED, message, lastProbeTime: at, lastTransitionTime };
}

/** The conditions with Ready replaced (or added), every other condition kept as it is and where it is. */
export function withReadyCondition(conditions: readonly WorkloadCondition[] | undefined, ready: WorkloadCondition): WorkloadCondition[] {
    const list = conditions ?? [];
    const at = list.findIndex((c) => c.type === READY);
    if (at < 0) return [...list, ready];
    return list.map((c, i) => (i === at ? ready : c)).filter((c, i) => i === at || c.type !== READY);
}
