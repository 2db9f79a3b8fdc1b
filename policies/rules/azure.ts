/**
 * Azure InfiniBand fabric rules: one VM scale set is one IB partition, and the VNet keeps clear of Azure's RDMA range.
 * Facts from ../shared/research/azure-ib.md §2 (cited per rule) and components/catalog/azure.ts.
 */
import type { ResourceValidationPolicy } from "@pulumi/policy";
import { AZURE_IB_PARTITION, AZURE_RDMA_RESERVED_CIDR, azureVmSize } from "../../components/catalog/azure";
import { cidrsOverlap, parseCidr } from "../../components/net";
import { knownOr, list, read, show, TYPES } from "../support";

/**
 * What a scale set must say for all its VMs to share one InfiniBand partition. Each entry: the property path, the
 * value it must have, and why.
 */
const SINGLE_PARTITION: { path: string; want: unknown; get: (p: Record<string, any>) => unknown; why: string }[] = [
    {
        path: "orchestrationMode", want: "Uniform", get: (p) => p.orchestrationMode,
        // source: azure-ib.md §2 (Flexible + platformFaultDomainCount 1 sets singlePlacementGroup false on N-series)
        why: "Flexible mode turns singlePlacementGroup off for N-series VMs",
    },
    {
        path: "singlePlacementGroup", want: true, get: (p) => p.singlePlacementGroup,
        // source: MicrosoftDocs/azure-compute-docs:articles/virtual-machines/sizes/high-performance-compute/setup-infiniband.md
        why: "IB only connects VMs of one placement group, and false cannot be changed back to true",
    },
    {
        path: "platformFaultDomainCount", want: 1, get: (p) => p.platformFaultDomainCount,
        // source: azure-ib.md §2 (Uniform regional default is 5; azurehpc emits 1)
        why: "the regional default is 5 fault domains",
    },
    {
        path: "overprovision", want: false, get: (p) => p.overprovision,
        // source: azure-ib.md §2 (overprovision false keeps the VM count, and so the NCCL rank count, deterministic)
        why: "overprovisioning starts extra VMs, so the node count is not the one planned",
    },
];

export const azureIbVmssSinglePartition: ResourceValidationPolicy = {
    name: "azure-ib-vmss-single-partition",
    description:
        "An InfiniBand VM scale set is Uniform with singlePlacementGroup true, platformFaultDomainCount 1, overprovision false " +
        `and at most ${AZURE_IB_PARTITION.raisedMaxVms} VMs, so all its VMs share one IB partition.`,
    enforcementLevel: "mandatory",
    remediationSteps:
        "Set orchestrationMode \"Uniform\", singlePlacementGroup true, platformFaultDomainCount 1 and overprovision false at creation " +
        `(singlePlacementGroup cannot be turned back on later). Keep sku.capacity at ${AZURE_IB_PARTITION.defaultMaxVms} or less, or up to ` +
        `${AZURE_IB_PARTITION.raisedMaxVms} after an Azure support request; larger clusters need several partitions (scale sets).`,
    validateResource: (args, report) => {
        if (args.type !== TYPES.scaleSet) args.notApplicable(`applies to ${TYPES.scaleSet}`);
        const size = knownOr(() => args.props.sku?.name);
        if (typeof size === "string" && !azureVmSize(size)) args.notApplicable(`${size} is not an InfiniBand size in rdmakit's catalog`);
        for (const rule of SINGLE_PARTITION) {
            const v = read(() => rule.get(args.props));
            if (v.known && v.value !== rule.want) {
                report(`VM scale set ${args.name} (${size ?? "size unknown"}): ${rule.path} is ${show(v.value)}, must be ${show(rule.want)}: ${rule.why}`);
            }
        }
        const capacity = knownOr(() => args.props.sku?.capacity);
        if (typeof capacity === "number" && capacity > AZURE_IB_PARTITION.raisedMaxVms) {
            // source: setup-infiniband.md (100 VMs by default, 300 after a support request; catalog AZURE_IB_PARTITION)
            report(`VM scale set ${args.name}: sku.capacity ${capacity} exceeds ${AZURE_IB_PARTITION.raisedMaxVms}, the largest single placement group (one IB partition)`);
        }
    },
};

const RDMA_RANGE = parseCidr(AZURE_RDMA_RESERVED_CIDR)!;

export const azureIbVnetRdmaRange: ResourceValidationPolicy = {
    name: "azure-ib-vnet-rdma-range",
    description: `No virtual network or subnet address prefix overlaps ${AZURE_RDMA_RESERVED_CIDR}, the range Azure reserves for its RDMA network.`,
    enforcementLevel: "mandatory",
    remediationSteps:
        `Pick VNet and subnet ranges outside ${AZURE_RDMA_RESERVED_CIDR}, e.g. 10.10.0.0/16 (rdmakit's default, cluster.azure.vnetCidr).`,
    // source: MicrosoftDocs/azure-compute-docs:articles/virtual-machines/sizes/high-performance-compute/setup-infiniband.md
    // ("The RDMA network in Azure reserves the address space 172.16.0.0/16"); azure-ib.md §2
    validateResource: (args, report) => {
        let prefixes: { field: string; values: unknown[] }[] = [];
        if (args.type === TYPES.virtualNetwork) {
            prefixes = [{ field: "addressSpace.addressPrefixes", values: list(knownOr(() => args.props.addressSpace?.addressPrefixes)) ?? [] }];
        } else if (args.type === TYPES.subnet) {
            const one = knownOr(() => args.props.addressPrefix);
            prefixes = [
                { field: "addressPrefix", values: one === undefined ? [] : [one] },
                { field: "addressPrefixes", values: list(knownOr(() => args.props.addressPrefixes)) ?? [] },
            ];
        } else {
            args.notApplicable("applies to virtual networks and subnets");
        }
        const what = args.type === TYPES.virtualNetwork ? "virtual network" : "subnet";
        for (const { field, values } of prefixes) {
            for (const v of values) {
                const cidr = typeof v === "string" ? parseCidr(v) : undefined; // IPv6 prefixes cannot overlap an IPv4 block
                if (cidr && cidrsOverlap(cidr, RDMA_RANGE)) {
                    report(`${what} ${args.name}: ${field} ${v} overlaps ${AZURE_RDMA_RESERVED_CIDR}, which Azure reserves for the RDMA (InfiniBand) network`);
                }
            }
        }
    },
};

export const azureIbNoPasswordLogin: ResourceValidationPolicy = {
    name: "azure-ib-no-password-login",
    description: "Linux VMs and scale sets log in with SSH keys only: disablePasswordAuthentication true and no adminPassword.",
    enforcementLevel: "mandatory",
    remediationSteps:
        "Set osProfile.linuxConfiguration.disablePasswordAuthentication true, give the public key in linuxConfiguration.ssh.publicKeys, " +
        "and drop adminPassword.",
    // source: azure-ib.md §7 (osProfile shape); the jump host is on the Internet, and every node trusts it
    validateResource: (args, report) => {
        let os: Record<string, any> | undefined;
        let what = "";
        if (args.type === TYPES.scaleSet) {
            os = knownOr(() => args.props.virtualMachineProfile?.osProfile);
            what = "VM scale set";
        } else if (args.type === TYPES.virtualMachine) {
            os = knownOr(() => args.props.osProfile);
            what = "VM";
        } else {
            args.notApplicable("applies to VMs and VM scale sets");
        }
        if (os === undefined) args.notApplicable("no osProfile (the VM is created from a specialized disk)");
        if (knownOr(() => os!.windowsConfiguration) !== undefined) args.notApplicable("Windows VM");
        const disabled = knownOr(() => os!.linuxConfiguration?.disablePasswordAuthentication);
        if (disabled !== true) {
            report(`${what} ${args.name}: osProfile.linuxConfiguration.disablePasswordAuthentication is ${show(disabled)}, must be true`);
        }
        const password = read(() => os!.adminPassword);
        // an unknown password is one computed from another resource: it is set
        if (!password.known || password.value !== undefined) {
            report(`${what} ${args.name}: osProfile.adminPassword is set; log in with SSH keys only`);
        }
    },
};
