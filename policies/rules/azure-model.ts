/**
 * Azure resources as the InfiniBand rules see them: which scale sets and VMs are of an InfiniBand size (the scope of
 * every azure-ib-* policy), and the network pieces they use, read from raw azure-native 3.x inputs
 * (VirtualMachineScaleSet `sku.name`, `virtualMachineProfile.{osProfile, storageProfile, securityProfile,
 * networkProfile.networkInterfaceConfigurations[]}`; VirtualMachine `hardwareProfile.vmSize`, `osProfile`,
 * `networkProfile.{networkInterfaces[].id, networkInterfaceConfigurations[]}`).
 */
import type { PolicyConfigSchema, PolicyResource } from "@pulumi/policy";
import { AZURE_VM_SIZES } from "../../components/catalog/azure";
import { get, known, knownItems, show, TYPES, UNKNOWN, type Maybe } from "../support";

/** The catalog's InfiniBand sizes (components/catalog/azure.ts, each with its source). */
export const DEFAULT_SIZES: string[] = AZURE_VM_SIZES.map((s) => s.name);

export const SIZE_SCHEMA: PolicyConfigSchema["properties"] = {
    vmSizes: {
        type: "array", items: { type: "string" }, default: DEFAULT_SIZES,
        description: "VM sizes on the InfiniBand fabric (case-insensitive); scale sets and VMs of other sizes are not checked.",
    },
};
export interface SizeConfig {
    vmSizes: string[];
}

/** What an IB rule reads from a scale set or a VM: the same settings live at different paths. */
export interface IbNode {
    r: { type: string; name: string; props: Record<string, any>; urn: string };
    kind: "VM scale set" | "VM";
    size: string;
    /** the VM profile: `virtualMachineProfile` of a scale set, the VM itself */
    profile: () => Record<string, any> | undefined;
}

export type IbScope = { in: true; node: IbNode } | { in: false; why: string } | { in: "unknown"; why: string };

export function ibScope(r: IbNode["r"], sizes: string[]): IbScope {
    let size: Maybe<unknown>;
    let kind: IbNode["kind"];
    let profile: IbNode["profile"];
    if (r.type === TYPES.scaleSet) {
        size = get(() => r.props.sku?.name);
        kind = "VM scale set";
        profile = () => r.props.virtualMachineProfile;
    } else if (r.type === TYPES.virtualMachine) {
        size = get(() => r.props.hardwareProfile?.vmSize);
        kind = "VM";
        profile = () => r.props;
    } else {
        return { in: false, why: "applies to VM scale sets and VMs" };
    }
    if (size === UNKNOWN) return { in: "unknown", why: `whether ${kind} ${r.name} is on InfiniBand: its size is not known yet` };
    const lower = sizes.map((s) => s.toLowerCase());
    if (typeof size !== "string" || !lower.includes(size.toLowerCase())) return { in: false, why: `${kind} ${r.name}: size ${show(size)} is not an InfiniBand size in scope` };
    return { in: true, node: { r, kind, size, profile } };
}

/** The IB scale sets and VMs of a stack, and those whose size is not known yet. */
export function ibNodes(resources: PolicyResource[], sizes: string[]): { nodes: (IbNode & { r: PolicyResource })[]; unknown: string[] } {
    const nodes: (IbNode & { r: PolicyResource })[] = [];
    const unknown: string[] = [];
    for (const r of resources) {
        const s = ibScope(r, sizes);
        if (s.in === true) nodes.push({ ...s.node, r });
        else if (s.in === "unknown") unknown.push(s.why);
    }
    return { nodes, unknown };
}

/** Inline NIC configurations of a node (scale set or VM), as plain objects. */
export function nicConfigs(node: IbNode): Record<string, any>[] {
    return knownItems(() => node.profile()?.networkProfile?.networkInterfaceConfigurations) as Record<string, any>[];
}

/** The NetworkInterface resources a VM references (`networkProfile.networkInterfaces[].id`), by id or dependency. */
export function referencedNics(vm: PolicyResource, resources: PolicyResource[]): { found: PolicyResource[]; outside: string[]; untraced: boolean } {
    const refs = knownItems(() => vm.props.networkProfile?.networkInterfaces).map((n) => get(() => (n as any).id));
    const nics = resources.filter((r) => r.type === TYPES.nic);
    const deps = (vm.propertyDependencies.networkProfile ?? []).filter((d) => d.type === TYPES.nic);
    const found = new Set<PolicyResource>(deps);
    const outside: string[] = [];
    let untraced = false;
    for (const id of refs) {
        if (id === UNKNOWN) {
            if (deps.length === 0) untraced = true;
            continue;
        }
        const n = nics.find((x) => known(() => x.props.id) === id);
        if (n) found.add(n);
        else if (deps.length === 0 && typeof id === "string") outside.push(id);
    }
    return { found: [...found], outside, untraced };
}
