/**
 * Azure InfiniBand rules across resources: the address ranges of the networks the IB nodes sit in, and accelerated
 * networking on their Ethernet NIC. The networks are found from the nodes: subnet ids in their NIC configurations
 * (or in the NetworkInterface resources a VM references), matched by id or through the engine's property
 * dependencies; a subnet outside the stack cannot be read and is reported as such.
 */
import type { PolicyResource } from "@pulumi/policy";
import { AZURE_RDMA_RESERVED_CIDR } from "../../components/catalog/azure";
import { cidrsOverlap, parseCidr } from "../../components/net";
import { get, known, knownItems, show, TYPES, UNKNOWN } from "../support";
import { ibNodes, nicConfigs, referencedNics, SIZE_SCHEMA, type IbNode, type SizeConfig } from "./azure-model";
import { stackPolicy } from "./define";

const RDMA_RANGE = parseCidr(AZURE_RDMA_RESERVED_CIDR)!;

/** Subnet ids a node's Ethernet NICs use: inline configurations, or the referenced NIC resources. */
function subnetIds(node: IbNode & { r: PolicyResource }, resources: PolicyResource[]): { ids: unknown[]; via: PolicyResource[]; note: string[] } {
    const ids: unknown[] = [];
    const note: string[] = [];
    const via: PolicyResource[] = [node.r];
    const fromConfigs = (configs: Record<string, any>[]) => {
        for (const c of configs) for (const ip of knownItems(() => c.ipConfigurations) as Record<string, any>[]) ids.push(get(() => ip.subnet?.id));
    };
    fromConfigs(nicConfigs(node));
    if (node.r.type === TYPES.virtualMachine) {
        const nics = referencedNics(node.r, resources);
        if (nics.untraced) note.push(`the network interfaces of VM ${node.r.name} are not known yet`);
        nics.outside.forEach((id) => note.push(`network interface ${id} of VM ${node.r.name} is not in this stack`));
        for (const n of nics.found) {
            via.push(n);
            fromConfigs([n.props as Record<string, any>]);
        }
    }
    return { ids, via, note };
}

/** The subnets and virtual networks behind a node, and what cannot be traced. */
function networksOf(node: IbNode & { r: PolicyResource }, resources: PolicyResource[]): { nets: PolicyResource[]; note: string[] } {
    const { ids, via, note } = subnetIds(node, resources);
    const subnets = resources.filter((r) => r.type === TYPES.subnet);
    const vnets = resources.filter((r) => r.type === TYPES.virtualNetwork);
    const deps = via.flatMap((r) => Object.values(r.propertyDependencies).flat()).filter((d) => d.type === TYPES.subnet || d.type === TYPES.virtualNetwork);
    const nets = new Set<PolicyResource>();
    for (const id of ids) {
        if (id === undefined) continue;
        if (id === UNKNOWN) {
            if (deps.length === 0) note.push(`the subnet of ${node.kind} ${node.r.name} is not known yet and no dependency names it`);
            deps.forEach((d) => nets.add(d));
            continue;
        }
        const s = subnets.find((x) => known(() => x.props.id) === id);
        // /subscriptions/…/virtualNetworks/<vnet>/subnets/<subnet>
        const vnetName = /\/virtualNetworks\/([^/]+)\/subnets\//i.exec(String(id))?.[1];
        const v = vnets.find((x) => vnetName !== undefined && (known(() => x.props.virtualNetworkName) === vnetName || known(() => x.props.name) === vnetName));
        if (s) nets.add(s);
        if (v) nets.add(v);
        if (!s && !v) {
            if (deps.length > 0) deps.forEach((d) => nets.add(d));
            else note.push(`subnet ${String(id)} of ${node.kind} ${node.r.name} is not in this stack, so its address range cannot be read`);
        }
    }
    // a subnet's virtual network: through virtualNetworkName
    for (const n of [...nets]) {
        if (n.type !== TYPES.subnet) continue;
        for (const d of n.propertyDependencies.virtualNetworkName ?? []) if (d.type === TYPES.virtualNetwork) nets.add(d);
        const name = known(() => n.props.virtualNetworkName);
        for (const v of vnets) if (name !== undefined && (known(() => v.props.virtualNetworkName) === name || known(() => v.props.name) === name)) nets.add(v);
    }
    return { nets: [...nets], note };
}

export const azureIbVnetRdmaRange = stackPolicy<SizeConfig>({
    name: "azure-ib-vnet-rdma-range",
    description: `The virtual networks and subnets of InfiniBand VMs and scale sets keep clear of ${AZURE_RDMA_RESERVED_CIDR}, the range Azure reserves for its RDMA network.`,
    remediationSteps: `Pick VNet and subnet ranges outside ${AZURE_RDMA_RESERVED_CIDR}, e.g. 10.10.0.0/16 (rdmakit's default, cluster.azure.vnetCidr).`,
    severity: "critical",
    // source: setup-infiniband.md ("The RDMA network in Azure reserves the address space 172.16.0.0/16"); azure-ib.md §2
    url: "https://learn.microsoft.com/azure/virtual-machines/setup-infiniband",
    enforcementLevel: "mandatory",
    configSchema: { properties: SIZE_SCHEMA },
}, (args, f, config) => {
    const { nodes, unknown } = ibNodes(args.resources, config.vmSizes);
    unknown.forEach((u) => f.cannotVerify(u));
    if (nodes.length === 0 && unknown.length === 0) args.notApplicable("no InfiniBand VM or scale set");
    const checked = new Set<PolicyResource>();
    for (const node of nodes) {
        const { nets, note } = networksOf(node, args.resources);
        note.forEach((n) => f.cannotVerify(n));
        for (const net of nets) {
            if (checked.has(net)) continue;
            checked.add(net);
            const fields: [string, unknown][] = net.type === TYPES.virtualNetwork
                ? [["addressSpace.addressPrefixes", get(() => net.props.addressSpace?.addressPrefixes)], ...knownItems(() => net.props.subnets).map((s, i) => [`subnets[${i}].addressPrefix`, get(() => (s as any).addressPrefix)] as [string, unknown])]
                : [["addressPrefix", get(() => net.props.addressPrefix)], ["addressPrefixes", get(() => net.props.addressPrefixes)]];
            const what = net.type === TYPES.virtualNetwork ? "virtual network" : "subnet";
            for (const [field, value] of fields) {
                if (value === UNKNOWN) {
                    f.cannotVerify(`${field} of ${what} ${net.name} is not known yet`);
                    continue;
                }
                for (const v of Array.isArray(value) ? value : value === undefined ? [] : [value]) {
                    const cidr = typeof v === "string" ? parseCidr(v) : undefined; // IPv6 prefixes cannot overlap an IPv4 block
                    if (cidr && cidrsOverlap(cidr, RDMA_RANGE)) {
                        f.violation(`${what} ${net.name} (used by ${node.kind} ${node.r.name}): ${field} ${v} overlaps ${AZURE_RDMA_RESERVED_CIDR}, which Azure reserves for the RDMA (InfiniBand) network`, net.urn);
                    }
                }
            }
        }
    }
});

export const azureIbAcceleratedNetworking = stackPolicy<SizeConfig>({
    name: "azure-ib-accelerated-networking",
    description: "The Ethernet NICs of InfiniBand VMs and scale sets have accelerated networking on (NCCL's bootstrap, SSH and storage run there).",
    remediationSteps: "Set enableAcceleratedNetworking: true on the NIC configuration (scale set) or the NetworkInterface (VM); every InfiniBand size supports it.",
    severity: "low",
    // source: azure-ib.md §2 ("Accelerated networking … supported on all these sizes; set enableAcceleratedNetworking: true on the primary NIC")
    url: "https://learn.microsoft.com/azure/virtual-network/accelerated-networking-overview",
    enforcementLevel: "advisory",
    configSchema: { properties: SIZE_SCHEMA },
}, (args, f, config) => {
    const { nodes, unknown } = ibNodes(args.resources, config.vmSizes);
    unknown.forEach((u) => f.cannotVerify(u));
    if (nodes.length === 0 && unknown.length === 0) args.notApplicable("no InfiniBand VM or scale set");
    for (const node of nodes) {
        const configs: { label: string; props: Record<string, any> }[] = nicConfigs(node).map((c, i) => ({ label: `networkInterfaceConfigurations[${i}] ${show(known(() => c.name))}`, props: c }));
        if (node.r.type === TYPES.virtualMachine) {
            const nics = referencedNics(node.r, args.resources);
            if (nics.untraced) f.cannotVerify(`the network interfaces of VM ${node.r.name} are not known yet`);
            nics.outside.forEach((id) => f.cannotVerify(`network interface ${id} of VM ${node.r.name} is not in this stack`));
            nics.found.forEach((n) => configs.push({ label: `network interface ${n.name}`, props: n.props }));
        }
        for (const c of configs) {
            const on = get(() => c.props.enableAcceleratedNetworking);
            if (on === UNKNOWN) f.cannotVerify(`enableAcceleratedNetworking of ${c.label} of ${node.r.name} is not known yet`);
            else if (on !== true) f.violation(`${node.kind} ${node.r.name}: ${c.label} has enableAcceleratedNetworking ${show(on)}, not true`, node.r.urn);
        }
    }
});
