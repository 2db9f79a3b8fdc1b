/**
 * The Slurm head node on Azure: one VM in the cluster subnet on the nodes' image (the same Ubuntu release, so the same
 * Slurm from the distribution), no public IP, reached through the jump host like the nodes, its own SSH host key
 * pinned, its computer name the plan's controller name (slurmctld runs only on the host SlurmctldHost names). Its NIC
 * has an NSG of its own (headNsgRules): the plan's Slurm and NFS ports and SSH from the cluster subnet only, every
 * other VNet and Internet source denied.
 */
import * as pulumi from "@pulumi/pulumi";
import { compute, network } from "./sdk";
import type { SlurmPlan } from "../plan/scheduler";
import type { FabricPlan } from "../plan";
import { stackHostKey } from "../provision/hostkey-resource";
import type { NsgRule } from "./nsg";
import { AzureLayout, authorizedKeysPath, nodeCustomData } from "./settings";

/**
 * The head node NIC's inbound rules, pure. Sources are the cluster subnet (the scale set's nodes and the jump host are
 * its only VMs): the plan's ports the nodes open to the head node, SSH for Ansible through the jump host; then an
 * explicit deny of the rest of the VirtualNetwork and of the Internet, so Azure's AllowVnetInBound (65000) lets
 * nothing else in. The nodes' own NSG already admits the head node (AllowVnetInBound), which is in their subnet.
 * source: MicrosoftDocs/azure-docs:articles/virtual-network/network-security-groups-overview.md ("Default security
 * rules": AllowVnetInBound 65000, DenyAllInBound 65500; rules are processed in priority order, lowest number first)
 */
export function headNsgRules(slurm: SlurmPlan, subnetCidrs: readonly string[]): NsgRule[] {
    // one range as sourceAddressPrefix; an existing subnet with several (azure.network.subnetId) as the list
    const source = subnetCidrs.length === 1 ? { sourceAddressPrefix: subnetCidrs[0] } : { sourceAddressPrefixes: [...subnetCidrs] };
    const rule = (name: string, priority: number, ports: string, description: string): NsgRule => ({
        name, priority, direction: "Inbound", access: "Allow", protocol: "Tcp", sourcePortRange: "*", destinationPortRange: ports,
        ...source, destinationAddressPrefix: "*", description,
    });
    const rules: NsgRule[] = [rule("allow-ssh-from-cluster-subnet", 100, "22", "SSH from the jump host (Ansible's hop) in the cluster subnet")];
    slurm.ports.filter((p) => p.between !== "controller->nodes").forEach((p, i) => {
        rules.push(rule(`allow-slurm-${i}`, 110 + 10 * i, p.from === p.to ? String(p.from) : `${p.from}-${p.to}`, `from the nodes: ${p.why}`));
    });
    const deny = (name: string, priority: number, source: string, description: string): NsgRule => ({
        name, priority, direction: "Inbound", access: "Deny", protocol: "*", sourcePortRange: "*", destinationPortRange: "*",
        sourceAddressPrefix: source, destinationAddressPrefix: "*", description,
    });
    rules.push(deny("deny-vnet-inbound", 4000, "VirtualNetwork", "the rest of the VNet (Azure's AllowVnetInBound would admit it)"));
    rules.push(deny("deny-internet-inbound", 4096, "Internet", "everything from the Internet"));
    return rules;
}

export interface AzureHeadArgs {
    name: string;
    parent: pulumi.Resource;
    layout: AzureLayout;
    plan: FabricPlan;
    slurm: SlurmPlan;
    resourceGroupName: pulumi.Input<string>;
    subnetId: pulumi.Input<string>;
    /** the cluster subnet's ranges: the kit's subnetCidr, or what ARM lists for an existing subnet */
    subnetCidrs: pulumi.Input<string[]>;
}

export interface AzureHead {
    privateIp: pulumi.Output<string>;
    vmId: pulumi.Output<string>;
    hostPublicKey: pulumi.Output<string>;
    nsgId: pulumi.Output<string>;
}

export function createAzureSlurmHead(a: AzureHeadArgs): AzureHead {
    const { name, layout, slurm } = a;
    const child = { parent: a.parent };
    const rg = { resourceGroupName: a.resourceGroupName, location: layout.location };
    const tags = { ...layout.tags, "rdmakit-role": "slurm-head" };
    const nsg = new network.NetworkSecurityGroup(`${name}-head-nsg`, { ...rg, securityRules: pulumi.output(a.subnetCidrs).apply((c) => headNsgRules(slurm, c)), tags }, child);
    const nic = new network.NetworkInterface(`${name}-head-nic`, {
        ...rg,
        networkSecurityGroup: { id: nsg.id },
        ipConfigurations: [{ name: "ipconfig1", primary: true, subnet: { id: a.subnetId }, privateIPAllocationMethod: "Dynamic" }],
        tags,
    }, child);
    const hostKey = stackHostKey(`${name}-head-host-key`, a.parent);
    const customData = pulumi.secret(pulumi.all([hostKey.privateKey, hostKey.publicKey]).apply(([privateKey, publicKey]) => nodeCustomData({ privateKey, publicKey })));
    const vm = new compute.VirtualMachine(`${name}-head`, {
        ...rg,
        hardwareProfile: { vmSize: slurm.controller.vmSize! },
        diagnosticsProfile: { bootDiagnostics: { enabled: true } },
        osProfile: {
            // the host name slurmctld checks against SlurmctldHost (Linux computer names: up to 64 characters)
            computerName: slurm.controller.name,
            adminUsername: layout.adminUser,
            customData,
            linuxConfiguration: {
                disablePasswordAuthentication: true,
                ssh: { publicKeys: [{ path: authorizedKeysPath(layout.adminUser), keyData: layout.publicKey }] },
            },
        },
        storageProfile: {
            // the nodes' image: one Slurm release cluster-wide
            imageReference: { ...a.plan.azure!.image },
            osDisk: { createOption: "FromImage", caching: "ReadWrite", managedDisk: { storageAccountType: "Premium_LRS" }, deleteOption: "Delete" },
        },
        networkProfile: { networkInterfaces: [{ id: nic.id, primary: true }] },
        tags,
    }, { ...child, replaceOnChanges: ["osProfile.customData"], deleteBeforeReplace: true });
    const privateIp = pulumi.all([nic.ipConfigurations, vm.id]).apply(([cfgs]) => {
        const ip = cfgs?.[0]?.privateIPAddress;
        if (!ip) throw new Error(`rdmakit: the Slurm head node's NIC of ${name} has no private address`);
        return ip;
    });
    return { privateIp, vmId: vm.vmId, hostPublicKey: hostKey.publicKey, nsgId: nsg.id };
}
