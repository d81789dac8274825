// Label selectors of a Link (selector, remoteDiscoverySelector, federatedServiceSelector) and
// the one place that decides whether a remote Service's labels are selected by them.
// Pure: no I/O. The rule that differs from Kubernetes is documented on matchesSelector.
import * as z from '../../zod.js';

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
    matchLabels: z.optional(z.record(z.string(), z.string())),
    matchExpressions: z.optional(
        z.array(
            z.object({
                key: z.string(),
                operator: z.enum(['In', 'NotIn', 'Exists', 'DoesNotExist']),
                values: z.optional(z.array(z.string())),
            }),
        ),
    ),
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

/**
 * A label selector in kubectl's text form (`a=b,c!=d,e,!f,g in (h,i),j notin (k)`), as
 * Linkerd's `-federated-service-selector` takes it, or why it is not one. "" is the empty
 * selector, which (matchesSelector) selects nothing.
 */
export function parseLabelSelector(text: string): LabelSelector | { error: string } {
    const selector: Required<LabelSelector> = { matchLabels: {}, matchExpressions: [] };
    // Commas inside parentheses separate values, not requirements.
    const parts = text.match(/[^,(]+(\([^)]*\))?[^,]*/g) ?? [];
    for (const raw of parts) {
        const part = raw.trim();
        if (part === '') continue;
        let m: RegExpExecArray | null;
        if ((m = /^([^\s!=(),]+)\s*(==|=)\s*([^\s!=(),]*)$/.exec(part))) selector.matchLabels[m[1]!] = m[3]!;
        else if ((m = /^([^\s!=(),]+)\s*!=\s*([^\s!=(),]*)$/.exec(part))) selector.matchExpressions.push({ key: m[1]!, operator: 'NotIn', values: [m[2]!] });
        else if ((m = /^([^\s!=(),]+)\s+(in|notin)\s*\(([^)]*)\)$/.exec(part))) {
            const values = m[3]!.split(',').map((v) => v.trim());
            if (values.some((v) => v === '')) return { error: `${JSON.stringify(part)}: empty value in the set` };
            selector.matchExpressions.push({ key: m[1]!, operator: m[2] === 'in' ? 'In' : 'NotIn', values });
        } else if ((m = /^!\s*([^\s!=(),]+)$/.exec(part))) selector.matchExpressions.push({ key: m[1]!, operator: 'DoesNotExist' });
        else if ((m = /^([^\s!=(),]+)$/.exec(part))) selector.matchExpressions.push({ key: m[1]!, operator: 'Exists' });
        else return { error: `${JSON.stringify(part)} is not a label selector requirement (key, !key, key=value, key!=value, key in (a,b), key notin (a,b))` };
    }
    return selector;
}

/** The selector in the text form the apiserver's labelSelector parameter takes. */
export function formatLabelSelector(selector: LabelSelector): string {
    const parts = Object.entries(selector.matchLabels ?? {}).map(([key, value]) => `${key}=${value}`);
    for (const req of selector.matchExpressions ?? []) {
        const values = (req.values ?? []).join(',');
        if (req.operator === 'In') parts.push(`${req.key} in (${values})`);
        else if (req.operator === 'NotIn') parts.push(`${req.key} notin (${values})`);
        else if (req.operator === 'Exists') parts.push(req.key);
        else parts.push(`!${req.key}`);
    }
    return parts.join(',');
}
