import { awsInstanceType, DLAMI_SSH_USER } from "../catalog/aws";
import { AZURE_DEFAULT_ADMIN, AZURE_IB_PARTITION, azureVmSize } from "../catalog/azure";
import { gpuModel, maxMessageBytes } from "../catalog/gpus";
import { ofedInfoPrefix } from "../catalog/software";
import { planSoftware, roceHgx, SoftwarePlan } from "./software";
import { planProvision, ProvisionPlan } from "./provision";
import { planScheduler, SchedulerPlan } from "./scheduler";
import { slurmAnsibleVars } from "../slurm/render";
import { GiB } from "../catalog/types";
import { planQos, QosPlan } from "../roce/qos";
import { ClusterSpec } from "../spec";
import type { PreflightExpectation } from "../validate/component";
import { Expectation } from "../validate/types";
import type { HealthComponent } from "../types";
import { AWS_FORCED_NET, AwsPlacement, awsNcclEnv, awsPlacement, efaDeviceCount, EfaInterface, efaInterfaceLayout } from "./aws";
import { IB_FORCED_NET, AzureImage, azureImage, azureNcclEnv } from "./azure";
import { expectationFromFacts, HardwareFacts } from "./expectation";

/** One RDMA device of a node, as the plan expects to find it. */
export interface PlannedNic {
    /** EFA: `efa-<card>`; IB: `mlx5_ib<N>`; RoCE: the rail device name from the spec */
    name: string;
    kind: "efa" | "ib" | "roce";
    rateGbps?: number;
}

/** Every decision about the fabric, made once from the spec and the catalog. Everything else reads it. */
export interface FabricPlan {
    cluster: string;
    fabric: ClusterSpec["fabric"];
    nodes: {
        count: number;
        /** instance type, VM size, or "bare metal" */
        hostType: string;
        gpuModel: string;
        gpusPerNode: number;
        totalGpus: number;
        nvswitch: boolean;
        /** bare metal only: the hosts by name */
        names?: string[];
    };
    /** RDMA devices per node and their total rate */
    nics: { perNode: PlannedNic[]; rdmaGbpsPerNode: number; gpuDirectRdma: boolean };
    sshUser: string;
    /**
     * How Ansible and operators reach the private nodes: through a host (bastion, jump host), or through AWS Systems
     * Manager Session Manager in the region (`access: ssm`, components/provision/inventory.ts InventorySsm).
     */
    entry?: { kind: "bastion" | "jump-host"; user: string } | { kind: "ssm"; region: string };
    aws?: { instanceType: string; interfaces: EfaInterface[]; placement: AwsPlacement; arch: "x86_64" | "arm64" };
    azure?: { vmSize: string; image: AzureImage; topoFile?: string; partitionLimit: number };
    roce?: { qos: QosPlan };
    /** per node-software component: what the image has, reuse or install, and the version (plan/software.ts) */
    software: SoftwarePlan;
    /** NCCL environment every job on the cluster should run with */
    ncclEnv: Record<string, string>;
    /** group variables for site.yml / validate.yml */
    ansibleVars: Record<string, unknown>;
    /** how the Ansible steps run: nodes left out, forks, failures tolerated (plan/provision.ts) */
    provision: ProvisionPlan;
    /** the job scheduler on the validated nodes: none, or Slurm with its controller, node line and topology (plan/scheduler.ts) */
    scheduler: SchedulerPlan;
    validation: {
        enabled: boolean;
        /** added to ncclEnv for validation runs so that a fallback to sockets fails */
        forcedNet: Record<string, string>;
        singleNode: Expectation;
        allNodes: Expectation;
        /** two-node runs (pairs) that find the slow node */
        pair: Expectation;
        /** largest size of the sweep: cluster.validation.maxBytes, or 16 GiB capped by GPU memory */
        maxBytes: number;
        /** the one size of the fixed-size runs (single node, all nodes, pairs): every expectation grades at it */
        fixedBytes: number;
        iterations: number;
        timeoutMinutes: number;
        /** nodes that may fail health or preflight and be left out of the all-node runs (cluster.validation.maxFailedNodes) */
        maxFailedNodes: number;
        /** the node health gate: required components, Xid window, DCGM level (cluster.validation.health) */
        health: { require: HealthComponent[]; xidWindowMinutes: number; dcgmLevel: number };
        /** inventory host names, in placement order (bare metal: the spec's names) */
        hostNames: string[];
        /** what every node must show before nccl-tests runs */
        preflight: PreflightExpectation;
        /** where the nccl_tests role builds the binaries, and the MPI it builds them with */
        ncclTestsDir: string;
        mpiHome: string;
    };
}

/**
 * Where the nccl_tests role installs nccl-tests (sent as nccl_tests_install_dir; binaries in build/). Not
 * /opt/nccl-tests, where Azure's ubuntu-hpc image keeps its own build (azure-ib.md §3).
 */
export const NCCL_TESTS_HOME = "/opt/rdmakit/nccl-tests";
/**
 * The MPI validation launches nccl-tests with: the nccl_tests role links it to the MPI the binaries in
 * NCCL_TESTS_HOME link (the image's build: the libmpi ldd finds, e.g. HPC-X on ubuntu-hpc; the kit's build: mpiFor).
 */
export const NCCL_TESTS_MPI_HOME = "/opt/rdmakit/mpi";

/**
 * The MPI the kit builds nccl-tests with where the node has no build of its own: the EFA installer's Open MPI
 * (aws-efa.md §5, `MPI_HOME=/opt/amazon/openmpi`), elsewhere the distribution's Open MPI the nccl_tests role
 * installs (its prefixes per distro in playbooks/roles/nccl_tests/vars).
 */
export function mpiFor(fabric: ClusterSpec["fabric"]): { role: "efa" | "distro" } {
    return fabric === "aws-efa" ? { role: "efa" } : { role: "distro" };
}

/** Inventory names of the GPU nodes: the hosts' own names on bare metal, node-000... on clouds. */
export function nodeNames(spec: ClusterSpec): string[] {
    if (spec.roce) return spec.roce.hosts.map((h) => h.name);
    const width = Math.max(3, String(spec.nodes - 1).length);
    return Array.from({ length: spec.nodes }, (_, i) => `${spec.name}-${String(i).padStart(width, "0")}`);
}

/** A fabric's plan before the provisioning decisions, which read its node names. */
type FabricBase = Omit<FabricPlan, "provision" | "scheduler">;

/** Pure: spec + catalog -> plan. The spec has been validated, so catalog lookups succeed. */
export function planCluster(spec: ClusterSpec): FabricPlan {
    const plan = spec.fabric === "aws-efa" ? planAws(spec) : spec.fabric === "azure-ib" ? planAzure(spec) : planRoce(spec);
    const scheduler = planScheduler(spec, {
        hostNames: plan.validation.hostNames, gpusPerNode: plan.nodes.gpusPerNode, sshUser: plan.sshUser,
        ncclEnv: plan.ncclEnv, forcedNet: plan.validation.forcedNet,
    });
    const full: FabricPlan = { ...plan, scheduler, provision: planProvision(spec, plan.validation.hostNames) };
    // scheduler none: the variables stay exactly what they were before the scheduler existed
    if (scheduler.type === "slurm") full.ansibleVars = { ...plan.ansibleVars, ...slurmAnsibleVars(full) };
    return full;
}

/** Default largest message of the sweep, the size AWS and Azure publish their figures at (aws-efa.md §5, azure-ib.md §5). */
export const DEFAULT_MAX_BYTES = 16 * GiB;

/** The sweep's largest size: the spec's, else 16 GiB or what the GPU memory holds (catalog/gpus.ts). */
export function sweepMaxBytes(spec: ClusterSpec, gpuModelName: string): number {
    return spec.validation.maxBytes ?? Math.min(DEFAULT_MAX_BYTES, maxMessageBytes(gpuModelName) ?? DEFAULT_MAX_BYTES);
}

/**
 * Thresholds for single-node and all-node runs, and the one fixed size they are both graded at (no expectation
 * grades from a size larger than the sweep, so the fixed size fits it).
 */
function expectations(spec: ClusterSpec, hw: HardwareFacts, gpuModelName: string) {
    const v = spec.validation;
    const maxBytes = sweepMaxBytes(spec, gpuModelName);
    const opts = { minFraction: v.minFraction, maxBytes };
    const singleNode = expectationFromFacts(hw, 1, opts);
    const allNodes = expectationFromFacts(hw, spec.nodes, { ...opts, minBusbwGBps: v.minBusbwGBps });
    // the runs that name a slow node are two-node runs: graded against two-node figures, not the whole cluster's
    const pair = expectationFromFacts(hw, 2, opts);
    const fixedBytes = Math.max(singleNode.gradeFromBytes, allNodes.gradeFromBytes, pair.gradeFromBytes);
    return { singleNode, allNodes, pair, maxBytes, fixedBytes };
}

function common(spec: ClusterSpec, gpus: { model: string; count: number }, nvswitch: boolean, hostType: string) {
    return {
        software: planSoftware(spec),
        cluster: spec.name,
        fabric: spec.fabric,
        nodes: {
            count: spec.nodes, hostType, gpuModel: gpus.model, gpusPerNode: gpus.count,
            totalGpus: spec.nodes * gpus.count, nvswitch,
        },
    };
}

function planAws(spec: ClusterSpec): FabricBase {
    const aws = spec.aws!;
    const type = awsInstanceType(aws.instanceType)!;
    const interfaces = efaInterfaceLayout(type);
    const efaCount = efaDeviceCount(interfaces);
    const perNode: PlannedNic[] = interfaces
        .filter((i) => i.interfaceType !== "interface")
        .map((i) => ({ name: `efa-card${i.networkCardIndex}`, kind: "efa", rateGbps: type.efaGbps / efaCount }));
    const hw: HardwareFacts = { name: type.name, busbw: type.busbw, rdmaGbpsPerNode: type.efaGbps, transport: "efa", gpuDirectRdma: type.gpuDirectRdma };
    const base = common(spec, type.gpu, type.nvswitch, type.name);
    const ncclEnv = awsNcclEnv();
    const plan: FabricBase = {
        ...base,
        nics: { perNode, rdmaGbpsPerNode: type.efaGbps, gpuDirectRdma: type.gpuDirectRdma },
        sshUser: spec.ssh.user ?? DLAMI_SSH_USER,
        entry: aws.access === "bastion" ? { kind: "bastion", user: DLAMI_SSH_USER } : { kind: "ssm", region: aws.region },
        aws: { instanceType: type.name, interfaces, placement: awsPlacement(aws), arch: type.arch },
        ncclEnv,
        ansibleVars: {},
        validation: {
            ...validationBase(spec, {
                gpus: type.gpu.count, rdmaDevices: efaCount, gpudirect: gdrCheck(spec, type.gpuDirectRdma), nvswitch: type.nvswitch,
            }),
            forcedNet: AWS_FORCED_NET,
            ...expectations(spec, hw, type.gpu.model),
        },
    };
    plan.ansibleVars = ansibleVars(spec, plan, { rdmaDevices: efaCount, nvlsm: type.nvlsm });
    return plan;
}

function planAzure(spec: ClusterSpec): FabricBase {
    const az = spec.azure!;
    const size = azureVmSize(az.vmSize)!;
    const gpus = size.gpu ?? { model: "none", count: 0 };
    const hw: HardwareFacts = {
        name: size.name, busbw: size.busbw, rdmaGbpsPerNode: size.ib.hcas * size.ib.rateGbps, transport: "ib", gpuDirectRdma: size.gpuDirectRdma,
    };
    const plan: FabricBase = {
        ...common(spec, gpus, size.nvswitch, size.name),
        nics: {
            perNode: size.hcaNames.map((name) => ({ name, kind: "ib", rateGbps: size.ib.rateGbps })),
            rdmaGbpsPerNode: hw.rdmaGbpsPerNode,
            gpuDirectRdma: size.gpuDirectRdma,
        },
        sshUser: spec.ssh.user ?? AZURE_DEFAULT_ADMIN,
        // the jump host is made with the same admin user and key as the nodes (components/azure); in an existing
        // subnet there is none: the nodes are reached at their private addresses over the estate's own route
        ...(az.network ? {} : { entry: { kind: "jump-host" as const, user: spec.ssh.user ?? AZURE_DEFAULT_ADMIN } }),
        azure: {
            vmSize: size.name,
            image: azureImage(az, size),
            topoFile: size.ncclTopoFile,
            partitionLimit: az.quotaRaised ? AZURE_IB_PARTITION.raisedMaxVms : AZURE_IB_PARTITION.defaultMaxVms,
        },
        ncclEnv: azureNcclEnv(size),
        ansibleVars: {},
        validation: {
            ...validationBase(spec, {
                gpus: gpus.count, rdmaDevices: size.ib.hcas, portRateGbps: size.ib.rateGbps,
                // the AccelNet VF (mlx5_an*) is also an mlx5 device; only the IB HCAs count (azure-ib.md §2)
                rdmaDevicePattern: "^mlx5_ib", gpudirect: gdrCheck(spec, size.gpuDirectRdma), nvswitch: size.nvswitch,
            }),
            forcedNet: IB_FORCED_NET,
            ...expectations(spec, hw, gpus.model),
        },
    };
    plan.ansibleVars = ansibleVars(spec, plan, { rdmaDevices: size.ib.hcas, nvlsm: false });
    return plan;
}

function planRoce(spec: ClusterSpec): FabricBase {
    const roce = spec.roce!;
    const qos = planQos(roce);
    const first = roce.hosts[0];
    // rails run at the speed of the host ports they land on; the slowest bounds the rail (spines and uplinks do not
    // count; the spec checks each host-port speed against the NIC model, components/roce/spec.ts)
    // (a loop, not Math.min over a spread: 16,384 host ports at 2,048 hosts, three arrays of them, one argument each)
    let portGbps = Infinity;
    for (const sw of qos.switches) for (const p of sw.ports) if (p.kind === "host") portGbps = Math.min(portGbps, p.speedGbps);
    const rails = first.railNics;
    const gpu = gpuModel(first.gpu.model);
    const rdmaGbpsPerNode = rails.length * portGbps;
    const hw: HardwareFacts = {
        name: `${first.gpu.model} with ${rails.length}x ${roce.nicModel}`, busbw: [], rdmaGbpsPerNode, transport: "ib", gpuDirectRdma: true,
    };
    // HGX boards have NVSwitch, so Fabric Manager (plan/software.ts roceHgx)
    const hgx = roceHgx(spec);
    const plan: FabricBase = {
        ...common(spec, { model: gpu?.name ?? first.gpu.model, count: first.gpu.count }, hgx, "bare metal"),
        nics: {
            perNode: rails.map((name) => ({ name, kind: "roce", rateGbps: portGbps })),
            rdmaGbpsPerNode,
            gpuDirectRdma: true,
        },
        // one login user for every host (the spec refuses mixed users): mpirun on the first host reaches the others as it
        sshUser: spec.ssh.user ?? first.sshUser ?? "root",
        roce: { qos },
        ncclEnv: qos.ncclEnv,
        ansibleVars: {},
        validation: {
            ...validationBase(spec, {
                gpus: first.gpu.count, rdmaDevices: rails.length, portRateGbps: portGbps,
                // only the rails count: hosts often carry more ConnectX/BlueField ports (storage, in-band)
                rdmaDevicePattern: `^(${rails.map((r) => r.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")).join("|")})$`,
                gpudirect: gdrCheck(spec, true), nvswitch: hgx,
            }),
            forcedNet: IB_FORCED_NET,
            ...expectations(spec, hw, first.gpu.model),
        },
    };
    plan.nodes.names = roce.hosts.map((h) => h.name);
    // per-host QoS variables (roce_host_*) travel as host vars in the inventory, from qos.hosts
    plan.ansibleVars = ansibleVars(spec, plan, { rdmaDevices: rails.length, nvlsm: false });
    return plan;
}

function validationBase(spec: ClusterSpec, preflight: PreflightExpectation) {
    const v = spec.validation;
    return {
        enabled: v.enabled, iterations: v.iterations, timeoutMinutes: v.timeoutMinutes, maxFailedNodes: v.maxFailedNodes,
        health: { require: [...v.health.require], xidWindowMinutes: v.health.xidWindowMinutes, dcgmLevel: v.health.dcgmLevel },
        hostNames: nodeNames(spec), preflight, ncclTestsDir: `${NCCL_TESTS_HOME}/build`, mpiHome: NCCL_TESTS_MPI_HOME,
    };
}

/** GPUDirect path the preflight accepts: what the spec asks for, or either where the kit picks at run time. */
function gdrCheck(spec: ClusterSpec, gdr: boolean): PreflightExpectation["gpudirect"] {
    if (!gdr) return "none";
    return spec.software.gpudirect === "auto" ? "either" : spec.software.gpudirect;
}

/**
 * GPUDirect method for the gpudirect role: DMA-BUF when the open kernel modules run (kernel >= 5.12 on every
 * supported distro), else the nvidia_peermem module (aws-efa.md §3.3, ansible-stack.md §3).
 */
export function gpudirectMethod(spec: ClusterSpec): "peermem" | "dmabuf" {
    const g = spec.software.gpudirect;
    if (g !== "auto") return g;
    return spec.software.openKernelModules ? "dmabuf" : "peermem";
}

/**
 * The group variables of site.yml, named as the roles' argument specs name them (playbooks/roles/<role>/meta/
 * argument_specs.yml). Per-host RoCE settings travel as host variables (provision/nodes.ts).
 */
function ansibleVars(spec: ClusterSpec, plan: FabricBase, hw: { rdmaDevices: number; nvlsm: boolean }): Record<string, unknown> {
    const sw = spec.software;
    const v = plan.software.versions;
    const replace = new Set(plan.software.replace);
    const vars: Record<string, unknown> = {
        rdmakit_fabric: spec.fabric,
        rdmakit_gpu_count: plan.nodes.gpusPerNode,
        rdmakit_rdma_device_count: hw.rdmaDevices,
        // the same devices the validation preflight counts
        rdmakit_rdma_device_pattern: plan.validation.preflight.rdmaDevicePattern ?? ".*",
        // what the plan expects per component; the roles report what the node's probes found beside it
        rdmakit_software_plan: Object.fromEntries(plan.software.rows.map((r) => [r.component, { decision: r.decision, version: r.version }])),
        nvidia_driver_branch: v.driverBranch,
        nvidia_driver_version: v.driverVersion ?? "",
        nvidia_driver_min_branch: v.driverFloor ?? "",
        nvidia_driver_replace: replace.has("driver"),
        nvidia_driver_open: sw.openKernelModules,
        nvidia_driver_fabric_manager: plan.nodes.nvswitch,
        nvidia_driver_nvlsm: hw.nvlsm,
        gpudirect_method: gpudirectMethod(spec),
        nccl_version: v.ncclVersion,
        nccl_min_version: v.ncclFloor ?? "",
        nccl_replace: replace.has("nccl"),
        nccl_cuda_version: v.cudaVersion,
        nccl_cuda_min_version: v.cudaFloor ?? "",
        nccl_cuda_replace: replace.has("cuda"),
        nccl_tests_version: v.ncclTestsVersion,
        nccl_tests_install_dir: NCCL_TESTS_HOME,
        // the MPI a kit build links; validation launches whichever MPI the binaries link (NCCL_TESTS_MPI_HOME)
        nccl_tests_mpi: mpiFor(spec.fabric).role,
        nccl_tests_mpi_link: NCCL_TESTS_MPI_HOME,
        // the image's nccl-tests build is reused where it links an MPI, unless software.replace lists ncclTests
        nccl_tests_reuse_image: !replace.has("ncclTests"),
        // written to /etc/nccl.conf by the nccl role, so every job on the cluster runs with the plan's environment
        nccl_conf: plan.ncclEnv,
    };
    if (v.ncclTestsCommit) vars.nccl_tests_commit = v.ncclTestsCommit;
    if (sw.ncclTestsSha256) vars.nccl_tests_sha256 = sw.ncclTestsSha256;
    if (spec.fabric === "aws-efa") {
        vars.efa_installer_version = v.efaInstallerVersion;
        vars.efa_min_version = v.efaFloor ?? "";
        vars.efa_replace = replace.has("efa");
        if (sw.efaInstallerSha256) vars.efa_installer_sha256 = sw.efaInstallerSha256;
        vars.aws_ofi_nccl_source = "installer";
    } else {
        vars.ofed_source = sw.ofedSource;
        vars.ofed_doca_version = v.docaVersion;
        // what ofed_info -s reports once this DOCA runs: the role reuses an installed OFED whose base is at least this
        vars.ofed_doca_ofed_info_prefix = ofedInfoPrefix(v.docaVersion);
        vars.ofed_replace = replace.has("ofed");
    }
    return vars;
}
