/**
 * Values a component keeps for its TypeScript callers that are not part of its multi-language schema (the parsed
 * spec, the plan, child components). Pulumi's component analyzer (@pulumi/pulumi/provider/experimental) turns every
 * property of a component class into a schema output and refuses types it cannot map (unions of classes, deep plan
 * objects), so such values live here and the class exposes them through getters, which the analyzer skips.
 */
export class Internals<K extends object, V> {
    private readonly byInstance = new WeakMap<K, V>();

    set(instance: K, value: V): void {
        this.byInstance.set(instance, value);
    }

    of(instance: K): V {
        const v = this.byInstance.get(instance);
        if (v === undefined) throw new Error("rdmakit: component read before its constructor finished");
        return v;
    }
}
