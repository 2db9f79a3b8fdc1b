import { DEFAULT_DCGM_LEVEL, DEFAULT_HEALTH_REQUIRE, HEALTH_COMPONENTS, XID_WINDOW_MINUTES } from "./health/types";
import type * as pulumi from "@pulumi/pulumi";
import { z } from "zod";
import { AWS_HOST_CPU_MEMORY, AWS_INSTANCE_TYPES, awsInstanceType } from "./catalog/aws";
import {
    AZURE_IB_PARTITION,
    AZURE_NON_IB_SIZES,
    AZURE_RDMA_RESERVED_CIDR,
    AZURE_VM_SIZES,
    azureVmSize,
    AZURE_HOST_CPU_MEMORY,
} from "./catalog/azure";
import { gpuModel, maxMessageBytes } from "./catalog/gpus";
import { SOFTWARE_COMPONENTS } from "./catalog/images";
import { DOCA_OFED_INFO_PREFIX, ofedInfoPrefix, SOFTWARE_DEFAULTS } from "./catalog/software";
import { softwareIssues } from "./plan/software";
import { keepMessage, SpecError, SpecIssue, toInputPropertiesError } from "./errors";
import { AWS_REGION, AWS_ZONE, AZURE_IMAGE_PART, AZURE_IMAGE_VERSION, AZURE_SUBNET_ID, AZURE_VM_SIZE, EC2_INSTANCE_TYPE, KEY_MATERIAL, named, notKeyMaterial } from "./grammars";
import { cidrsOverlap, parseCidr, publicCoverage } from "./net";
import { checkRoceSpec, rememberCleanRoceSpec, roceOsIssues, roceSpecSchema } from "./roce/spec";
import { resolveScheduler, schedulerIssues, schedulerSchema } from "./slurm/spec";
import { EMPTY_VALUE, firstPerPath, foldTypos, suggest, wrongTypeMessage } from "./spec-messages";

export { suggest };

/*
 * The cluster spec: one object, read from the stack config key `rdmakit:cluster`. Every field is documented
 * with `.describe()`; defaults are applied here so the plan never has to guess. Unknown keys are errors.
 */

const cidr = z
    .string()
    .refine((s) => parseCidr(s) !== undefined, { message: "must be an IPv4 CIDR block such as 10.0.0.0/16" });

/** Ids a program may take from another resource or stack: checked here when given as a string, when known otherwise. */
export const DEFERRED_IDS = {
    vpcId: { re: /^vpc-[0-9a-f]{8,17}$/, allowed: "a VPC id such as vpc-0123abcd" },
    subnetId: { re: /^subnet-[0-9a-f]{8,17}$/, allowed: "a subnet id such as subnet-0123abcd" },
    // Azure resource group names: 1-90 of letters, digits, _ ( ) - . and not ending in '.'.
    // source: https://learn.microsoft.com/azure/azure-resource-manager/management/resource-name-rules#microsoftresources
    resourceGroupName: { re: /^[-\w.()]{0,89}[-\w()]$/u, allowed: "an Azure resource group name (1-90 letters, digits, _ ( ) - ., not ending in .)" },
    azureSubnetId: { re: AZURE_SUBNET_ID, allowed: "a subnet's ARM id: /subscriptions/<subscription GUID>/resourceGroups/<group>/providers/Microsoft.Network/virtualNetworks/<vnet>/subnets/<subnet>" },
} as const;

/** A value a program hands over that is not known yet: an Output or a Promise. */
export function isDeferred(v: unknown): v is pulumi.Output<string> | Promise<string> {
    // Output.isInstance's own test, without loading the SDK (the offline verbs that read a spec never need it):
    // a member `__pulumiOutput` that is boolean true (@pulumi/pulumi output.js isInstance -> utils.hasTrueBooleanMember)
    const marked = typeof v === "object" && v !== null && (v as { __pulumiOutput?: unknown }).__pulumiOutput === true;
    return marked || v instanceof Promise;
}

const idInput = (kind: keyof typeof DEFERRED_IDS) => z.custom<pulumi.Input<string>>(
    (v) => isDeferred(v) || (typeof v === "string" && DEFERRED_IDS[kind].re.test(v)),
    { message: `must be ${DEFERRED_IDS[kind].allowed} (or a pulumi Output of one)` },
);

/**
 * The id as an Output that fails the deployment, naming the field, when a value that was not known at parse time
 * turns out to be malformed.
 */
export function checkedId(value: pulumi.Input<string>, kind: keyof typeof DEFERRED_IDS, field: string): pulumi.Output<string> {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const { output } = require("@pulumi/pulumi") as typeof import("@pulumi/pulumi");
    return output(value).apply((v) => {
        if (typeof v !== "string" || !DEFERRED_IDS[kind].re.test(v)) {
            throw keepMessage(new SpecError([{ path: field, value: v, message: "is not a valid id once known", allowed: DEFERRED_IDS[kind].allowed }]));
        }
        return v;
    });
}

const sshSchema = z
    .strictObject({
        user: z
            .string()
            .regex(/^[a-z_][a-z0-9_-]{0,31}$/, "must be a Linux user name (lower case, digits, _ and -)")
            .optional()
            .describe("login user on the nodes; default: ubuntu (AWS), azureuser (Azure), required per host on bare metal"),
        allowedCidrs: uniqueList(z.array(cidr))
            .default([])
            .describe("source ranges allowed to reach SSH on the way in (bastion / jump host); not needed with aws.access: ssm"),
        allowInternet: z
            .boolean()
            .default(false)
            .describe("must be true to accept ranges that open SSH to the internet (0.0.0.0/0, or more than maxPublicShare of it)"),
        maxPublicShare: z
            .number()
            .gt(0)
            .max(1)
            .default(0.001)
            .describe("largest share of the public IPv4 space allowedCidrs may reach together without allowInternet"),
        publicKey: z
            .string()
            .regex(/^(ssh-ed25519|ssh-rsa|ecdsa-sha2-nistp(256|384|521)) [A-Za-z0-9+/=]+( .*)?$/, "must be an OpenSSH public key line")
            .optional()
            .describe("public key installed on the nodes; the private key is the secret `rdmakit:sshPrivateKey`"),
    })
    .describe("how operators and Ansible reach the cluster");

const softwareSchema = z
    .strictObject({
        // Versions left out are decided by the plan from the image and the hardware (components/plan/software.ts,
        // defaults with their sources in components/catalog/software.ts). A version given here pins it.
        ncclVersion: z.string().regex(/^\d+\.\d+\.\d+-\d+$/, "must look like 2.28.9-1").optional()
            .describe("libnccl2 version to install where the image has none (pinned and held); default: the plan's"),
        cudaVersion: z.string().regex(/^\d{2}\.\d$/, "must be a CUDA major.minor such as 13.0").optional()
            .describe("CUDA toolkit the NCCL packages are built for (the +cudaX.Y package suffix); default: the plan's"),
        driverBranch: z.string().regex(/^\d{3}$/, "must be a driver branch such as 580").optional()
            .describe("NVIDIA datacenter driver branch to install where the image has none; default: the plan's"),
        driverVersion: z.string().regex(/^\d{3}\.\d+(\.\d+)?$/, "must be a full driver version such as 580.126.16").optional()
            .describe("full driver version (the driver pinning package, and the Fabric Manager it must equal)"),
        replace: uniqueList(z.array(z.enum(SOFTWARE_COMPONENTS))).default([])
            .describe("components whose copy on the image the kit replaces with its own: ofed, driver, efa, cuda, nccl (upgrades only) and ncclTests (the kit's build); default: none, the image's stack is reused"),
        openKernelModules: z.boolean().default(true).describe("use NVIDIA's open kernel modules (the default since 560)"),
        gpudirect: z.enum(["auto", "peermem", "dmabuf"]).default("auto")
            .describe("how the NIC reaches GPU memory: auto is DMA-BUF with the open kernel modules, else nvidia_peermem"),
        efaInstallerVersion: z.string().regex(/^\d+\.\d+\.\d+$/, "must look like 1.51.0").optional().describe(`aws-efa-installer version to install where the image has none; default ${SOFTWARE_DEFAULTS.efaInstallerVersion}`),
        efaInstallerSha256: z.string().regex(/^[0-9a-f]{64}$/, "must be a SHA-256 in hex").optional()
            .describe("checksum of the installer tarball; without it the role verifies AWS's GPG signature"),
        docaVersion: z.string().regex(/^\d+\.\d+\.\d+$/, "must look like 3.2.1").optional().describe(`DOCA-OFED version to install where the image has none (azure-ib, roce); default ${SOFTWARE_DEFAULTS.docaVersion}`),
        ofedSource: z.enum(["doca", "inbox"]).default("doca").describe("DOCA-OFED from NVIDIA, or the distro's inbox rdma-core"),
        ncclTestsVersion: z.string().regex(/^\d+\.\d+\.\d+$/, "must look like 2.19.6").optional().describe(`nccl-tests release to build; default ${SOFTWARE_DEFAULTS.ncclTestsVersion}`),
        ncclTestsSha256: z.string().regex(/^[0-9a-f]{64}$/, "must be a SHA-256 in hex").optional()
            .describe("checksum of the nccl-tests source tarball; without it the role checks out the release tag"),
    })
    .describe("pinned versions of the node software");

// the node health gate; defaults and their reasons in components/health/types.ts
const healthSchema = z
    .strictObject({
        require: uniqueList(z.array(z.enum(HEALTH_COMPONENTS))).default([...DEFAULT_HEALTH_REQUIRE])
            .describe("components a node must have checked to pass (a required one not checked fails it); default every component but dcgm"),
        xidWindowMinutes: z.int().min(1).max(43200).default(XID_WINDOW_MINUTES).describe("an Xid that needs a reset, or a fatal NVSwitch SXid, fails the node within this many minutes of the kernel log's newest line"),
        dcgmLevel: z.int().min(1).max(4).default(DEFAULT_DCGM_LEVEL).describe("dcgmi diag -r level: 1 quick, 2 medium, 3 long, 4 extended"),
    })
    .describe("the node health gate (docs/health.md)");

const validationSchema = z
    .strictObject({
        enabled: z.boolean().default(true).describe("run nccl-tests at the end of `pulumi up`"),
        minFraction: z.number().gt(0).max(1).default(0.8)
            .describe("pass when busbw at the largest sizes is at least this fraction of the expected figure"),
        minBusbwGBps: z.number().positive().optional().describe("explicit busbw floor in GB/s (overrides the catalog)"),
        // nccl-tests doubles from 8 while <= -e (NVIDIA/nccl-tests src/common.cu), so only a power of two is reached
        maxBytes: z.int().min(1 << 20).refine((n) => Number.isInteger(Math.log2(n)), { message: "must be a power of two (e.g. 8589934592 = 8 GiB), the sizes a doubling sweep reaches" }).optional()
            .describe("largest all_reduce message size in bytes; default 16 GiB, less where the GPU memory holds less"),
        iterations: z.int().min(1).max(1000).default(20).describe("nccl-tests -n"),
        timeoutMinutes: z.int().min(1).max(600).default(30).describe("wall-clock limit of the validation run"),
        maxFailedNodes: z.int().min(0).max(100000).default(0)
            .describe("nodes that may fail their health grade or preflight checks and be left out of the all-node runs (named in the report, drained under Slurm) without failing validation; 0: none, a failed preflight stops the run before nccl-tests"),
        health: healthSchema.default(healthSchema.parse({})),
    })
    .describe("what `pulumi up` proves at the end");

// The controller's cap on parallel connections: each fork is one ansible-playbook worker process with its own SSH
// client (ansible-core lib/ansible/executor/process/worker.py); `npm run bench` measures what one host costs.
const ansibleSchema = z
    .strictObject({
        maxFailPercentage: z.int().min(0).max(99).default(0)
            .describe("percent of the nodes that may fail the node-software step without failing pulumi up (listed in the stack output); 0: any failed node fails it"),
        exclude: uniqueList(z.array(z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._-]*$/, "must be a node name"))).default([])
            .describe("node names left out of provisioning and validation (validation grades the rest and names these)"),
        maxForks: z.int().min(1).max(1000).default(100).describe("most nodes Ansible works on at once: the node count up to this cap"),
        mode: z.enum(["node-local", "controller"]).default("node-local")
            .describe("node-local: each node runs the node software on itself from a bundle the controller sends; controller: ansible-playbook on the controller pushes every task (nodes without Python 3.9-3.12)"),
    })
    .describe("how the Ansible steps treat failing nodes and how wide they run");

const awsSchema = z
    .strictObject({
        region: z.string().regex(AWS_REGION, "must be an AWS region such as us-east-1"),
        availabilityZone: z
            .string()
            .regex(/^[a-z]{2}(-gov)?-[a-z]+-\d[a-z]$/, "must be an availability zone such as us-east-1a")
            .describe("the one AZ of the cluster (EFA does not cross AZs)"),
        instanceType: named(EC2_INSTANCE_TYPE, "must be an EC2 instance type such as p5.48xlarge").describe("EFA-capable instance type, e.g. p5.48xlarge"),
        ami: z.string().regex(/^ami-[0-9a-f]{8,17}$/, "must be an AMI id such as ami-0123456789abcdef0").optional()
            .describe("AMI id; default: the current Deep Learning Base GPU AMI (Ubuntu 22.04) for the architecture"),
        rootVolumeGiB: z.int().min(50).max(16384).default(200).describe("encrypted gp3 root volume size"),
        network: z
            .strictObject({
                vpcId: idInput("vpcId").optional(),
                subnets: z
                    .array(z.strictObject({
                        id: idInput("subnetId"),
                        availabilityZone: named(AWS_ZONE, "must be an Availability Zone name such as us-east-1a"),
                    }))
                    .min(1)
                    .optional()
                    .describe("existing private subnet for the GPU nodes (one: EFA traffic does not cross subnets)"),
                vpcCidr: cidr.default("10.0.0.0/16").describe("CIDR of the VPC the kit creates"),
            })
            .default({ vpcCidr: "10.0.0.0/16" })
            .describe("use an existing VPC/subnet, or let the kit create one"),
        placementGroup: z.boolean().optional()
            .describe("cluster placement group; default true, and false with a capacity block"),
        capacityBlock: z
            .strictObject({
                reservationId: z.string().regex(/^cr-[0-9a-f]{8,17}$/, "must be a capacity reservation id such as cr-0123abcd"),
                availabilityZone: named(AWS_ZONE, "must be an Availability Zone name such as us-east-1a"),
                instanceCount: z.int().min(1),
            })
            .optional()
            .describe("EC2 Capacity Block for ML to launch into"),
        capacityReservation: z
            .strictObject({
                reservationId: z.string().regex(/^cr-[0-9a-f]{8,17}$/, "must be a capacity reservation id such as cr-0123abcd"),
                instanceCount: z.int().min(1),
            })
            .optional()
            .describe("targeted On-Demand Capacity Reservation"),
        allowNoGpuDirect: z.boolean().default(false)
            .describe("accept an EFA type without GPUDirect RDMA (g5/g6/g6e)"),
        access: z.enum(["bastion", "ssm"]).default("bastion").describe("way in to the private nodes"),
        containersUseInstanceRole: z.boolean().default(false)
            .describe("containers on the nodes call IMDS for the instance role: hop limit 2 instead of 1"),
        bastionInstanceType: named(EC2_INSTANCE_TYPE, "must be an EC2 instance type such as t3.micro").default("t3.micro"),
    })
    .describe("AWS EFA cluster settings");

const azureSchema = z
    .strictObject({
        location: z.string().regex(/^[a-z0-9]+$/, "must be an Azure region name such as eastus"),
        vmSize: named(AZURE_VM_SIZE, "must be an Azure VM size such as Standard_ND96isr_H100_v5").describe("InfiniBand VM size, e.g. Standard_ND96isr_H100_v5"),
        resourceGroupName: idInput("resourceGroupName").optional().describe("existing resource group; default: the kit creates one"),
        vnetCidr: cidr.default("10.10.0.0/16").describe("must not overlap 172.16.0.0/16 (Azure's RDMA network)"),
        subnetCidr: cidr.default("10.10.0.0/24"),
        image: z
            .strictObject({
                publisher: named(AZURE_IMAGE_PART, "must be an image publisher name (letters, digits, - _ .) such as microsoft-dsvm"),
                offer: named(AZURE_IMAGE_PART, "must be an image offer name (letters, digits, - _ .) such as ubuntu-hpc"),
                sku: named(AZURE_IMAGE_PART, "must be an image SKU name (letters, digits, - _ .) such as 2204"),
                version: named(AZURE_IMAGE_VERSION, "must be latest or a version of numbers and periods such as 22.04.202401010").default("latest"),
                generation: z.enum(["V1", "V2"]).default("V2").describe("Hyper-V generation of the image"),
            })
            .optional()
            .describe("default: microsoft-dsvm:ubuntu-hpc (Gen2) with the SKU the catalog names for the size"),
        osDiskGiB: z.int().min(30).max(4095).default(256),
        quotaRaised: z.boolean().default(false)
            .describe("set after Azure support raised the scale set limit from 100 to 300 VMs"),
        passwordAuthentication: z.boolean().default(false).describe("must stay false: SSH keys only"),
        jumpHostSize: named(AZURE_VM_SIZE, "must be an Azure VM size such as Standard_B2s").default("Standard_B2s")
            .describe("size of the public jump host the kit creates (none with network.subnetId)"),
        network: z
            .strictObject({
                subnetId: idInput("azureSubnetId")
                    .describe("ARM id of an existing subnet for the nodes (/subscriptions/<id>/resourceGroups/<rg>/providers/Microsoft.Network/virtualNetworks/<vnet>/subnets/<subnet>); its VNet is implied. Same subscription and location as the cluster, not delegated, clear of 172.16.0.0/16, room for the nodes: asked of ARM before anything is created"),
            })
            .optional()
            .describe("an existing network (hub-and-spoke estates): the kit creates no VNet, subnet, NAT gateway, public IP or jump host, and reaches the nodes at their private addresses over your own route (VPN, ExpressRoute, peering, Azure Bastion); default: the kit creates the network and a public jump host (docs/azure-network.md)"),
    })
    .describe("Azure InfiniBand cluster settings");

/**
 * The most nodes a cluster can have: they share one subnet (EFA does not cross subnets), a subnet is at most a /16 (the
 * largest VPC block), and AWS keeps 5 addresses of every subnet; Azure's limit is lower (azureChecks). Without a bound,
 * a typo such as 1e9 would have the plan name a billion nodes before any check could refuse it.
 * source: https://docs.aws.amazon.com/vpc/latest/userguide/subnet-sizing.html
 */
export const MAX_NODES = 2 ** 16 - 5;

/** A list whose entries must differ: a repeat is refused at its index, naming the first. */
function uniqueList<T extends z.ZodArray<z.ZodType>>(list: T): T {
    return list.superRefine((items: unknown[], ctx) => {
        const first = new Map<unknown, number>();
        items.forEach((v, i) => {
            const at = first.get(v);
            if (at === undefined) first.set(v, i);
            else ctx.addIssue({ code: "custom", path: [i], input: v, message: `repeats entry [${at}]; list each once` });
        });
    }) as unknown as T;
}

/** @internal the zod schema stays out of the package declarations (see spec-types.ts) */
export const clusterSchema = z
    .strictObject({
        name: z
            .string()
            .regex(/^[a-z][a-z0-9-]{0,30}$/, "must start with a letter; lower case letters, digits and '-', at most 31")
            .describe("cluster name, used in resource names and tags"),
        fabric: z.enum(["aws-efa", "azure-ib", "roce"]).describe("the RDMA fabric"),
        nodes: z.int().min(1).max(MAX_NODES, { error: `is more than one subnet holds (EFA does not cross subnets; a /16, AWS's largest, has ${MAX_NODES} usable addresses)` })
            .optional().describe("GPU node count (bare metal: the number of hosts)"),
        ssh: sshSchema,
        provision: z.boolean().default(true).describe("run the Ansible playbooks (node software, then validation) from pulumi up"),
        // default: drain where a scheduler can drain, else report (components/day2/repair.ts repairPolicy)
        repair: z.enum(["report", "drain", "replace"]).optional().describe("what day 2 does with a node that fails: report, drain (scheduler), replace (cloud)"),
        software: softwareSchema.default(softwareSchema.parse({})),
        validation: validationSchema.default(validationSchema.parse({})),
        ansible: ansibleSchema.default(ansibleSchema.parse({})),
        // limits both clouds accept: AWS (keys <= 128, values <= 256, no aws: prefix, 50 per resource; letters,
        // digits, spaces and + - = . _ : / @ only) and Azure (no < > % & \ ? / in names, 512/256, 50 per resource).
        // source: https://docs.aws.amazon.com/tag-editor/latest/userguide/tagging.html,
        // https://learn.microsoft.com/azure/azure-resource-manager/management/tag-resources
        tags: z.record(
            z.string().min(1).max(128).regex(/^(?!aws:)[\p{L}\p{N} +\-=._:@]+$/iu, "must be letters, digits, spaces and + - = . _ : @ (what AWS and Azure both take), not starting with aws:")
                .refine(notKeyMaterial, KEY_MATERIAL),
            // the kit copies every tag onto every resource (and plan.json): a key pasted here would be everywhere
            z.string().max(256).regex(/^[\p{L}\p{N} +\-=._:/@]*$/u, "must be letters, digits, spaces and + - = . _ : / @ (what AWS takes)")
                .refine(notKeyMaterial, KEY_MATERIAL),
        ).refine((t) => Object.keys(t).length <= 40, { message: "has more than 40 tags (the kit adds its own, clouds allow 50)" })
            .refine((t) => !("Name" in t) && !("rdmakit:cluster" in t), { message: "sets Name or rdmakit:cluster, which the kit sets itself" })
            .default({}).describe("extra tags on every resource"),
        aws: awsSchema.optional(),
        azure: azureSchema.optional(),
        roce: roceSpecSchema.optional(),
        scheduler: schedulerSchema.optional(),
    })
    .describe("an RDMA GPU cluster");

export type { ClusterSpec, AwsSpec, AzureSpec } from "./spec-types";
import type { AwsSpec, AzureSpec, ClusterSpec } from "./spec-types";
export { Fabric } from "./types";

/** Keys that would hold secrets: refused with a pointer to Pulumi secrets, and their values never shown. */
const SECRET_KEYS: Record<string, string> = {
    privateKey: "set it with `pulumi config set --secret rdmakit:sshPrivateKey < ~/.ssh/id_ed25519`",
    sshPrivateKey: "set it with `pulumi config set --secret rdmakit:sshPrivateKey < ~/.ssh/id_ed25519`",
    password: "password login is not supported; use ssh.publicKey and the secret rdmakit:sshPrivateKey",
    adminPassword: "password login is not supported; use ssh.publicKey and the secret rdmakit:sshPrivateKey",
};

/**
 * Parses and checks a raw spec; throws SpecError listing every problem at once. One `rdmakit plan` or `pulumi up`
 * parses the same stack config more than once (the CLI's check, the program's RdmaCluster): at 2,048 RoCE hosts a
 * parse is most of a second, so a spec of plain data parsed before is answered from its earlier result (a copy each
 * time: a caller may change what it gets). A spec that is not plain data (an Output, a Date, a class instance, a
 * number JSON cannot spell) is parsed every time.
 */
export function parseClusterSpec(raw: unknown): ClusterSpec {
    const key = (typeof raw === "object" && raw !== null ? configTextOf.get(raw) : undefined) ?? plainDataKey(raw);
    const hit = key === undefined ? undefined : parsedSpecs.get(key);
    if (hit) return typeof hit === "string" ? JSON.parse(hit) as ClusterSpec : structuredClone(hit);
    const spec = parseClusterSpecOnce(raw);
    if (key === undefined) return spec;
    // a spec JSON spells exactly is kept as its text, and each copy is that text parsed (JSON.parse makes a 2,048-host
    // spec in about a third of structuredClone's time); any other, as a structured clone
    let copy: ClusterSpec | string | undefined = plainDataKey(spec, { nullPrototype: false });
    try {
        copy ??= structuredClone(spec);
    } catch {
        return spec; // something in it cannot be copied: not remembered
    }
    if (parsedSpecs.size >= 4) parsedSpecs.delete(parsedSpecs.keys().next().value!);
    parsedSpecs.set(key, copy);
    return spec;
}
const parsedSpecs = new Map<string, ClusterSpec | string>();

/**
 * `rdmakit plan` (components/offline.ts) reads the stack file's cluster, parses it, and hands the program its JSON text
 * as the config `rdmakit:cluster` (what the engine hands a program). The program (index.ts) would JSON.parse that text
 * again (2.7 MB at 2,048 RoCE hosts) and parseClusterSpec walk the copy for its cache key, only to find the parse the
 * CLI made. Instead the CLI leaves the object it read here with its text (plainDataKey's: the object is plain data
 * that the text spells exactly), and the program, finding the same text in its config, takes that object, whose parse
 * is keyed by the text without a walk. Under the engine nothing is left here and the program parses the text itself.
 * The object is the CLI's, read from the stack file and changed by nobody after.
 */
const configTextOf = new WeakMap<object, string>();
let offlineConfig: { text: string; raw: object } | undefined;

/** `raw`'s parse is keyed by `text`, plainDataKey(raw) (not undefined), without a walk: for an object nobody changes. */
export function keyByConfigText(raw: object, text: string): void {
    configTextOf.set(raw, text);
}

/** Leaves the stack's cluster for the program about to run in this process: `text` is plainDataKey(raw). */
export function leaveClusterConfig(raw: object, text: string): void {
    keyByConfigText(raw, text);
    offlineConfig = { text, raw };
}

/**
 * The cluster left by leaveClusterConfig, taken once, when the config's text (read by `readText`) is that same text,
 * else undefined; with nothing left the config is not read (under the engine the program reads it as it always has).
 */
export function takeClusterConfig(readText: () => string | undefined): unknown {
    const left = offlineConfig;
    offlineConfig = undefined;
    if (left === undefined) return undefined;
    return readText() === left.text ? left.raw : undefined;
}

/**
 * `value` as JSON text when it is plain data that the text spells exactly (objects of Object's own prototype, arrays,
 * strings, booleans, null, finite numbers other than -0; no undefined member), else undefined: equal texts are equal
 * inputs to the parser, so its result can be reused.
 */
export function plainDataKey(value: unknown, opts: { nullPrototype?: boolean } = {}): string | undefined {
    // an object of no prototype is plain data unless opts.nullPrototype is false (JSON.parse gives Object's prototype)
    const nullOk = opts.nullPrototype ?? true;
    // A walk in JS, then JSON.stringify with no replacer: a replacer is a call into JS for every value, ~3x the cost of
    // the native text at 2,048 hosts. On plain data the text is the same; a cycle is left to JSON.stringify, which
    // throws on it as it did with the replacer.
    const ancestors = new Set<object>();
    let cycle = false;
    const plain = (v: unknown): boolean => {
        if (v === null || typeof v === "string" || typeof v === "boolean") return true;
        if (typeof v === "number") return Number.isFinite(v) && !Object.is(v, -0);
        if (typeof v !== "object") return false; // undefined, a function, a symbol, a bigint
        const proto = Object.getPrototypeOf(v);
        if (Array.isArray(v) ? proto !== Array.prototype : proto !== Object.prototype && (proto !== null || !nullOk)) return false;
        if (ancestors.has(v)) {
            cycle = true;
            return false;
        }
        ancestors.add(v);
        let ok = true;
        if (Array.isArray(v)) {
            for (let i = 0; ok && i < v.length; i++) ok = plain(v[i]);
        } else {
            for (const k of Object.keys(v)) if (!(ok = plain((v as Record<string, unknown>)[k]))) break;
        }
        ancestors.delete(v);
        return ok;
    };
    if (plain(value)) return JSON.stringify(value);
    if (cycle) JSON.stringify(value); // throws TypeError (a circular structure), as the replacer's pass did
    return undefined;
}

function parseClusterSpecOnce(raw: unknown): ClusterSpec {
    const issues: SpecIssue[] = [...kitNetworkFieldsBesideSubnet(raw)];
    const result = clusterSchema.safeParse(raw);
    if (!result.success) {
        const unknown: UnknownKeys = new Map();
        // one line for one refused value (a huge maxBytes is not also "not a power of two")
        issues.push(...firstPerPath(result.error.issues.flatMap((zi) => fromZodIssue(zi, raw, unknown))));
        // every problem at once: the cross-field checks also run, on the spec without the values the schema refused
        issues.push(...crossChecksDespite(raw, result.error.issues));
        throw new SpecError(foldTypos(dedupe(issues), unknown));
    }
    const spec = result.data;
    issues.push(...crossChecks(spec));
    if (issues.length > 0) throw new SpecError(issues);
    return { ...spec, nodes: spec.nodes ?? spec.roce?.hosts.length ?? 0, scheduler: resolveScheduler(spec.fabric, spec.scheduler) };
}

/**
 * A component's `spec` argument, parsed as the stack config is: the same errors, as Pulumi's InputPropertiesError
 * (each property path shown by the engine), thrown before the component registers anything.
 */
export function parseSpecArg(raw: unknown, context: string): ClusterSpec {
    try {
        return parseClusterSpec(raw);
    } catch (e) {
        if (e instanceof SpecError) throw toInputPropertiesError(new SpecError(e.issues, `${context}: invalid cluster spec`));
        throw e;
    }
}

/**
 * The cross-field checks of a spec the schema refused: each refused value is taken out (a default, if any, fills its
 * place; a missing required field takes its parent with it; a bad list entry its whole list), the rest parsed again, and the
 * checks run on that. Their findings on anything taken out are dropped: the schema has already said what is wrong there.
 */
function crossChecksDespite(raw: unknown, first: ZodIssue[]): SpecIssue[] {
    let rest = raw;
    let zodIssues = first;
    const removed: string[] = [];
    for (let round = 0; round < 8; round++) {
        for (const zi of zodIssues) {
            const paths = zi.code === "unrecognized_keys" ? zi.keys.map((k) => [...zi.path, k]) : [zi.path];
            for (let p of paths) {
                if (valueAt(rest, p) === undefined) p = p.slice(0, -1);
                const inList = p.findIndex((seg) => typeof seg === "number");
                if (inList >= 0) p = p.slice(0, inList);
                if (p.length === 0) return [];
                rest = withoutPath(rest, p);
                removed.push(pathString(p));
            }
        }
        const again = clusterSchema.safeParse(rest);
        if (again.success) {
            const within = (a: string, b: string) => a === b || a.startsWith(`${b}.`) || a.startsWith(`${b}[`);
            return crossChecks(again.data).filter((i) => !removed.some((r) => within(i.path, r) || within(r, i.path)));
        }
        zodIssues = again.error.issues;
    }
    return [];
}

/** A copy of `raw` without the value at `path` (only the objects along the path are copied). */
function withoutPath(raw: unknown, path: PropertyKey[]): unknown {
    if (raw === null || typeof raw !== "object" || Array.isArray(raw)) return raw;
    const [head, ...tail] = path;
    const copy: Record<PropertyKey, unknown> = { ...(raw as Record<PropertyKey, unknown>) };
    if (tail.length === 0) delete copy[head];
    else copy[head] = withoutPath(copy[head], tail);
    return copy;
}

function crossChecks(spec: z.infer<typeof clusterSchema>): SpecIssue[] {
    const issues: SpecIssue[] = [];
    const sections = { "aws-efa": "aws", "azure-ib": "azure", roce: "roce" } as const;
    const want = sections[spec.fabric];
    for (const [fabric, key] of Object.entries(sections)) {
        if (key === want && spec[key] === undefined) {
            issues.push({ path: `cluster.${key}`, message: `is required when fabric is ${fabric}`, allowed: `${key === "aws" || key === "azure" ? "an" : "a"} ${key} section` });
        } else if (key !== want && spec[key] !== undefined) {
            issues.push({
                path: `cluster.${key}`, value: `{…}`,
                message: `does not apply to fabric ${spec.fabric}`, allowed: `only cluster.${want} for fabric ${spec.fabric}`,
            });
        }
    }
    if (spec.fabric !== "roce" && spec.nodes === undefined) {
        issues.push({ path: "cluster.nodes", message: "is missing", allowed: "an integer >= 1" });
    }
    // aws.access: ssm opens no SSH port (no bastion; sessions go through Systems Manager), so it needs no ranges
    if (spec.ssh.allowedCidrs.length === 0 && !(spec.fabric === "aws-efa" && spec.aws?.access === "ssm")) {
        issues.push({ path: "cluster.ssh.allowedCidrs", message: "is missing", allowed: "a list of >= 1 CIDR ranges (your office or VPN); not needed with cluster.aws.access: ssm" });
    }
    // the ranges together, not one by one: 0.0.0.0/1 + 128.0.0.0/1 is the internet as surely as 0.0.0.0/0
    const reach = publicCoverage(spec.ssh.allowedCidrs);
    // the whole internet needs allowInternet whatever maxPublicShare says (1 would otherwise admit 0.0.0.0/0)
    if ((reach.share >= 1 || reach.share > spec.ssh.maxPublicShare) && !spec.ssh.allowInternet) {
        const pct = (x: number) => `${Number((x * 100).toPrecision(3))} %`;
        issues.push({
            path: "cluster.ssh.allowedCidrs", value: spec.ssh.allowedCidrs,
            message: reach.share >= 1 ? "opens SSH to the whole internet (the ranges together cover every public address)"
                : `opens SSH to ${pct(reach.share)} of the public IPv4 space (${reach.addresses} addresses), more than ssh.maxPublicShare (${pct(spec.ssh.maxPublicShare)})`,
            allowed: `your office/VPN ranges, together at most ${pct(Math.min(spec.ssh.maxPublicShare, 1))} of the public IPv4 space; ` +
                "opening SSH to the internet on purpose takes cluster.ssh.allowInternet: true",
        });
    }
    if (spec.fabric !== "roce" && spec.ssh.publicKey === undefined) {
        issues.push({ path: "cluster.ssh.publicKey", message: "is missing", allowed: "an OpenSSH public key line (ssh-ed25519 AAAA...)" });
    }
    const sw = spec.software;
    if (sw.gpudirect === "dmabuf" && !sw.openKernelModules) {
        issues.push({
            path: "cluster.software.gpudirect", value: "dmabuf",
            message: "DMA-BUF needs NVIDIA's open kernel modules (software.openKernelModules is false)",
            allowed: "peermem, auto, or openKernelModules: true",
        });
    }
    if (sw.ofedSource === "inbox" && spec.fabric !== "aws-efa" && (sw.gpudirect === "peermem" || (sw.gpudirect === "auto" && !sw.openKernelModules))) {
        issues.push({
            path: "cluster.software.ofedSource", value: "inbox",
            message: "nvidia_peermem builds against DOCA/MLNX OFED's ib_core, not the inbox rdma-core",
            allowed: "doca, or gpudirect: dmabuf with openKernelModules: true",
        });
    }
    const gpuName = spec.fabric === "aws-efa" ? awsInstanceType(spec.aws?.instanceType ?? "")?.gpu.model
        : spec.fabric === "azure-ib" ? azureVmSize(spec.azure?.vmSize ?? "")?.gpu?.model
            : spec.roce?.hosts[0]?.gpu.model;
    // Blackwell (and Grace Hopper) run only with the open kernel modules: "you must use the open-source GPU kernel
    // modules. The proprietary drivers are unsupported on these platforms."
    // source: https://developer.nvidia.com/blog/nvidia-transitions-fully-towards-open-source-gpu-kernel-modules/ (images.md §4)
    const models = spec.fabric === "roce" ? [...new Set((spec.roce?.hosts ?? []).map((h) => h.gpu.model))] : gpuName ? [gpuName] : [];
    const openOnly = models.filter((m) => gpuModel(m)?.family === "blackwell");
    if (!sw.openKernelModules && openOnly.length > 0) {
        issues.push({
            path: "cluster.software.openKernelModules", value: false,
            message: `${openOnly.join(", ")} (Blackwell) is supported only with NVIDIA's open kernel modules; the proprietary modules do not run it`,
            allowed: "true (the default), or leave it out",
        });
    }
    const cap = gpuName ? maxMessageBytes(gpuName) : undefined;
    if (spec.validation.maxBytes !== undefined && cap !== undefined && spec.validation.maxBytes > cap) {
        issues.push({
            path: "cluster.validation.maxBytes", value: spec.validation.maxBytes,
            message: `does not fit ${gpuName} memory: nccl-tests -c 1 holds three buffers of the largest size on every GPU`,
            allowed: `at most ${cap} (${cap / 1024 ** 3} GiB), or leave it out`,
        });
    }
    issues.push(...maxFailedIssues(spec));
    if (spec.fabric !== "aws-efa" && sw.ofedSource === "doca" && ofedInfoPrefix(sw.docaVersion ?? SOFTWARE_DEFAULTS.docaVersion) === undefined) {
        issues.push({
            path: "cluster.software.docaVersion", value: sw.docaVersion,
            message: "is a DOCA release line the kit cannot recognise once installed (ofed_info -s), so every run would reinstall it",
            allowed: Object.keys(DOCA_OFED_INFO_PREFIX).map((l) => `${l}.x`).join(", "),
        });
    }
    issues.push(...softwareIssues(spec));
    // cloud node names are <cluster>-000... (plan/index.ts nodeNames): a head node of that form would clash
    const nodeLike = spec.roce?.hosts ?? (spec.scheduler?.controller?.name && new RegExp(`^${spec.name}-\\d{3,}$`).test(spec.scheduler.controller.name)
        ? [{ name: spec.scheduler.controller.name, address: "" }] : []);
    // the catalogs' CPU and memory figures (slurm.conf's NodeName line); undefined for a type refused elsewhere
    const catalogued = spec.fabric === "roce" ? false
        : spec.fabric === "aws-efa" ? (awsInstanceType(spec.aws?.instanceType ?? "") ? (spec.aws?.instanceType ?? "") in AWS_HOST_CPU_MEMORY : undefined)
            : azureVmSize(spec.azure?.vmSize ?? "") ? (spec.azure?.vmSize ?? "") in AZURE_HOST_CPU_MEMORY : undefined;
    issues.push(...schedulerIssues(spec.fabric, spec.scheduler, nodeLike, catalogued));
    if (spec.aws && spec.fabric === "aws-efa") issues.push(...awsChecks(spec.aws, spec.nodes ?? 0, spec.ssh.user));
    if (spec.azure && spec.fabric === "azure-ib") issues.push(...azureChecks(spec.azure, spec.nodes ?? 0));
    if (spec.roce && spec.fabric === "roce") {
        const roceIssues = checkRoceSpec(spec.roce);
        if (roceIssues.length === 0) rememberCleanRoceSpec(JSON.stringify(spec.roce));
        issues.push(...roceIssues, ...roceOsIssues(spec.roce));
        // one plan for every host: same rails and GPUs, or the hostfile slots, preflight counts and NCCL
        // environment would be wrong for the others
        const [first, ...rest] = spec.roce.hosts;
        const users = new Set(spec.roce.hosts.map((h) => h.sshUser ?? spec.ssh.user ?? "root"));
        if (users.size > 1) {
            issues.push({
                path: "cluster.roce.hosts", value: [...users],
                message: "log in as different users; mpirun on the first host starts ranks on the others as its own user",
                allowed: "one user for every host (cluster.ssh.user, or the same hosts[].sshUser everywhere)",
            });
        }
        rest.forEach((h, j) => {
            const i = j + 1;
            if (h.railNics.length !== first.railNics.length) {
                issues.push({ path: `cluster.roce.hosts[${i}].railNics`, value: h.railNics, message: `has ${h.railNics.length} rails; ${first.name} has ${first.railNics.length}`, allowed: `${first.railNics.length} rails, as on every host` });
            }
            if (h.gpu.count !== first.gpu.count || h.gpu.model !== first.gpu.model) {
                issues.push({ path: `cluster.roce.hosts[${i}].gpu`, value: h.gpu, message: `differs from ${first.name} (${first.gpu.count} × ${first.gpu.model})`, allowed: "the same GPU model and count on every host" });
            }
        });
        if (spec.nodes !== undefined && spec.nodes !== spec.roce.hosts.length) {
            issues.push({
                path: "cluster.nodes", value: spec.nodes,
                message: `disagrees with the ${spec.roce.hosts.length} hosts in cluster.roce.hosts`,
                allowed: `${spec.roce.hosts.length}, or leave it out`,
            });
        }
    }
    return issues;
}

/** a < b for dotted versions such as 2.18.0 or 2.23.4-1 (the package revision is ignored). */
export function versionLess(a: string, b: string): boolean {
    const pa = a.split("-")[0].split(".").map(Number);
    const pb = b.split("-")[0].split(".").map(Number);
    for (let i = 0; i < Math.max(pa.length, pb.length); i++) {
        const d = (pa[i] ?? 0) - (pb[i] ?? 0);
        if (d !== 0) return d < 0;
    }
    return false;
}

/**
 * validation.maxFailedNodes leaves at least two nodes for the all-node runs: fewer cross no fabric, and the run would
 * prove nothing of it (components/validate/fabric.ts needs two nodes). Counted over the validated nodes (after
 * cluster.ansible.exclude).
 */
function maxFailedIssues(spec: z.infer<typeof clusterSchema>): SpecIssue[] {
    const n = spec.validation.maxFailedNodes;
    const validated = (spec.nodes ?? spec.roce?.hosts.length ?? 0) - spec.ansible.exclude.length;
    const most = Math.max(0, validated - 2);
    if (n === 0 || n <= most) return [];
    return [{
        path: "cluster.validation.maxFailedNodes", value: n,
        message: `leaves fewer than two of the ${validated} validated node(s) for the all-node runs, which then cross no fabric`,
        allowed: most > 0 ? `0 to ${most}` : "0 (a cluster of fewer than three validated nodes)",
    }];
}

function awsChecks(aws: AwsSpec, nodes: number, userGiven: string | undefined): SpecIssue[] {
    const issues: SpecIssue[] = [];
    const p = "cluster.aws";
    const type = awsInstanceType(aws.instanceType);
    if (!type) {
        issues.push({
            path: `${p}.instanceType`, value: aws.instanceType,
            message: "is not an EFA-capable instance type the kit knows" + suggest(aws.instanceType, AWS_INSTANCE_TYPES.map((t) => t.name)),
            allowed: AWS_INSTANCE_TYPES.map((t) => t.name).join(", "),
        });
    } else if (!type.gpuDirectRdma && !aws.allowNoGpuDirect) {
        issues.push({
            path: `${p}.instanceType`, value: aws.instanceType,
            message: "has EFA but no GPUDirect RDMA: GPU traffic is staged through host memory",
            allowed: "a P-series type (p4d.24xlarge and later), or set cluster.aws.allowNoGpuDirect: true",
        });
    }
    // source: the Deep Learning AMIs for Ubuntu log in as `ubuntu` (AWS DLAMI docs); no user data adds another
    if (userGiven !== undefined && userGiven !== "ubuntu" && aws.ami === undefined) {
        issues.push({
            path: "cluster.ssh.user", value: userGiven,
            message: "is not a user of the default Deep Learning AMI, which logs in as ubuntu",
            allowed: "ubuntu (or leave it out), or your own image in cluster.aws.ami that has this user",
        });
    }
    if (!aws.availabilityZone.startsWith(aws.region)) {
        issues.push({ path: `${p}.availabilityZone`, value: aws.availabilityZone, message: `is not in region ${aws.region}`, allowed: `${aws.region}a, ${aws.region}b, ...` });
    }
    const subnets = aws.network.subnets ?? [];
    const zones = [...new Set(subnets.map((s) => s.availabilityZone))];
    if (zones.length > 1) {
        issues.push({
            path: `${p}.network.subnets`, value: subnets.map((s) => `${s.id}@${s.availabilityZone}`),
            message: `span ${zones.length} availability zones; EFA is not supported across availability zones`,
            allowed: `one subnet in ${aws.availabilityZone}`,
        });
    } else if (subnets.length > 1) {
        issues.push({
            path: `${p}.network.subnets`, value: subnets.map((s) => s.id),
            message: "lists several subnets; EFA OS-bypass traffic does not cross subnets",
            allowed: "exactly one subnet",
        });
    }
    if (zones.length === 1 && zones[0] !== aws.availabilityZone) {
        issues.push({ path: `${p}.network.subnets[0].availabilityZone`, value: zones[0], message: `differs from cluster.aws.availabilityZone (${aws.availabilityZone})`, allowed: aws.availabilityZone });
    }
    if (subnets.length > 0 && !aws.network.vpcId) {
        issues.push({ path: `${p}.network.vpcId`, message: "is missing: an existing subnet needs its VPC id", allowed: "vpc-..." });
    }
    if (aws.capacityBlock && aws.capacityReservation) {
        issues.push({ path: `${p}.capacityReservation`, value: aws.capacityReservation.reservationId, message: "cannot be combined with cluster.aws.capacityBlock", allowed: "one of capacityBlock or capacityReservation" });
    }
    const cb = aws.capacityBlock;
    if (cb) {
        if (aws.placementGroup === true) {
            issues.push({
                path: `${p}.placementGroup`, value: true,
                message: "cannot be used with a capacity block (instances are placed in an UltraCluster already; a placement group can cause insufficient-capacity errors)",
                allowed: "false or leave it out",
            });
        }
        if (cb.availabilityZone !== aws.availabilityZone) {
            issues.push({ path: `${p}.capacityBlock.availabilityZone`, value: cb.availabilityZone, message: `differs from the subnet's availability zone ${aws.availabilityZone}; instances must launch in the block's AZ`, allowed: aws.availabilityZone });
        }
    }
    const reserved = cb?.instanceCount ?? aws.capacityReservation?.instanceCount;
    if (reserved !== undefined && nodes > reserved) {
        issues.push({
            path: "cluster.nodes", value: nodes,
            message: `exceeds the ${reserved} instances of the ${cb ? "capacity block" : "capacity reservation"}`,
            allowed: `at most ${reserved}`,
        });
    }
    return issues;
}

/** The VMs one scale set (one InfiniBand partition) holds: the most nodes an Azure cluster can have. */
function azureMaxVms(quotaRaised: boolean | undefined): number {
    return quotaRaised ? AZURE_IB_PARTITION.raisedMaxVms : AZURE_IB_PARTITION.defaultMaxVms;
}

function azureTooManyNodes(nodes: unknown, quotaRaised: boolean | undefined): SpecIssue {
    const limit = azureMaxVms(quotaRaised);
    return {
        path: "cluster.nodes", value: nodes,
        message: `exceeds the ${limit} VMs one scale set (one InfiniBand partition) holds` +
            (quotaRaised ? "; InfiniBand does not span scale sets" : "; Azure support can raise it to 300 (then set cluster.azure.quotaRaised: true)"),
        allowed: `1..${limit}`,
    };
}

/**
 * Fields of the network and jump host the kit creates, set beside `cluster.azure.network.subnetId`, where nothing
 * reads them: refused rather than ignored. Read from the raw input, as their defaults fill them in after parsing; a
 * default value passes (a spec parseClusterSpec returned carries every default, and is an input too).
 */
function kitNetworkFieldsBesideSubnet(raw: unknown): SpecIssue[] {
    const az = (raw as { azure?: Record<string, unknown> } | undefined)?.azure;
    if (typeof az !== "object" || az === null || (az.network as { subnetId?: unknown } | undefined)?.subnetId === undefined) return [];
    const defaults = azureSchema.shape;
    return (["vnetCidr", "subnetCidr", "jumpHostSize"] as const).filter((k) => az[k] !== undefined && az[k] !== defaults[k].parse(undefined)).map((k) => ({
        path: `cluster.azure.${k}`, value: az[k],
        message: k === "jumpHostSize"
            ? "sizes the public jump host the kit creates, and with cluster.azure.network.subnetId it creates none (the nodes are reached over your own route)"
            : "is a range of the network the kit creates, and with cluster.azure.network.subnetId it creates none (the subnet's own ranges apply)",
        allowed: "leave it out beside cluster.azure.network.subnetId, or leave network out and let the kit create the network",
    }));
}

function azureChecks(az: AzureSpec, nodes: number): SpecIssue[] {
    const issues: SpecIssue[] = [];
    const p = "cluster.azure";
    const size = azureVmSize(az.vmSize);
    if (!size) {
        const ibTwin = AZURE_NON_IB_SIZES[az.vmSize];
        issues.push({
            path: `${p}.vmSize`, value: az.vmSize,
            message: ibTwin
                ? `has no InfiniBand (no 'r' in the size name); its InfiniBand twin is ${ibTwin}`
                : "is not an InfiniBand size the kit knows" + suggest(az.vmSize, AZURE_VM_SIZES.map((s) => s.name)),
            allowed: AZURE_VM_SIZES.map((s) => s.name).join(", "),
        });
    }
    const collectives = size?.gpu ? gpuModel(size.gpu.model)?.collectives : undefined;
    if (size && collectives !== "nccl") {
        const ndSizes = AZURE_VM_SIZES.filter((z) => z.gpu && gpuModel(z.gpu.model)?.collectives === "nccl").map((z) => z.name);
        issues.push({
            path: `${p}.vmSize`, value: az.vmSize,
            message: size.gpu
                ? `has ${size.gpu.model} GPUs, which use RCCL/ROCm; the kit installs and validates the NVIDIA stack (NCCL) only`
                : "has no GPUs; the kit builds GPU clusters (driver, NCCL, nccl-tests)",
            allowed: ndSizes.join(", "),
        });
    }
    // with an existing subnet its ranges are ARM's to tell (components/azure/network.ts), at pulumi up
    const vnet = az.network ? undefined : parseCidr(az.vnetCidr);
    const reserved = parseCidr(AZURE_RDMA_RESERVED_CIDR)!;
    if (vnet && cidrsOverlap(vnet, reserved)) {
        issues.push({
            path: `${p}.vnetCidr`, value: az.vnetCidr,
            message: `overlaps ${AZURE_RDMA_RESERVED_CIDR}, which Azure reserves for the InfiniBand/RDMA network`,
            allowed: "a range outside 172.16.0.0/16, e.g. 10.10.0.0/16",
        });
    }
    const subnet = az.network ? undefined : parseCidr(az.subnetCidr);
    if (vnet && subnet && !(subnet.prefix >= vnet.prefix && cidrsOverlap(vnet, subnet))) {
        issues.push({ path: `${p}.subnetCidr`, value: az.subnetCidr, message: `is not inside the VNet ${az.vnetCidr}`, allowed: `a sub-range of ${az.vnetCidr}` });
    }
    if (nodes > azureMaxVms(az.quotaRaised)) issues.push(azureTooManyNodes(nodes, az.quotaRaised));
    if (size?.gen2Only && az.image?.generation === "V1") {
        issues.push({ path: `${p}.image.generation`, value: "V1", message: `${size.name} runs only Generation 2 images`, allowed: "V2" });
    }
    if (az.passwordAuthentication) {
        issues.push({ path: `${p}.passwordAuthentication`, value: true, message: "password login is not allowed on cluster nodes", allowed: "false (SSH keys only)" });
    }
    return issues;
}

type ZodIssue = z.core.$ZodIssue;

function pathString(path: PropertyKey[]): string {
    return path.reduce<string>((acc, seg) => (typeof seg === "number" ? `${acc}[${seg}]` : `${acc}.${String(seg)}`), "cluster");
}

function valueAt(raw: unknown, path: PropertyKey[]): unknown {
    let cur: any = raw;
    for (const seg of path) {
        if (cur === null || typeof cur !== "object") return undefined;
        cur = cur[seg as any];
    }
    return cur;
}

/** The schema at `path` of the cluster schema, through optional, default and list wrappers; undefined where none. */
function schemaAt(path: readonly PropertyKey[]): any {
    let cur: any = clusterSchema;
    const unwrap = (s: any) => {
        while (s?._zod?.def?.innerType) s = s._zod.def.innerType;
        return s;
    };
    for (const seg of path) {
        cur = unwrap(cur);
        if (typeof seg === "number") cur = cur?._zod?.def?.element;
        else cur = cur?._zod?.def?.type === "record" ? cur._zod.def.valueType : cur?.shape?.[seg as string];
    }
    return unwrap(cur);
}

/** Every place of each field name in the cluster schema (`tags`: cluster.tags), made once. */
let fieldPlacesMade: Map<string, string[]> | undefined;

/** Where the schema has a field named `key`: for a key written at the wrong level (cluster.aws.tags). */
function fieldPlaces(key: string): string[] {
    if (!fieldPlacesMade) {
        const places = new Map<string, string[]>();
        const walk = (schema: any, at: string, depth: number): void => {
            let s = schema;
            for (;;) {
                if (s?._zod?.def?.innerType) s = s._zod.def.innerType;
                else if (s?._zod?.def?.type === "array") { s = s._zod.def.element; at += "[i]"; } else if (s?._zod?.def?.type === "record") { s = s._zod.def.valueType; at += ".<name>"; } else break;
            }
            if (!s?.shape || depth > 8) return;
            for (const [k, v] of Object.entries(s.shape)) {
                places.set(k, [...(places.get(k) ?? []), `${at}.${k}`]);
                walk(v, `${at}.${k}`, depth + 1);
            }
        };
        walk(clusterSchema, "cluster", 0);
        fieldPlacesMade = places;
    }
    return fieldPlacesMade.get(key) ?? [];
}

/** The object keys the schema accepts at `path`, for "allowed:" in unknown-key messages. */
function keysAt(path: readonly PropertyKey[]): string[] {
    const s = schemaAt(path);
    return s?.shape ? Object.keys(s.shape) : [];
}

/** What the schema at `path` takes, in words: its bounds, values or grammar; undefined where it cannot say. */
function allowedAt(path: readonly PropertyKey[]): string | undefined {
    const s = schemaAt(path);
    const type: string | undefined = s?._zod?.def?.type;
    if (type === "number") {
        const checks: any[] = s._zod.def.checks ?? [];
        const bound = (kind: string) => checks.map((c) => c._zod.def).find((d) => d.check === kind);
        const lo = bound("greater_than");
        const hi = bound("less_than");
        const what = s.isInt ? "an integer" : "a number";
        const low = lo ? `${lo.inclusive ? ">=" : ">"} ${lo.value}` : undefined;
        const high = hi ? `${hi.inclusive ? "<=" : "<"} ${hi.value}` : undefined;
        if (lo?.inclusive && hi?.inclusive && hi.value <= Number.MAX_SAFE_INTEGER) return `${what} from ${lo.value} to ${hi.value}`;
        return [what, low, high && hi.value < Number.MAX_SAFE_INTEGER ? high : undefined].filter(Boolean).join(" ");
    }
    if (type === "boolean") return "true or false";
    if (type === "enum") return (s.options as unknown[]).map(String).join(", ");
    if (type === "array") return "a list";
    if (type === "record") return "a mapping of names to values";
    if (type === "object") return `a mapping of fields: ${Object.keys(s.shape).join(", ")}`;
    if (type === "string" || type === "custom") {
        // the field's own grammar, as it refuses an empty text ("must be an availability zone such as us-east-1a")
        const probe = s.safeParse("");
        const said = probe.success ? undefined : probe.error.issues[0]?.message;
        if (said === undefined) return "text";
        if (said.startsWith("must be ")) return said.slice("must be ".length);
        if (said.startsWith("must ")) return `text that ${said.replace(/^must (\w+)/, (_: string, verb: string) => `${verb}s`)}`;
        // a grammar that names its thing ("host name must be lower-case …", "port name must not be empty")
        const [, thing, rest] = /^(.+?) must (.+)$/.exec(said) ?? [];
        if (thing === undefined) return said;
        const a = /^[aeiou]/i.test(thing) ? "an" : "a";
        return rest === "not be empty" ? `${a} ${thing} (not empty)` : rest.startsWith("be ") ? `${a} ${thing}: ${rest.slice(3)}` : `${a} ${thing} that must ${rest}`;
    }
    return undefined;
}

/** "is not one of the allowed values", with the closest of them to a text given. */
function notAllowed(given: unknown, values: readonly unknown[]): string {
    const hint = typeof given === "string" ? suggest(given, values.map(String)) : "";
    return `is not one of the allowed values${hint}`;
}

/** An unknown key's issue, with where it sits, for foldTypos. */
type UnknownKeys = Map<SpecIssue, { parent: string; key: string; known: string[] }>;

function fromZodIssue(zi: ZodIssue, raw: unknown, unknown: UnknownKeys): SpecIssue[] {
    const issues = fromZodIssueAnyFabric(zi, raw, unknown);
    return zi.path.length === 1 && zi.path[0] === "nodes" ? issues.map((i) => nodesForFabric(i, raw)) : issues;
}

/**
 * cluster.nodes refused by the schema, said with the fabric's own bound: MAX_NODES is AWS's (one subnet); an Azure
 * cluster is one scale set (azureChecks), and a bare-metal cluster has as many nodes as cluster.roce.hosts lists.
 */
function nodesForFabric(issue: SpecIssue, raw: unknown): SpecIssue {
    const spec = (typeof raw === "object" && raw !== null ? raw : {}) as { fabric?: unknown; azure?: { quotaRaised?: unknown }; roce?: { hosts?: unknown } };
    const tooMany = typeof issue.value === "number" && issue.value > MAX_NODES;
    if (spec.fabric === "azure-ib") {
        const raised = spec.azure?.quotaRaised === true;
        return tooMany ? azureTooManyNodes(issue.value, raised) : { ...issue, allowed: `an integer from 1 to ${azureMaxVms(raised)}` };
    }
    if (spec.fabric === "roce" && Array.isArray(spec.roce?.hosts)) {
        const hosts = spec.roce.hosts.length;
        return tooMany ? { ...issue, message: `disagrees with the ${hosts} hosts in cluster.roce.hosts`, allowed: `${hosts}, or leave it out` }
            : { ...issue, allowed: `${hosts} (the hosts in cluster.roce.hosts), or leave it out` };
    }
    return issue;
}

function fromZodIssueAnyFabric(zi: ZodIssue, raw: unknown, unknown: UnknownKeys): SpecIssue[] {
    const path = pathString(zi.path);
    const value = valueAt(raw, zi.path);
    switch (zi.code) {
        case "unrecognized_keys":
            return zi.keys.map((key) => {
                const known = keysAt(zi.path);
                const secretHint = SECRET_KEYS[key];
                const hint = suggest(key, known);
                // a field of an enclosing mapping written one level too deep (tags under aws): where it goes, and no
                // fold onto a missing field of this one (not "did you mean region?")
                const here = path.replace(/\[\d+\]/g, "[i]");
                const elsewhere = secretHint || hint ? [] : fieldPlaces(key).filter((p) => here.startsWith(`${p.slice(0, p.lastIndexOf("."))}.`));
                const issue: SpecIssue = {
                    path: `${path}.${key}`,
                    value: secretHint ? "(hidden)" : valueAt(raw, [...zi.path, key]),
                    message: secretHint ? `must not be in the stack config in plain text: ${secretHint}`
                        : elsewhere.length > 0 ? `is a field of ${elsewhere.map((p) => `${p.slice(0, p.lastIndexOf("."))} (${p})`).join(", ")}, not of ${path}`
                            : "is not a known field" + hint,
                    allowed: known.join(", "),
                };
                if (!secretHint && elsewhere.length === 0) unknown.set(issue, { parent: path, key, known });
                return issue;
            });
        case "invalid_type":
            if (value === undefined) return [{ path, message: "is missing", allowed: allowedAt(zi.path) ?? describeExpected(zi.expected) }];
            if (typeof value === "number" && Number.isFinite(value) && zi.expected === "int") {
                return [{ path, value, message: "must be a whole number", allowed: allowedAt(zi.path) ?? "an integer" }];
            }
            return [{ path, value, message: wrongTypeMessage(value, zi.expected), allowed: allowedAt(zi.path) ?? describeExpected(zi.expected) }];
        case "invalid_value":
            if (value === undefined) return [{ path, message: "is missing", allowed: zi.values.map((v) => String(v)).join(", ") }];
            if (value === null) return [{ path, value, message: EMPTY_VALUE, allowed: zi.values.map((v) => String(v)).join(", ") }];
            return [{ path, value, message: notAllowed(value, zi.values), allowed: zi.values.map((v) => String(v)).join(", ") }];
        case "too_small":
            // a text shorter than its grammar allows: said as text, with the field's own words (not `>= 1`, a number's)
            if (zi.origin === "string") {
                return [{ path, value, message: value === "" ? "is empty" : `is shorter than ${zi.minimum} characters`, allowed: allowedAt(zi.path) ?? `at least ${zi.minimum} characters` }];
            }
            return [{
                path, value,
                message: zi.origin === "array" ? `needs at least ${zi.minimum} entr${zi.minimum === 1 ? "y" : "ies"}` : `is too small`,
                allowed: zi.origin === "array" ? `a list of >= ${zi.minimum}` : `${zi.inclusive ? ">=" : ">"} ${zi.minimum}`,
            }];
        case "invalid_key": {
            // a record key (a tag name) that its key schema refuses: report the key, not the value
            const key = String(zi.path[zi.path.length - 1] ?? "");
            return [{ path, value: key, message: `is not an allowed name: ${zi.issues.map((i) => i.message).join("; ")}` }];
        }
        case "too_big": {
            // a fraction typed as a percentage (minFraction: 80 for 0.8)
            const pct = zi.maximum === 1 && typeof value === "number" && value > 1 && value <= 100 ? ` (a fraction: ${value / 100} for ${value} %)` : "";
            // past the largest safe integer the bound is JavaScript's, not the field's: the field's own words instead
            const allowed = Number(zi.maximum) >= Number.MAX_SAFE_INTEGER ? allowedAt(zi.path) : `${zi.inclusive ? "<=" : "<"} ${zi.maximum}`;
            return [{ path, value, message: (zi.message.startsWith("is ") ? zi.message : "is too large") + pct, allowed }];
        }
        default:
            return [{ path, value, message: zi.message }];
    }
}

function describeExpected(expected: string): string {
    if (expected === "int") return "an integer";
    if (expected === "object") return "a mapping of fields";
    if (expected === "array") return "a list";
    if (expected === "record") return "a mapping of names to values";
    return `a ${expected}`;
}

function dedupe(issues: SpecIssue[]): SpecIssue[] {
    const seen = new Set<string>();
    return issues.filter((i) => {
        const k = `${i.path}|${i.message}`;
        if (seen.has(k)) return false;
        seen.add(k);
        return true;
    });
}
