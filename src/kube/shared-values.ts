// Equal values held once in a cache. JSON.parse gives every object its own copy of each
// string and nested object, so ten thousand cached objects repeating the same label set,
// port list, namespace or condition triple hold ten thousand copies of it. One of these per
// cache hands out one frozen instance per distinct value (nothing may change it under the
// other holders). Bounded: past `max` distinct values it starts over; values already handed
// out stay valid, only their sharing with later ones is lost.
export class SharedValues {
    private readonly objects = new Map<string, unknown>();
    private readonly strings = new Map<string, string>();

    constructor(private readonly max = 20_000) {}

    /**
     * The held instance equal to `value` (compared as JSON), else `value`, frozen (shallowly:
     * share the parts first). A caller that knows the value's shape may pass a cheaper `key`:
     * equal keys must mean equal values, and no key may be the JSON of another value.
     */
    object<T extends object>(value: T, key = JSON.stringify(value)): T {
        const held = this.objects.get(key);
        if (held !== undefined) return held as T;
        if (this.objects.size >= this.max) this.objects.clear();
        this.objects.set(key, Object.freeze(value));
        return value;
    }

    /**
     * A frozen copy of a string map (labels, annotations) with its values held once. The map
     * itself is not shared: most label sets are unique (a Service's name is in them), and a held
     * one would cost its JSON key on top.
     */
    texts(values: Record<string, string>): Record<string, string> {
        const copy: Record<string, string> = {};
        for (const key in values) copy[key] = this.text(values[key]!);
        return Object.freeze(copy);
    }

    /** The held copy of this text. */
    text(value: string): string {
        const held = this.strings.get(value);
        if (held !== undefined) return held;
        if (this.strings.size >= this.max) this.strings.clear();
        this.strings.set(value, value);
        return value;
    }
}
