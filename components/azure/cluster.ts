import * as pulumi from "@pulumi/pulumi";
import { authorization, compute, network, resources } from "./sdk";
import { keepMessage, SpecError, toInputPropertiesError } from "../errors";
import { FabricPlan, planCluster } from "../plan";
import { checkedId, ClusterSpec, parseSpecArg } from "../spec";
import type { ClusterSpecInput } from "../types";
import { armList, askAzureCloud, providerArmHost } from "./cloud";
import { AzureNode, parseNodeNics, subscriptionOf, VmssNic, vmssNicListUrl } from "./nodeIps";
import { parseSubnetId } from "./network";
import { AzureLayout, azureLayout, fabricIssues, jumpCustomData, jumpHostArgs, layoutIssues, nodeCustomData, nsgRules, scaleSetArgs } from "./settings";
import { stackHostKey } from "../provision/hostkey-resource";
import { AzureFabricSummary, azureFabricSummary } from "./summary";
import { type AzureHead, createAzureSlurmHead } from "./slurm-head";

export const AZURE_INFINIBAND_CLUSTER_TOKEN = "rdmakit:index:AzureInfinibandCluster";

export interface AzureInfinibandClusterArgs {
    /**
     * The cluster spec; `fabric` must be `azure-ib`. Checked by the same schema as the stack config, so a spec built
     * in code gets the same errors as one read from it. The node count is plain (not an Input): it is the scale
     * set's capacity, and the resource count does not depend on it.
     */
    spec: ClusterSpecInput;
}

/**
 * GPU VMs that share one InfiniBand partition: one Uniform VM scale set (single placement group) in a private
 * subnet with NAT egress, a VNet clear of Azure's RDMA range 172.16.0.0/16, an NSG that admits SSH only from
 * `cluster.ssh.allowedCidrs`, and a jump host as the only public way in. With `cluster.azure.network.subnetId` the
 * scale set goes into that existing subnet instead, and there is no VNet, NAT gateway, public IP or jump host: the
 * nodes are reached at their private addresses over the estate's own route. Every decision is read from the plan;
 * the resource count does not depend on the node count (10 resources, 11 when the kit creates the resource group;
 * with an existing subnet only the scale set, its NSG and the nodes' host key, and the resource group when made).
 */
export class AzureInfinibandCluster extends pulumi.ComponentResource {
    /** Private IPv4 addresses of the GPU nodes, sorted; one ARM list of the scale set's NICs reads them. */
    public readonly nodePrivateIps: pulumi.Output<string[]>;
    /**
     * The nodes as Azure lists them at this `pulumi up`, in nodePrivateIps order: the scale set's instance id and the
     * address. A VM Azure re-created gets a new instance id, so the inventory (which carries the ids) changes.
     */
    public readonly nodes: pulumi.Output<AzureNode[]>;
    /** The image version the scale set runs (the pinned one, or what `latest` resolved to). */
    public readonly imageVersion: pulumi.Output<string>;
    /** Public IP of the jump host (ProxyJump target); known once the jump host VM exists. Unset with an existing subnet (no jump host). */
    public readonly jumpHostAddress: pulumi.Output<string | undefined>;
    /** Login user on the jump host and on every node. */
    public readonly adminUser: pulumi.Output<string>;
    /** The SSH host key every node shows (`ssh-ed25519 AAAA...`), made by the stack and pinned (provision/hostkeys.ts). */
    public readonly nodeHostPublicKey: pulumi.Output<string>;
    /** The jump host's SSH host key, the same way; unset with an existing subnet. */
    public readonly jumpHostPublicKey: pulumi.Output<string | undefined>;
    /** Size, HCAs per node, expected busbw and NCCL topology file, from the plan. */
    public readonly fabricSummary: pulumi.Output<AzureFabricSummary>;
    public readonly resourceGroupName: pulumi.Output<string>;
    public readonly vmssName: pulumi.Output<string>;
    /** The nodes' VNet: the kit's, or the existing subnet's. */
    public readonly vnetId: pulumi.Output<string>;
    /** The nodes' subnet: the kit's, or `cluster.azure.network.subnetId`. */
    public readonly subnetId: pulumi.Output<string>;
    public readonly nsgId: pulumi.Output<string>;
    /** The Slurm head node (./slurm-head.ts): private IP, VM id, host key (public line), its NSG; undefined without Slurm. */
    get slurmHead(): AzureHead | undefined { return heads.get(this); }

    constructor(name: string, args: AzureInfinibandClusterArgs, opts?: pulumi.ComponentResourceOptions) {
        // Checked before super(): a bad input registers nothing, not even the component.
        const { spec, plan, layout } = checkArgs(args);
        super(AZURE_INFINIBAND_CLUSTER_TOKEN, name, {}, opts);
        const child = { parent: this };
        const az = spec.azure!;
        const { location, tags } = layout;

        // Nothing is created until Azure has confirmed the size and the quota (./cloud.ts): the resource group (or the
        // given group's name, which every other child takes) waits on the answers, and a refusal registers nothing.
        const existingSubnet = az.network ? checkedId(az.network.subnetId, "azureSubnetId", "cluster.azure.network.subnetId") : undefined;
        const verdict = askAzureCloud(spec, this, undefined, existingSubnet && { subnetId: existingSubnet, scaleSetPrefix: `${name}-vmss` });
        const allowed = verdict.apply(({ issues }) => {
            if (issues.length > 0) throw keepMessage(new SpecError(issues, `AzureInfinibandCluster ${name}: Azure refuses this cluster`));
            return true;
        });
        const resourceGroupName: pulumi.Output<string> = layout.existingResourceGroup !== undefined
            ? pulumi.all([allowed, checkedId(layout.existingResourceGroup, "resourceGroupName", "cluster.azure.resourceGroupName")]).apply(([, rgName]) => rgName)
            : new resources.ResourceGroup(`${name}-rg`, { location: allowed.apply(() => location), tags }, child).name;
        const rg = { resourceGroupName, location };

        const nsg = new network.NetworkSecurityGroup(`${name}-nsg`, { ...rg, securityRules: nsgRules(spec.ssh.allowedCidrs), tags }, child);

        // one host key for the scale set's nodes, one for the jump host (components/provision/hostkeys.ts says why per
        // group); cloud-init installs a VM's at its first boot only, so other customData means new VMs: deleted first,
        // the jump host because its NIC can hold one VM, the scale set because its GPU quota rarely holds two
        const nodeHostKey = stackHostKey(`${name}-node-host-key`, this);
        const keyData = (k: typeof nodeHostKey, f: (key: { privateKey: string; publicKey: string }) => string) =>
            pulumi.secret(pulumi.all([k.privateKey, k.publicKey]).apply(([privateKey, publicKey]) => f({ privateKey, publicKey })));
        const net = existingSubnet
            // the estate's subnet: its VNet, egress and way in are the estate's (waits for ARM's yes like the rest)
            ? { subnetId: pulumi.all([allowed, existingSubnet]).apply(([, id]) => id), vnetId: existingSubnet.apply((id) => parseSubnetId(id)!.vnetId), jump: undefined }
            : kitNetwork(name, this, { ...rg, tags }, az, layout, spec, nsg, keyData);
        const refs = { resourceGroupName, subnetId: net.subnetId, nsgId: nsg.id };

        const vmss = new compute.VirtualMachineScaleSet(`${name}-vmss`,
            scaleSetArgs(layout, plan, spec, { ...refs, customData: keyData(nodeHostKey, nodeCustomData) }),
            { ...child, replaceOnChanges: ["virtualMachineProfile.osProfile.customData"], deleteBeforeReplace: true });

        if (plan.scheduler.type === "slurm") {
            heads.set(this, createAzureSlurmHead({
                name, parent: this, layout, plan, slurm: plan.scheduler, resourceGroupName, subnetId: net.subnetId,
                subnetCidrs: existingSubnet ? verdict.apply((v) => v.subnetPrefixes) : [az.subnetCidr],
            }));
        }

        // One list call for all nodes at every pulumi up, with the provider's own token (see nodeIps.ts for why not
        // the CLI or an invoke); not at preview of a new scale set, whose name is not known yet.
        const vmssName = vmss.name;
        this.nodes = pulumi.all([vmss.id, resourceGroupName, vmssName, verdict]).apply(async ([id, rgName, setName, { subnetPrefixes: prefixes }]) => {
            const { token } = await authorization.getClientToken({}, { parent: this });
            const nics = await armList<VmssNic>(vmssNicListUrl(subscriptionOf(id), rgName, setName, providerArmHost()), token).catch((e: unknown) => {
                throw new Error(`rdmakit: the NICs of scale set ${setName} could not be listed: ${String((e as Error)?.message ?? e)}`);
            });
            return parseNodeNics(nics, { nodes: layout.nodes, subnetCidrs: existingSubnet ? prefixes : [az.subnetCidr], vmss: setName });
        });
        this.nodePrivateIps = this.nodes.apply((ns) => ns.map((n) => n.privateIp));
        this.imageVersion = vmss.virtualMachineProfile.apply((p) => p?.storageProfile?.imageReference?.exactVersion || plan.azure!.image.version);
        this.jumpHostAddress = net.jump ? pulumi.all([net.jump.ip.ipAddress, net.jump.vm.id]).apply(([address]) => {
            if (!address) throw new Error(`rdmakit: the jump host's static public IP of ${name} has no address`);
            return address;
        }) : pulumi.output(undefined);
        this.adminUser = pulumi.output(layout.adminUser);
        this.nodeHostPublicKey = nodeHostKey.publicKey;
        this.jumpHostPublicKey = net.jump ? net.jump.hostKey.publicKey : pulumi.output(undefined);
        this.fabricSummary = pulumi.output(azureFabricSummary(plan));
        this.resourceGroupName = resourceGroupName;
        this.vmssName = vmss.name;
        this.vnetId = net.vnetId;
        this.subnetId = net.subnetId;
        this.nsgId = nsg.id;

        this.registerOutputs({
            nodePrivateIps: this.nodePrivateIps,
            nodes: this.nodes,
            imageVersion: this.imageVersion,
            jumpHostAddress: this.jumpHostAddress,
            adminUser: this.adminUser,
            nodeHostPublicKey: this.nodeHostPublicKey,
            jumpHostPublicKey: this.jumpHostPublicKey,
            fabricSummary: this.fabricSummary,
            resourceGroupName: this.resourceGroupName,
            vmssName: this.vmssName,
            vnetId: this.vnetId,
            subnetId: this.subnetId,
            nsgId: this.nsgId,
        });
    }
}

/** Each cluster's Slurm head node (a getter's storage: the component schema carries no optional Output shapes). */
const heads = new WeakMap<AzureInfinibandCluster, AzureHead>();

/** Spec, plan and layout, or a pulumi.InputPropertiesError naming every bad field. */
function checkArgs(args: AzureInfinibandClusterArgs): { spec: ClusterSpec; plan: FabricPlan; layout: AzureLayout } {
    const spec = parseSpecArg(args.spec, "AzureInfinibandCluster");
    const wrongFabric = fabricIssues(spec);
    if (wrongFabric.length > 0) throw toInputPropertiesError(new SpecError(wrongFabric, "AzureInfinibandCluster"));
    const plan = planCluster(spec);
    const issues = layoutIssues(spec, plan);
    if (issues.length > 0) throw toInputPropertiesError(new SpecError(issues, "AzureInfinibandCluster"));
    return { spec, plan, layout: azureLayout(spec, plan) };
}

type KeyData = (k: ReturnType<typeof stackHostKey>, f: (key: { privateKey: string; publicKey: string }) => string) => pulumi.Output<string>;

/**
 * The network the kit makes when no subnet is given: VNet and subnet with NAT egress, and the public jump host (the
 * only way in) behind the cluster's NSG.
 */
function kitNetwork(
    name: string, parent: pulumi.Resource, rg: { resourceGroupName: pulumi.Output<string>; location: string; tags: Record<string, string> },
    az: NonNullable<ClusterSpec["azure"]>, layout: AzureLayout, spec: ClusterSpec, nsg: network.NetworkSecurityGroup, keyData: KeyData,
) {
    const child = { parent };
    const { tags } = rg;
    // Explicit egress for nodes without public IPs (apt, DOCA and NVIDIA repositories): Azure is retiring default
    // outbound access, and subnets made with network API 2025-07-01 or later are private by default.
    // source: MicrosoftDocs/azure-docs:articles/virtual-network/ip-services/default-outbound-access.md;
    // https://techcommunity.microsoft.com/t5/azure-networking-blog/private-subnets-by-default-in-azure-virtual-networks-what/ba-p/4513778
    const natIp = new network.PublicIPAddress(`${name}-nat-ip`, {
        ...rg, sku: { name: "Standard" }, publicIPAllocationMethod: "Static", publicIPAddressVersion: "IPv4", tags,
    }, child);
    const nat = new network.NatGateway(`${name}-nat`, { ...rg, sku: { name: "Standard" }, publicIpAddresses: [{ id: natIp.id }], tags }, child);

    // The subnet is its own resource, so the VNet must not list subnets inline (the two would fight).
    const vnet = new network.VirtualNetwork(`${name}-vnet`, { ...rg, addressSpace: { addressPrefixes: [az.vnetCidr] }, tags }, child);
    const subnet = new network.Subnet(`${name}-subnet`, {
        resourceGroupName: rg.resourceGroupName,
        virtualNetworkName: vnet.name,
        addressPrefix: az.subnetCidr,
        natGateway: { id: nat.id },
        defaultOutboundAccess: false,
    }, child);
    const refs = { resourceGroupName: rg.resourceGroupName, subnetId: subnet.id, nsgId: nsg.id };

    const jumpIp = new network.PublicIPAddress(`${name}-jump-ip`, {
        ...rg, sku: { name: "Standard" }, publicIPAllocationMethod: "Static", publicIPAddressVersion: "IPv4", tags,
    }, child);
    const jumpNic = new network.NetworkInterface(`${name}-jump-nic`, {
        ...rg,
        networkSecurityGroup: { id: nsg.id },
        ipConfigurations: [{
            name: "ipconfig1", primary: true, subnet: { id: subnet.id },
            privateIPAllocationMethod: "Dynamic", publicIPAddress: { id: jumpIp.id },
        }],
        tags,
    }, child);
    const jumpHostKey = stackHostKey(`${name}-jump-host-key`, parent);
    const jump = new compute.VirtualMachine(`${name}-jump`,
        jumpHostArgs(layout, spec, { ...refs, nicId: jumpNic.id, customData: keyData(jumpHostKey, jumpCustomData) }),
        { ...child, replaceOnChanges: ["osProfile.customData"], deleteBeforeReplace: true });

    return { subnetId: subnet.id, vnetId: vnet.id, jump: { ip: jumpIp, vm: jump, hostKey: jumpHostKey } };
}
