import type * as pulumi from "@pulumi/pulumi";

/*
 * The cluster spec as a program passes it: the typed input of the components (RdmaCluster, AwsEfaCluster,
 * AzureInfinibandCluster, RoceCluster). It is the same object the stack config key `rdmakit:cluster` holds, and it
 * is checked by the same schema (components/spec.ts `clusterSchema`, which stays the one definition of what is
 * valid; test/package-schema.test.ts fails when these interfaces and that schema disagree on a field).
 *
 * The shapes are ones Pulumi's component analyzer (@pulumi/pulumi/provider/experimental) can turn into a schema for
 * Python, Go and .NET: interfaces, arrays, string maps, `as const` enums; no unions beyond `T | undefined`.
 * Ids that usually come from other resources or stacks are `pulumi.Input<string>`; everything that decides how many
 * resources exist is plain.
 */

/** The RDMA fabric. */
export const Fabric = {
    /** AWS Elastic Fabric Adapter */
    AwsEfa: "aws-efa",
    /** Azure InfiniBand (HPC/ND VM sizes) */
    AzureIb: "azure-ib",
    /** existing bare-metal hosts on RoCEv2 Ethernet */
    Roce: "roce",
} as const;
export type Fabric = (typeof Fabric)[keyof typeof Fabric];

/** How the NIC reaches GPU memory. */
export const GpuDirectMode = {
    /** DMA-BUF with the open kernel modules, else nvidia_peermem */
    Auto: "auto",
    Peermem: "peermem",
    Dmabuf: "dmabuf",
} as const;
export type GpuDirectMode = (typeof GpuDirectMode)[keyof typeof GpuDirectMode];

/** Where the RDMA stack comes from on Azure and bare metal. */
export const OfedSource = {
    /** NVIDIA DOCA-OFED */
    Doca: "doca",
    /** the distribution's inbox rdma-core */
    Inbox: "inbox",
} as const;
export type OfedSource = (typeof OfedSource)[keyof typeof OfedSource];

/** A node-software component whose copy on the image the kit may replace (components/catalog/images.ts). */
export const SoftwareComponentName = {
    Ofed: "ofed",
    Driver: "driver",
    FabricManager: "fabricManager",
    Nvlsm: "nvlsm",
    Efa: "efa",
    AwsOfiNccl: "awsOfiNccl",
    Cuda: "cuda",
    Nccl: "nccl",
    Mpi: "mpi",
    NcclTests: "ncclTests",
} as const;
export type SoftwareComponentName = (typeof SoftwareComponentName)[keyof typeof SoftwareComponentName];

/** What the node health gate grades (components/health): cluster.validation.health.require names these. */
export const HealthComponent = {
    Gpu: "gpu",
    Ecc: "ecc",
    Pcie: "pcie",
    Nvlink: "nvlink",
    Nic: "nic",
    Xid: "xid",
    /** NVSwitch SXids in the kernel log (NVSwitch boards only) */
    Nvswitch: "nvswitch",
    Dcgm: "dcgm",
    Clocks: "clocks",
} as const;
export type HealthComponent = (typeof HealthComponent)[keyof typeof HealthComponent];

/** Where the node software runs (cluster.ansible.mode). */
export const AnsibleMode = {
    /** each node runs site.yml on itself (`ansible-playbook -c local`) from the bundle the controller sends */
    NodeLocal: "node-local",
    /** ansible-playbook on the controller pushes every task over SSH */
    Controller: "controller",
} as const;
export type AnsibleMode = (typeof AnsibleMode)[keyof typeof AnsibleMode];

/** What day 2 does with a node that fails on evidence (cluster.repair; docs/day2.md). */
export const RepairPolicy = {
    /** name it in `rdmakit status` and the repair report only */
    Report: "report",
    /** drain it in the scheduler, with the reason */
    Drain: "drain",
    /** replace it through the cloud, prove the replacement, let it back in (bare metal: drain) */
    Replace: "replace",
} as const;
export type RepairPolicy = (typeof RepairPolicy)[keyof typeof RepairPolicy];

/** The way in to private AWS nodes. */
export const AwsAccess = {
    Bastion: "bastion",
    /** AWS Systems Manager Session Manager */
    Ssm: "ssm",
} as const;
export type AwsAccess = (typeof AwsAccess)[keyof typeof AwsAccess];

/** Hyper-V generation of an Azure image. */
export const ImageGeneration = { V1: "V1", V2: "V2" } as const;
export type ImageGeneration = (typeof ImageGeneration)[keyof typeof ImageGeneration];

/** RDMA NIC model of the RoCE rails (catalog: components/catalog/nics.ts). */
export const RoceNicModel = { ConnectX6: "ConnectX-6", ConnectX7: "ConnectX-7", BlueField3: "BlueField-3" } as const;
export type RoceNicModel = (typeof RoceNicModel)[keyof typeof RoceNicModel];

/** Switch network OS. */
export const NetworkOs = {
    /** Cumulus Linux 5.x (NVUE) */
    Nvue: "nvue",
    /** SONiC (config_db.json) */
    Sonic: "sonic",
    /** Arista EOS */
    Eos: "eos",
} as const;
export type NetworkOs = (typeof NetworkOs)[keyof typeof NetworkOs];

/** Where a switch sits in the RoCE fabric. */
export const RoceSwitchRole = {
    /** faces GPU hosts (host ports) and has uplinks */
    Leaf: "leaf",
    /** faces leaves only; its ports are the far ends of the leaves' uplinks */
    Spine: "spine",
} as const;
export type RoceSwitchRole = (typeof RoceSwitchRole)[keyof typeof RoceSwitchRole];

/** RoCE QoS mode. */
export const QosMode = {
    /** PFC on the RoCE priority plus ECN */
    Lossless: "lossless",
    /** ECN only, PFC off */
    Lossy: "lossy",
} as const;
export type QosMode = (typeof QosMode)[keyof typeof QosMode];

/** How operators and Ansible reach the cluster. */
export interface SshSpecInput {
    /** Login user on the nodes. @default ubuntu (AWS), azureuser (Azure); per host on bare metal */
    user?: string;
    /** Source ranges allowed to reach SSH on the way in (bastion / jump host); not needed with `aws.access: ssm`. */
    allowedCidrs?: string[];
    /** Must be true to accept ranges that open SSH to the internet. @default false */
    allowInternet?: boolean;
    /**
     * Largest share of the public IPv4 space the allowed ranges may reach together without `allowInternet`.
     * @default 0.001 (about 3.7 million addresses, a /10: far more than an office or VPN range)
     */
    maxPublicShare?: number;
    /** OpenSSH public key installed on the nodes; the private key is a secret (`sshPrivateKey`). */
    publicKey?: string;
}

/**
 * The node software. Versions left out are decided by the plan from the image and the hardware: the image's stack is
 * reused where it is new enough, the kit installs what is missing, and refuses what is too old or conflicting.
 */
export interface SoftwareSpecInput {
    /** libnccl2 version to install where the image has none, e.g. 2.28.9-1 (pinned and held). @default the plan's */
    ncclVersion?: string;
    /** CUDA major.minor the NCCL packages are built for, e.g. 13.0. @default the plan's */
    cudaVersion?: string;
    /** NVIDIA datacenter driver branch to install where the image has none, e.g. 580. @default the plan's */
    driverBranch?: string;
    /** Full driver version, e.g. 580.126.16 (the pinning package, and the Fabric Manager that must equal it). */
    driverVersion?: string;
    /** Components whose copy on the image the kit replaces with its own (upgrades only). @default none */
    replace?: SoftwareComponentName[];
    /** Use NVIDIA's open kernel modules. @default true */
    openKernelModules?: boolean;
    /** How the NIC reaches GPU memory. @default auto */
    gpudirect?: GpuDirectMode;
    /** aws-efa-installer version, e.g. 1.51.0. */
    efaInstallerVersion?: string;
    /** SHA-256 of the installer tarball; without it AWS's GPG signature is verified. */
    efaInstallerSha256?: string;
    /** DOCA-OFED version (azure-ib, roce), e.g. 3.2.1. */
    docaVersion?: string;
    /** DOCA-OFED from NVIDIA, or the distribution's inbox rdma-core. @default doca */
    ofedSource?: OfedSource;
    /** nccl-tests release to build, e.g. 2.19.6. */
    ncclTestsVersion?: string;
    /** SHA-256 of the nccl-tests source tarball; without it the release tag is checked out. */
    ncclTestsSha256?: string;
}

/** What `pulumi up` proves at the end. */
export interface ValidationSpecInput {
    /** Run nccl-tests at the end of `pulumi up`. @default true */
    enabled?: boolean;
    /** Pass when busbw at the largest sizes is at least this fraction of the expected figure. @default 0.8 */
    minFraction?: number;
    /** Explicit busbw floor in GB/s (overrides the catalog). */
    minBusbwGBps?: number;
    /** Largest all_reduce message size in bytes, a power of two. @default 16 GiB, less where GPU memory holds less */
    maxBytes?: number;
    /** nccl-tests -n. @default 20 */
    iterations?: number;
    /** Wall-clock limit of the validation run in minutes. @default 30 */
    timeoutMinutes?: number;
    /**
     * Nodes that may fail their health grade or preflight checks without failing validation: up to this many are left
     * out of the all-node runs (which then run on the others), named in the report with the failed component, and
     * drained under Slurm. More than this: a failed preflight stops the run before nccl-tests. At most the validated
     * node count minus two. @default 0
     */
    maxFailedNodes?: number;
    /** The node health gate (docs/health.md). */
    health?: HealthValidationSpecInput;
}

/** The node health gate: one rule for `rdmakit health` and `pulumi up` (docs/health.md). */
export interface HealthValidationSpecInput {
    /**
     * Components that must be checked for a node to pass: a required one that could not be checked (its tool missing
     * or refusing) fails the node, one not required is a note. @default every component but dcgm
     */
    require?: HealthComponent[];
    /**
     * Minutes before the kernel log's newest line within which an Xid that needs a reset, or a fatal
     * NVSwitch SXid, fails the node. @default 120
     */
    xidWindowMinutes?: number;
    /** `dcgmi diag -r` level: 1 quick, 2 medium (minutes), 3 long, 4 extended. @default 2 */
    dcgmLevel?: number;
}

/** How the Ansible steps (node software, then validation) treat failing nodes and how wide they run. */
export interface AnsibleSpecInput {
    /**
     * Percentage of the nodes (after `exclude`) that may fail the node-software step without failing `pulumi up`; the
     * failed nodes are then listed in the stack output. 0: any failed node fails the step. @default 0
     */
    maxFailPercentage?: number;
    /**
     * Node names left out of the Ansible steps: they are not provisioned, and validation grades the other nodes and
     * names these in its report. For a node that cannot be fixed now. @default []
     */
    exclude?: string[];
    /** Most nodes Ansible works on at once (its forks): the node count, up to this cap. @default 100 */
    maxForks?: number;
    /**
     * Where the node software runs: `node-local`, each node runs site.yml on itself (`ansible-playbook -c local`) from
     * a bundle the controller sends (no Ansible or internet needed on the node; Python 3.9-3.12 is); `controller`,
     * ansible-playbook on the controller pushes every task over SSH. @default "node-local"
     */
    mode?: AnsibleMode;
}

/** An existing subnet for the GPU nodes. */
export interface AwsSubnetInput {
    /** Subnet id (subnet-…); may come from another resource or stack. */
    id: pulumi.Input<string>;
    /** The subnet's availability zone; must be the cluster's. */
    availabilityZone: string;
}

/** Use an existing VPC and subnet, or let the kit create them. */
export interface AwsNetworkInput {
    /** Existing VPC id (vpc-…); may come from another resource or stack. */
    vpcId?: pulumi.Input<string>;
    /** Existing private subnet for the nodes (one: EFA traffic does not cross subnets). */
    subnets?: AwsSubnetInput[];
    /** CIDR of the VPC the kit creates. @default 10.0.0.0/16 */
    vpcCidr?: string;
}

/** An EC2 Capacity Block for ML. */
export interface AwsCapacityBlockInput {
    /** Capacity reservation id (cr-…). */
    reservationId: string;
    availabilityZone: string;
    instanceCount: number;
}

/** A targeted On-Demand Capacity Reservation. */
export interface AwsCapacityReservationInput {
    /** Capacity reservation id (cr-…). */
    reservationId: string;
    instanceCount: number;
}

/** AWS EFA cluster settings. */
export interface AwsSpecInput {
    /** Region, e.g. us-east-1. */
    region: string;
    /** The one availability zone of the cluster (EFA does not cross AZs). */
    availabilityZone: string;
    /** EFA-capable instance type, e.g. p5.48xlarge. */
    instanceType: string;
    /** AMI id. @default the current Deep Learning Base GPU AMI (Ubuntu 22.04) for the architecture */
    ami?: string;
    /** Encrypted gp3 root volume size in GiB. @default 200 */
    rootVolumeGiB?: number;
    /** Existing VPC/subnet, or the CIDR of the one the kit creates. */
    network?: AwsNetworkInput;
    /** Cluster placement group. @default true, and false with a capacity block */
    placementGroup?: boolean;
    /** EC2 Capacity Block for ML to launch into. */
    capacityBlock?: AwsCapacityBlockInput;
    /** Targeted On-Demand Capacity Reservation. */
    capacityReservation?: AwsCapacityReservationInput;
    /** Accept an EFA type without GPUDirect RDMA (g5/g6/g6e). @default false */
    allowNoGpuDirect?: boolean;
    /** Way in to the private nodes. @default bastion */
    access?: AwsAccess;
    /**
     * Containers on the nodes (one network hop further than the host) need the instance role's credentials from
     * IMDS: the metadata hop limit becomes 2. @default false (hop limit 1: only the host itself reaches IMDS)
     */
    containersUseInstanceRole?: boolean;
    /** Bastion instance type. @default t3.micro */
    bastionInstanceType?: string;
}

/** A marketplace image. */
export interface AzureImageInput {
    publisher: string;
    offer: string;
    sku: string;
    /** @default latest */
    version?: string;
    /** Hyper-V generation. @default V2 */
    generation?: ImageGeneration;
}

/** Azure InfiniBand cluster settings. */
export interface AzureSpecInput {
    /** Region name, e.g. eastus. */
    location: string;
    /** InfiniBand VM size, e.g. Standard_ND96isr_H100_v5. */
    vmSize: string;
    /** Existing resource group; may come from another resource or stack. @default the kit creates one */
    resourceGroupName?: pulumi.Input<string>;
    /** Must not overlap 172.16.0.0/16 (Azure's RDMA network). @default 10.10.0.0/16 */
    vnetCidr?: string;
    /** @default 10.10.0.0/24 */
    subnetCidr?: string;
    /** @default microsoft-dsvm:ubuntu-hpc (Gen2) with the SKU the catalog names for the size */
    image?: AzureImageInput;
    /** OS disk size in GiB. @default 256 */
    osDiskGiB?: number;
    /** Set after Azure support raised the scale set limit from 100 to 300 VMs. @default false */
    quotaRaised?: boolean;
    /** Must stay false: SSH keys only. @default false */
    passwordAuthentication?: boolean;
    /** @default Standard_B2s */
    jumpHostSize?: string;
    /**
     * An existing subnet for the nodes (hub-and-spoke estates): the kit then creates no VNet, subnet, NAT gateway,
     * public IP or jump host. @default the kit creates a VNet, a subnet with NAT egress and a public jump host
     */
    network?: AzureNetworkInput;
}

/** An existing Azure network for the nodes. */
export interface AzureNetworkInput {
    /**
     * ARM id of an existing subnet (/subscriptions/<id>/resourceGroups/<rg>/providers/Microsoft.Network/virtualNetworks/
     * <vnet>/subnets/<subnet>); its VNet is implied. May come from another resource or stack.
     */
    subnetId: pulumi.Input<string>;
}

/** GPUs in a bare-metal host. */
export interface RoceGpuInput {
    /** GPU model, e.g. H100. Eight A100/H100/H200/B200/B300 a host are an HGX board with NVSwitch (Fabric Manager installed, NVSwitch expected); name PCIe cards as such (`H100-PCIe`, `H100-NVL`, `H200-NVL`): bridged cards get neither. */
    model: string;
    /** GPUs in this host. */
    count: number;
}

/** An existing bare-metal GPU host. */
export interface RoceHostInput {
    /** Inventory name (lower case, digits, '-'). */
    name: string;
    /** Address Ansible and SSH use to reach the host. */
    address: string;
    /** SSH login, the same on every host. @default cluster.ssh.user, else root */
    sshUser?: string;
    /** RoCE rail NICs by RDMA device name (mlx5_0 …). */
    railNics: string[];
    /** The rails' netdev names in railNics order. @default resolved on the host */
    railNetdevs?: string[];
    /** The leaf port each rail plugs into (`leaf1:swp1`), in railNics order; checked against LLDP (rule C18). */
    railPorts?: string[];
    /** Front-end netdev NCCL bootstraps over (NCCL_SOCKET_IFNAME); not a rail. */
    bootstrapNic: string;
    gpu: RoceGpuInput;
    /** Per-host RoCEv2 GID index. @default cluster.roce.qos.gidIndex */
    gidIndex?: number;
}

/** A leaf → spine link, declared on the leaf. */
export interface RoceUplinkInput {
    /** This switch's port. */
    port: string;
    /** The spine at the other end (a name in cluster.roce.switches). */
    peer: string;
    /** The spine's port at the other end. */
    peerPort: string;
    /** Cable length in metres; sizes both ends' headroom. */
    cableLengthM: number;
    /** @default the switch's speedGbps */
    speedGbps?: number;
}

/** Per-port speed or cable length of a host port. */
export interface RocePortOverrideInput {
    /** @default the switch's speedGbps */
    speedGbps?: number;
    /** @default the switch's cableLengthM */
    cableLengthM?: number;
}

/** A switch on the RoCE path: a leaf (host ports, uplinks) or a spine. */
export interface RoceSwitchInput {
    /** Switch name; resource and file names derive from it. */
    name: string;
    os: NetworkOs;
    /** @default leaf */
    role?: RoceSwitchRole;
    /** Switch model from components/catalog/switches.ts; required for eos. */
    model?: string;
    /** Address the kit SSHes to when it pushes the configuration. */
    managementAddress: string;
    /** @default cumulus (nvue), admin (sonic, eos) */
    sshUser?: string;
    /** @default 22 */
    sshPort?: number;
    /** The switch's SSH host key line (ssh-keyscan -t ed25519 <switch>); every push verifies it. */
    hostKey: string;
    /** Front-panel ports that face GPU-host rail NICs (required on a leaf). @default [] */
    hostPorts?: string[];
    /** Per-port speed or cable length of host ports. */
    portOverrides?: Record<string, RocePortOverrideInput>;
    /** Links to the spine tier. @default [] */
    uplinks?: RoceUplinkInput[];
    /** Default port speed in Gb/s. */
    speedGbps: number;
    /** Default (longest host) cable length in metres; sizes the lossless headroom. */
    cableLengthM: number;
}

/** ECN marking on the RoCE queue. */
export interface RoceEcnInput {
    /** @default 150000 */
    minBytes?: number;
    /** @default 1500000 */
    maxBytes?: number;
    /** @default 100 */
    maxProbabilityPct?: number;
}

/** RoCE QoS intent; the defaults are NVIDIA's lossless RoCE plan. */
export interface RoceQosInput {
    /** @default lossless */
    mode?: QosMode;
    /** @default 26 */
    roceDscp?: number;
    /** @default 3 */
    rocePriority?: number;
    /** @default 48 */
    cnpDscp?: number;
    /** @default 6 */
    cnpPriority?: number;
    ecn?: RoceEcnInput;
    /** Host rail MTU. @default 9000 */
    mtu?: number;
    /** Switch port MTU. @default the OS maximum */
    switchMtu?: number;
    /** RoCEv2 GID index with the rail's IPv4 address. @default 3 */
    gidIndex?: number;
}

/** Bare-metal RoCEv2 fabric: hosts, switches and one QoS plan. */
export interface RoceSpecInput {
    nicModel: RoceNicModel;
    hosts: RoceHostInput[];
    switches: RoceSwitchInput[];
    qos?: RoceQosInput;
}

/** The job scheduler put on the validated nodes. */
export const SchedulerType = {
    /** no scheduler: the validated nodes, nothing on them to submit jobs to */
    None: "none",
    /** Slurm from the image's distribution, nodes joining the partition only after validation */
    Slurm: "slurm",
} as const;
export type SchedulerType = (typeof SchedulerType)[keyof typeof SchedulerType];

/** The host that runs slurmctld: a named existing host on bare metal, a head node the kit creates on the clouds. */
export interface SchedulerControllerInput {
    /** Inventory and Slurm name of the controller (bare metal: required; a host of its own, not one of roce.hosts). @default <cluster>-head */
    name?: string;
    /** Address SSH and the nodes reach it at (bare metal only: required). */
    address?: string;
    /** SSH login on the controller (bare metal only). @default the GPU hosts' login user */
    sshUser?: string;
    /** The controller's SSH host key line, `ssh-keyscan -t ed25519 <address>` (bare metal only: required). */
    hostKey?: string;
    /** EC2 instance type of the head node (aws-efa only). @default m7i.2xlarge */
    instanceType?: string;
    /** Azure VM size of the head node (azure-ib only). @default Standard_D8s_v5 */
    vmSize?: string;
}

/** Slurm on the validated fabric. */
export interface SchedulerSpecInput {
    /** @default slurm on aws-efa and azure-ib; on roce slurm when a controller is named, else none */
    type?: SchedulerType;
    controller?: SchedulerControllerInput;
    /** Slurm partition the GPU nodes form. @default gpu */
    partition?: string;
    /** Export /home from the controller over NFS to every node. @default true on aws-efa and azure-ib, false on roce */
    homeNfs?: boolean;
    /** One GPU node's CPUs and memory as `slurmd -C` prints them: required on bare metal and for a cloud size without catalog figures. */
    node?: SchedulerNodeInput;
}

/** slurmd -C's figures of one GPU node (CPUs, SocketsPerBoard, CoresPerSocket, ThreadsPerCore, RealMemory in MiB). */
export interface SchedulerNodeInput {
    cpus: number;
    sockets: number;
    coresPerSocket: number;
    threadsPerCore: number;
    realMemory: number;
}

/** An RDMA GPU cluster: what `rdmakit:cluster` holds. */
export interface ClusterSpecInput {
    /** Cluster name, used in resource names and tags (lower case, digits, '-', at most 31). */
    name: string;
    fabric: Fabric;
    /** GPU node count (bare metal: the number of hosts). */
    nodes?: number;
    ssh: SshSpecInput;
    /** Run the Ansible playbooks (node software, then validation) from `pulumi up`. @default true */
    provision?: boolean;
    /**
     * What day 2 (`rdmakit repair`, and `pulumi up`'s validation) does with a node that fails health or nccl-tests on
     * evidence: `report` it, `drain` it in the scheduler, or `replace` it through the cloud (then prove it and let it
     * back in). Never replaced on a transient finding. @default drain with a scheduler, report without
     */
    repair?: RepairPolicy;
    software?: SoftwareSpecInput;
    validation?: ValidationSpecInput;
    ansible?: AnsibleSpecInput;
    /** Extra tags on every resource. */
    tags?: Record<string, string>;
    /** Required when fabric is aws-efa. */
    aws?: AwsSpecInput;
    /** Required when fabric is azure-ib. */
    azure?: AzureSpecInput;
    /** Required when fabric is roce. */
    roce?: RoceSpecInput;
    /** The job scheduler on the validated nodes. @default slurm on the clouds, none on roce without a controller */
    scheduler?: SchedulerSpecInput;
}
