/**
 * ClusterValidation: after provisioning, runs playbooks/validate.yml (preflight, single-node, all-node, pairs)
 * and grades the fetched logs with `rdmakit nccl-report`; a failed verdict fails `pulumi up` with the report.
 * Thin: the decisions (commands, schedule, grading) are the pure functions of this folder.
 */
import * as path from "path";
import * as pulumi from "@pulumi/pulumi";
import * as command from "@pulumi/command";
import { SpecError, toInputPropertiesError, type SpecIssue } from "../errors";
import { SSH_KEY_PRELUDE } from "../provision/ansible";
import { buildNcclCommands, type Fabric } from "./commands";
import { planPairRounds } from "./slow";
import type { Expectation } from "./types";

const GiB = 1024 ** 3;

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

export interface ClusterValidationArgs {
    /** Stack name; reports go to `out/<stack>/`, logs to `out/<stack>/nccl/`. */
    stack: string;
    /** Ansible inventory file written by the provision step (AnsiblePlaybook.inventoryFile). */
    inventory: pulumi.Input<string>;
    /** SSH private key for the nodes (and the bastion); kept secret, loaded into an agent for the run only. */
    sshPrivateKey: pulumi.Input<string>;
    /**
     * Anything whose change should re-run the validation, e.g. the provisioning run's digest.
     * @default none
     */
    rerunOn?: pulumi.Input<string>;
    /**
     * Inventory group holding the GPU nodes.
     * @default "gpu_nodes"
     */
    group?: string;
    fabric: Fabric;
    /** Inventory host names in placement order. Plain: it decides the pair schedule. */
    hosts: string[];
    /** Addresses mpirun reaches the nodes by, in the order of `hosts` (private IPs). @default hosts */
    mpiHosts?: pulumi.Input<pulumi.Input<string>[]>;
    gpusPerNode: number;
    /** NCCL environment from the plan. */
    ncclEnv: Record<string, string>;
    /** Folder of the nccl-tests binaries on the nodes. */
    nccltestsDir: string;
    /** MPI installation on the nodes (`/opt/amazon/openmpi`, `/opt/hpcx/ompi`, ...). */
    mpiHome: string;
    /** Thresholds from the plan: all-node, single-node (NVLink) and pair runs. */
    expectations: { all: Expectation; single?: Expectation; pair?: Expectation };
    preflight: PreflightExpectation;
    /**
     * Pairwise runs: `auto` when the all-node fixed-size run is below `expectations.all.minBusbwGBps`.
     * @default "auto"
     */
    pairwise?: "auto" | "always" | "never";
    /** @default 20 */
    iters?: number;
    /** @default 1200 */
    timeoutSeconds?: number;
    /**
     * Fail `pulumi up` when the report fails.
     * @default true
     */
    failOnFailure?: boolean;
    /**
     * Repository root (where `playbooks/`, `bin/` and `out/` are).
     * @default the folder two levels above this file
     */
    repoRoot?: string;
}

/** Result line printed by `nccl-report --result-line`. */
export interface ValidationResult {
    pass: boolean;
    busbwGBps: number | null;
    sizeBytes: number | null;
    slowNodes: string[];
}

export const RESULT_PREFIX = "rdmakit-result: ";

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

/** Checks the arguments; every problem at once. */
export function validateArgs(args: ClusterValidationArgs): SpecIssue[] {
    const issues: SpecIssue[] = [];
    if (!/^[A-Za-z0-9._-]+$/.test(args.stack)) issues.push({ path: "stack", message: "may only hold letters, digits and . _ -", value: args.stack });
    if (args.hosts.length === 0) issues.push({ path: "hosts", message: "must list at least one node", value: args.hosts });
    const dup = args.hosts.find((h, i) => args.hosts.indexOf(h) !== i);
    if (dup) issues.push({ path: "hosts", message: `lists ${dup} twice`, value: dup });
    if (args.hosts.some((h) => h.includes("+") || h.includes("/"))) issues.push({ path: "hosts", message: "host names cannot hold + or /", value: args.hosts });
    if (!Number.isInteger(args.gpusPerNode) || args.gpusPerNode < 1) issues.push({ path: "gpusPerNode", message: "must be an integer >= 1", value: args.gpusPerNode });
    checkExpectation(args.expectations.all, "expectations.all", issues);
    checkExpectation(args.expectations.single, "expectations.single", issues);
    checkExpectation(args.expectations.pair, "expectations.pair", issues);
    if (!Number.isInteger(args.preflight.gpus) || args.preflight.gpus < 1) issues.push({ path: "preflight.gpus", message: "must be an integer >= 1", value: args.preflight.gpus });
    if (!Number.isInteger(args.preflight.rdmaDevices) || args.preflight.rdmaDevices < 0) issues.push({ path: "preflight.rdmaDevices", message: "must be an integer >= 0", value: args.preflight.rdmaDevices });
    if (args.pairwise !== undefined && !["auto", "always", "never"].includes(args.pairwise)) issues.push({ path: "pairwise", message: "unknown mode", value: args.pairwise, allowed: "auto | always | never" });
    return issues;
}

/** The variables validate.yml receives. Pure: also used by tests and by `rdmakit plan`. */
export function validationVars(args: ClusterValidationArgs, mpiHosts: string[], outDir: string): Record<string, unknown> {
    if (mpiHosts.length !== args.hosts.length) {
        throw new SpecError([{ path: "mpiHosts", message: `has ${mpiHosts.length} addresses for ${args.hosts.length} hosts`, value: mpiHosts }], "invalid validation arguments");
    }
    const all = args.expectations.all;
    const fixedBytes = Math.max(all.gradeFromBytes, 1 * GiB);
    const cmds = buildNcclCommands({
        fabric: args.fabric, hosts: mpiHosts, gpusPerNode: args.gpusPerNode, ncclEnv: args.ncclEnv,
        nccltestsDir: args.nccltestsDir, mpiHome: args.mpiHome, fixedBytes, sweepMaxBytes: Math.max(16 * GiB, fixedBytes),
        iters: args.iters, timeoutSeconds: args.timeoutSeconds, minBusbwGBps: all.minBusbwGBps > 0 ? all.minBusbwGBps : undefined,
    });
    const address = new Map(args.hosts.map((h, i) => [h, mpiHosts[i]]));
    const rounds = planPairRounds(args.hosts).map((round, r) => round.map(([a, b]) => ({
        a, b, log: `pair-r${r + 1}-${a}+${b}.log`, cmd: cmds.pair(address.get(a) as string, address.get(b) as string).shell,
    })));
    const p = args.preflight;
    return {
        nccl_validate_group: args.group ?? "gpu_nodes",
        nccl_validate_out_dir: outDir,
        nccl_validate_fabric: args.fabric,
        nccl_validate_hostfile: cmds.hostfile,
        nccl_validate_hostfile_path: cmds.hostfilePath,
        nccl_validate_single_cmd: cmds.singleNode.shell,
        nccl_validate_all_fixed_cmd: cmds.allNodeFixed.shell,
        nccl_validate_all_sweep_cmd: cmds.allNodeSweep.shell,
        nccl_validate_pairwise: args.pairwise ?? "auto",
        nccl_validate_pair_rounds: rounds,
        nccl_validate_expected_gpus: p.gpus,
        nccl_validate_expected_rdma_devices: p.rdmaDevices,
        nccl_validate_expected_port_rate_gbps: p.portRateGbps ?? 0,
        nccl_validate_rdma_device_pattern: p.rdmaDevicePattern ?? ".*",
        nccl_validate_gpudirect: p.gpudirect,
        nccl_validate_nvswitch: p.nvswitch,
        nccl_validate_check_pkey: args.fabric === "azure-ib",
    };
}

/**
 * The shell run by the Command: playbook, then the grade. Inputs come through the environment so the script is
 * a constant. Exit status: the report's (0 pass, 1 fail, 2 no logs), or 1 when the playbook failed and the
 * report passed.
 */
export const VALIDATE_SCRIPT = [
    ...SSH_KEY_PRELUDE,
    'rm -rf "$RDMAKIT_OUT/nccl" && mkdir -p "$RDMAKIT_OUT/nccl" "$RDMAKIT_OUT/preflight"',
    'ansible-playbook -i "$RDMAKIT_INVENTORY" --private-key "$tmp/id" playbooks/validate.yml -e "$RDMAKIT_VALIDATE_VARS"',
    "play=$?",
    'if [ "$play" -ne 0 ]; then echo "validate.yml failed (exit $play): see the preflight checks above and $RDMAKIT_OUT/preflight/" >&2; fi',
    'set -- "$RDMAKIT_OUT"/nccl/*.log',
    'if [ ! -e "$1" ]; then echo "no nccl-tests logs were fetched to $RDMAKIT_OUT/nccl" >&2; exit 2; fi',
    'node --import tsx bin/rdmakit.ts nccl-report "$@" --expect "$RDMAKIT_EXPECT" --out "$RDMAKIT_OUT" --result-line',
    "rc=$?",
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
    /** Where nccl-report.json, nccl-summary.txt and the chart are written. */
    public readonly reportDir: string;
    public readonly command: command.local.Command;

    constructor(name: string, args: ClusterValidationArgs, opts?: pulumi.ComponentResourceOptions) {
        const issues = validateArgs(args);
        if (issues.length) throw toInputPropertiesError(new SpecError(issues, "invalid ClusterValidation arguments"));
        super("rdmakit:index:ClusterValidation", name, {}, opts);

        const repoRoot = args.repoRoot ?? path.resolve(__dirname, "../..");
        this.reportDir = path.join(repoRoot, "out", args.stack);
        const vars = pulumi.output(args.mpiHosts ?? args.hosts).apply((addrs) =>
            JSON.stringify(validationVars(args, addrs, path.join(this.reportDir, "nccl"))));
        const expect = JSON.stringify({ all: args.expectations.all, single: args.expectations.single, pair: args.expectations.pair });

        this.command = new command.local.Command(`${name}-nccl`, {
            create: VALIDATE_SCRIPT,
            dir: repoRoot,
            interpreter: ["/bin/bash", "-c"],
            environment: {
                RDMAKIT_INVENTORY: args.inventory,
                RDMAKIT_VALIDATE_VARS: vars,
                RDMAKIT_EXPECT: expect,
                RDMAKIT_OUT: this.reportDir,
                RDMAKIT_FAIL_ON_FAILURE: String(args.failOnFailure ?? true),
                RDMAKIT_SSH_PRIVATE_KEY: pulumi.secret(args.sshPrivateKey),
                RDMAKIT_RERUN_ON: args.rerunOn ?? "",
                ANSIBLE_CONFIG: path.join(repoRoot, "playbooks", "ansible.cfg"),
            },
            // rerun when what is run or how it is graded changes
            triggers: [vars, expect],
        }, { parent: this });

        const result = this.command.stdout.apply(parseResultLine);
        this.verdict = result.apply((r) => (r?.pass ? "PASS" : "FAIL"));
        this.busbwGBps = result.apply((r) => r?.busbwGBps ?? null);
        this.largestSizeBytes = result.apply((r) => r?.sizeBytes ?? null);
        this.slowNodes = result.apply((r) => r?.slowNodes ?? []);
        this.registerOutputs({
            verdict: this.verdict, busbwGBps: this.busbwGBps, largestSizeBytes: this.largestSizeBytes,
            slowNodes: this.slowNodes, reportDir: this.reportDir,
        });
    }
}
