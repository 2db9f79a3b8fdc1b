/**
 * Slurm's configuration files from the plan, pure: slurm.conf, gres.conf, cgroup.conf, topology.conf.
 * Every value comes from plan.scheduler (components/plan/scheduler.ts); the slurm role writes these files as they are.
 *
 * HOW NODES JOIN (the slurm role relies on this):
 * - NodeName lines give no State or Reason (State=UNKNOWN, slurm.conf(5)'s default): slurmctld takes each node's state
 *   and reason from StateSaveLocation at every start and `scontrol reconfigure`, and a line's State=DRAIN would be
 *   applied again at each of them over the saved state, an operator's reason included (src/slurmctld/node_mgr.c
 *   load_all_node_state, its IS_NODE_UNKNOWN(node_ptr) branch, and read_config.c _restore_node_state, slurm-22-05-8-1
 *   .. slurm-25-11-7-1; test/slurm-alloc.test.ts on 22.05.8). So a head node reboot or a changed file keeps validated
 *   nodes in the partition and an operator's drain with its reason.
 * - A node is kept out until it is validated by the role instead: before its slurmd first starts, the node itself
 *   drains its name with NOT_VALIDATED_REASON (playbooks/roles/slurm/tasks/predrain.yml, after the head node's play
 *   has started slurmctld), and does not start slurmd where that drain cannot be made (fail closed).
 * - The validation gate runs `scontrol update nodename=<n> state=resume` for the nodes that passed preflight, health and
 *   their nccl-tests, and `scontrol update nodename=<n> state=drain reason="rdmakit health: <component>"` for the others.
 * - `ReturnToService=1`: a node that was only unreachable (DOWN, "Not responding") comes back by itself when its
 *   slurmd registers with a valid configuration; a drained node never does without `state=resume`.
 * slurm.schedmd.com/slurm.conf.html: NodeName State/Reason, ReturnToService; scontrol.html: update State=RESUME.
 */
import type { FabricPlan } from "../plan";
import type { SlurmPlan } from "../plan/scheduler";
import { hostlistChunks, pairedRanges } from "./hostlist";
import type { SlurmSwitch, SlurmTopology } from "./topology";

export const SLURM_FILE_NAMES = ["slurm.conf", "gres.conf", "cgroup.conf", "topology.conf"] as const;
export type SlurmFileName = (typeof SLURM_FILE_NAMES)[number];

/** Where the slurm role installs the health program and the task prolog (owned by the role). */
export const HEALTH_CHECK_PROGRAM = "/usr/local/sbin/rdmakit-slurm-health";
export const TASK_PROLOG = "/etc/slurm/rdmakit-task-prolog";
/**
 * How often slurmd runs the health program: every 5 minutes, CYCLE spreading the nodes over the interval so
 * 2,048 nodes do not probe at once. The program is the node-local quick grade (bounded, never DCGM diag).
 * source: https://slurm.schedmd.com/slurm.conf.html#OPT_HealthCheckInterval, #OPT_HealthCheckNodeState
 */
export const HEALTH_CHECK_INTERVAL_S = 300;
export const NOT_VALIDATED_REASON = "rdmakit: not validated yet";

/**
 * The Debian/Ubuntu packages' paths (the units and directories slurmctld/slurmd 22.05.8 install on Debian 12:
 * /lib/systemd/system/slurm{ctld,d}.service PIDFile=/run/slurm{ctld,d}.pid, /var/lib/slurm/{slurmctld,slurmd},
 * /var/log/slurm; checked on the installed packages). Ubuntu's packages are built from the same Debian source.
 */
const PATHS = {
    stateSave: "/var/lib/slurm/slurmctld",
    slurmdSpool: "/var/lib/slurm/slurmd",
    ctldPid: "/run/slurmctld.pid",
    slurmdPid: "/run/slurmd.pid",
    ctldLog: "/var/log/slurm/slurmctld.log",
    slurmdLog: "/var/log/slurm/slurmd.log",
};

/** The EC2 instance topology at `pulumi up` (or from --ec2-topology): the AWS response and which node each instance is. */
export interface Ec2Topology {
    /** DescribeInstanceTopology `Instances`, as parsed by parseEc2Topology (components/slurm/ec2-topology.ts) */
    instances: { instanceId: string; networkNodes: string[] }[];
    /** Slurm node name -> instance id */
    ids: Record<string, string>;
}

export interface SlurmConfOptions {
    /**
     * Overrides for a test harness that loads the files into a real slurmctld on the build machine: a private port,
     * state, log and pid paths in a scratch directory, this machine as the controller, root as SlurmUser, a private
     * munged socket. Production passes none of them.
     */
    paths?: Partial<typeof PATHS>;
    slurmctldPort?: number;
    controllerHost?: string;
    slurmUser?: string;
    mungeSocket?: string;
    /**
     * Cloud nodes' private addresses once known (`pulumi up`: node name -> IP), written as NodeAddr so slurmctld never
     * depends on name resolution; without them the names must resolve on the controller (/etc/hosts).
     */
    nodeAddresses?: Record<string, string>;
    /** The cloud head node's private address once known (`pulumi up`): SlurmctldHost=<name>(<address>), no name lookup. */
    controllerAddress?: string;
}

function slurm(plan: FabricPlan): SlurmPlan {
    if (plan.scheduler.type !== "slurm") throw new Error(`cluster ${plan.cluster} has scheduler.type none: there is no Slurm configuration to render`);
    return plan.scheduler;
}

function header(plan: FabricPlan, file: string): string {
    return `# ${file} for cluster ${plan.cluster}, rendered by rdmakit from its plan (components/slurm/render.ts).\n` +
        "# Rewritten on every `pulumi up`: change the stack config, not this file.\n";
}

function nodeLines(plan: FabricPlan, s: SlurmPlan, roceAddr: Map<string, string>): string[] {
    const n = s.node;
    const hw = [`CPUs=${n.cpus}`];
    if (n.sockets !== undefined) hw.push(`Sockets=${n.sockets}`);
    if (n.coresPerSocket !== undefined) hw.push(`CoresPerSocket=${n.coresPerSocket}`);
    if (n.threadsPerCore !== undefined) hw.push(`ThreadsPerCore=${n.threadsPerCore}`);
    hw.push(`RealMemory=${n.realMemoryMiB}`);
    if (n.gpus > 0) hw.push(`Gres=gpu:${n.gpus}`);
    // no State: the saved state wins at every slurmctld start (HOW NODES JOIN above)
    const tail = hw.join(" ");
    // nodes at known addresses (bare metal: the spec's; clouds at up: the private IPs) as NodeName/NodeAddr range pairs;
    // without addresses the names must resolve on the controller, and compress into hostlist ranges. Either way the
    // file stays a few lines for sequentially numbered hosts: it travels in every node's own inventory (node-local)
    if (roceAddr.size > 0) {
        return pairedRanges(s.nodeNames, s.nodeNames.map((n) => roceAddr.get(n)!)).map((r) => `NodeName=${r.names} NodeAddr=${r.addrs} ${tail}`);
    }
    return hostlistChunks(s.nodeNames).map((list) => `NodeName=${list} ${tail}`);
}

/** A CPU's share of a node's RealMemory (MiB, rounded down): what a job that names no memory gets per allocated CPU. */
export function defMemPerCpu(s: SlurmPlan): number {
    return Math.max(1, Math.floor(s.node.realMemoryMiB / s.node.cpus));
}

/**
 * The CPUs a job gets per GPU it asks for when it names no CPUs (slurm.conf DefCpuPerGPU): the node's CPUs shared over
 * its GPUs, rounded down to whole cores (CR_Core allocates cores, so a share of 7 CPUs on a two-thread core would take 4
 * cores and 8 GPUs would want more cores than the node has). Without it a job of `--gres=gpu:8 --ntasks-per-node=1`
 * gets one core (CR_Core: one CPU per task, rounded up to its core) and ConstrainCores fences the training process,
 * its data loaders and NCCL's proxy threads on it: seen on Debian 12's slurmctld/slurmd 22.05.8 (2 CPUs of 224 on the
 * node line; 28 x 8 = 224 with DefCpuPerGPU=28; test/slurm-alloc.test.ts). Applied only when the job gives neither
 * --cpus-per-task nor --cpus-per-gpu (slurm.conf(5) DefCpuPerGPU; src/plugins/select/cons_common/job_test.c
 * _set_gpu_defaults, slurm-22-05-8-1); its memory follows from DefMemPerCPU per allocated CPU. 0: no GPUs, or fewer
 * cores than GPUs (no line).
 */
export function defCpuPerGpu(s: SlurmPlan): number {
    const n = s.node;
    if (n.gpus <= 0) return 0;
    const threads = n.threadsPerCore ?? 1;
    return Math.floor(Math.floor(n.cpus / threads) / n.gpus) * threads;
}

/** slurm.conf: the cluster, the controller, the plugins an RDMA GPU cluster needs, the nodes and the partition. */
export function renderSlurmConf(plan: FabricPlan, opts: SlurmConfOptions = {}): string {
    const s = slurm(plan);
    const p = { ...PATHS, ...opts.paths };
    const c = { ...s.controller, ...(opts.controllerAddress ? { address: opts.controllerAddress } : {}) };
    const roceAddr = new Map(opts.nodeAddresses ? Object.entries(opts.nodeAddresses) : (s.nodeAddresses ?? []).map((a, i) => [s.nodeNames[i], a]));
    const lines = [
        header(plan, "slurm.conf"),
        `ClusterName=${plan.cluster}`,
        opts.controllerHost ? `SlurmctldHost=${opts.controllerHost}` : c.address ? `SlurmctldHost=${c.name}(${c.address})` : `SlurmctldHost=${c.name}`,
        `SlurmctldPort=${opts.slurmctldPort ?? s.slurmctldPort}`,
        `SlurmdPort=${s.slurmdPort}`,
        `SrunPortRange=${s.srunPortRange[0]}-${s.srunPortRange[1]}`,
        "AuthType=auth/munge",
        ...(opts.mungeSocket ? [`AuthInfo=socket=${opts.mungeSocket}`] : []),
        "CredType=cred/munge",
        `SlurmUser=${opts.slurmUser ?? "slurm"}`,
        `StateSaveLocation=${p.stateSave}`,
        `SlurmdSpoolDir=${p.slurmdSpool}`,
        `SlurmctldPidFile=${p.ctldPid}`,
        `SlurmdPidFile=${p.slurmdPid}`,
        `SlurmctldLogFile=${p.ctldLog}`,
        `SlurmdLogFile=${p.slurmdLog}`,
        "",
        "# scheduling: whole cores and memory as consumable resources, GPUs as gres",
        "SchedulerType=sched/backfill",
        "SelectType=select/cons_tres",
        "SelectTypeParameters=CR_Core_Memory",
        // memory is consumable: a job that names none would take the node's whole RealMemory (DefMemPerCPU's default is
        // 0, unlimited) and keep every other job off its idle GPUs; each CPU brings its share instead (slurm.conf(5)
        // CR_Core_Memory: "Setting a value for DefMemPerCPU is strongly recommended")
        `DefMemPerCPU=${defMemPerCpu(s)}`,
        // a job asking for GPUs gets their share of the node's cores (and so of its memory), not one core per task
        ...(defCpuPerGpu(s) > 0 ? [`DefCpuPerGPU=${defCpuPerGpu(s)}`] : []),
        "GresTypes=gpu",
        // task/cgroup before task/affinity: on cgroup v2 with a kernel before 6.2 (Debian 12 runs 6.1) setting up the
        // cgroup resets the CPU mask task/affinity set, so affinity must come last (slurm.conf(5) TaskPlugin NOTE from
        // 23.02; SchedMD/slurm d4023fa477 "Sort the TaskPlugin list reverse-alphabetically", bug 16122; 22.05 keeps the order given)
        "# jobs in cgroups, bound to their cores",
        "ProctrackType=proctrack/cgroup",
        "TaskPlugin=task/cgroup,task/affinity",
        "# RDMA registers job memory: jobs keep slurmd's unlimited memlock (its unit sets LimitMEMLOCK=infinity), not the",
        "# submitting shell's (slurm.schedmd.com/faq.html#memlock); and slurmd's open-files limit (LimitNOFILE=131072 in",
        "# Debian 12's slurmd.service), not a login shell's usual 1024, which a training job's data-loader workers pass",
        "PropagateResourceLimitsExcept=MEMLOCK,NOFILE",
        `MpiDefault=${s.mpiDefault}`,
        "",
        "# nodes drain themselves before their first slurmd start and join after rdmakit validated them (render.ts",
        "# header); unreachable nodes come back by themselves",
        "ReturnToService=1",
        `HealthCheckProgram=${HEALTH_CHECK_PROGRAM}`,
        `HealthCheckInterval=${HEALTH_CHECK_INTERVAL_S}`,
        "HealthCheckNodeState=ANY,CYCLE",
        `TaskProlog=${TASK_PROLOG}`,
    ];
    if (s.topology.kind === "tree" || s.topology.kind === "ec2") lines.push("TopologyPlugin=topology/tree");
    lines.push("", `# CPUs and memory: ${s.node.source}; RealMemory 95 % of that figure (plan/scheduler.ts REAL_MEMORY_MARGIN)`);
    lines.push(...nodeLines(plan, s, roceAddr));
    lines.push(`PartitionName=${s.partition} Nodes=ALL Default=YES MaxTime=INFINITE State=UP`);
    return lines.join("\n") + "\n";
}

/**
 * gres.conf: the GPUs by device file. Debian and Ubuntu main build Slurm without NVML (no gpu_nvml plugin in
 * Debian 12's slurm-wlm-basic-plugins, scheduler.md §3), so AutoDetect=nvml would find 0 GPUs and drain every node
 * ("gres/gpu count reported lower than configured"); the files are listed instead, the same on every node.
 */
export function renderGresConf(plan: FabricPlan): string {
    const s = slurm(plan);
    const lines = [header(plan, "gres.conf"), "AutoDetect=off"];
    if (s.node.gpus > 0) lines.push(`Name=gpu File=${s.node.gpuFiles}`);
    return lines.join("\n") + "\n";
}

/** cgroup.conf: jobs confined to their cores, memory and GPU devices (ConstrainDevices makes --gpus binding real). */
export function renderCgroupConf(plan: FabricPlan): string {
    slurm(plan);
    return [
        header(plan, "cgroup.conf"),
        // autodetect picks cgroup v1 or v2 from the host's mount (Debian 12 and Ubuntu 22.04+ run v2); cgroup/v2 exists
        // from Slurm 22.05 only: on an older release the role tracks jobs by process instead (playbooks/roles/slurm/tasks/cgroup.yml)
        "CgroupPlugin=autodetect",
        "ConstrainCores=yes",
        "ConstrainRAMSpace=yes",
        "ConstrainDevices=yes",
    ].join("\n") + "\n";
}

function switchLines(switches: SlurmSwitch[]): string[] {
    const out: string[] = [];
    for (const sw of switches) {
        // the members of a many-switch name (`leaf-r0-0_and_7_more`) are in plan.json (plan.scheduler.topology), not
        // here: the file travels in every node's own inventory (node-local mode), so it stays lean
        if (sw.nodes) out.push(`SwitchName=${sw.name} Nodes=${hostlistChunks(sw.nodes, Number.MAX_SAFE_INTEGER)[0] ?? ""}`);
        else out.push(`SwitchName=${sw.name} Switches=${(sw.switches ?? []).join(",")}`);
    }
    return out;
}

/** topology.conf: the tree the plan derived (RoCE), the EC2 tree (given the instance topology), or flat with why. */
export function renderTopologyConf(plan: FabricPlan, ec2?: Ec2Topology): string {
    const s = slurm(plan);
    const t: SlurmTopology = s.topology.kind === "ec2" && ec2 ? ec2Tree(s.nodeNames, ec2) : s.topology;
    const lines = [header(plan, "topology.conf")];
    if (t.kind === "tree") {
        lines.push(`# source: ${t.source}`, ...t.warnings.map((w) => `# warning: ${w}`), ...switchLines(t.switches));
    } else if (t.kind === "flat") {
        lines.push(`# flat: ${t.why}`);
    } else {
        // no instance topology read yet: every node under one switch, which topology/tree accepts
        lines.push(`# ${t.note}; not read yet: all nodes under one switch`, `SwitchName=ec2-all Nodes=${hostlistChunks(s.nodeNames, Number.MAX_SAFE_INTEGER)[0]}`);
    }
    return lines.join("\n") + "\n";
}

/**
 * The EC2 tree: each instance's NetworkNodes run from the top layer to the one it attaches to (AWS, "How EC2
 * instance topology works"), so the last is the leaf switch and each earlier one the parent of the next. Nodes the
 * response does not list yet (the API is eventually consistent right after launch, and lists running instances only)
 * go under `ec2-unplaced`, and a root joins the top switches so every node stays schedulable; the warning names them.
 */
export function ec2Tree(nodeNames: string[], ec2: Ec2Topology): SlurmTopology {
    const byId = new Map(ec2.instances.map((i) => [i.instanceId, i.networkNodes]));
    const children = new Map<string, Set<string>>();
    const leafNodes = new Map<string, string[]>();
    const tops = new Set<string>();
    const unplaced: string[] = [];
    for (const name of nodeNames) {
        const id = ec2.ids[name];
        const nns = id === undefined ? undefined : byId.get(id);
        if (!nns || nns.length === 0) {
            unplaced.push(name);
            continue;
        }
        tops.add(nns[0]);
        for (let i = 1; i < nns.length; i++) children.set(nns[i - 1], (children.get(nns[i - 1]) ?? new Set()).add(nns[i]));
        const leaf = nns[nns.length - 1];
        leafNodes.set(leaf, [...(leafNodes.get(leaf) ?? []), name]);
    }
    const switches: SlurmSwitch[] = [];
    for (const [leaf, nodes] of leafNodes) switches.push({ name: leaf, nodes });
    for (const [parent, kids] of children) switches.push({ name: parent, switches: [...kids] });
    const warnings: string[] = [];
    if (unplaced.length > 0) {
        switches.push({ name: "ec2-unplaced", nodes: unplaced });
        warnings.push(`${unplaced.length} node(s) not in the DescribeInstanceTopology response (not running yet, or not visible yet: the API is eventually consistent): ${unplaced.slice(0, 5).join(", ")}${unplaced.length > 5 ? ", ..." : ""}`);
    }
    const roots = [...tops, ...(unplaced.length > 0 ? ["ec2-unplaced"] : [])];
    if (roots.length > 1) switches.push({ name: "ec2-root", switches: roots });
    if (switches.length === 0) return { kind: "flat", why: "no node is in the instance topology" };
    return { kind: "tree", switches, warnings, source: "ec2:DescribeInstanceTopology NetworkNodes" };
}

/** The four files, by name. */
export function slurmFiles(plan: FabricPlan, ec2?: Ec2Topology, opts?: SlurmConfOptions): Record<SlurmFileName, string> {
    return {
        "slurm.conf": renderSlurmConf(plan, opts),
        "gres.conf": renderGresConf(plan),
        "cgroup.conf": renderCgroupConf(plan),
        "topology.conf": renderTopologyConf(plan, ec2),
    };
}

/**
 * The group variables the slurm role reads (contract: slurm_enabled, slurm_files, slurm_job_env,
 * slurm_controller_address, slurm_home_nfs). The files are cluster-wide, so they travel once, as group variables
 * (no per-host copies). On the clouds the controller address is known only at `pulumi up`: "" here.
 */
export function slurmAnsibleVars(plan: FabricPlan): Record<string, unknown> {
    const s = slurm(plan);
    return {
        slurm_enabled: true,
        slurm_files: slurmFiles(plan),
        slurm_job_env: s.jobEnv,
        slurm_controller_name: s.controller.name,
        slurm_controller_address: s.controller.address ?? "",
        slurm_home_nfs: s.homeNfs,
        slurm_partition: s.partition,
        // the reason a node drains itself with before its first slurmd start (tasks/predrain.yml), which the gate resumes
        slurm_not_validated_reason: NOT_VALIDATED_REASON,
        // the health program's Xid window, the health gate's (components/health/grade.ts)
        slurm_health_xid_window_s: plan.validation.health.xidWindowMinutes * 60,
    };
}
