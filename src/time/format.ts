// The apiserver's two time formats, written one way everywhere. Pure.

/** metav1.Time: RFC 3339 in UTC with whole seconds (a fraction is cut, not rounded). */
export function rfc3339(ms: number | Date): string {
    return new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/** metav1.MicroTime (e.g. a Lease's renewTime): the apiserver parses exactly six fractional digits. */
export function microTime(date: Date): string {
    return date.toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}
