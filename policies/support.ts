/**
 * Helpers the rules share. Nothing here decides a rule; it reads resources the way the policy engine hands them over
 * and gives every rule the same way to say "cannot be verified yet".
 *
 * The engine sends each resource's properties with values it does not know yet as Pulumi's unknown sentinel, and
 * @pulumi/policy wraps them in its unknown-checking proxy: reading such a value throws `UnknownValueError`, and a
 * policy that lets it escape is reported as an advisory "can't run policy … during preview: <message>" (source:
 * pulumi/pulumi-policy:sdk/nodejs/policy/server.ts, the catch around each validation; shared/research/pulumi-runtime.md
 * §1.5). The rules read values through {@link get}, keep going with what they know, and end with
 * {@link Findings.done}, which raises one such advisory naming everything that could not be checked. Policies run
 * again during `pulumi up`, when the values are known.
 */
import type { PolicyConfigSchema, PolicyResource, ReportViolation } from "@pulumi/policy";
// the proxy module alone (policies/proxy.ts says why)
import { UnknownValueError } from "./proxy";

/** Type tokens the rules look at, as the engine reports them (package:module/file:Type). */
export const TYPES = {
    launchTemplate: "aws:ec2/launchTemplate:LaunchTemplate",
    instance: "aws:ec2/instance:Instance",
    networkInterface: "aws:ec2/networkInterface:NetworkInterface",
    autoscalingGroup: "aws:autoscaling/group:Group",
    placementGroup: "aws:ec2/placementGroup:PlacementGroup",
    securityGroup: "aws:ec2/securityGroup:SecurityGroup",
    securityGroupRule: "aws:ec2/securityGroupRule:SecurityGroupRule",
    ingressRule: "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule",
    egressRule: "aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule",
    scaleSet: "azure-native:compute:VirtualMachineScaleSet",
    virtualMachine: "azure-native:compute:VirtualMachine",
    galleryImage: "azure-native:compute:GalleryImage",
    image: "azure-native:compute:Image",
    virtualNetwork: "azure-native:network:VirtualNetwork",
    subnet: "azure-native:network:Subnet",
    nic: "azure-native:network:NetworkInterface",
    nsg: "azure-native:network:NetworkSecurityGroup",
    nsgRule: "azure-native:network:SecurityRule",
    remoteCommand: "command:remote:Command",
    localCommand: "command:local:Command",
} as const;

/** Stands for a value the engine does not know yet. */
export const UNKNOWN: unique symbol = Symbol("unknown");
export type Maybe<T> = T | typeof UNKNOWN;

/**
 * Runs `read`; a value the engine does not know yet comes back as {@link UNKNOWN}. A path through something that is
 * not an object (a raw resource of a shape the rule did not expect: `null` where an object belongs) reads as
 * undefined, so that no resource can turn a policy into an error that stops the engine's preview.
 */
export function get<T>(read: () => T): Maybe<T> {
    try {
        return read();
    } catch (e) {
        if (e instanceof UnknownValueError) return UNKNOWN;
        if (e instanceof TypeError) return undefined as T;
        throw e;
    }
}

/** The value, or undefined when it is not known yet. */
export function known<T>(read: () => T): T | undefined {
    const v = get(read);
    return v === UNKNOWN ? undefined : v;
}

/**
 * An array property as a plain array whose unknown elements are {@link UNKNOWN}; UNKNOWN when the array itself is
 * unknown; undefined when it is absent or not an array.
 */
export function items(read: () => unknown): Maybe<unknown[] | undefined> {
    const v = get(read);
    if (v === UNKNOWN) return UNKNOWN;
    if (!Array.isArray(v)) return undefined;
    const out: unknown[] = [];
    for (let i = 0; i < v.length; i++) out.push(get(() => v[i]));
    return out;
}

/** {@link items}, with unknown and absent both as an empty list (for "does any element say X" questions). */
export function knownItems(read: () => unknown): unknown[] {
    const v = items(read);
    return v === UNKNOWN || v === undefined ? [] : v.filter((x) => x !== UNKNOWN);
}

/**
 * "Cannot be verified yet" with a reason. An UnknownValueError, so the engine reports it as it reports any unknown
 * value a policy touched: advisory, never mandatory.
 */
export class CannotVerify extends UnknownValueError {
    declare message: string;
    constructor(reason: string) {
        // the string unknown sentinel (source: @pulumi/pulumi runtime/rpc.ts unknownValue; @pulumi/policy proxy.js)
        super("04da6b54-80e4-46f7-96ec-b56ff0331ba9", []);
        this.message = `cannot be verified yet: ${reason}`;
    }
}

/**
 * What one validation found. Violations go to the engine as they are found; what cannot be verified is collected
 * and raised once, at the end, so that a known violation elsewhere in the stack is never hidden by it.
 */
export class Findings {
    private readonly open: string[] = [];
    constructor(private readonly report: ReportViolation) {}
    violation(message: string, urn?: string): void {
        this.report(message, urn);
    }
    cannotVerify(reason: string): void {
        if (!this.open.includes(reason)) this.open.push(reason);
    }
    done(): void {
        if (this.open.length > 0) throw new CannotVerify(this.open.join("; "));
    }
}

/** The resources a property of `r` was computed from, of one type. */
export function dependenciesOf(r: PolicyResource, property: string, type: string): PolicyResource[] {
    return (r.propertyDependencies[property] ?? []).filter((d) => d.type === type);
}

/**
 * The resources in this stack that `value` (an id or name read from `r.props[property]`) points at: by a known value
 * matched against `match`, or, when the value is unknown, through the engine's property dependencies.
 * `outside`: the value is known and no resource in the stack has it (an existing resource referenced by id).
 */
export function resolveRefs(
    r: PolicyResource, property: string, type: string, values: Maybe<unknown[]>, candidates: PolicyResource[], match: (c: PolicyResource, v: string) => boolean,
): { found: PolicyResource[]; outside: string[]; untraced: boolean } {
    const deps = dependenciesOf(r, property, type);
    if (values === UNKNOWN) return { found: deps, outside: [], untraced: deps.length === 0 };
    const found: PolicyResource[] = [];
    const outside: string[] = [];
    let untraced = false;
    for (const v of values) {
        if (v === UNKNOWN) {
            if (deps.length === 0) untraced = true;
            for (const d of deps) if (!found.includes(d)) found.push(d);
            continue;
        }
        if (typeof v !== "string") continue;
        const c = candidates.find((x) => match(x, v));
        if (c) {
            if (!found.includes(c)) found.push(c);
        } else if (deps.length > 0) {
            for (const d of deps) if (!found.includes(d)) found.push(d);
        } else {
            outside.push(v);
        }
    }
    return { found, outside, untraced };
}

/** JSON for a value in a message; short. */
export function show(value: unknown): string {
    if (value === UNKNOWN) return "(known after apply)";
    return value === undefined ? "(not set)" : JSON.stringify(value);
}

/** `{ key: default }` of a config schema. */
export function schemaDefaults(schema: PolicyConfigSchema | undefined): Record<string, unknown> {
    return Object.fromEntries(Object.entries(schema?.properties ?? {}).filter(([, p]) => p.default !== undefined).map(([k, p]) => [k, p.default]));
}

/**
 * A policy's config: the engine fills in the schema's defaults before it calls Configure, a hand-sent Configure may
 * not (pulumi-runtime.md §1.7), so the defaults are applied here too.
 */
export function configOf<T>(schema: PolicyConfigSchema | undefined, given: object): T {
    if (schema === undefined) return { ...given } as T;
    // a resource policy is called once per resource (~400 at 2,048 hosts, ~15 policies): the defaults of its schema,
    // a constant of the policy, are taken once
    let defaults = defaultsOf.get(schema);
    if (defaults === undefined) defaultsOf.set(schema, (defaults = schemaDefaults(schema)));
    return { ...defaults, ...given } as T;
}
const defaultsOf = new WeakMap<PolicyConfigSchema, Record<string, unknown>>();
