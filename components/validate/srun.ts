/**
 * The all-node nccl-tests runs launched through Slurm, pure: with the scheduler on, validation starts them the way a
 * user's job starts, `srun --mpi=<PMIx plugin>` from the head node, so a pass proves the path jobs take (slurmctld
 * allocating the nodes, slurmstepd starting the ranks, PMIx wiring them up, the task prolog's environment).
 * The nodes are held by a root-only reservation (components/slurm/gate.ts VALIDATION_RESERVATION) while the run takes
 * them: resumed so that Slurm can start the job, yet no user's job lands on them until the gate resumes or drains each.
 * source: https://slurm.schedmd.com/srun.html (--mpi, --reservation, --nodelist, --nodes, --ntasks-per-node, --gres,
 * --exclusive, --time, --kill-on-bad-exit, --cpu-bind); https://slurm.schedmd.com/mpi_guide.html#pmix (srun --mpi=pmix
 * starts the ranks of an MPI built with PMIx: Open MPI's nccl-tests need no mpirun);
 * https://slurm.schedmd.com/reservations.html (Users=root, Flags=MAINT,IGNORE_JOBS).
 */
import { compressHostlist } from "../slurm/hostlist";
import { shQuote } from "./commands";
import { VALIDATION_RESERVATION } from "../slurm/gate";

/** What validation needs of the scheduler: from plan.scheduler (fromPlan.ts). */
export interface SlurmLaunch {
    /** the head node's inventory name (plan.scheduler.controller.name): srun runs there */
    head: string;
    partition: string;
    /** MpiDefault as the distribution's Slurm names its PMIx plugin (plan.scheduler.mpiDefault) */
    mpi: string;
    /**
     * false: the all-node runs stay mpirun's and nothing is reserved (`rdmakit check`, which changes nothing on the
     * cluster); the head node is still left out of the per-node plays. @default true
     */
    launch?: boolean;
}

export interface SrunRunInput {
    slurm: SlurmLaunch;
    /** Slurm node names (the inventory names), in placement order */
    nodes: string[];
    gpusPerNode: number;
    /** the same environment the mpirun launch exports (commands.ts fabricEnv plus the run's own, e.g. the busbw floor) */
    env: Record<string, string>;
    /** the nccl-tests binary on the nodes, and its arguments (the same as the mpirun launch's) */
    binary: string;
    args: string[];
    timeoutSeconds: number;
}

/**
 * Where the node list and count go in an srun template (srunCommand with `template`): validation leaving nodes out
 * (select.ts) fills them with the nodes that remain. Shell-safe words, so the template quotes nothing around them.
 */
export const SRUN_NODES = { list: "@NODELIST@", count: "@NODES@" } as const;

/** An srun template with the nodes in place: their list as Slurm's hostlist, quoted as srunCommand quotes it. Pure. */
export function fillSrunNodes(template: string, nodes: string[]): string {
    return template.split(`--nodelist=${SRUN_NODES.list}`).join(shQuote(`--nodelist=${compressHostlist(nodes).join(",")}`))
        .split(`--nodes=${SRUN_NODES.count}`).join(`--nodes=${nodes.length}`);
}

/**
 * One srun line: `timeout ... env K=V ... srun --mpi=... --reservation=... <binary> <args>`; with `template`, SRUN_NODES
 * in place of the node list and count (fillSrunNodes).
 */
export function srunCommand(i: SrunRunInput, template = false): { argv: string[]; shell: string } {
    const names = Object.keys(i.env).sort();
    const argv = [
        "srun", `--mpi=${i.slurm.mpi}`, `--reservation=${VALIDATION_RESERVATION}`, `--partition=${i.slurm.partition}`,
        `--nodelist=${template ? SRUN_NODES.list : compressHostlist(i.nodes).join(",")}`, `--nodes=${template ? SRUN_NODES.count : i.nodes.length}`, `--ntasks-per-node=${i.gpusPerNode}`,
        `--gres=gpu:${i.gpusPerNode}`, "--exclusive", "--cpu-bind=none", "--kill-on-bad-exit=1",
        // Slurm's own limit, in minutes, a little inside timeout(1)'s so that slurmctld ends the job and frees the nodes
        `--time=${Math.max(1, Math.ceil(i.timeoutSeconds / 60))}`,
        `--job-name=rdmakit-validate`,
        i.binary, ...i.args,
    ];
    // srun exports its whole environment to the tasks (--export=ALL, srun's default): the env prefix reaches every rank
    const shell = ["timeout", "-k", "30", String(i.timeoutSeconds + 60), "env", ...names.map((n) => `${n}=${i.env[n]}`), ...argv].map(shQuote).join(" ");
    return { argv, shell };
}
