import { jumpHostCloudConfig } from "../provision/jump";
export { NSG_PRIORITY, nsgRules } from "./nsg";
import { hostKeyCloudConfig } from "../provision/hostkeys";
import type * as pulumi from "@pulumi/pulumi";
import type { VirtualMachineScaleSetArgs, VirtualMachineArgs } from "@pulumi/azure-native/compute";
import { SpecIssue } from "../errors";
import { FabricPlan } from "../plan";
import { ClusterSpec } from "../spec";

/*
 * Pure helpers for AzureInfinibandCluster: every input of every child resource is decided here, from the spec and
 * the plan, so tests can read the decisions without the engine. Facts come from ../shared/research/azure-ib.md
 * (cited as "azure-ib.md §N") unless another source is named.
 */

/**
 * Names Azure refuses as adminUsername. source: @pulumi/azure-native types/input.d.ts, OSProfileArgs.adminUsername
 * ("Disallowed values"), which is the Compute REST API's own description.
 */
export const AZURE_DISALLOWED_ADMIN_NAMES = [
    "administrator", "admin", "user", "user1", "test", "user2", "test1", "user3", "admin1", "1", "123", "a",
    "actuser", "adm", "admin2", "aspnet", "backup", "console", "david", "guest", "john", "owner", "root", "server",
    "sql", "support", "support_388945a0", "sys", "test2", "test3", "user4", "user5",
];

/**
 * Jump host image: Ubuntu 22.04 LTS, Gen2 (the `Ubuntu2204` alias of `az vm image list`).
 * source: MicrosoftDocs/azure-docs:articles/virtual-machines/linux/cli-ps-findimage.md (alias table)
 */
export const JUMP_HOST_IMAGE = {
    publisher: "Canonical",
    offer: "0001-com-ubuntu-server-jammy",
    sku: "22_04-lts-gen2",
    version: "latest",
} as const;


/** Everything the child resources need that is not already in the plan, checked once. */
export interface AzureLayout {
    clusterName: string;
    location: string;
    nodes: number;
    adminUser: string;
    publicKey: string;
    /** undefined: the component creates a resource group */
    existingResourceGroup?: pulumi.Input<string>;
    tags: Record<string, string>;
}

/** The component builds azure-ib clusters only; checked before a plan is made. */
export function fabricIssues(spec: ClusterSpec): SpecIssue[] {
    if (spec.fabric === "azure-ib") return [];
    return [{
        path: "cluster.fabric", value: spec.fabric,
        message: "is not an Azure InfiniBand cluster", allowed: "azure-ib (use the component for the spec's fabric)",
    }];
}

/**
 * Checks what the plan and spec must agree on before any resource exists. The spec itself has been through
 * parseClusterSpec and fabricIssues; this catches what only Azure refuses.
 */
export function layoutIssues(spec: ClusterSpec, plan: FabricPlan): SpecIssue[] {
    const issues: SpecIssue[] = [];
    if (plan.fabric !== "azure-ib" || !plan.azure) {
        issues.push({ path: "plan.fabric", value: plan.fabric, message: "is not azure-ib", allowed: "the plan of an azure-ib spec" });
        return issues;
    }
    if (AZURE_DISALLOWED_ADMIN_NAMES.includes(plan.sshUser.toLowerCase())) {
        issues.push({
            path: "cluster.ssh.user", value: plan.sshUser,
            message: "is a name Azure refuses as the VM admin user",
            allowed: "another Linux user name, e.g. azureuser (the default)",
        });
    }
    if (!spec.ssh.publicKey) {
        issues.push({ path: "cluster.ssh.publicKey", message: "is missing", allowed: "an OpenSSH public key line (ssh-ed25519 AAAA...)" });
    }
    return issues;
}

/** The checked layout; call only when layoutIssues returned nothing. */
export function azureLayout(spec: ClusterSpec, plan: FabricPlan): AzureLayout {
    const az = spec.azure!;
    return {
        clusterName: spec.name,
        location: az.location,
        nodes: spec.nodes,
        adminUser: plan.sshUser,
        publicKey: spec.ssh.publicKey!,
        existingResourceGroup: az.resourceGroupName,
        tags: clusterTags(spec),
    };
}

/** User tags first, then ours, so a user tag cannot rename the cluster a resource belongs to. */
export function clusterTags(spec: ClusterSpec): Record<string, string> {
    return { ...spec.tags, "rdmakit-cluster": spec.name, "rdmakit-fabric": spec.fabric };
}

/**
 * Computer name prefix of the GPU nodes; Azure appends a 6-character instance suffix.
 * source: @pulumi/azure-native types/input.d.ts VirtualMachineScaleSetOSProfileArgs.computerNamePrefix
 * ("must be 1 to 15 characters long")
 */
export function computerNamePrefix(clusterName: string): string {
    return clusterName.slice(0, 15).replace(/-+$/, "");
}

/** Where Azure writes the key; Linux VMs accept only this path. source: azure-ib.md §7 (osProfile) */
export function authorizedKeysPath(user: string): string {
    return `/home/${user}/.ssh/authorized_keys`;
}


/** IDs the scale set and jump host refer to; Inputs because they exist only once Azure made them. */
export interface AzureRefs {
    resourceGroupName: pulumi.Input<string>;
    subnetId: pulumi.Input<string>;
    nsgId: pulumi.Input<string>;
    /**
     * customData (base64 #cloud-config) of the VMs: for the scale set, the node group's host key (nodeCustomData); for
     * the jump host, its sshd settings and host key (jumpCustomData). A secret, as it holds a private key.
     * @default the scale set none; the jump host jumpCustomData() (sshd settings only)
     */
    customData?: pulumi.Input<string>;
}

/** The scale set's customData: the node group's SSH host key as a #cloud-config (provision/hostkeys.ts), base64. Pure. */
export function nodeCustomData(hostKey: { privateKey: string; publicKey: string }): string {
    return Buffer.from(hostKeyCloudConfig(hostKey, "azure")).toString("base64");
}

/** The jump host's customData: sshd tuned for the jump hops and, given, its own host key (provision/jump.ts), base64. Pure. */
export function jumpCustomData(hostKey?: { privateKey: string; publicKey: string }): string {
    return Buffer.from(jumpHostCloudConfig(hostKey, "azure")).toString("base64");
}

/**
 * The GPU nodes: one Uniform scale set = one InfiniBand partition. Each setting and why:
 * - Uniform + singlePlacementGroup + platformFaultDomainCount 1: VMs of one scale set with one placement group
 *   share the IB partition key; SPG can be switched off later but never on again, so it is set at create time;
 *   Flexible mode would turn SPG off with FD 1 on N-series (azure-ib.md §2, setup-infiniband.md,
 *   virtual-machine-scale-sets-orchestration-modes.md; Azure/azurehpc:pyazhpc/arm.py emits the same).
 * - overprovision false: exactly `nodes` VMs, so the NCCL rank count is known and no throw-away VM runs the
 *   provisioning (azure-ib.md §2).
 * - upgradePolicy Manual: a model change never reboots nodes in the middle of a job; rolling it out is an
 *   operator's decision (field and value: azure-ib.md §7).
 * - sku: the IB size from the catalog (the `r` sizes, azure-ib.md §1), capacity = nodes, tier Standard.
 * - accelerated networking on the one Ethernet NIC: supported by every ND/HB/HX IB size (azure-ib.md §2); the
 *   AccelNet VF shows up as mlx5_an0, which the plan keeps out of NCCL with NCCL_IB_HCA=mlx5_ib.
 * - image from the plan: Gen2 microsoft-dsvm:ubuntu-hpc by default, which ships DOCA-OFED, driver, NCCL, topology
 *   files and nccl-tests (azure-ib.md §3); ND A100/H100/H200 boot Gen2 only (azure-ib.md §1).
 * - SSH keys only: disablePasswordAuthentication and one key at /home/<user>/.ssh/authorized_keys (azure-ib.md §7).
 * - customData: the node group's SSH host key, installed by cloud-init at each VM's first boot (provision/hostkeys.ts).
 * - OS disk Premium_LRS with ReadWrite caching, size from the spec (azure-ib.md §7).
 * - no securityProfile (no Trusted Launch / Secure Boot): the DKMS modules (OFED, nvidia, nvidia-peermem) are
 *   unsigned and would not load, and the NVIDIA GPU driver extension does not support Secure Boot
 *   (azure-ib.md §3; MicrosoftDocs/azure-compute-docs:articles/virtual-machines/extensions/hpccompute-gpu-linux.md).
 *   Not `securityType: "Standard"`: the compute API azure-native 3.x sends (2024-11-01) knows only TrustedLaunch and
 *   ConfidentialVM, and takes "Standard" only on subscriptions with the UseStandardSecurityType feature registered
 *   (Azure/azure-cli:src/azure-cli/azure/cli/command_modules/vm/_params.py, security_type help); left unset, that
 *   API version creates the scale set without Trusted Launch (azure-native SecurityProfileArgs.securityType doc).
 *   Re-checked against @pulumi/azure-native 3.28.0: compute/virtualMachineScaleSet.d.ts "Uses Azure REST API version
 *   2024-11-01"; 2025-11-01 (where an unset type reads back as Standard) exists only through `pulumi package add
 *   azure-native compute 2025-11-01`, a generated local SDK the kit does not ship. So the field stays unset, and the
 *   policy azure-ib-trusted-launch-off (policies/rules/azure.ts) refuses TrustedLaunch/ConfidentialVM or Secure Boot.
 * - boot diagnostics on, in a managed storage account (no storageUri): a node that never reaches SSH can still be
 *   read from its serial log (azure-native compute BootDiagnosticsArgs: "enabled"; storageUri optional).
 * - no public IP configuration: nodes are reached through the jump host; egress goes through the NAT gateway.
 * - no proximity placement group: IB membership comes from the scale set, and a PPG only adds allocation
 *   failures (azure-ib.md §2).
 */
export function scaleSetArgs(layout: AzureLayout, plan: FabricPlan, spec: ClusterSpec, refs: AzureRefs): VirtualMachineScaleSetArgs {
    const az = plan.azure!;
    return {
        resourceGroupName: refs.resourceGroupName,
        location: layout.location,
        sku: { name: az.vmSize, capacity: layout.nodes, tier: "Standard" },
        orchestrationMode: "Uniform",
        singlePlacementGroup: true,
        platformFaultDomainCount: 1,
        overprovision: false,
        upgradePolicy: { mode: "Manual" },
        virtualMachineProfile: {
            diagnosticsProfile: { bootDiagnostics: { enabled: true } },
            osProfile: {
                computerNamePrefix: computerNamePrefix(layout.clusterName),
                adminUsername: layout.adminUser,
                // cloud-init on ubuntu-hpc reads it at the first boot (azure-ib.md §3: the image provisions with cloud-init)
                ...(refs.customData !== undefined ? { customData: refs.customData } : {}),
                linuxConfiguration: {
                    disablePasswordAuthentication: true,
                    ssh: { publicKeys: [{ path: authorizedKeysPath(layout.adminUser), keyData: layout.publicKey }] },
                },
            },
            storageProfile: {
                imageReference: { ...az.image },
                osDisk: {
                    createOption: "FromImage",
                    caching: "ReadWrite",
                    managedDisk: { storageAccountType: "Premium_LRS" },
                    diskSizeGB: spec.azure!.osDiskGiB,
                },
            },
            networkProfile: {
                networkInterfaceConfigurations: [
                    {
                        name: "eth0",
                        primary: true,
                        enableAcceleratedNetworking: true,
                        networkSecurityGroup: { id: refs.nsgId },
                        ipConfigurations: [{ name: "ipconfig1", primary: true, subnet: { id: refs.subnetId } }],
                    },
                ],
            },
        },
        tags: layout.tags,
    };
}

/**
 * The way in: a small Linux VM with the cluster's key, in the nodes' subnet, behind the same NSG. Chosen over
 * Azure Bastion because Ansible and ssh reach the nodes through it with a plain ProxyJump, and it costs a B-size
 * VM rather than a Bastion host (native-client tunnelling needs the Standard tier and `az network bastion`).
 */
export function jumpHostArgs(layout: AzureLayout, spec: ClusterSpec, refs: AzureRefs & { nicId: pulumi.Input<string> }): VirtualMachineArgs {
    return {
        resourceGroupName: refs.resourceGroupName,
        location: layout.location,
        hardwareProfile: { vmSize: spec.azure!.jumpHostSize },
        diagnosticsProfile: { bootDiagnostics: { enabled: true } },
        osProfile: {
            computerName: `${computerNamePrefix(layout.clusterName)}-jump`,
            adminUsername: layout.adminUser,
            // sshd tuned for the Ansible runs' jump hops and the jump host's own SSH host key (components/provision/jump.ts);
            // Azure takes it base64
            customData: refs.customData ?? jumpCustomData(),
            linuxConfiguration: {
                disablePasswordAuthentication: true,
                ssh: { publicKeys: [{ path: authorizedKeysPath(layout.adminUser), keyData: layout.publicKey }] },
            },
        },
        storageProfile: {
            imageReference: { ...JUMP_HOST_IMAGE },
            osDisk: {
                createOption: "FromImage",
                caching: "ReadWrite",
                managedDisk: { storageAccountType: "StandardSSD_LRS" },
                deleteOption: "Delete",
            },
        },
        networkProfile: { networkInterfaces: [{ id: refs.nicId, primary: true }] },
        tags: { ...layout.tags, "rdmakit-role": "jump-host" },
    };
}
