/**
 * Helpers the rules share. Nothing here decides a rule; it reads resources the way the policy engine hands them over.
 *
 * During `pulumi preview` the engine wraps every resource's properties in @pulumi/policy's unknown-checking proxy:
 * reading a value that is not known yet throws `UnknownValueError`, and a policy that lets it escape is reported as
 * an advisory "can't run during preview" (source: pulumi/pulumi-policy:sdk/nodejs/policy/server.ts, the catch around
 * each validation). The rules read values through {@link read} so that they can fall back to the resource's
 * `propertyDependencies` (which the engine fills in for every output passed as an input) before giving up.
 */
import { UnknownValueError, type PolicyResource } from "@pulumi/policy";
import * as pulumi from "@pulumi/pulumi";

/** Type tokens the rules look at, as the engine reports them (package:module/file:Type). */
export const TYPES = {
    launchTemplate: "aws:ec2/launchTemplate:LaunchTemplate",
    instance: "aws:ec2/instance:Instance",
    autoscalingGroup: "aws:autoscaling/group:Group",
    placementGroup: "aws:ec2/placementGroup:PlacementGroup",
    securityGroup: "aws:ec2/securityGroup:SecurityGroup",
    securityGroupRule: "aws:ec2/securityGroupRule:SecurityGroupRule",
    ingressRule: "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule",
    egressRule: "aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule",
    scaleSet: "azure-native:compute:VirtualMachineScaleSet",
    virtualMachine: "azure-native:compute:VirtualMachine",
    virtualNetwork: "azure-native:network:VirtualNetwork",
    subnet: "azure-native:network:Subnet",
    remoteCommand: "command:remote:Command",
    localCommand: "command:local:Command",
} as const;

export type Read<T> = { known: true; value: T } | { known: false; error: UnknownValueError };

/**
 * Runs `get`; a preview-unknown value comes back as `{ known: false }` with the engine's error (to rethrow when
 * nothing else can decide). Any other error propagates.
 */
export function read<T>(get: () => T): Read<T> {
    try {
        return { known: true, value: get() };
    } catch (e) {
        if (e instanceof UnknownValueError) return { known: false, error: e };
        throw e;
    }
}

/**
 * "Cannot decide during preview" with a reason. It is an UnknownValueError, so the engine reports it the way it reports
 * any unknown value a policy touched: advisory, "can't run policy … during preview". The sentinel is Pulumi's unknown
 * string value, the one the proxy recognises (source: @pulumi/policy proxy.js `unknownStringValue`, equal to
 * @pulumi/pulumi runtime/rpc.ts `unknownValue`).
 */
export class PreviewUnknown extends UnknownValueError {
    declare message: string;
    constructor(reason: string) {
        super(pulumi.runtime.unknownValue, []);
        this.message = reason;
    }
}

/** The value, or undefined when it is not known yet. */
export function knownOr<T>(get: () => T): T | undefined {
    const r = read(get);
    return r.known ? r.value : undefined;
}

/** A plain copy of an array property (reading through the proxy element by element), or undefined. */
export function list(value: unknown): unknown[] | undefined {
    if (value === undefined || value === null) return undefined;
    if (!Array.isArray(value)) return undefined;
    const out: unknown[] = [];
    for (let i = 0; i < value.length; i++) out.push(value[i]);
    return out;
}

/** The resources a property of `r` was computed from, of one type. */
export function dependenciesOf(r: PolicyResource, property: string, type: string): PolicyResource[] {
    return (r.propertyDependencies[property] ?? []).filter((d) => d.type === type);
}

/** EFA interface types of a launch template. source: aws-efa.md §2.1 (`efa` = EFA + ENA, `efa-only` = EFA device only) */
export const EFA_INTERFACE_TYPES: readonly string[] = ["efa", "efa-only"];

/** The launch template's `networkInterfaces` entries, as plain objects; throws UnknownValueError when the list itself is unknown. */
export function templateInterfaces(props: Record<string, any>): Record<string, any>[] {
    return (list(props.networkInterfaces) ?? []) as Record<string, any>[];
}

/** Whether a launch template asks for at least one EFA device (reading each interfaceType; unknown ones count as not EFA). */
export function hasEfaInterface(props: Record<string, any>): boolean {
    return templateInterfaces(props).some((i) => EFA_INTERFACE_TYPES.includes(String(knownOr(() => i.interfaceType))));
}

/** `card N device M` for messages. */
export function interfaceLabel(i: Record<string, any>, index: number): string {
    const card = knownOr(() => i.networkCardIndex);
    const device = knownOr(() => i.deviceIndex);
    return `networkInterfaces[${index}] (card ${card ?? "?"}, device ${device ?? "?"})`;
}

/** JSON for a value in a message; short. */
export function show(value: unknown): string {
    return value === undefined ? "(not set)" : JSON.stringify(value);
}
