import * as pulumi from "@pulumi/pulumi";
import * as compute from "@pulumi/azure-native/compute";
import * as network from "@pulumi/azure-native/network";
import * as resources from "@pulumi/azure-native/resources";
import * as authorization from "@pulumi/azure-native/authorization";
import { keepMessage, SpecError, toInputPropertiesError } from "../errors";
import { FabricPlan, planCluster } from "../plan";
import { checkedId, ClusterSpec, parseSpecArg } from "../spec";
import type { ClusterSpecInput } from "../types";
import { armList, askAzureCloud, providerArmHost } from "./cloud";
import { AzureNode, parseNodeNics, subscriptionOf, VmssNic, vmssNicListUrl } from "./nodeIps";
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
 * `cluster.ssh.allowedCidrs`, and a jump host as the only public way in. Every decision is read from the plan;
 * the resource count does not depend on the node count (10 resources, 11 when the kit creates the resource group).
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
    /** Public IP of the jump host (ProxyJump target); known once the jump host VM exists. */
    public readonly jumpHostAddress: pulumi.Output<string>;
    /** Login user on the jump host and on every node. */
    public readonly adminUser: pulumi.Output<string>;
    /** The SSH host key every node shows (`ssh-ed25519 AAAA...`), made by the stack and pinned (provision/hostkeys.ts). */
    public readonly nodeHostPublicKey: pulumi.Output<string>;
    /** The jump host's SSH host key, the same way. */
    public readonly jumpHostPublicKey: pulumi.Output<string>;
    /** Size, HCAs per node, expected busbw and NCCL topology file, from the plan. */
    public readonly fabricSummary: pulumi.Output<AzureFabricSummary>;
    public readonly resourceGroupName: pulumi.Output<string>;
    public readonly vmssName: pulumi.Output<string>;
    public readonly vnetId: pulumi.Output<string>;
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
        const allowed = askAzureCloud(spec, this).apply((issues) => {
            if (issues.length > 0) throw keepMessage(new SpecError(issues, `AzureInfinibandCluster ${name}: Azure refuses this cluster`));
            return true;
        });
        const resourceGroupName: pulumi.Output<string> = layout.existingResourceGroup !== undefined
            ? pulumi.all([allowed, checkedId(layout.existingResourceGroup, "resourceGroupName", "cluster.azure.resourceGroupName")]).apply(([, rgName]) => rgName)
            : new resources.ResourceGroup(`${name}-rg`, { location: allowed.apply(() => location), tags }, child).name;
        const rg = { resourceGroupName, location };

        const nsg = new network.NetworkSecurityGroup(`${name}-nsg`, { ...rg, securityRules: nsgRules(spec.ssh.allowedCidrs), tags }, child);

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
            resourceGroupName,
            virtualNetworkName: vnet.name,
            addressPrefix: az.subnetCidr,
            natGateway: { id: nat.id },
            defaultOutboundAccess: false,
        }, child);
        const refs = { resourceGroupName, subnetId: subnet.id, nsgId: nsg.id };

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
        // one host key for the scale set's nodes, one for the jump host (components/provision/hostkeys.ts says why per
        // group); cloud-init installs a VM's at its first boot only, so other customData means new VMs: deleted first,
        // the jump host because its NIC can hold one VM, the scale set because its GPU quota rarely holds two
        const nodeHostKey = stackHostKey(`${name}-node-host-key`, this);
        const jumpHostKey = stackHostKey(`${name}-jump-host-key`, this);
        const keyData = (k: typeof nodeHostKey, f: (key: { privateKey: string; publicKey: string }) => string) =>
            pulumi.secret(pulumi.all([k.privateKey, k.publicKey]).apply(([privateKey, publicKey]) => f({ privateKey, publicKey })));
        const jump = new compute.VirtualMachine(`${name}-jump`,
            jumpHostArgs(layout, spec, { ...refs, nicId: jumpNic.id, customData: keyData(jumpHostKey, jumpCustomData) }),
            { ...child, replaceOnChanges: ["osProfile.customData"], deleteBeforeReplace: true });

        const vmss = new compute.VirtualMachineScaleSet(`${name}-vmss`,
            scaleSetArgs(layout, plan, spec, { ...refs, customData: keyData(nodeHostKey, nodeCustomData) }),
            { ...child, replaceOnChanges: ["virtualMachineProfile.osProfile.customData"], deleteBeforeReplace: true });

        if (plan.scheduler.type === "slurm") {
            heads.set(this, createAzureSlurmHead({
                name, parent: this, layout, plan, slurm: plan.scheduler, resourceGroupName, subnetId: subnet.id, subnetCidr: az.subnetCidr,
            }));
        }

        // One list call for all nodes at every pulumi up, with the provider's own token (see nodeIps.ts for why not
        // the CLI or an invoke); not at preview of a new scale set, whose name is not known yet.
        const vmssName = vmss.name;
        this.nodes = pulumi.all([vmss.id, resourceGroupName, vmssName]).apply(async ([id, rgName, setName]) => {
            const { token } = await authorization.getClientToken({}, { parent: this });
            const nics = await armList<VmssNic>(vmssNicListUrl(subscriptionOf(id), rgName, setName, providerArmHost()), token).catch((e: unknown) => {
                throw new Error(`rdmakit: the NICs of scale set ${setName} could not be listed: ${String((e as Error)?.message ?? e)}`);
            });
            return parseNodeNics(nics, { nodes: layout.nodes, subnetCidr: az.subnetCidr, vmss: setName });
        });
        this.nodePrivateIps = this.nodes.apply((ns) => ns.map((n) => n.privateIp));
        this.imageVersion = vmss.virtualMachineProfile.apply((p) => p?.storageProfile?.imageReference?.exactVersion || plan.azure!.image.version);
        this.jumpHostAddress = pulumi.all([jumpIp.ipAddress, jump.id]).apply(([address]) => {
            if (!address) throw new Error(`rdmakit: the jump host's static public IP of ${name} has no address`);
            return address;
        });
        this.adminUser = pulumi.output(layout.adminUser);
        this.nodeHostPublicKey = nodeHostKey.publicKey;
        this.jumpHostPublicKey = jumpHostKey.publicKey;
        this.fabricSummary = pulumi.output(azureFabricSummary(plan));
        this.resourceGroupName = resourceGroupName;
        this.vmssName = vmss.name;
        this.vnetId = vnet.id;
        this.subnetId = subnet.id;
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
