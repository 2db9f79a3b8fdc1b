/**
 * Stacks shaped as the engine sends them to a policy pack: raw provider inputs as @pulumi/aws 7.x and azure-native 3.x
 * Check them (camelCase schema names; the bridged AWS provider's string-typed booleans such as
 * associatePublicIpAddress "true"), values unknown at preview as the engine's unknown sentinel, and property
 * dependencies by URN. One clean stack per fabric, each policy's violation as a change to it, resources that are on
 * no RDMA fabric, and values that cannot be known yet. Not a test file.
 */
import type { EngineResource } from "./policy-pack";

/** The engine's unknown string sentinel (pulumi-runtime.md §1.5). */
export const U = "04da6b54-80e4-46f7-96ec-b56ff0331ba9";
/** A secret as the engine marshals it (KeepSecrets). */
export const secret = (value: unknown) => ({ "4dabf18193072939515e22adb298388d": "1b47061264138c4ac30d75fd1eb44270", value });

export const urn = (type: string, name: string) => `urn:pulumi:dev::team::${type}::${name}`;
const res = (type: string, name: string, props: Record<string, unknown>, propertyDependencies: Record<string, string[]> = {}): EngineResource => ({
    type, name, urn: urn(type, name), props, propertyDependencies, dependencies: [...new Set(Object.values(propertyDependencies).flat())],
});

export const T = {
    lt: "aws:ec2/launchTemplate:LaunchTemplate",
    inst: "aws:ec2/instance:Instance",
    eni: "aws:ec2/networkInterface:NetworkInterface",
    asg: "aws:autoscaling/group:Group",
    pg: "aws:ec2/placementGroup:PlacementGroup",
    sg: "aws:ec2/securityGroup:SecurityGroup",
    in: "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule",
    out: "aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule",
    sgr: "aws:ec2/securityGroupRule:SecurityGroupRule",
    subnet: "aws:ec2/subnet:Subnet",
    vmss: "azure-native:compute:VirtualMachineScaleSet",
    vm: "azure-native:compute:VirtualMachine",
    gallery: "azure-native:compute:GalleryImage",
    vnet: "azure-native:network:VirtualNetwork",
    azSubnet: "azure-native:network:Subnet",
    nic: "azure-native:network:NetworkInterface",
    nsg: "azure-native:network:NetworkSecurityGroup",
    nsgRule: "azure-native:network:SecurityRule",
} as const;

// ---------------------------------------------------------------------------------------------------------------
// AWS: a p5.48xlarge node group as a team writes it (interface + efa-only on card 0, efa-only on cards 1–31)

const SG = urn(T.sg, "efa-sg");
const SUBNET = urn(T.subnet, "nodes");

export function p5Interfaces(cards = 32): Record<string, unknown>[] {
    const out: Record<string, unknown>[] = [
        { networkCardIndex: 0, deviceIndex: 0, interfaceType: "interface", securityGroups: [U], subnetId: U, deleteOnTermination: "true" },
        { networkCardIndex: 0, deviceIndex: 1, interfaceType: "efa-only", securityGroups: [U], subnetId: U, deleteOnTermination: "true" },
    ];
    for (let c = 1; c < cards; c++) out.push({ networkCardIndex: c, deviceIndex: 0, interfaceType: "efa-only", securityGroups: [U], subnetId: U, deleteOnTermination: "true" });
    return out;
}

export function awsStack(): EngineResource[] {
    return [
        res(T.subnet, "nodes", { vpcId: U, cidrBlock: "10.0.0.0/20", availabilityZone: "us-east-1a", mapPublicIpOnLaunch: false }),
        res(T.sg, "efa-sg", { name: U, description: "EFA nodes", vpcId: U, revokeRulesOnDelete: false }),
        res(T.in, "efa-self-in", { securityGroupId: U, referencedSecurityGroupId: U, ipProtocol: "-1" }, { securityGroupId: [SG], referencedSecurityGroupId: [SG] }),
        res(T.out, "efa-self-out", { securityGroupId: U, referencedSecurityGroupId: U, ipProtocol: "-1" }, { securityGroupId: [SG], referencedSecurityGroupId: [SG] }),
        res(T.out, "efa-internet-out", { securityGroupId: U, cidrIpv4: "0.0.0.0/0", ipProtocol: "-1" }, { securityGroupId: [SG] }),
        res(T.in, "efa-ssh-office", { securityGroupId: U, cidrIpv4: "198.51.100.0/24", ipProtocol: "tcp", fromPort: 22, toPort: 22 }, { securityGroupId: [SG] }),
        res(T.pg, "pg", { name: U, strategy: "cluster" }),
        res(T.lt, "nodes", {
            name: U, imageId: "ami-0123456789abcdef0", instanceType: "p5.48xlarge",
            metadataOptions: { httpEndpoint: "enabled", httpTokens: "required", httpPutResponseHopLimit: 2 },
            networkInterfaces: p5Interfaces(),
        }, { networkInterfaces: [SG, SUBNET] }),
        res(T.asg, "nodes", {
            name: U, minSize: 4, maxSize: 4, desiredCapacity: 4, vpcZoneIdentifiers: [U], placementGroup: U,
            launchTemplate: { id: U, version: "$Latest" },
        }, { launchTemplate: [urn(T.lt, "nodes")], vpcZoneIdentifiers: [SUBNET], placementGroup: [urn(T.pg, "pg")] }),
    ];
}

// ---------------------------------------------------------------------------------------------------------------
// Azure: 4 × ND96isr_H100_v5 in one Uniform scale set, its VNet/subnet and NSG

const VNET = urn(T.vnet, "vnet");
const AZ_SUBNET = urn(T.azSubnet, "nodes");
const NSG = urn(T.nsg, "nsg");

export function azureStack(): EngineResource[] {
    return [
        res(T.vnet, "vnet", { resourceGroupName: "rg", location: "eastus", addressSpace: { addressPrefixes: ["10.10.0.0/16"] } }),
        res(T.azSubnet, "nodes", { resourceGroupName: "rg", virtualNetworkName: U, addressPrefix: "10.10.0.0/24" }, { virtualNetworkName: [VNET] }),
        res(T.nsg, "nsg", {
            resourceGroupName: "rg", location: "eastus", securityRules: [
                { name: "ssh", priority: 1000, direction: "Inbound", access: "Allow", protocol: "Tcp", sourcePortRange: "*", destinationPortRange: "22", sourceAddressPrefixes: ["203.0.113.0/24"], destinationAddressPrefix: "*" },
                { name: "deny-internet", priority: 4096, direction: "Inbound", access: "Deny", protocol: "*", sourcePortRange: "*", destinationPortRange: "*", sourceAddressPrefix: "Internet", destinationAddressPrefix: "*" },
            ],
        }),
        res(T.vmss, "gpu", {
            resourceGroupName: "rg", location: "eastus",
            sku: { name: "Standard_ND96isr_H100_v5", tier: "Standard", capacity: 4 },
            orchestrationMode: "Uniform", singlePlacementGroup: true, platformFaultDomainCount: 1, overprovision: false,
            upgradePolicy: { mode: "Manual" },
            virtualMachineProfile: {
                osProfile: {
                    computerNamePrefix: "gpu", adminUsername: "azureuser",
                    linuxConfiguration: { disablePasswordAuthentication: true, ssh: { publicKeys: [{ path: "/home/azureuser/.ssh/authorized_keys", keyData: "ssh-ed25519 AAAA" }] } },
                },
                storageProfile: {
                    imageReference: { publisher: "microsoft-dsvm", offer: "ubuntu-hpc", sku: "2204", version: "latest" },
                    osDisk: { createOption: "FromImage", caching: "ReadWrite", managedDisk: { storageAccountType: "Premium_LRS" }, diskSizeGB: 256 },
                },
                networkProfile: {
                    networkInterfaceConfigurations: [{
                        name: "nic", primary: true, enableAcceleratedNetworking: true, networkSecurityGroup: { id: U },
                        ipConfigurations: [{ name: "ip", primary: true, subnet: { id: U } }],
                    }],
                },
            },
        }, { virtualMachineProfile: [AZ_SUBNET, NSG] }),
    ];
}

// ---------------------------------------------------------------------------------------------------------------
// Changes

export type Stack = EngineResource[];
export const clone = (s: Stack): Stack => JSON.parse(JSON.stringify(s));
export const find = (s: Stack, type: string, name: string) => {
    const r = s.find((x) => x.type === type && x.name === name);
    if (!r) throw new Error(`fixture has no ${type} ${name}`);
    return r;
};
/** A copy of `s` with `change` applied to one resource's props. */
export function edit(s: Stack, type: string, name: string, change: (props: any, r: EngineResource) => void): Stack {
    const c = clone(s);
    const r = find(c, type, name);
    change(r.props, r);
    return c;
}
export const without = (s: Stack, type: string, name: string): Stack => clone(s).filter((r) => !(r.type === type && r.name === name));
export const plus = (s: Stack, ...rs: EngineResource[]): Stack => [...clone(s), ...rs];
export { res };
