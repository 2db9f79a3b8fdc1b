/**
 * ClusterValidation: after provisioning, runs playbooks/validate.yml (preflight, single-node, all-node, pairs)
 * and grades the fetched logs with `rdmakit nccl-report`; a failed verdict fails `pulumi up` with the report.
 * Thin: the decisions (commands, schedule, grading) are the pure functions of this folder.
 */
import { createHash } from "crypto";
import * as fs from "fs";
import * as path from "path";
import * as pulumi from "@pulumi/pulumi";
import * as command from "@pulumi/command";
import { SpecError, toInputPropertiesError, type SpecIssue } from "../errors";
import { type AnsibleRunInput, keepNodeTargets, RUN_INTERPRETER, runChild, runInputDigests, SSH_KEY_PRELUDE, unpackRunInput } from "../provision/ansible";
import { NODE_SEND_BOUND_LINES, nodeSendEnv } from "../provision/node-send";
import { keepInput } from "../kept-input";
import { serveSshKey } from "../provision/keysocket";
import { summariserScript } from "../provision/summarise";
import { buildNcclCommands, fillPairTemplate, firstDuplicate, MPIRUN_SSH_DIR, type Fabric, type MpiCommand, type NcclCommandInput } from "./commands";
import { cleanReason, VALIDATION_RESERVATION } from "../slurm/gate";
import { compressHostlist } from "../slurm/hostlist";
import { planIncast, receiverCommand, senderCommand, snapshotCommand, type IncastPlan } from "./incast";
import { rpReadCommand, rpWriteCommand } from "./incast-rpoff";
import { planPairRounds } from "./slow";
import type { Expectation } from "./types";
import { fabricOfPlan } from "./fabric";
import { DEFAULT_DCGM_LEVEL, type HealthExpectation } from "../health/types";
import { PACKAGE_ROOT } from "../assets";
import type { AnsibleMode } from "../types";
import { hashFolder } from "../provision/ansible";
import { buildBundle, bundleDigest } from "../provision/bundle";
import { fanoutScript } from "../provision/fanout";
import type { ValidationNodes } from "../day2/state";
import { srunCommand, type SlurmLaunch } from "./srun";
import { SLURM_GATE_FILE } from "./cli";

/** What the incast needs from the plan besides the node addresses (validationVars pairs them with mpiHosts). */
export interface IncastArgs {
    /** RoCE priority (PFC runs on it in lossless mode) */
    priority: number;
    /** GRH traffic class: the ToS the hosts send RoCE with (DSCP << 2 | ECT(0)) */
    trafficClass: number;
    /** RoCEv2 GID index the host role verifies */
    gidIndex: number;
    mode: "lossless" | "lossy";
    /** the rails' line rate (Gb/s): the incast's throughput floor is a fraction of it (incast.ts) */
    lineRateGbps?: number;
    /** the incast rail of each host, by host name (fromPlan.ts picks it) */
    rails: Record<string, IncastRail>;
}

/** The incast rail of one host: RDMA device, its netdev when the spec names it, its leaf when the plan knows it. */
export interface IncastRail {
    device: string;
    netdev?: string;
    leaf?: string;
    /** the host's own GID index (hosts[i].gidIndex) */
    gidIndex?: number;
}

/** The incast as validate.yml runs it: the plan (plan.json beside the counters) and each participant's commands. */
export interface IncastVars {
    plan: IncastPlan;
    /** every participant: receiver first, then the senders */
    hosts: string[];
    receiver_cmd: string;
    /** by sender host name */
    sender_cmds: Record<string, string>;
    /** by host name: the counter snapshot before and after */
    snapshot_cmds: Record<string, string>;
    /**
     * Lossless only, by sender: its roce_rp enable file's read, off (write 0, print it back) and restore commands
     * (`restore_on` / `restore_off`, by the value read) for the reaction-point-off phase (incast-rpoff.ts).
     */
    rp_cmds?: Record<string, { read: string; off: string; restore_on: string; restore_off: string }>;
}

/** What the preflight checks compare against on every node (from the plan / catalog). */
export interface PreflightExpectation {
    /** GPUs nvidia-smi must list. */
    gpus: number;
    /** RDMA devices: EFA devices (`fi_info -p efa`) or IB/RoCE ports in state ACTIVE. */
    rdmaDevices: number;
    /** Per-port rate for IB/RoCE (Gb/s, sysfs `rate`); not checked on EFA. */
    portRateGbps?: number;
    /** Only IB devices whose name matches count (e.g. `^mlx5_ib` on Azure, which also has `mlx5_an0`). @default ".*" */
    rdmaDevicePattern?: string;
    /** GPUDirect path: `peermem` (nvidia_peermem / efa_nv_peermem loaded), `dmabuf`, `either`, `none`. */
    gpudirect: "peermem" | "dmabuf" | "either" | "none";
    /** NVSwitch systems need nvidia-fabricmanager active. */
    nvswitch: boolean;
}

/**
 * What the validation runs: every value `validationVars` reads. Plain values from the plan
 * (`validationArgsFromPlan` in ./fromPlan.ts builds them for `pulumi up` and `rdmakit plan` alike).
 */
export interface ValidationRunArgs extends Pick<NcclCommandInput, "fabric" | "gpusPerNode" | "ncclEnv" | "nccltestsDir" | "mpiHome"> {
    /** Stack name; reports go to `out/<stack>/`, logs to `out/<stack>/nccl/`. */
    stack: string;
    /**
     * Inventory group holding the GPU nodes.
     * @default "gpu_nodes"
     */
    group?: string;
    /** Inventory host names in placement order. Plain: it decides the pair schedule. */
    hosts: string[];
    /** Thresholds from the plan: all-node, single-node (NVLink) and pair runs. */
    expectations: { all: Expectation; single?: Expectation; pair?: Expectation };
    /**
     * The one message size (bytes) of every fixed-size run: single node, all nodes and pairs (`-b F -e F`). Each
     * expectation grades rows from its `gradeFromBytes`, so this must be at least the largest of them
     * (plan.validation.fixedBytes).
     */
    fixedBytes: number;
    /**
     * Largest size (bytes) of the all-node sweep `-b 8 -e S -f 2`; a power of two so that the doubling reaches it
     * (plan.validation.maxBytes).
     */
    sweepMaxBytes: number;
    preflight: PreflightExpectation;
    /**
     * Pairwise runs: `auto` when the all-node fixed-size run is below `expectations.all.minBusbwGBps`.
     * @default "auto"
     */
    pairwise?: "auto" | "always" | "never";
    /**
     * RoCE only: the N→1 incast after nccl-tests (./incast.ts), from the plan. Absent on EFA and InfiniBand, where
     * the congestion response is not the kit's to prove (see incast.ts).
     */
    incast?: IncastArgs;
    /** @default 20 */
    iters?: number;
    /** @default 1200 */
    timeoutSeconds?: number;
    /**
     * What every node's health captures (playbooks/roles/node_health) are graded against (components/health): from
     * the plan. A node failing it is a bad node, like one failing a preflight check. @default not graded
     */
    health?: HealthExpectation;
    /**
     * Where validation's per-node plays (the health captures, the preflight checks, the software report) run
     * (plan.provision.mode): `node-local`, each node runs them on itself from the bundle and sends its results back
     * (the node-local fan-out, components/provision/fanout.ts); `controller`, ansible-playbook here pushes them. The
     * nccl-tests launches run from here in both. @default "node-local"
     */
    mode?: AnsibleMode;
    /**
     * Slurm runs on the nodes (plan.scheduler): the all-node runs are launched by `srun --mpi=<PMIx>` from the head node
     * (srun.ts) when the run's inventory holds it (`slurm_head_in_inventory`), and the gate resumes the nodes that passed
     * and drains the others (components/slurm/gate.ts). @default mpirun from the first node, no gate
     */
    slurm?: SlurmLaunch;
    /**
     * Nodes that may fail their health grade or preflight checks and be left out of the all-node runs, pairs and
     * incast (select.ts), named in the report and drained under Slurm, without failing the run
     * (cluster.validation.maxFailedNodes). More: a failed preflight stops the run before nccl-tests. @default 0
     */
    maxFailedNodes?: number;
}

/** ClusterValidation's arguments: what runs, plus how the nodes are reached and what a failure does. */
export interface ClusterValidationArgs extends ValidationRunArgs {
    /**
     * The Ansible inventory text the provisioning run used (renderInventory). It travels on the command's stdin, so
     * validation runs again on a fresh checkout without a file from an earlier run.
     */
    inventory: pulumi.Input<string>;
    /**
     * SSH private key for the nodes (and the bastion); kept secret and out of the command's inputs, served by the
     * program to the run's own agent (provision/keysocket.ts) for the run only.
     */
    sshPrivateKey: pulumi.Input<string>;
    /**
     * Anything whose change should re-run the validation, e.g. the provisioning run's digest.
     * @default none
     */
    rerunOn?: pulumi.Input<string>;
    /** Addresses mpirun reaches the nodes by, in the order of `hosts` (private IPs). @default hosts */
    mpiHosts?: pulumi.Input<pulumi.Input<string>[]>;
    /**
     * Host public keys every node presents, as the stack pinned them (`ssh-ed25519 AAAA...`): the launchers' known_hosts
     * for mpirun is built from them. @default none: from each node's own host key files, read over Ansible's connection
     */
    hostKeys?: pulumi.Input<string[]>;
    /**
     * Fail `pulumi up` when the report fails.
     * @default true
     */
    failOnFailure?: boolean;
    /**
     * Nodes left out of the cluster's Ansible steps (cluster.ansible.exclude), not in `hosts`: the report says that
     * the verdict is about the other nodes and names these.
     * @default []
     */
    excludedNodes?: string[];
    /**
     * Nodes Ansible works on at once (`ANSIBLE_FORKS`; plan.provision.forks): the single-node runs and each round
     * of pairs run on this many nodes together.
     * @default ansible.cfg's forks
     */
    forks?: number;
    /**
     * Repository root (where `playbooks/`, `bin/` and `out/` are); a relative path is taken from the working
     * directory.
     * @default the installed rdmakit package (PACKAGE_ROOT, components/assets.ts)
     */
    repoRoot?: string;
}

/** Result line printed by `nccl-report --result-line`. */
export interface ValidationResult {
    pass: boolean;
    busbwGBps: number | null;
    sizeBytes: number | null;
    slowNodes: string[];
    /** Nodes that failed a preflight check (validate.yml's per-node results). */
    badNodes?: string[];
    /** When the report was made (ISO 8601). */
    at?: string;
    /** Nodes whose own (single-node) nccl-tests run failed. */
    failedNodes?: string[];
    /** Each node's health verdict and first findings (when the health captures were graded). */
    health?: ValidationNodes["health"];
}

export const RESULT_PREFIX = "rdmakit-result: ";
/** The line VALIDATE_SCRIPT prints once the Slurm gate ran on the head node: slurm-gate.json as applied. */
export const GATE_PREFIX = "rdmakit-gate: ";

/** What the Slurm gate did, from its line in the command output; null when it did not run. Pure, bounded. */
export function parseGateLine(stdout: string | undefined): { resumed: string[]; drained: Array<{ node: string; reason: string }> } | null {
    const line = (stdout ?? "").split("\n").filter((l) => l.startsWith(GATE_PREFIX)).pop();
    if (line === undefined) return null;
    try {
        const v = JSON.parse(line.slice(GATE_PREFIX.length)) as { slurm_gate_resume?: unknown; slurm_gate_drain?: unknown };
        const resumed = Array.isArray(v.slurm_gate_resume) ? v.slurm_gate_resume.filter((n): n is string => typeof n === "string") : [];
        const drained = Array.isArray(v.slurm_gate_drain)
            ? v.slurm_gate_drain.filter((d): d is { node: string; reason: string } => typeof d?.node === "string" && typeof d?.reason === "string")
                .map((d) => ({ node: d.node, reason: cleanReason(d.reason) }))
            : [];
        return { resumed, drained };
    } catch {
        return null;
    }
}

/** Reads the last result line from the command output. Pure. */
export function parseResultLine(stdout: string | undefined): ValidationResult | null {
    const lines = (stdout ?? "").split("\n").filter((l) => l.startsWith(RESULT_PREFIX));
    if (lines.length === 0) return null;
    try {
        return JSON.parse(lines[lines.length - 1].slice(RESULT_PREFIX.length)) as ValidationResult;
    } catch {
        return null;
    }
}

function checkExpectation(e: Expectation | undefined, p: string, issues: SpecIssue[]): void {
    if (e === undefined) return;
    if (!(e.minBusbwGBps >= 0)) issues.push({ path: `${p}.minBusbwGBps`, message: "must be a number >= 0", value: e.minBusbwGBps });
    if (!(e.gradeFromBytes >= 0)) issues.push({ path: `${p}.gradeFromBytes`, message: "must be a number >= 0", value: e.gradeFromBytes });
    if (!["efa", "ib", "any"].includes(e.transport)) issues.push({ path: `${p}.transport`, message: "unknown transport", value: e.transport, allowed: "efa | ib | any" });
}

/** A power of two of at least 8 (2^3): the sizes a `-b 8 -f 2` sweep visits. */
function isSweepSize(n: number): boolean {
    return Number.isSafeInteger(n) && n >= 8 && 2 ** Math.round(Math.log2(n)) === n;
}

/** Checks the arguments; every problem at once. */
export function validateArgs(args: ValidationRunArgs): SpecIssue[] {
    const issues: SpecIssue[] = [];
    if (!/^[A-Za-z0-9._-]+$/.test(args.stack)) issues.push({ path: "stack", message: "may only hold letters, digits and . _ -", value: args.stack });
    if (args.hosts.length === 0) issues.push({ path: "hosts", message: "must list at least one node", value: args.hosts });
    const dup = firstDuplicate(args.hosts);
    if (dup !== undefined) issues.push({ path: "hosts", message: `lists ${dup} twice`, value: dup });
    if (args.hosts.some((h) => h.includes("+") || h.includes("/"))) issues.push({ path: "hosts", message: "host names cannot hold + or /", value: args.hosts });
    args.hosts.forEach((h, i) => {
        // inventory names (renderInventory's rule): they become log file names and Ansible host patterns
        if (!/^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(h)) issues.push({ path: `hosts[${i}]`, message: "is not an inventory host name", value: h, allowed: "letters, digits, '.', '_', '-' (not first)" });
    });
    if (args.group !== undefined && !/^[A-Za-z_][A-Za-z0-9_]*$/.test(args.group)) {
        issues.push({ path: "group", message: "is not an Ansible group name", value: args.group, allowed: "[A-Za-z_][A-Za-z0-9_]*" });
    }
    for (const k of ["nccltestsDir", "mpiHome"] as const) {
        // they go into every mpirun line (quoted) and into file paths on the nodes: absolute, no shell or control characters
        if (!/^\/[A-Za-z0-9._+/-]*$/.test(args[k])) issues.push({ path: k, message: "must be an absolute path of letters, digits and . _ + / -", value: args[k] });
    }
    for (const [k, v] of Object.entries(args.ncclEnv)) {
        // quoted in the shell line, marked unsafe for Ansible; a control character (a newline) has no place in either
        if (typeof v !== "string" || /\p{Cc}/u.test(v)) issues.push({ path: `ncclEnv.${k}`, message: "must be a one-line string without control characters", value: v });
    }
    if (!Number.isInteger(args.gpusPerNode) || args.gpusPerNode < 1) issues.push({ path: "gpusPerNode", message: "must be an integer >= 1", value: args.gpusPerNode });
    checkExpectation(args.expectations.all, "expectations.all", issues);
    checkExpectation(args.expectations.single, "expectations.single", issues);
    checkExpectation(args.expectations.pair, "expectations.pair", issues);
    if (!Number.isInteger(args.preflight.gpus) || args.preflight.gpus < 1) issues.push({ path: "preflight.gpus", message: "must be an integer >= 1", value: args.preflight.gpus });
    if (!Number.isInteger(args.preflight.rdmaDevices) || args.preflight.rdmaDevices < 0) issues.push({ path: "preflight.rdmaDevices", message: "must be an integer >= 0", value: args.preflight.rdmaDevices });
    if (args.pairwise !== undefined && !["auto", "always", "never"].includes(args.pairwise)) issues.push({ path: "pairwise", message: "unknown mode", value: args.pairwise, allowed: "auto | always | never" });
    if (args.slurm !== undefined) {
        const { head, partition, mpi } = args.slurm;
        // an inventory name (validate.yml's host pattern), a partition and a plugin name (srun arguments): plain words
        if (!/^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(head)) issues.push({ path: "slurm.head", message: "is not an inventory host name", value: head });
        if (args.hosts.includes(head)) issues.push({ path: "slurm.head", message: "is one of the GPU nodes: the head node launches their runs and is no node itself", value: head });
        if (!/^[A-Za-z0-9_-]{1,64}$/.test(partition)) issues.push({ path: "slurm.partition", message: "is not a Slurm partition name", value: partition, allowed: "letters, digits, _ -" });
        if (!/^[a-z0-9_]{1,32}$/.test(mpi)) issues.push({ path: "slurm.mpi", message: "is not an srun --mpi plugin name", value: mpi, allowed: "e.g. pmix, pmix_v4" });
    }
    if (args.maxFailedNodes !== undefined && (!Number.isInteger(args.maxFailedNodes) || args.maxFailedNodes < 0 || (args.maxFailedNodes > 0 && args.maxFailedNodes > args.hosts.length - 2))) {
        issues.push({ path: "maxFailedNodes", message: "must leave at least two hosts for the all-node runs", value: args.maxFailedNodes, allowed: `an integer from 0 to ${Math.max(0, args.hosts.length - 2)}` });
    }
    issues.push(...sizeIssues(args));
    return issues;
}

/**
 * The fixed runs must hold every size an expectation grades (a log with no row at or above `gradeFromBytes` fails),
 * and the sweep must end at its largest size: nccl-tests visits `-b`, `-b*f`, ... while `<= -e` (NVIDIA/nccl-tests
 * src/common.cu, the benchmark loop), so from 8 with factor 2 only a power of two is reached exactly.
 */
function sizeIssues(args: ValidationRunArgs): SpecIssue[] {
    const issues: SpecIssue[] = [];
    const { fixedBytes: fixed, sweepMaxBytes: sweep } = args;
    const fixedOk = Number.isSafeInteger(fixed) && fixed >= 1;
    if (!fixedOk) issues.push({ path: "fixedBytes", message: "must be an integer >= 1 (bytes)", value: fixed });
    if (!isSweepSize(sweep)) {
        issues.push({
            path: "sweepMaxBytes", value: sweep,
            message: "must be a power of two >= 8: the sweep doubles from 8 bytes and would stop short of any other size",
            allowed: "e.g. 8589934592 (8 GiB) or 17179869184 (16 GiB); set cluster.validation.maxBytes accordingly",
        });
    } else if (fixedOk && fixed > sweep) {
        issues.push({ path: "fixedBytes", value: fixed, message: `is larger than sweepMaxBytes (${sweep}): the fixed runs would not fit the GPU memory the sweep is sized for` });
    }
    if (fixedOk) {
        for (const k of ["all", "single", "pair"] as const) {
            const e = args.expectations[k];
            if (e !== undefined && e.gradeFromBytes > fixed) {
                issues.push({
                    path: "fixedBytes", value: fixed,
                    message: `is below expectations.${k}.gradeFromBytes (${e.gradeFromBytes}): the ${k === "all" ? "all-node" : k === "single" ? "single-node" : "pair"} ` +
                        "fixed-size run would hold no graded size and always fail",
                    allowed: `>= ${e.gradeFromBytes} (plan.validation.fixedBytes is the largest gradeFromBytes)`,
                });
            }
        }
    }
    return issues;
}

/** A GPU node as validate.yml sees it: its inventory name (log names, pairs) and the address mpirun reaches it by. */
export interface ValidationHost {
    name: string;
    address: string;
}

/**
 * The variables validate.yml receives (playbooks/roles/nccl_validate/meta/argument_specs.yml). Only
 * `nccl_validate_hosts` and `nccl_validate_pair_rounds` grow with the node count, by a few bytes per node: the role
 * renders the hostfile from the host list and each pair's command from the one `nccl_validate_pair_cmd`, so 1,000
 * nodes do not repeat a 700-byte command line 1,000 times.
 */
export interface ValidationVars {
    nccl_validate_group: string;
    nccl_validate_out_dir: string;
    nccl_validate_fabric: Fabric;
    /** In placement order; the first launches the all-node runs. */
    nccl_validate_hosts: ValidationHost[];
    /** Slots per hostfile line (one rank per GPU). */
    nccl_validate_gpus_per_node: number;
    nccl_validate_hostfile_path: string;
    nccl_validate_single_cmd: string;
    nccl_validate_all_fixed_cmd: string;
    nccl_validate_all_sweep_cmd: string;
    nccl_validate_pairwise: "auto" | "always" | "never";
    /** The pair launch with PAIR_PLACEHOLDERS where the two addresses go (commands.ts pairTemplate). */
    nccl_validate_pair_cmd: string;
    /** Rounds of disjoint pairs, each pair `[a, b]` as indexes into `nccl_validate_hosts`; `a` launches. */
    nccl_validate_pair_rounds: Array<Array<[number, number]>>;
    nccl_validate_expected_gpus: number;
    nccl_validate_expected_rdma_devices: number;
    nccl_validate_expected_port_rate_gbps: number;
    nccl_validate_rdma_device_pattern: string;
    nccl_validate_gpudirect: PreflightExpectation["gpudirect"];
    nccl_validate_nvswitch: boolean;
    nccl_validate_check_pkey: boolean;
    /** Run the image's Azure HPC node health checks before nccl-tests (Azure; skipped where the script is absent). */
    nccl_validate_health_checks: boolean;
    /** RoCE: the incast (absent when the fabric has none or fewer than three hosts) */
    nccl_validate_incast?: IncastVars;
    /** The launchers' folder for the run's mpirun key and known_hosts (commands.ts MPIRUN_SSH_DIR, which mpirun reads). */
    nccl_validate_ssh_dir: string;
    /** Host public keys every node presents (the stack's pinned ones); [] reads each node's own. */
    nccl_validate_host_keys: string[];
    /** The node_health role's `dcgmi diag -r` level: cluster.validation.health.dcgmLevel. */
    node_health_dcgm_level: number;
    /** Slurm on: the head node's inventory name, left out of every per-node play (it is no GPU node). */
    nccl_validate_head?: string;
    /**
     * Slurm on: the head node launches the all-node runs with srun (validate.yml, when the inventory holds the head);
     * `nodes` the Slurm names of the run's nodes, comma-separated (scontrol's NodeName list).
     */
    nccl_validate_slurm?: { head: string; reservation: string; nodes: string; fixed_cmd: string; sweep_cmd: string; launcher: string };
    /**
     * maxFailedNodes > 0 only: the all-node launches with the rank count (`-np @NP@`, commands.ts allNodeTemplates) and,
     * under Slurm, the node list and count (srun.ts SRUN_NODES) left open, which select.ts fills for the nodes that
     * remain when it leaves failed ones out.
     */
    nccl_validate_drop_templates?: { fixed_cmd: string; sweep_cmd: string; srun_fixed_cmd?: string; srun_sweep_cmd?: string };
    /** The nodes select.ts left out (its override file, `-e @file` after these): every per-node play skips them. */
    nccl_validate_dropped?: string[];
}

/**
 * The variables validate.yml receives. Pure: the component and `rdmakit plan` (components/artifacts.ts) both use it,
 * so the plan's nccl-commands.sh is what `pulumi up` runs. Throws SpecError on bad arguments.
 */
export function validationVars(args: ValidationRunArgs, mpiHosts: string[], outDir: string, hostKeys: string[] = []): ValidationVars {
    const issues = validateArgs(args);
    if (mpiHosts.length !== args.hosts.length) {
        issues.push({ path: "mpiHosts", message: `has ${mpiHosts.length} addresses for ${args.hosts.length} hosts`, value: mpiHosts });
    }
    hostKeys.forEach((k, i) => {
        // one line of the launchers' known_hosts each: a public key line and nothing that could start another entry
        if (!/^(ssh-ed25519|ecdsa-sha2-nistp(256|384|521)|ssh-rsa) [A-Za-z0-9+/]+={0,2}( [^\n\r]*)?$/.test(k)) {
            issues.push({ path: `hostKeys[${i}]`, message: "is not an SSH public key line", allowed: "ssh-ed25519 AAAA... [comment]" });
        }
    });
    if (issues.length) throw new SpecError(issues, "invalid validation arguments");
    const all = args.expectations.all;
    const cmds = buildNcclCommands({
        fabric: args.fabric, hosts: mpiHosts, gpusPerNode: args.gpusPerNode, ncclEnv: args.ncclEnv,
        nccltestsDir: args.nccltestsDir, mpiHome: args.mpiHome, fixedBytes: args.fixedBytes, sweepMaxBytes: args.sweepMaxBytes,
        iters: args.iters, timeoutSeconds: args.timeoutSeconds, minBusbwGBps: all.minBusbwGBps > 0 ? all.minBusbwGBps : undefined,
    });
    const index = new Map(args.hosts.map((h, i) => [h, i]));
    const rounds = planPairRounds(args.hosts).map((round) => round.map(([a, b]): [number, number] => [index.get(a) as number, index.get(b) as number]));
    const p = args.preflight;
    return {
        nccl_validate_group: args.group ?? "gpu_nodes",
        nccl_validate_out_dir: outDir,
        nccl_validate_fabric: args.fabric,
        nccl_validate_hosts: args.hosts.map((name, i) => ({ name, address: mpiHosts[i] })),
        nccl_validate_gpus_per_node: args.gpusPerNode,
        nccl_validate_hostfile_path: cmds.hostfilePath,
        nccl_validate_single_cmd: cmds.singleNode.shell,
        nccl_validate_all_fixed_cmd: cmds.allNodeFixed.shell,
        nccl_validate_all_sweep_cmd: cmds.allNodeSweep.shell,
        nccl_validate_pairwise: args.pairwise ?? "auto",
        nccl_validate_pair_cmd: cmds.pairTemplate,
        nccl_validate_pair_rounds: rounds,
        nccl_validate_expected_gpus: p.gpus,
        nccl_validate_expected_rdma_devices: p.rdmaDevices,
        nccl_validate_expected_port_rate_gbps: p.portRateGbps ?? 0,
        nccl_validate_rdma_device_pattern: p.rdmaDevicePattern ?? ".*",
        nccl_validate_gpudirect: p.gpudirect,
        nccl_validate_nvswitch: p.nvswitch,
        nccl_validate_check_pkey: args.fabric === "azure-ib",
        nccl_validate_health_checks: args.fabric === "azure-ib",
        ...incastVars(args, mpiHosts),
        nccl_validate_ssh_dir: MPIRUN_SSH_DIR,
        nccl_validate_host_keys: hostKeys,
        node_health_dcgm_level: args.health?.dcgmLevel ?? DEFAULT_DCGM_LEVEL,
        ...(args.slurm ? { nccl_validate_head: args.slurm.head } : {}),
        ...(args.slurm && args.slurm.launch !== false ? { nccl_validate_slurm: slurmVars(args, args.slurm, cmds.allNodeFixed, cmds.allNodeSweep) } : {}),
        // with a tolerance, or under Slurm (the nodes Slurm cannot give the run are left out: select.ts)
        ...((args.maxFailedNodes ?? 0) > 0 || (args.slurm && args.slurm.launch !== false) ? {
            nccl_validate_drop_templates: {
                fixed_cmd: cmds.allNodeTemplates.fixed, sweep_cmd: cmds.allNodeTemplates.sweep,
                ...(args.slurm && args.slurm.launch !== false ? {
                    srun_fixed_cmd: srunRun(args, args.slurm, cmds.allNodeFixed, true), srun_sweep_cmd: srunRun(args, args.slurm, cmds.allNodeSweep, true),
                } : {}),
            },
        } : {}),
    };
}

/** One srun launch of an all-node run: the same test, arguments and environment as the mpirun one. */
function srunRun(args: ValidationRunArgs, slurm: SlurmLaunch, c: MpiCommand, template = false): string {
    return srunCommand({
        slurm, nodes: args.hosts, gpusPerNode: args.gpusPerNode, env: c.env, binary: c.test[0], args: c.test.slice(1),
        timeoutSeconds: args.timeoutSeconds ?? 1200,
    }, template).shell;
}

/** The srun launches of the all-node runs: the same test, arguments and environment as the mpirun ones. */
function slurmVars(args: ValidationRunArgs, slurm: SlurmLaunch, fixed: MpiCommand, sweep: MpiCommand): NonNullable<ValidationVars["nccl_validate_slurm"]> {
    return { head: slurm.head, reservation: VALIDATION_RESERVATION, nodes: compressHostlist(args.hosts).join(","),
        fixed_cmd: srunRun(args, slurm, fixed), sweep_cmd: srunRun(args, slurm, sweep),
        launcher: `srun --mpi=${slurm.mpi} from ${slurm.head}` };
}

/** The incast's variables (RoCE with at least three hosts), the receiver's folder being the role's working folder. */
function incastVars(args: ValidationRunArgs, mpiHosts: string[]): { nccl_validate_incast?: IncastVars } {
    const a = args.incast;
    if (args.fabric !== "roce" || !a) return {};
    const hosts = args.hosts.flatMap((name, i) => (a.rails[name] ? [{ name, address: mpiHosts[i], ...a.rails[name] }] : []));
    const plan = planIncast({ hosts, priority: a.priority, trafficClass: a.trafficClass, gidIndex: a.gidIndex, mode: a.mode, ...(a.lineRateGbps ? { lineRateGbps: a.lineRateGbps } : {}) });
    if (!plan) return {};
    const p = plan.priority;
    const all = [plan.receiver, ...plan.senders];
    return {
        nccl_validate_incast: {
            plan,
            hosts: all.map((h) => h.name),
            receiver_cmd: receiverCommand(plan, INCAST_REMOTE_DIR),
            sender_cmds: Object.fromEntries(plan.senders.map((s) => [s.name, senderCommand(plan, s)])),
            snapshot_cmds: Object.fromEntries(all.map((h) => [h.name, snapshotCommand(h)])),
            ...(plan.rpOffPhase ? {
                rp_cmds: Object.fromEntries(plan.senders.map((s) => [s.name, {
                    read: rpReadCommand(s, p), off: rpWriteCommand(s, p, "0"), restore_on: rpWriteCommand(s, p, "1"), restore_off: rpWriteCommand(s, p, "0"),
                }])),
            } : {}),
        },
    };
}

/** Where the receiver's servers write their logs (the role's default working folder). */
export const INCAST_REMOTE_DIR = "/tmp/rdmakit-nccl";

/**
 * The hostfile the role writes on the first node (playbooks/roles/nccl_validate/templates/hostfile.j2), rendered here
 * for `rdmakit plan`: `<address> slots=<gpus per node>` per line, as commands.ts builds it. Pure.
 */
export function renderHostfile(vars: ValidationVars): string {
    return vars.nccl_validate_hosts.map((h) => `${h.address} slots=${vars.nccl_validate_gpus_per_node}\n`).join("");
}

/** Log name of a pair run (round from 1), the name `nccl-report` reads the two hosts from (report.ts classifyLogName). */
export function pairLogName(round: number, a: string, b: string): string {
    return `pair-r${round}-${a}+${b}.log`;
}

/** One pair run as the role makes it: inventory names, log file and the filled-in command line. */
export interface PairRun {
    round: number;
    a: string;
    b: string;
    log: string;
    cmd: string;
}

/** Every pair run, round by round, as playbooks/roles/nccl_validate/tasks/pair_round.yml fills them in. Pure. */
export function pairRuns(vars: ValidationVars): PairRun[][] {
    const hosts = vars.nccl_validate_hosts;
    return vars.nccl_validate_pair_rounds.map((round, r) => round.map(([i, j]) => ({
        round: r + 1, a: hosts[i].name, b: hosts[j].name, log: pairLogName(r + 1, hosts[i].name, hosts[j].name),
        cmd: fillPairTemplate(vars.nccl_validate_pair_cmd, hosts[i].address, hosts[j].address),
    })));
}

/**
 * The `nccl-report` flags that make the grade prove the fabric (components/validate/fabric.ts): the all-node logs must
 * be one job of hosts x GPUs ranks on the fabric's NET transport with GPUDirect RDMA, the pair logs one job on two
 * nodes. Empty for a one-node cluster, which has no fabric run to prove. Pure; the tokens need no quoting.
 */
export function fabricReportArgs(args: Pick<ValidationRunArgs, "fabric" | "hosts" | "gpusPerNode">): string {
    if (args.hosts.length < 2) return "";
    return `--fabric ${fabricOfPlan(args.fabric)} --nodes ${args.hosts.length} --gpus-per-node ${args.gpusPerNode}`;
}

/** SHA-256 (hex) of the variables' JSON: what the state keeps, and what the script checks the file on stdin against. */
export function varsDigest(json: string): string {
    return createHash("sha256").update(json).digest("hex");
}

/** Where `rdmakit check`'s read of the head node's `sinfo -R` lands, under the report folder (playbooks/slurm-states.yml). */
export const SLURM_STATES_FILE = "slurm-states.txt";

/** What the gate playbook leaves on this machine once it ran on the head node (slurm_gate.yml). */
export const SLURM_GATE_APPLIED = "slurm-gate-applied.txt";

/** Full ansible-playbook output of the validation run, under the report folder (`$RDMAKIT_OUT`). */
export const VALIDATE_LOG_NAME = "ansible-validate.log";
/** The Ansible failure summariser (components/provision/summarise.ts), written where AnsiblePlaybook writes it. */
export const SUMMARISER_NAME = "ansible-summarise.cjs";

/** validate.yml's per-node plays (their tags): node-local mode runs them on the nodes, the rest from here. */
export const NODE_LOCAL_VALIDATE_TAGS = "health,preflight";
/** Where a node-local validation puts a failed node's own log (`<node>.log`), under the report folder. */
export const VALIDATE_NODE_LOGS = "nodes-validate";

/**
 * What a node-local validation run needs beside VALIDATE_SCRIPT: the fan-out script and the bundle, written into
 * `writeDir` (the bundle once per content, in a folder of its own so that it never removes the software step's), and
 * the environment naming them as `runDir` (the folder the run reads them from: the same one, relative to where it
 * runs). `write` false (a preview): nothing is written, the names are the same.
 */
export function nodeLocalValidateEnv(playbooksDir: string, writeDir: string, runDir: string, write: boolean): Record<string, string> {
    const hash = hashFolder(playbooksDir);
    const bundle = write
        ? buildBundle(playbooksDir, hash, path.join(writeDir, "bundle-validate"))
        : { digest: bundleDigest(hash), file: "" };
    if (write) fs.writeFileSync(path.join(writeDir, "ansible-fanout.cjs"), fanoutScript());
    return {
        RDMAKIT_FANOUT: path.join(runDir, "ansible-fanout.cjs"),
        RDMAKIT_BUNDLE_FILE: path.join(runDir, "bundle-validate", `bundle-${bundle.digest}.tar.gz`),
        RDMAKIT_BUNDLE_DIGEST: bundle.digest,
    };
}

/**
 * The shell run by the Command: playbook, then the grade. The playbook variables come on stdin (`stdin` of the
 * Command, a pipe: no size limit), are written to a private temporary file and passed as `-e @file`: as one
 * environment string or argument they would hit Linux's 128 KiB limit per string (MAX_ARG_STRLEN, "Argument list
 * too long") on a large cluster. source: torvalds/linux include/uapi/linux/binfmts.h (MAX_ARG_STRLEN, 32 pages);
 * pulumi/pulumi-command provider/pkg/provider/local/commandOutputs.go (`cmd.Stdin = strings.NewReader(stdin)`, which
 * os/exec feeds through a pipe). The file must match the digest in `$RDMAKIT_VALIDATE_VARS_SHA256`, so an empty or
 * cut-short stdin stops the run instead of validating something else. Other inputs come through the environment so
 * the script is a constant. The playbook's output goes to `$RDMAKIT_OUT/ansible-validate.log` only (it is long and
 * would flood `pulumi up` and the state); when the playbook fails, stderr gets the summariser's few lines (failing
 * host, task, reason) and the log's path. stdout carries only the nccl-report text summary and its result line.
 * Exit status: the report's (0 pass, 1 fail, 2 neither logs nor preflight results), or 1 when the playbook failed and
 * the report passed, or when the variables on stdin do not match their digest. With `$RDMAKIT_FANOUT` set (node-local
 * mode, nodeLocalValidateEnv) the per-node plays (NODE_LOCAL_VALIDATE_TAGS) run first on the nodes through the fan-out,
 * and ansible-playbook here runs the rest with those tags skipped.
 */
export const VALIDATE_SCRIPT = [
    // the variables wait on fd 3 while the prelude runs, so nothing it starts (ssh-agent, ssh-add) can read them
    "exec 3<&0 </dev/null",
    ...SSH_KEY_PRELUDE,
    // what a node sends back through ansible-playbook's ssh (fetched logs and captures too) is bounded on the controller
    ...NODE_SEND_BOUND_LINES,
    'vars="$tmp/vars.json"',
    // inventory and variables from stdin (AnsibleRunInput, as the provisioning run takes them), checked against
    // their digests: the inventory travels with the run, so no file from an earlier run has to still exist
    'export RDMAKIT_INVENTORY_FILE="$tmp/inventory.yml"',
    unpackRunInput('"$vars"', 3, '"$tmp/nodes.json"'),
    "exec 3<&-",
    `rm -rf "$RDMAKIT_OUT/nccl" "$RDMAKIT_OUT/preflight" "$RDMAKIT_OUT/incast" "$RDMAKIT_OUT/health" "$RDMAKIT_OUT/${VALIDATE_NODE_LOGS}" ` +
        `"$RDMAKIT_OUT/launcher.txt" "$RDMAKIT_OUT/${SLURM_GATE_FILE}" "$RDMAKIT_OUT/${SLURM_GATE_APPLIED}" "$RDMAKIT_OUT/${SLURM_STATES_FILE}" && mkdir -p "$RDMAKIT_OUT/nccl" "$RDMAKIT_OUT/preflight"`,
    // kept (it holds no secret) so that `rdmakit check` reaches the same nodes the same way on day 2 (check.ts)
    'cp "$RDMAKIT_INVENTORY_FILE" "$RDMAKIT_OUT/inventory-validation.yml"',
    `log="$RDMAKIT_OUT/${VALIDATE_LOG_NAME}"`,
    // fetch resolves a relative dest against the playbook's folder (Ansible's path_dwim): the logs' folder is made
    // absolute here, at run time, so the command's inputs can stay relative
    'out_abs=$(cd "$RDMAKIT_OUT" && pwd) || exit 1',
    ': >"$log"; play=0; skip=""',
    // node-local: the per-node plays on every node at once, each node's results back into the same folders
    'if [ -n "${RDMAKIT_FANOUT:-}" ]; then',
    ...runChild(`RDMAKIT_PLAYBOOK_NAME=validate.yml RDMAKIT_PROGRESS_LABEL=validate ANSIBLE_RUN_TAGS=${NODE_LOCAL_VALIDATE_TAGS} RDMAKIT_ANSIBLE_LOG="$log" ` +
        `RDMAKIT_NODE_LOG_DIR="$RDMAKIT_OUT/${VALIDATE_NODE_LOGS}" RDMAKIT_COLLECT=nccl_validate_out_dir=nccl RDMAKIT_COLLECT_DIR="$out_abs" ` +
        'RDMAKIT_FANOUT_PARALLEL="${ANSIBLE_FORKS:-100}" RDMAKIT_FANOUT_NODE_TIMEOUT_S=3600 node "$RDMAKIT_FANOUT" "$tmp/nodes.json" "$vars"').map((l) => `  ${l}`),
    `  play=$rc; skip=${NODE_LOCAL_VALIDATE_TAGS}`,
    // a tolerance (cluster.validation.maxFailedNodes): the per-node plays first here too, so that select.ts can leave
    // the failed nodes out of the rest
    'elif [ "${RDMAKIT_MAX_FAILED_NODES:-0}" -gt 0 ]; then',
    ...runChild(`ansible-playbook -i "$RDMAKIT_INVENTORY_FILE" playbooks/validate.yml -e "@$vars" -e "nccl_validate_out_dir=$out_abs/nccl" --tags ${NODE_LOCAL_VALIDATE_TAGS} >>"$log" 2>&1`).map((l) => `  ${l}`),
    `  play=$rc; skip=${NODE_LOCAL_VALIDATE_TAGS}`,
    "fi",
    // Slurm: the nodes it cannot give the run (down, or drained by someone other than rdmakit) as the head node lists
    // them (playbooks/slurm-states.yml), so that select.ts leaves them out instead of the all-node srun failing on them
    'states=""',
    'if [ -n "${RDMAKIT_SLURM_HEAD:-}" ]; then',
    ...runChild('ansible-playbook -i "$RDMAKIT_INVENTORY_FILE" playbooks/slurm-states.yml -e "slurm_states_head=$RDMAKIT_SLURM_HEAD" ' +
        '-e "slurm_states_file=$tmp/slurm-before.txt" >>"$log" 2>&1').map((l) => `  ${l}`),
    '  if [ "$rc" -eq 0 ] && [ -f "$tmp/slurm-before.txt" ]; then states="$tmp/slurm-before.txt"; else echo "could not read the node states on $RDMAKIT_SLURM_HEAD (full Ansible log: $log)" >&2; fi',
    "fi",
    // the nodes that failed health or preflight, up to the tolerance, left out of the rest (select.ts): the run goes on
    // with the others and the report names them; more, and the run goes on as without a tolerance
    'drop=""',
    'if { [ "${RDMAKIT_MAX_FAILED_NODES:-0}" -gt 0 ] || [ -n "$states" ]; } && { [ "$play" -eq 0 ] || [ "$play" -eq 2 ] || [ "$play" -eq 4 ]; }; then',
    '  RDMAKIT_SLURM_STATES="$states" node --import tsx components/validate/select.ts "$vars" "$RDMAKIT_OUT/preflight" "$RDMAKIT_OUT/health" "$tmp/dropped.json" 9>&-',
    '  sel=$?',
    // a drop within the tolerance clears the per-node plays' failure (those nodes are out); a drop of Slurm's alone does not
    '  if [ "$sel" -eq 0 ] && [ -f "$tmp/dropped.json" ]; then drop="$tmp/dropped.json"; if [ "${RDMAKIT_MAX_FAILED_NODES:-0}" -gt 0 ]; then play=0; fi',
    '  elif [ "$sel" -ne 0 ] && [ "$play" -eq 0 ]; then play=$sel; fi',
    "fi",
    // the preflight play is any_errors_fatal: a node failing its checks stops the run before nccl-tests, in both modes
    'if [ "$play" -eq 0 ] || [ "$play" -eq 4 ]; then',
    ...runChild('ansible-playbook -i "$RDMAKIT_INVENTORY_FILE" playbooks/validate.yml -e "@$vars" ${drop:+-e "@$drop"} -e "nccl_validate_out_dir=$out_abs/nccl" ${skip:+--skip-tags "$skip"} >>"$log" 2>&1').map((l) => `  ${l}`),
    '  if [ "$rc" -ne 0 ] || [ "$play" -eq 0 ]; then play=$rc; fi',
    "fi",
    'if [ "$play" -ne 0 ]; then',
    '  node "$RDMAKIT_ANSIBLE_SUMMARISER" "$log" >&2 9>&- || { echo "validate.yml failed; last lines of $log:" >&2; tail -n 30 "$log" >&2; }',
    '  echo "validate.yml exited $play; per-node preflight results: $RDMAKIT_OUT/preflight/" >&2',
    "fi",
    'set -- "$RDMAKIT_OUT"/nccl/*.log',
    '[ -e "$1" ] || set --',
    // no nccl-tests log and no preflight result: nothing ran at all
    'if [ $# -eq 0 ] && ! ls "$RDMAKIT_OUT"/preflight/*.json >/dev/null 2>&1; then echo "no nccl-tests logs were fetched to $RDMAKIT_OUT/nccl (full Ansible log: $log)" >&2; exit 2; fi',
    'if [ $# -eq 0 ]; then echo "no nccl-tests logs were fetched to $RDMAKIT_OUT/nccl: reporting the preflight results" >&2; fi',
    // $RDMAKIT_FABRIC_ARGS unquoted on purpose: fabricReportArgs gives plain flag tokens, or nothing
    // the RoCE incast (incast.yml) left its plan and counters in incast/: graded with the logs when it ran
    'if [ -f "$RDMAKIT_OUT/incast/plan.json" ]; then set -- "$@" --incast "$RDMAKIT_OUT/incast"; fi',
    // the node health captures (node_health role): graded against the plan's hardware, each node's verdict in the report
    'if [ -d "$RDMAKIT_OUT/health" ] && [ -n "${RDMAKIT_HEALTH_EXPECT:-}" ]; then set -- "$@" --health "$RDMAKIT_OUT/health" --health-expect "$RDMAKIT_HEALTH_EXPECT"; fi',
    // how the all-node runs were launched (the role's launcher.txt: srun from the head node, or mpirun): the report names it
    'if [ -f "$RDMAKIT_OUT/launcher.txt" ]; then set -- "$@" --launcher "$(head -c 80 "$RDMAKIT_OUT/launcher.txt" | tr -d \'\\n\')"; fi',
    // Slurm: the report also decides which nodes join the partition (slurm-gate.json), from the run's node list
    'if [ -n "${RDMAKIT_SLURM_HEAD:-}" ]; then set -- "$@" --slurm-gate "$vars"; fi',
    // the nodes left out: named in the report, which grades the all-node runs as runs of the others
    'if [ -n "$drop" ]; then set -- "$@" --dropped "$drop"; fi',
    'node --import tsx bin/rdmakit.ts nccl-report "$@" --expect "$RDMAKIT_EXPECT" ${RDMAKIT_FABRIC_ARGS:-} --preflight "$RDMAKIT_OUT/preflight" --out "$RDMAKIT_OUT" --result-line 9>&-',
    "rc=$?",
    // the gate on the head node (playbooks/slurm-gate.yml): whatever the verdict, so a failed node is drained with its
    // reason; the line for the component only when it ran there (no head node in the inventory: nothing ran)
    'if [ -n "${RDMAKIT_SLURM_HEAD:-}" ] && [ -f "$RDMAKIT_OUT/slurm-gate.json" ]; then',
    '  report_rc=$rc',
    ...runChild(`ansible-playbook -i "$RDMAKIT_INVENTORY_FILE" playbooks/slurm-gate.yml -e "@$RDMAKIT_OUT/${SLURM_GATE_FILE}" ` +
        `-e "slurm_gate_head=$RDMAKIT_SLURM_HEAD" -e "slurm_gate_applied_file=$out_abs/${SLURM_GATE_APPLIED}" >>"$log" 2>&1`).map((l) => `  ${l}`),
    '  if [ "$rc" -eq 0 ] && [ -f "$RDMAKIT_OUT/' + SLURM_GATE_APPLIED + '" ]; then printf "rdmakit-gate: %s\\n" "$(cat "$RDMAKIT_OUT/' + SLURM_GATE_FILE + '")";',
    '  elif [ "$rc" -ne 0 ]; then echo "the Slurm gate failed on $RDMAKIT_SLURM_HEAD: the nodes stay drained (full Ansible log: $log)" >&2; [ "$report_rc" -eq 0 ] && report_rc=1; fi',
    "  rc=$report_rc",
    "fi",
    // rdmakit check: Slurm's drain states and reasons from the head node (playbooks/slurm-states.yml), changing nothing
    'if [ -n "${RDMAKIT_SLURM_STATES_HEAD:-}" ]; then',
    '  report_rc=$rc',
    ...runChild('ansible-playbook -i "$RDMAKIT_INVENTORY_FILE" playbooks/slurm-states.yml -e "slurm_states_head=$RDMAKIT_SLURM_STATES_HEAD" ' +
        `-e "slurm_states_file=$out_abs/${SLURM_STATES_FILE}" >>"$log" 2>&1`).map((l) => `  ${l}`),
    "  rc=$report_rc",
    "fi",
    'if [ -n "${RDMAKIT_EXCLUDED:-}" ]; then',
    '  note="graded the provisioned nodes only; left out by cluster.ansible.exclude: $RDMAKIT_EXCLUDED"',
    '  echo "$note"; [ -f "$RDMAKIT_OUT/nccl-summary.txt" ] && echo "$note" >>"$RDMAKIT_OUT/nccl-summary.txt"',
    "fi",
    'if [ "$play" -ne 0 ] && [ "$rc" -eq 0 ]; then rc=1; fi',
    'if [ "$RDMAKIT_FAIL_ON_FAILURE" = "false" ]; then exit 0; fi',
    'exit "$rc"',
].join("\n");

export class ClusterValidation extends pulumi.ComponentResource {
    /** PASS or FAIL. */
    public readonly verdict: pulumi.Output<string>;
    /** Lower of out-of-place / in-place busbw at the largest size of the all-node run (GB/s). */
    public readonly busbwGBps: pulumi.Output<number | null>;
    public readonly largestSizeBytes: pulumi.Output<number | null>;
    public readonly slowNodes: pulumi.Output<string[]>;
    /** The whole result line (per-node verdicts included); null when the run printed none. */
    public readonly result: pulumi.Output<ValidationResult | null>;
    /**
     * Slurm: the nodes the gate drained, each with its reason (component first); [] when every node joined the
     * partition; null when no gate ran (no Slurm, no head node in the inventory, or the gate failed: the nodes then
     * stay drained as the role drained them before their first slurmd start).
     */
    public readonly drainedNodes: pulumi.Output<Array<{ node: string; reason: string }> | null>;
    /** Where nccl-report.json, nccl-summary.txt and the chart are written. */
    public readonly reportDir: string;
    public readonly command: command.local.Command;

    constructor(name: string, args: ClusterValidationArgs, opts?: pulumi.ComponentResourceOptions) {
        const issues = validateArgs(args);
        if (issues.length) throw toInputPropertiesError(new SpecError(issues, "invalid ClusterValidation arguments"));
        super("rdmakit:index:ClusterValidation", name, {}, opts);

        // Every path in the command's inputs is relative, so the same stack run from another checkout (or another
        // machine) leaves them unchanged and re-runs nothing: the command runs in the kit's root given relative to the
        // program's directory, which is where the command provider runs (a relative `dir` is taken from its working
        // directory, and no `dir` means that directory: pulumi/pulumi-command provider/pkg/provider/local/commandOutputs.go
        // `cmd.Dir = *in.Dir` else `os.Getwd()`), and the program's out/<stack> is given relative to the kit's root.
        const repoRoot = path.resolve(args.repoRoot ?? PACKAGE_ROOT);
        const runDir = path.relative(process.cwd(), repoRoot) || ".";
        // reports belong to the program's project (its out/<stack>, beside the Ansible logs), also when the kit is
        // imported from node_modules
        this.reportDir = path.join("out", args.stack);
        const outFromRun = path.relative(repoRoot, path.resolve(this.reportDir)) || ".";
        // The inventory and the variables grow with the node count: they go on stdin, which has no size limit, and
        // only their digests into the environment and the triggers (VALIDATE_SCRIPT).
        const vars = pulumi.all([args.mpiHosts ?? args.hosts, args.hostKeys ?? []]).apply(([addrs, keys]) =>
            JSON.stringify(validationVars(args, addrs, path.join(outFromRun, "nccl"), keys)));
        const mode = args.mode ?? "node-local";
        const input = pulumi.all([args.inventory, vars]).apply(([inventory, extraVars]): AnsibleRunInput => ({ inventory, extraVars }));
        const digests = runInputDigests(input);
        // The inventory and the node list are the provisioning run's: kept once beside the stack (kept-input.ts), read
        // here by path and digest (VALIDATE_SCRIPT), so the state holds them once, not once per step.
        const write = !pulumi.runtime.isDryRun();
        const keptEnv = pulumi.output(args.inventory).apply((inventory) => ({
            RDMAKIT_INVENTORY_INPUT: path.relative(repoRoot, path.resolve(keepInput(this.reportDir, "inventory", "yml", inventory, write).file)),
            ...(mode === "node-local" ? keepNodeTargets(this.reportDir, inventory, write, repoRoot, args.slurm ? [args.slurm.head] : []) : {}),
        }));
        const digest = vars.apply(varsDigest);
        const expect = JSON.stringify({ all: args.expectations.all, single: args.expectations.single, pair: args.expectations.pair });

        // Written at every deployment, as AnsiblePlaybook does, so the script always matches this version of the kit; a
        // preview writes nothing. Written from here (the program's folder), named to the command from where it runs
        // (the kit's root).
        const summariser = path.join(outFromRun, SUMMARISER_NAME);
        if (!pulumi.runtime.isDryRun()) {
            fs.mkdirSync(this.reportDir, { recursive: true });
            fs.writeFileSync(path.join(this.reportDir, SUMMARISER_NAME), summariserScript());
        }
        const nodeLocalEnv = mode === "node-local"
            ? nodeLocalValidateEnv(path.join(repoRoot, "playbooks"), this.reportDir, outFromRun, !pulumi.runtime.isDryRun()) : {};

        this.command = new command.local.Command(`${name}-nccl`, {
            create: VALIDATE_SCRIPT,
            dir: runDir,
            interpreter: RUN_INTERPRETER,
            stdin: input.apply((i) => JSON.stringify({ extraVars: i.extraVars } satisfies Omit<AnsibleRunInput, "inventory">)),
            environment: {
                RDMAKIT_INVENTORY_INPUT: keptEnv.apply((k) => k.RDMAKIT_INVENTORY_INPUT),
                ...(mode === "node-local" ? {
                    RDMAKIT_NODES_FILE: keptEnv.apply((k) => k.RDMAKIT_NODES_FILE ?? ""),
                    RDMAKIT_NODES_HASH: keptEnv.apply((k) => k.RDMAKIT_NODES_HASH ?? ""),
                } : {}),
                ...digests,
                RDMAKIT_EXPECT: expect,
                RDMAKIT_FABRIC_ARGS: fabricReportArgs(args),
                ...(args.health ? { RDMAKIT_HEALTH_EXPECT: JSON.stringify(args.health) } : {}),
                RDMAKIT_OUT: outFromRun,
                RDMAKIT_FAIL_ON_FAILURE: String(args.failOnFailure ?? true),
                ...serveSshKey(`${name}-nccl`, args.sshPrivateKey),
                RDMAKIT_RERUN_ON: args.rerunOn ?? "",
                RDMAKIT_ANSIBLE_SUMMARISER: summariser,
                ...nodeSendEnv(runDir),
                ...(args.excludedNodes?.length ? { RDMAKIT_EXCLUDED: args.excludedNodes.join(", ") } : {}),
                ...(args.slurm ? { RDMAKIT_SLURM_HEAD: args.slurm.head } : {}),
                ...((args.maxFailedNodes ?? 0) > 0 ? { RDMAKIT_MAX_FAILED_NODES: String(args.maxFailedNodes) } : {}),
                ...(args.forks !== undefined ? { ANSIBLE_FORKS: String(args.forks) } : {}),
                ...nodeLocalEnv,
                ANSIBLE_CONFIG: path.join("playbooks", "ansible.cfg"),
                // plain text in the log, which the summariser parses
                ANSIBLE_NOCOLOR: "1",
            },
            // rerun when what is run or how it is graded changes
            triggers: [digest, digests.RDMAKIT_INVENTORY_HASH, expect, fabricReportArgs(args), ...(args.health ? [JSON.stringify(args.health)] : [])],
            // the provider would put the last run's stdout and stderr into the environment (PULUMI_COMMAND_STDOUT), one
            // string that grows with the report; the script does not read them
            addPreviousOutputInEnv: false,
        }, { parent: this });

        const result = this.command.stdout.apply(parseResultLine);
        this.result = result;
        this.verdict = result.apply((r) => (r?.pass ? "PASS" : "FAIL"));
        this.busbwGBps = result.apply((r) => r?.busbwGBps ?? null);
        this.largestSizeBytes = result.apply((r) => r?.sizeBytes ?? null);
        this.slowNodes = result.apply((r) => r?.slowNodes ?? []);
        this.drainedNodes = this.command.stdout.apply((o) => parseGateLine(o)?.drained ?? null);
        this.registerOutputs({
            verdict: this.verdict, busbwGBps: this.busbwGBps, largestSizeBytes: this.largestSizeBytes,
            slowNodes: this.slowNodes, reportDir: this.reportDir, drainedNodes: this.drainedNodes,
        });
    }
}
