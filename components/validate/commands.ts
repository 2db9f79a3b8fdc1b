/**
 * Pure builders for the nccl-tests launch: hostfile and mpirun command lines per fabric, one rank per GPU,
 * NCCL forced onto the fabric's transport so that a fallback to sockets fails instead of running slow.
 */
import { AWS_FORCED_NET } from "../plan/aws";
import { IB_FORCED_NET } from "../plan/azure";
import { SpecError, type SpecIssue } from "../errors";

export type { Fabric } from "../types";
import type { Fabric } from "../types";

export interface NcclCommandInput {
    fabric: Fabric;
    /** Addresses mpirun uses to reach the nodes (private IPs or resolvable names); the first one launches. */
    hosts: string[];
    gpusPerNode: number;
    /**
     * NCCL/libfabric environment from the plan (e.g. FI_PROVIDER, NCCL_IB_HCA, NCCL_IB_TC, NCCL_TOPO_FILE), exported
     * to every rank as given; NCCL_NET defaults to the fabric's forced network when absent.
     */
    ncclEnv: Record<string, string>;
    /** Folder holding the nccl-tests binaries (`all_reduce_perf`). */
    nccltestsDir: string;
    /** MPI installation: `/opt/amazon/openmpi` (EFA installer), `/opt/hpcx/ompi` (Azure HPC image), any Open MPI. */
    mpiHome: string;
    /**
     * nccl-tests binary.
     * @default "all_reduce_perf"
     */
    test?: string;
    /**
     * Message size of the fixed large-size runs, bytes.
     * @default 17179869184 (16 GiB, the size the Azure NHC and AWS figures use)
     */
    fixedBytes?: number;
    /**
     * Largest size of the sweep, bytes.
     * @default 17179869184 (16 GiB, as in the AWS sweep `-b 8 -e 16G`)
     */
    sweepMaxBytes?: number;
    /**
     * Timed iterations (`-n`).
     * @default 20 (the nccl-tests default)
     */
    iters?: number;
    /**
     * Seconds before `timeout` kills a run.
     * @default 1200
     */
    timeoutSeconds?: number;
    /**
     * Where the all-node hostfile is written on the launching node.
     * @default "/tmp/rdmakit-nccl/hostfile"
     */
    hostfilePath?: string;
    /** busbw floor for the fixed run; nccl-tests then exits non-zero below it (sets NCCL_TESTS_MIN_BW). */
    minBusbwGBps?: number;
    /**
     * Pass `--allow-run-as-root` (Open MPI refuses root otherwise).
     * @default false
     */
    allowRunAsRoot?: boolean;
}

export interface MpiCommand {
    /** What the run is: `single`, `all-fixed`, `all-sweep`, `pair`. */
    kind: "single" | "all-fixed" | "all-sweep" | "pair";
    np: number;
    /** Environment set for mpirun and exported to the ranks with `-x NAME`. */
    env: Record<string, string>;
    argv: string[];
    /** The nccl-tests binary and its arguments: the part of argv after mpirun's own (srun.ts launches the same). */
    test: string[];
    /** One shell line: `timeout ... env K=V ... mpirun ...`. */
    shell: string;
}

export interface NcclCommands {
    /** Open MPI hostfile for the all-node runs: `<host> slots=<gpusPerNode>` per line. */
    hostfile: string;
    hostfilePath: string;
    singleNode: MpiCommand;
    allNodeFixed: MpiCommand;
    allNodeSweep: MpiCommand;
    /** The same launch for a pair of hosts (pairwise slow-node search). */
    pair(a: string, b: string): MpiCommand;
    /**
     * The pair launch as one shell line with PAIR_PLACEHOLDERS.a / .b where the two addresses go (each exactly once):
     * one line for every pair, so the playbook variables do not grow with the node count. `fillPairTemplate` (and the
     * nccl_validate role with Jinja `replace`) turns it into `pair(a, b).shell`.
     */
    pairTemplate: string;
    /**
     * The two all-node launches with ALL_NODE_NP in place of the rank count (`-np @NP@`): what validation runs when it
     * leaves nodes out (cluster.validation.maxFailedNodes, select.ts); `fillNp` with hosts x GPUs gives the `shell` above.
     */
    allNodeTemplates: { fixed: string; sweep: string };
}

/** Where the rank count goes in `allNodeTemplates`: a shell-safe word (shQuote leaves it bare), as is a number. */
export const ALL_NODE_NP = "@NP@";

/** An all-node template with its rank count in place. Pure. */
export function fillNp(template: string, np: number): string {
    return template.split(` -np ${ALL_NODE_NP} `).join(` -np ${np} `);
}

/**
 * Where the two addresses go in `pairTemplate`. Words of the shell-safe set (shQuote leaves them bare), as are the
 * addresses (letters, digits and . _ : -), so a plain text replacement gives the line `pair(a, b)` quotes itself.
 * playbooks/roles/nccl_validate/tasks/pair_round.yml replaces the same two strings.
 */
export const PAIR_PLACEHOLDERS = { a: "@PAIR_A@", b: "@PAIR_B@" } as const;

/** `pairTemplate` with the two addresses in place: what the role's Jinja `replace` produces. Pure. */
export function fillPairTemplate(template: string, a: string, b: string): string {
    return template.split(PAIR_PLACEHOLDERS.a).join(a).split(PAIR_PLACEHOLDERS.b).join(b);
}

const GiB16 = 17179869184;

/** Quotes a word for POSIX sh when needed. */
export function shQuote(s: string): string {
    return /^[A-Za-z0-9_@%+=:,./^-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`;
}

/**
 * What validation adds to the plan's environment. The fabric is forced through NCCL_NET (default: the plan's
 * constants AWS_FORCED_NET / IB_FORCED_NET, which the plan also sends as `plan.validation.forcedNet`), so a fallback to
 * sockets fails instead of running slow; every other variable (FI_PROVIDER=efa included, components/plan/aws.ts
 * awsNcclEnv) is the plan's and is not decided again here. Plan values win except NCCL_DEBUG and NCCL_DEBUG_SUBSYS,
 * which the grader needs.
 * source: research aws-efa.md §4 (NCCL_NET forces the plugin: "the run fails instead of falling back to Socket");
 * ansible-stack.md §3 ("set NCCL_NET=Libfabric (EFA) or NCCL_NET=IB"); NVIDIA/nccl docs env.html (NCCL_NET,
 * NCCL_DEBUG, NCCL_DEBUG_SUBSYS).
 */
function fabricEnv(fabric: Fabric, plan: Record<string, string>): Record<string, string> {
    // NCCL's verbs transport for InfiniBand and RoCE alike (roce.md §3); the OFI plugin on EFA
    const forced = fabric === "aws-efa" ? AWS_FORCED_NET : IB_FORCED_NET;
    const env = { ...forced, ...plan };
    env.NCCL_DEBUG = "INFO";
    // INIT prints the `Channel ... via NET/.../GDRDMA` lines the grader reads, NET the transport selection
    env.NCCL_DEBUG_SUBSYS = "INIT,NET";
    return env;
}

/**
 * MPI flags per fabric.
 * aws-efa source: aws-samples/awsome-distributed-training micro-benchmarks/nccl-tests/slurm/nccl-tests-ami.sbatch
 *   (`--mca pml ^ucx --mca btl tcp,self --mca btl_tcp_if_exclude lo,docker0,veth_def_agent --bind-to none`, `-N 8`).
 * azure-ib source: Azure/azurehpc-health-checks customTests/azure_nccl_allreduce.nhc
 *   (`--map-by ppr:8:node -bind-to numa -mca coll_hcoll_enable 0`).
 * roce source: Open MPI as a launcher only (`--mca pml ob1`, TCP btl) per research ansible-stack.md §6.
 */
/**
 * Where a launching node keeps this run's SSH identity for mpirun (validate.yml, the nccl_validate role's run_key.yml):
 * a folder under the login user's home, 0700, holding the run's own Ed25519 key (`id_ed25519`, 0600, made on that node
 * and never copied off it) and a `known_hosts` of the nodes' host keys. Both go when the validation ends.
 * ssh expands `~` in `-i` and in UserKnownHostsFile itself (source: OpenBSD ssh(1) -i, ssh_config(5) "TOKENS"/tilde
 * expansion of IdentityFile and UserKnownHostsFile), so the path needs no shell.
 */
export const MPIRUN_SSH_DIR = "~/.rdmakit-mpirun";

/**
 * How mpirun on a launching node reaches the others: ssh with the run's own key only (IdentitiesOnly: nothing an agent
 * or ~/.ssh/config offers), each node's host key checked against the run's known_hosts (built from the stack's pinned
 * host keys, or from what each node's own files show over the controller's verified connection) with no first-use
 * trust and no system-wide file. No agent is forwarded: the operator's key never reaches a node.
 * Tree spawn off: Open MPI's rsh launcher otherwise has daemons ssh on from other nodes (plm_rsh_no_tree_spawn, default
 * false), which would need the key there too; with it off only the launcher connects.
 * source: Open MPI FAQ "plm_rsh_args" (arguments mpirun gives to ssh); open-mpi/ompi orte/mca/plm/rsh/plm_rsh_component.c
 * ("no_tree_spawn": "If set to true, do not launch via a tree-based topology", default false); OpenBSD ssh_config(5)
 * (IdentitiesOnly, StrictHostKeyChecking yes, UserKnownHostsFile, GlobalKnownHostsFile, BatchMode).
 */
export const LAUNCH_SSH = [
    "--mca", "plm_rsh_args",
    `-i ${MPIRUN_SSH_DIR}/id_ed25519 -o IdentitiesOnly=yes -o StrictHostKeyChecking=yes -o UserKnownHostsFile=${MPIRUN_SSH_DIR}/known_hosts ` +
        "-o GlobalKnownHostsFile=/dev/null -o BatchMode=yes",
    "--mca", "plm_rsh_no_tree_spawn", "1",
];

function mpiFlags(fabric: Fabric, gpusPerNode: number): string[] {
    if (fabric === "aws-efa") {
        return ["--mca", "pml", "^ucx", "--mca", "btl", "tcp,self", "--mca", "btl_tcp_if_exclude", "lo,docker0,veth_def_agent",
            "--bind-to", "none", "-N", String(gpusPerNode)];
    }
    if (fabric === "azure-ib") {
        return ["-mca", "coll_hcoll_enable", "0", "--bind-to", "numa", "--map-by", `ppr:${gpusPerNode}:node`];
    }
    return ["--mca", "pml", "ob1", "--mca", "btl", "tcp,self", "--bind-to", "none", "--map-by", `ppr:${gpusPerNode}:node`];
}

/** The first value listed twice; one pass, so a 1,000-node list costs nothing (docs/architecture.md, Scale). */
export function firstDuplicate(xs: string[]): string | undefined {
    const seen = new Set<string>();
    for (const x of xs) {
        if (seen.has(x)) return x;
        seen.add(x);
    }
    return undefined;
}

function validate(input: NcclCommandInput): void {
    const issues: SpecIssue[] = [];
    if (!["aws-efa", "azure-ib", "roce"].includes(input.fabric)) {
        issues.push({ path: "fabric", message: "unknown fabric", value: input.fabric, allowed: "aws-efa | azure-ib | roce" });
    }
    if (input.hosts.length === 0) issues.push({ path: "hosts", message: "must list at least one host", value: input.hosts });
    const dup = firstDuplicate(input.hosts);
    if (dup !== undefined) issues.push({ path: "hosts", message: `lists ${dup} twice`, value: dup });
    if (input.hosts.some((h) => !/^[A-Za-z0-9_.:-]+$/.test(h))) {
        issues.push({ path: "hosts", message: "host names may only hold letters, digits and . _ : -", value: input.hosts });
    }
    if (!Number.isInteger(input.gpusPerNode) || input.gpusPerNode < 1) {
        issues.push({ path: "gpusPerNode", message: "must be an integer >= 1", value: input.gpusPerNode });
    }
    for (const k of Object.keys(input.ncclEnv)) {
        if (!/^[A-Z_][A-Z0-9_]*$/.test(k)) issues.push({ path: `ncclEnv.${k}`, message: "is not a valid environment variable name", value: k });
    }
    // source: research azure-ib.md §4 (NDv4/NDv5 need the image's topology file for correct GPU<->HCA rings)
    if (input.fabric === "azure-ib" && !input.ncclEnv.NCCL_TOPO_FILE) {
        issues.push({ path: "ncclEnv.NCCL_TOPO_FILE", message: "is required on azure-ib (the VM's PCI topology is virtual)", allowed: "/opt/microsoft/ndv5-topo.xml or /opt/microsoft/ndv4-topo.xml" });
    }
    // source: research roce.md §3/§5 C13 (list only the RoCE rail NICs; mixed link layers fail)
    if (input.fabric === "roce" && !input.ncclEnv.NCCL_IB_HCA) {
        issues.push({ path: "ncclEnv.NCCL_IB_HCA", message: "is required on roce (the rail NICs, e.g. =mlx5_0:1,mlx5_1:1)" });
    }
    for (const [k, v] of [["fixedBytes", input.fixedBytes], ["sweepMaxBytes", input.sweepMaxBytes], ["iters", input.iters], ["timeoutSeconds", input.timeoutSeconds]] as const) {
        if (v !== undefined && (!Number.isInteger(v) || v < 1)) issues.push({ path: k, message: "must be an integer >= 1", value: v });
    }
    if (issues.length) throw new SpecError(issues, "invalid nccl-tests command input");
}

/** Builds the hostfile and every command line the validation playbook runs. */
export function buildNcclCommands(input: NcclCommandInput): NcclCommands {
    validate(input);
    const g = input.gpusPerNode;
    const test = input.test ?? "all_reduce_perf";
    const fixed = input.fixedBytes ?? GiB16;
    const sweepMax = input.sweepMaxBytes ?? GiB16;
    const iters = input.iters ?? 20;
    const timeoutS = input.timeoutSeconds ?? 1200;
    const hostfilePath = input.hostfilePath ?? "/tmp/rdmakit-nccl/hostfile";
    const mpirun = `${input.mpiHome.replace(/\/$/, "")}/bin/mpirun`;
    const binary = `${input.nccltestsDir.replace(/\/$/, "")}/${test}`;
    const env = fabricEnv(input.fabric, input.ncclEnv);

    // source: NVIDIA/nccl-tests README (-b/-e/-f/-g/-c/-n); the sweep is the AWS one: `-b 8 -e 16G -f 2 -g 1 -c 1 -n 100`
    const sweepArgs = ["-b", "8", "-e", String(sweepMax), "-f", "2", "-g", "1", "-c", "1", "-n", String(iters)];
    const fixedArgs = ["-b", String(fixed), "-e", String(fixed), "-f", "2", "-g", "1", "-c", "1", "-n", String(iters)];

    const make = (kind: MpiCommand["kind"], where: string[], np: number, args: string[], extraEnv: Record<string, string> = {}, npWord = String(np)): MpiCommand => {
        const runEnv = { ...env, ...extraEnv };
        const names = Object.keys(runEnv).sort();
        const argv = [
            mpirun, "-np", npWord, ...where, ...mpiFlags(input.fabric, g), ...LAUNCH_SSH,
            ...(input.allowRunAsRoot ? ["--allow-run-as-root"] : []),
            // PATH is always set; LD_LIBRARY_PATH travels only when the plan sets it (the EFA installer and the
            // Azure HPC image register their libraries through /etc/ld.so.conf.d, research aws-efa.md §4)
            "-x", "PATH", ...names.flatMap((n) => ["-x", n]),
            binary, ...args,
        ];
        // source: GNU coreutils timeout(1): -k sends KILL if the job ignores TERM (a hung NCCL init)
        const shell = [
            "timeout", "-k", "30", String(timeoutS), "env", ...names.map((n) => `${n}=${runEnv[n]}`), ...argv,
        ].map(shQuote).join(" ");
        return { kind, np, env: runEnv, argv, test: [binary, ...args], shell };
    };

    // NCCL_TESTS_MIN_BW: nccl-tests exits non-zero when the Avg line is < 0.9 x the value (FORMAT.md §1, source:
    // NVIDIA/nccl-tests src/common.cu); with -b == -e the Avg is that one size, so /0.9 puts the floor at min.
    const floor: Record<string, string> = input.minBusbwGBps !== undefined
        ? { NCCL_TESTS_MIN_BW: String(Number((input.minBusbwGBps / 0.9).toFixed(3))) } : {};

    const all = input.hosts.length * g;
    const hostfile = input.hosts.map((h) => `${h} slots=${g}`).join("\n") + "\n";
    const pairOf = (a: string, b: string): MpiCommand => make("pair", ["--host", `${a}:${g},${b}:${g}`], 2 * g, fixedArgs, floor);
    const pairTemplate = pairOf(PAIR_PLACEHOLDERS.a, PAIR_PLACEHOLDERS.b).shell;
    // a placeholder that also occurs elsewhere (say, in an environment value) would be replaced there too
    for (const p of Object.values(PAIR_PLACEHOLDERS)) {
        if (pairTemplate.split(p).length !== 2) {
            throw new SpecError([{ path: "ncclEnv", message: `the pair command must hold ${p} only where the address goes`, value: pairTemplate }], "invalid nccl-tests command input");
        }
    }
    const members = new Set(input.hosts);
    const allTemplate = (kind: "all-fixed" | "all-sweep", args: string[], extra: Record<string, string>): string => {
        const t = make(kind, ["--hostfile", hostfilePath], all, args, extra, ALL_NODE_NP).shell;
        if (t.split(` -np ${ALL_NODE_NP} `).length !== 2) {
            throw new SpecError([{ path: "ncclEnv", message: `the all-node command must hold ${ALL_NODE_NP} only where the rank count goes`, value: t }], "invalid nccl-tests command input");
        }
        return t;
    };
    return {
        hostfile,
        hostfilePath,
        singleNode: make("single", [], g, fixedArgs),
        allNodeFixed: make("all-fixed", ["--hostfile", hostfilePath], all, fixedArgs, floor),
        allNodeSweep: make("all-sweep", ["--hostfile", hostfilePath], all, sweepArgs),
        pair: (a: string, b: string) => {
            if (!members.has(a) || !members.has(b) || a === b) {
                throw new SpecError([{ path: "pair", message: "both hosts must be distinct members of hosts", value: [a, b] }], "invalid pair");
            }
            return pairOf(a, b);
        },
        pairTemplate,
        allNodeTemplates: { fixed: allTemplate("all-fixed", fixedArgs, floor), sweep: allTemplate("all-sweep", sweepArgs, {}) },
    };
}
