/**
 * Pure reading of what a job launcher (Open MPI / PRRTE, Slurm) prints when it ends a job early: which node a process
 * died on, and of what. nccl-tests' own failure lines name the hosts whose processes saw the error, which after a node's
 * death are its surviving peers ("remote process exited or there was a network error"); the launcher's lines name the
 * process that died first and its node.
 *
 * Texts, each `%s` the launcher's name (mpirun, mpiexec, orterun in Open MPI <= 4, prterun):
 *  - openpmix/prrte@52d5e4b src/mca/schizo/prte/help-prun.txt: [prun:proc-aborted-strsignal] `%s noticed that process
 *    rank %lu with PID %lu on node %s exited on\nsignal %d (%s).` (one line in Open MPI 4's ORTE: "mpirun noticed that
 *    process rank 1 with PID 0 on node fv-az1542-52 exited on signal 6 (Aborted)."), [prun:proc-ordered-abort] `%s has
 *    exited due to process rank %lu with PID %lu on node %s calling "abort"`, [prun:proc-exit-no-sync] `.. exiting
 *    improperly`, [prun:non-zero-exit] `%s detected that one or more processes exited with non-zero status, .. The first
 *    process to do so was:\n\n   Process name: %s\n   Exit code:    %d` (a name `[prterun-<host>-<pid>@1,<rank>]`, ORTE's
 *    `[[12167,1],10]`: test/fixtures/nccl/alcf-sophia-*, NVIDIA/nccl-tests#294);
 *  - openpmix/prrte@52d5e4b src/mca/errmgr/base/help-errmgr-base.txt [node-died]: `PRTE has lost communication with a
 *    remote daemon.\n\n  HNP daemon   : %s on node %s\n  Remote daemon: %s on node %s` (ORTE in Open MPI <= 4);
 *  - SchedMD/slurm@284c3b9 src/srun/launch.c: `srun: error: <hosts>: task[s] <ids>: Exited with exit code %d`,
 *    `.. : Out Of Memory`, `.. : <strsignal>[ (core dumped)]`; src/srun/allocate.c, src/api/step_launch.c `Node failure
 *    on <nodelist>`; src/slurmd/slurmstepd/req.c `*** STEP|JOB <id> ON <node> CANCELLED AT <time> DUE TO TIME LIMIT|
 *    NODE FAILURE, ..|PREEMPTION|TASK FAILURE|JOB REQUEUE ***` (printed by the step daemon of each node still alive, so
 *    its node is no culprit);
 *  - MPICH's Hydra (`mpiexec`, pmodels/mpich@6a79bf6 src/pm/hydra/mpiexec/pmiserv_cb.c:335-346, since 120bff0 2013):
 *    a box of `=` lines, `=   BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES`, `=   PID %d RUNNING AT %s`,
 *    `=   EXIT CODE: %d`; Intel MPI's Hydra prints `=   RANK 6 PID 2447372 RUNNING AT node0009` and `=   KILLED BY SIGNAL:
 *    9 (Killed)` (as quoted in bsc-performance-tools/extrae#101).
 */

/** What a launcher line says: the node a process died on or was lost with (null: the job, not a node), and of what. */
export interface LauncherEvent {
    node: string | null;
    /** MPI rank (Open MPI / PRRTE) of the process, when named. */
    mpiRank: number | null;
    cause: string;
    /** Hydra's box: this line says how the process on the box's `RUNNING AT` line ended. */
    amends?: true;
}

const NOTICED = /noticed that process rank (\d+) with PID \d+ on node (\S+?) exited on(?:\s+signal (\d+)(?:\s+\(([^)]{1,60})\))?)?/;
const HAS_EXITED = /has exited due to process rank (\d+) with PID \d+ on node (\S+?) (calling "abort"|exiting improperly)/;
const REMOTE_DAEMON = /^\s*Remote daemon\s*:\s*\S+ on node (\S+)/;
const PROCESS_NAME = /^\s*Process name:\s*\[(?:\[\d+,\d+\]|[^\]\s]*@\d+),(\d+)\](?:\s+Exit code:\s*(\d+))?/;
const SRUN_NODE_FAILURE = /srun: error: Node failure on (\S+)/;
const SRUN_TASKS = /srun: error: ([^\s:]+): (tasks? [\d,[\]-]+): (.{1,80}?)\s*$/;
const HYDRA_AT = /^\s*=\s+(?:RANK (\d+) )?PID \d+ RUNNING AT (\S+)/;
const HYDRA_END = /^\s*=\s+(?:KILLED BY SIGNAL: (\d+)(?: \(([^)]{1,60})\))?|EXIT CODE: (\d+))/;
const STEPD_CANCELLED = /slurmstepd: error: \*\*\* (?:STEP|JOB) \S+ ON \S+ CANCELLED AT \S+ DUE (?:TO|to) ([A-Z][A-Z ]{2,30}[A-Z])/;

/** The event one launcher line names, or null. */
export function launcherEvent(text: string): LauncherEvent | null {
    let m = text.match(NOTICED);
    if (m) {
        const sig = m[3] ? `signal ${m[3]}${m[4] ? ` (${m[4]})` : ""}` : "a signal";
        return { node: m[2], mpiRank: Number(m[1]), cause: `process rank ${m[1]} exited on ${sig}` };
    }
    if ((m = text.match(HAS_EXITED))) return { node: m[2], mpiRank: Number(m[1]), cause: `process rank ${m[1]} exited ${m[3] === "exiting improperly" ? "without finalizing" : "calling abort"}` };
    if ((m = text.match(REMOTE_DAEMON))) return { node: m[1], mpiRank: null, cause: "the launcher lost its daemon on this node (node down or unreachable)" };
    if ((m = text.match(PROCESS_NAME))) return { node: null, mpiRank: Number(m[1]), cause: `process rank ${m[1]} was the first to exit non-zero${m[2] ? ` (exit code ${m[2]})` : ""}` };
    if ((m = text.match(SRUN_NODE_FAILURE))) return { node: m[1], mpiRank: null, cause: "Slurm reports a node failure" };
    if ((m = text.match(SRUN_TASKS))) return { node: m[1], mpiRank: null, cause: `${m[2]}: ${m[3]}` };
    if ((m = text.match(HYDRA_AT))) {
        return { node: m[2], mpiRank: m[1] ? Number(m[1]) : null, cause: `${m[1] ? `process rank ${m[1]}` : "a process"} terminated badly` };
    }
    if ((m = text.match(HYDRA_END))) {
        return { node: null, mpiRank: null, amends: true, cause: m[3] !== undefined ? `exit code ${m[3]}` : `killed by signal ${m[1]}${m[2] ? ` (${m[2]})` : ""}` };
    }
    if ((m = text.match(STEPD_CANCELLED))) return { node: null, mpiRank: null, cause: `Slurm cancelled the job: ${m[1].toLowerCase()}` };
    return null;
}

/** What a launcher said of a job: the nodes it named with why, and job-wide causes, in the order printed, bounded. */
export interface LauncherReport {
    /** `node: cause` for each node named (first cause per node). */
    nodes: Array<{ node: string; cause: string }>;
    /** Causes that name no node (a Slurm cancellation, the first process to exit non-zero without its node). */
    job: string[];
}

const MAX_EVENTS = 50;

/**
 * The launcher's report from its lines. `hostOfMpiRank` maps an MPI rank to the node nccl-tests' rank list puts it on
 * (null when unknown), so `Process name: [..,11]` becomes that rank's node.
 */
export function launcherReport(lines: ReadonlyArray<{ text: string }>, hostOfMpiRank: (rank: number) => string | null = () => null): LauncherReport | null {
    const nodes: LauncherReport["nodes"] = [];
    const job: string[] = [];
    const seen = new Set<string>();
    let hydra: { node: string; cause: string } | null = null;
    for (const l of lines) {
        const e = launcherEvent(l.text);
        if (!e) continue;
        if (e.amends) {
            // how the process of Hydra's box ended (only the box's own node entry is amended, once)
            if (hydra) hydra.cause = `${hydra.cause}: ${e.cause}`;
            hydra = null;
            continue;
        }
        const node = e.node ?? (e.mpiRank !== null ? hostOfMpiRank(e.mpiRank) : null);
        hydra = null;
        if (node !== null) {
            if (!seen.has(node) && nodes.length < MAX_EVENTS) {
                seen.add(node);
                const entry = { node, cause: e.cause };
                nodes.push(entry);
                if (HYDRA_AT.test(l.text)) hydra = entry;
            }
        } else if (!job.includes(e.cause) && job.length < MAX_EVENTS) {
            job.push(e.cause);
        }
    }
    return nodes.length || job.length ? { nodes, job } : null;
}

/** One line for a verdict: `node B: process rank 8 exited on signal 9 (Killed); Slurm cancelled the job: time limit`. */
export function launcherText(r: LauncherReport): string {
    const parts = [...r.nodes.slice(0, 3).map((n) => `${n.node}: ${n.cause}`), ...r.job.slice(0, 2)];
    const more = Math.max(0, r.nodes.length - 3) + Math.max(0, r.job.length - 2);
    return parts.join("; ") + (more ? `; and ${more} more` : "");
}
