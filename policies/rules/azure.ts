/**
 * Azure InfiniBand rules on one scale set or VM: one scale set is one IB partition, SSH keys only, a Gen2 image,
 * no Secure Boot over unsigned OFED modules. Facts from shared/research/azure-ib.md §2–3 (cited per rule) and
 * components/catalog/azure.ts. Each applies only to scale sets and VMs of an InfiniBand size (azure-model.ts).
 */
import type { PolicyResource, ResourceValidationArgs } from "@pulumi/policy";
import { AZURE_IB_PARTITION, azureVmSize } from "../../components/catalog/azure";
import type { Findings } from "../support";
import { get, known, show, TYPES, UNKNOWN, type Maybe } from "../support";
import { ibNodes, ibScope, SIZE_SCHEMA, type IbNode, type SizeConfig } from "./azure-model";
import { resourcePolicy, stackPolicy, type PolicyMeta } from "./define";

const SETUP_IB = "https://learn.microsoft.com/azure/virtual-machines/setup-infiniband";

/** A resource policy over IB scale sets (and VMs, where `vms`): not applicable outside the scope. */
function ibResource<C extends object = object>(
    meta: Omit<PolicyMeta, "configSchema">, vms: boolean, check: (node: IbNode, f: Findings, config: C & SizeConfig, args: ResourceValidationArgs) => void,
    extraSchema: NonNullable<PolicyMeta["configSchema"]>["properties"] = {},
) {
    return resourcePolicy<C & SizeConfig>({ ...meta, configSchema: { properties: { ...SIZE_SCHEMA, ...extraSchema } } }, (args, f, config) => {
        if (args.type !== TYPES.scaleSet && !(vms && args.type === TYPES.virtualMachine)) args.notApplicable(vms ? "applies to VM scale sets and VMs" : `applies to ${TYPES.scaleSet}`);
        const s = ibScope(args, config.vmSizes);
        if (s.in === false) return args.notApplicable(s.why);
        if (s.in === "unknown") {
            f.cannotVerify(s.why);
            return;
        }
        check(s.node, f, config, args);
    });
}

/** A scale set setting that must have one value. */
function vmssSetting(name: string, path: string, want: unknown, read: (p: Record<string, any>) => unknown, why: string, meta: Omit<PolicyMeta, "name" | "configSchema">) {
    return ibResource({ name, ...meta }, false, (node, f) => {
        const v: Maybe<unknown> = get(() => read(node.r.props));
        if (v === UNKNOWN) f.cannotVerify(`${path} of VM scale set ${node.r.name} is not known yet`);
        else if (v !== want) f.violation(`VM scale set ${node.r.name} (${node.size}): ${path} is ${show(v)}, must be ${show(want)}: ${why}`);
    });
}

export const azureIbVmssSinglePlacementGroup = vmssSetting(
    "azure-ib-vmss-single-placement-group", "singlePlacementGroup", true, (p) => p.singlePlacementGroup,
    "InfiniBand connects only the VMs of one placement group",
    {
        description: "An InfiniBand VM scale set sets singlePlacementGroup true, so all its VMs share one InfiniBand partition.",
        remediationSteps: "Set singlePlacementGroup: true when the scale set is created: false cannot be changed back to true later.",
        severity: "critical", url: SETUP_IB, enforcementLevel: "mandatory",
    },
);

export const azureIbVmssFaultDomainOne = vmssSetting(
    "azure-ib-vmss-fault-domain-one", "platformFaultDomainCount", 1, (p) => p.platformFaultDomainCount,
    "the regional default is 5 fault domains",
    {
        // source: azure-ib.md §2 (Uniform regional default 5; Azure/azurehpc emits fault_domain_count=1)
        description: "An InfiniBand VM scale set sets platformFaultDomainCount 1.",
        remediationSteps: "Set platformFaultDomainCount: 1 (the value Azure's HPC templates use) when the scale set is created.",
        severity: "medium", url: "https://learn.microsoft.com/azure/virtual-machine-scale-sets/virtual-machine-scale-sets-manage-fault-domains", enforcementLevel: "mandatory",
    },
);

export const azureIbVmssNoOverprovision = vmssSetting(
    "azure-ib-vmss-no-overprovision", "overprovision", false, (p) => p.overprovision,
    "overprovisioning starts extra VMs, so the node count (and NCCL's rank count) is not the one planned",
    {
        // source: azure-ib.md §2 (overprovision false keeps the VM count deterministic)
        description: "An InfiniBand VM scale set sets overprovision false.",
        remediationSteps: "Set overprovision: false.",
        severity: "low", url: "https://learn.microsoft.com/azure/virtual-machine-scale-sets/virtual-machine-scale-sets-design-overview#overprovisioning", enforcementLevel: "advisory",
    },
);

export const azureIbVmssUniformOrchestration = vmssSetting(
    "azure-ib-vmss-uniform-orchestration", "orchestrationMode", "Uniform", (p) => p.orchestrationMode,
    "in Flexible mode N-series scale sets get singlePlacementGroup false from the first VM",
    {
        // source: azure-ib.md §2 (orchestration-modes.md: Flexible + platformFaultDomainCount 1 sets SPG false on N-series)
        description: "An InfiniBand VM scale set uses Uniform orchestration.",
        remediationSteps: "Set orchestrationMode: \"Uniform\" at creation (it cannot be changed later).",
        severity: "high", url: "https://learn.microsoft.com/azure/virtual-machine-scale-sets/virtual-machine-scale-sets-orchestration-modes", enforcementLevel: "mandatory",
    },
);

export const azureIbVmssPartitionCapacity = ibResource<{ partitionLimit: number }>({
    name: "azure-ib-vmss-partition-capacity",
    description: `An InfiniBand VM scale set holds at most partitionLimit VMs (Azure: ${AZURE_IB_PARTITION.defaultMaxVms} per placement group, ${AZURE_IB_PARTITION.raisedMaxVms} after a support request), one InfiniBand partition.`,
    remediationSteps:
        `Keep sku.capacity at or below the limit; set this policy's partitionLimit to ${AZURE_IB_PARTITION.raisedMaxVms} once Azure support raised it. ` +
        "Larger clusters need several scale sets (partitions).",
    severity: "high", url: SETUP_IB, enforcementLevel: "mandatory",
}, false, (node, f, config) => {
    const capacity = get(() => node.r.props.sku?.capacity);
    if (capacity === UNKNOWN) f.cannotVerify(`sku.capacity of VM scale set ${node.r.name} is not known yet`);
    else if (typeof capacity === "number" && capacity > config.partitionLimit) {
        f.violation(`VM scale set ${node.r.name}: sku.capacity ${capacity} exceeds the partition limit ${config.partitionLimit} (source: catalog AZURE_IB_PARTITION, setup-infiniband.md)`);
    }
}, {
    // source: components/catalog/azure.ts AZURE_IB_PARTITION (setup-infiniband.md: 100 by default, 300 after a support request)
    partitionLimit: {
        type: "integer", minimum: 1, maximum: AZURE_IB_PARTITION.raisedMaxVms, default: AZURE_IB_PARTITION.defaultMaxVms,
        description: "Largest VM count of one InfiniBand scale set (one placement group).",
    },
});

function osProfileOf(node: IbNode): Maybe<Record<string, any> | undefined> {
    return get(() => node.profile()?.osProfile);
}

export const azureIbNoPasswordLogin = ibResource({
    name: "azure-ib-no-password-login",
    description: "InfiniBand Linux VMs and scale sets log in with SSH keys only: disablePasswordAuthentication true and no adminPassword.",
    remediationSteps: "Set osProfile.linuxConfiguration.disablePasswordAuthentication true, give the key in linuxConfiguration.ssh.publicKeys, and drop adminPassword.",
    severity: "high",
    url: "https://learn.microsoft.com/azure/virtual-machines/linux/create-ssh-keys-detailed",
    enforcementLevel: "mandatory",
}, true, (node, f, _c, args) => {
    const os = osProfileOf(node);
    if (os === UNKNOWN) {
        f.cannotVerify(`the osProfile of ${node.kind} ${node.r.name} is not known yet`);
        return;
    }
    if (os === undefined) args.notApplicable("no osProfile (created from a specialized disk)");
    if (get(() => os!.windowsConfiguration) !== undefined) args.notApplicable("Windows");
    const disabled = get(() => os!.linuxConfiguration?.disablePasswordAuthentication);
    if (disabled === UNKNOWN) f.cannotVerify(`disablePasswordAuthentication of ${node.r.name} is not known yet`);
    else if (disabled !== true) f.violation(`${node.kind} ${node.r.name}: osProfile.linuxConfiguration.disablePasswordAuthentication is ${show(disabled)}, must be true`);
    // an unknown password is one computed from another resource: it is set (never printed)
    if (get(() => os!.adminPassword) !== undefined) f.violation(`${node.kind} ${node.r.name}: osProfile.adminPassword is set; log in with SSH keys only`);
});

/**
 * The image generation from an image reference, where it can be known: ubuntu-hpc images are all Gen2 (azure-ib.md
 * §3, azure-hpc-vm-images.md); a marketplace SKU that offers both generations names the Gen2 one "…-gen2"
 * (https://learn.microsoft.com/azure/virtual-machines/generation-2); a gallery image or managed image in the stack says
 * it in hyperVGeneration. undefined: not stated anywhere the policy can read.
 */
function imageGeneration(node: IbNode & { r: PolicyResource }, ref: Record<string, any>, resources: PolicyResource[]): Maybe<string | undefined> {
    const offer = get(() => ref.offer);
    const sku = get(() => ref.sku);
    if (typeof offer === "string" && offer.toLowerCase() === "ubuntu-hpc") return "V2";
    if (typeof sku === "string" && /-gen2$/i.test(sku)) return "V2";
    const images = resources.filter((r) => r.type === TYPES.galleryImage || r.type === TYPES.image);
    const id = get(() => ref.id);
    const property = node.r.type === TYPES.scaleSet ? "virtualMachineProfile" : "storageProfile";
    const deps = (node.r.propertyDependencies[property] ?? []).filter((d) => images.includes(d));
    const byId = typeof id === "string" ? images.filter((i) => known(() => i.props.id) === id || id.startsWith(`${known(() => i.props.id)}/`)) : [];
    const image = [...byId, ...deps][0];
    if (image) return get(() => image.props.hyperVGeneration);
    return id === UNKNOWN || offer === UNKNOWN || sku === UNKNOWN ? UNKNOWN : undefined;
}

export const azureIbGen2Image = stackPolicy<SizeConfig>({
    name: "azure-ib-gen2-image",
    description: "A VM or scale set of a Gen2-only InfiniBand size (every ND size) boots a Gen2 image.",
    remediationSteps: "Use a Gen2 image: microsoft-dsvm:ubuntu-hpc (all Gen2), a marketplace SKU ending in -gen2, or a gallery image with hyperVGeneration V2.",
    severity: "high",
    url: "https://learn.microsoft.com/azure/virtual-machines/generation-2",
    enforcementLevel: "mandatory",
    configSchema: { properties: SIZE_SCHEMA },
}, (args, f, config) => {
    const { nodes, unknown } = ibNodes(args.resources, config.vmSizes);
    unknown.forEach((u) => f.cannotVerify(u));
    const gen2 = nodes.filter((n) => azureVmSize(n.size)?.gen2Only);
    if (gen2.length === 0 && unknown.length === 0) args.notApplicable("no VM or scale set of a Gen2-only InfiniBand size");
    for (const node of gen2) {
        const ref = get(() => node.profile()?.storageProfile?.imageReference);
        if (ref === UNKNOWN) {
            f.cannotVerify(`the image of ${node.kind} ${node.r.name} is not known yet`);
            continue;
        }
        if (ref === undefined) continue; // created from a disk
        const gen = imageGeneration(node, ref, args.resources);
        const label = ["publisher", "offer", "sku", "version"].map((k) => known(() => ref[k])).filter((v) => typeof v === "string").join(":") || show(get(() => ref.id));
        if (gen === UNKNOWN) f.cannotVerify(`the generation of the image of ${node.r.name} is not known yet`);
        else if (gen === undefined) f.cannotVerify(`image ${label} of ${node.r.name} does not state its generation; check that it is Gen2 (az vm image show … --query hyperVGeneration)`);
        else if (gen !== "V2") f.violation(`${node.kind} ${node.r.name}: image ${label} is hyperVGeneration ${show(gen)}, but ${node.size} runs only Gen2 images (source: ${azureVmSize(node.size)!.source})`, node.r.urn);
    }
});

export const azureIbTrustedLaunchOff = ibResource({
    name: "azure-ib-trusted-launch-off",
    description: "InfiniBand VMs and scale sets do not boot with Secure Boot (Trusted Launch or Confidential VM with secureBootEnabled), which refuses the unsigned OFED/DOCA, NVIDIA and peermem DKMS modules.",
    remediationSteps:
        "Leave securityProfile out, or set securityProfile.uefiSettings.secureBootEnabled false; enable Secure Boot only with an image " +
        "whose kernel modules are signed and enrolled.",
    severity: "high",
    // source: azure-ib.md §3 ("Keep securityProfile off (no Secure Boot): DKMS modules (OFED, nvidia, peermem) are unsigned"; M)
    url: "https://learn.microsoft.com/azure/virtual-machines/trusted-launch",
    enforcementLevel: "advisory",
}, true, (node, f) => {
    const type = get(() => node.profile()?.securityProfile?.securityType);
    const boot = get(() => node.profile()?.securityProfile?.uefiSettings?.secureBootEnabled);
    if (type === UNKNOWN || boot === UNKNOWN) f.cannotVerify(`the securityProfile of ${node.r.name} is not known yet`);
    else if ((type === "TrustedLaunch" || type === "ConfidentialVM") && boot !== false) {
        f.violation(`${node.kind} ${node.r.name}: securityProfile.securityType ${show(type)} with uefiSettings.secureBootEnabled ${show(boot)}: Secure Boot refuses the unsigned InfiniBand and GPU kernel modules`);
    }
});
