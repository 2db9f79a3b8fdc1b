/**
 * The scheduler decisions, pure: spec + catalog + the fabric's plan -> SchedulerPlan. `none` adds
 * nothing anywhere; `slurm` fixes the controller, the node line, the topology and the environment every job step
 * gets. The renderers (components/slurm/render.ts) turn this into Slurm's files; the slurm role installs them.
 */
import { AWS_HOST_CPU_MEMORY } from "../catalog/aws";
import { AZURE_HOST_CPU_MEMORY } from "../catalog/azure";
import type { ClusterSpec } from "../spec";
import { DEFAULT_HEAD_INSTANCE_TYPE, DEFAULT_HEAD_VM_SIZE } from "../slurm/spec";
import { roceTopology, type SlurmTopology } from "../slurm/topology";

export type { SlurmTopology, SlurmSwitch } from "../slurm/topology";

export type SchedulerPlan = { type: "none" } | SlurmPlan;

/**
 * One node's CPUs, memory and GPUs as slurm.conf's NodeName line states them. Every line states CPUs and RealMemory:
 * slurmctld schedules a node by its line (a line without them is 1 CPU and 1 MiB to Slurm), and drains a node whose
 * slurmd reports fewer CPUs or less memory than the line ("Low CPUs", "Low RealMemory").
 * source: slurm.conf(5) NodeName CPUs, RealMemory; src/slurmctld/node_mgr.c validate_node_specs (slurm-22-05-8-1)
 */
export interface SlurmNodeShape {
    /** logical CPUs (vCPUs) */
    cpus: number;
    /** not published for the cloud types: one socket of all the cores (AWS), or CPUs alone (Azure) */
    sockets?: number;
    coresPerSocket?: number;
    threadsPerCore?: number;
    /** the catalog's or scheduler.node's memory less REAL_MEMORY_MARGIN */
    realMemoryMiB: number;
    gpus: number;
    /** gres.conf File= of the GPUs, e.g. /dev/nvidia[0-7] */
    gpuFiles: string;
    /** where the CPU and memory figures come from */
    source: string;
}

export interface SlurmPlan {
    type: "slurm";
    controller: { name: string; address?: string; sshUser: string; hostKey?: string; instanceType?: string; vmSize?: string };
    partition: string;
    homeNfs: boolean;
    /** Slurm node names = the inventory host names (plan.validation.hostNames), same order */
    nodeNames: string[];
    /** bare metal: each node's address from the spec, in nodeNames order (slurm.conf NodeAddr); clouds resolve names */
    nodeAddresses?: string[];
    node: SlurmNodeShape;
    /** MpiDefault, as the distribution's Slurm names its PMIx plugin */
    mpiDefault: string;
    topology: SlurmTopology;
    /** the NCCL/libfabric environment validation ran with (plan.ncclEnv + validation.forcedNet), for every job step */
    jobEnv: Record<string, string>;
    srunPortRange: [number, number];
    slurmctldPort: number;
    slurmdPort: number;
    /**
     * The TCP ports the head node and the nodes open to each other only (security group / NSG rules between the two;
     * nothing from outside): what a cloud component reads to write its rules.
     */
    ports: { from: number; to: number; between: "nodes->controller" | "controller->nodes" | "both"; why: string }[];
}

/**
 * slurmctld and slurmd ports: Slurm's defaults (SlurmctldPort 6817, SlurmdPort 6818).
 * source: https://slurm.schedmd.com/slurm.conf.html (SlurmctldPort, SlurmdPort)
 */
export const SLURMCTLD_PORT = 6817;
export const SLURMD_PORT = 6818;
/**
 * srun's listening ports: a fixed range so the head node's and nodes' security group can name it. slurm.conf's
 * SrunPortRange text asks for a range large enough for the number of sruns at once (each takes a few ports); 60001-
 * 63000 is the example in SchedMD's network guide.
 * source: https://slurm.schedmd.com/slurm.conf.html#OPT_SrunPortRange; https://slurm.schedmd.com/network.html
 */
export const SRUN_PORT_RANGE: [number, number] = [60001, 63000];

/**
 * RealMemory margin: the kernel keeps part of the instance's memory for itself, so MemTotal (what slurmd reports) is
 * below the nominal size, and a RealMemory above MemTotal drains the node ("Low RealMemory"). AWS ParallelCluster
 * sets RealMemory to 95 % of the EC2 figure for the same reason; the kit does the same on every cloud.
 * source: https://docs.aws.amazon.com/parallelcluster/latest/ug/slurm-mem-based-scheduling-v3.html
 */
export const REAL_MEMORY_MARGIN = 0.05;

/**
 * PMIx as MpiDefault. Debian 12's slurm-wlm-basic-plugins 22.05.8 ships mpi_pmix.so beside mpi_pmix_v4.so (checked
 * on the package's installed files, /usr/lib/x86_64-linux-gnu/slurm-wlm/; scheduler.md §3); "pmix" is the
 * unversioned name Slurm's PMIx plugin installs next to the versioned one (SchedMD mpi_guide: `--mpi=pmix` picks the
 * default PMIx version), so it names the distribution's own build on Debian 12, Ubuntu 22.04 (21.08) and 24.04
 * (23.11) alike, and the bare-metal hosts' distribution need not be known here.
 * source: https://slurm.schedmd.com/mpi_guide.html#pmix
 */
export const SLURM_MPI_DEFAULT = "pmix";

/** What the plan's fabric reads. */
interface FabricFacts {
    hostNames: string[];
    gpusPerNode: number;
    sshUser: string;
    ncclEnv: Record<string, string>;
    forcedNet: Record<string, string>;
}

export function planScheduler(spec: ClusterSpec, f: FabricFacts): SchedulerPlan {
    const s = spec.scheduler;
    if (s.type === "none") return { type: "none" };
    const c = s.controller ?? {};
    const controller: SlurmPlan["controller"] = { name: c.name ?? `${spec.name}-head`, sshUser: c.sshUser ?? f.sshUser };
    if (spec.fabric === "roce") Object.assign(controller, { address: c.address, hostKey: c.hostKey });
    if (spec.fabric === "aws-efa") controller.instanceType = c.instanceType ?? DEFAULT_HEAD_INSTANCE_TYPE;
    if (spec.fabric === "azure-ib") controller.vmSize = c.vmSize ?? DEFAULT_HEAD_VM_SIZE;
    return {
        type: "slurm",
        controller,
        partition: s.partition,
        homeNfs: s.homeNfs,
        nodeNames: f.hostNames,
        ...(spec.roce ? { nodeAddresses: addressesOf(spec.roce.hosts, f.hostNames) } : {}),
        node: nodeShape(spec, f.gpusPerNode),
        mpiDefault: SLURM_MPI_DEFAULT,
        topology: topologyFor(spec),
        jobEnv: { ...f.ncclEnv, ...f.forcedNet },
        srunPortRange: SRUN_PORT_RANGE,
        slurmctldPort: SLURMCTLD_PORT,
        slurmdPort: SLURMD_PORT,
        ports: schedulerPorts(s.homeNfs),
    };
}

/**
 * slurmd and srun talk to slurmctld (6817); slurmctld and srun reach slurmd on every node (6818); slurmstepd on the
 * nodes connects back to srun on SrunPortRange wherever srun runs (head node or a node); NFSv4 on TCP 2049 from the
 * nodes to the head node when it exports /home.
 * source: https://slurm.schedmd.com/network.html (the ports each daemon listens on and who connects to them);
 * RFC 7530 §3.1 (NFSv4 over TCP port 2049)
 */
export function schedulerPorts(homeNfs: boolean): SlurmPlan["ports"] {
    return [
        { from: SLURMCTLD_PORT, to: SLURMCTLD_PORT, between: "nodes->controller", why: "slurmctld (slurmd, srun, sbatch)" },
        { from: SLURMD_PORT, to: SLURMD_PORT, between: "both", why: "slurmd on every node (from slurmctld and srun)" },
        { from: SRUN_PORT_RANGE[0], to: SRUN_PORT_RANGE[1], between: "both", why: "srun's ports (SrunPortRange), reached by slurmstepd" },
        ...(homeNfs ? [{ from: 2049, to: 2049, between: "nodes->controller" as const, why: "NFSv4: /home exported by the head node" }] : []),
    ];
}

/** /dev/nvidia0 … /dev/nvidia<N-1>: the device nodes of the GPUs (gres.conf File=, no NVML plugin needed). */
export function gpuFiles(count: number): string {
    return count <= 1 ? "/dev/nvidia0" : `/dev/nvidia[0-${count - 1}]`;
}

function withMargin(mib: number): number {
    return Math.floor(mib * (1 - REAL_MEMORY_MARGIN));
}

function nodeShape(spec: ClusterSpec, gpus: number): SlurmNodeShape {
    const base = { gpus, gpuFiles: gpuFiles(gpus) };
    if (spec.fabric === "aws-efa") {
        const t = AWS_HOST_CPU_MEMORY[spec.aws!.instanceType];
        if (t) {
            return {
                ...base, cpus: t.vcpus, coresPerSocket: t.cores, sockets: 1, threadsPerCore: t.threadsPerCore,
                realMemoryMiB: withMargin(t.memoryMiB),
                source: `${t.source}; sockets not published: one socket of ${t.cores} cores (same core and thread totals as the host)`,
            };
        }
    } else if (spec.fabric === "azure-ib") {
        const z = AZURE_HOST_CPU_MEMORY[spec.azure!.vmSize];
        if (z) return { ...base, cpus: z.vcpus, realMemoryMiB: withMargin(z.memoryMiB), source: z.source };
    }
    // bare metal, or a cloud size without catalog figures: the spec's scheduler.node (slurm/spec.ts requires it there)
    const n = spec.scheduler.node;
    if (!n) throw new Error(`cluster ${spec.name}: cluster.scheduler.node is required (the kit has no CPU and memory figures for these nodes)`);
    return {
        ...base, cpus: n.cpus, sockets: n.sockets, coresPerSocket: n.coresPerSocket, threadsPerCore: n.threadsPerCore,
        realMemoryMiB: withMargin(n.realMemory), source: "cluster.scheduler.node (one GPU node's slurmd -C)",
    };
}

function topologyFor(spec: ClusterSpec): SlurmTopology {
    if (spec.fabric === "roce") return roceTopology(spec.roce!);
    if (spec.fabric === "aws-efa") {
        return { kind: "ec2", note: "from ec2:DescribeInstanceTopology of the running nodes at pulumi up (rdmakit slurm-config --ec2-topology offline)" };
    }
    return {
        kind: "flat",
        why: "Azure publishes no network topology for a VM to read (no counterpart of ec2:DescribeInstanceTopology); every node is in the one InfiniBand partition of its scale set",
    };
}

function addressesOf(hosts: { name: string; address: string }[], names: string[]): string[] {
    const byName = new Map(hosts.map((h) => [h.name, h.address]));
    return names.map((n) => byName.get(n)!);
}
