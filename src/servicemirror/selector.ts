// Label selectors of a Link (selector, remoteDiscoverySelector, federatedServiceSelector) and
// the one place that decides whether a remote Service's labels are selected by them.
// Pure: no I/O. The rule that differs from Kubernetes is documented on matchesSelector.
import { z } from 'zod';

export type SelectorOperator = 'In' | 'NotIn' | 'Exists' | 'DoesNotExist';

export interface LabelSelectorRequirement {
    key: string;
    operator: SelectorOperator;
    values?: string[];
}

export interface LabelSelector {
    matchLabels?: Record<string, string>;
    matchExpressions?: LabelSelectorRequirement[];
}

export const labelSelectorSchema = z.object({
    // The CRD preserves unknown fields here, so `exported: true` (a YAML boolean) reaches us;
    // Linkerd's Go client cannot decode such a Link at all, and we reject it with a message.
    matchLabels: z.record(z.string(), z.string()).optional(),
    matchExpressions: z
        .array(
            z.object({
                key: z.string(),
                operator: z.enum(['In', 'NotIn', 'Exists', 'DoesNotExist']),
                values: z.array(z.string()).optional(),
            }),
        )
        .optional(),
});

/** True when the selector has no requirement at all (absent, `{}`, or only empty lists). */
export function isEmptySelector(selector: LabelSelector | undefined | null): boolean {
    if (!selector) return true;
    return Object.keys(selector.matchLabels ?? {}).length === 0 && (selector.matchExpressions ?? []).length === 0;
}

/**
 * Why Kubernetes would refuse this selector (LabelSelectorAsSelector), or null if it is valid:
 * In/NotIn need at least one value, Exists/DoesNotExist take none.
 */
export function selectorProblem(selector: LabelSelector): string | null {
    for (const req of selector.matchExpressions ?? []) {
        const count = req.values?.length ?? 0;
        switch (req.operator) {
            case 'In':
            case 'NotIn':
                if (count === 0) return `matchExpressions key ${JSON.stringify(req.key)}: operator ${req.operator} needs at least one value`;
                break;
            case 'Exists':
            case 'DoesNotExist':
                if (count !== 0) return `matchExpressions key ${JSON.stringify(req.key)}: operator ${req.operator} takes no values`;
                break;
            default:
                return `matchExpressions key ${JSON.stringify(req.key)}: unknown operator ${JSON.stringify(req.operator)}`;
        }
    }
    return null;
}

/**
 * Whether a Link selector selects these labels, for export purposes.
 *
 * Unlike a Kubernetes selector, an empty or absent selector selects NOTHING: a Link written
 * with `selector: {}` (or none, as `--gateway=false` links are) must not export every Service
 * of the remote cluster (Linkerd #11344). An invalid selector also selects nothing, as in Linkerd.
 * Otherwise every matchLabels pair and every matchExpressions requirement must hold (AND).
 */
export function matchesSelector(selector: LabelSelector | undefined | null, labels: Record<string, string> | undefined): boolean {
    if (!selector || isEmptySelector(selector) || selectorProblem(selector) !== null) return false;
    const have = labels ?? {};
    for (const [key, value] of Object.entries(selector.matchLabels ?? {})) {
        if (!Object.hasOwn(have, key) || have[key] !== value) return false;
    }
    return (selector.matchExpressions ?? []).every((req) => requirementHolds(req, have));
}

function requirementHolds(req: LabelSelectorRequirement, labels: Record<string, string>): boolean {
    const present = Object.hasOwn(labels, req.key);
    const value = labels[req.key];
    const values = req.values ?? [];
    switch (req.operator) {
        case 'In':
            return present && value !== undefined && values.includes(value);
        case 'NotIn':
            // Kubernetes: NotIn is satisfied by a missing label.
            return !present || value === undefined || !values.includes(value);
        case 'Exists':
            return present;
        case 'DoesNotExist':
            return !present;
    }
}
