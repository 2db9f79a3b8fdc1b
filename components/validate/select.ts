/**
 * Which nodes the all-node runs take when some failed their health grade or preflight checks
 * (cluster.validation.maxFailedNodes): VALIDATE_SCRIPT runs this between validate.yml's per-node plays (health
 * captures, preflight) and the rest. Up to the tolerance, the failed nodes are left out: the all-node runs, the pairs
 * and the single-node runs go on with the others (hostfile and `-np`, or srun's node list, from them), the report
 * names each left-out node with its failed component, and under Slurm the gate drains it. More failed nodes than the
 * tolerance: the run goes on as it does without one (a failed preflight stops it before nccl-tests; failed health
 * grades alone are graded with the run, which they fail).
 * Under Slurm, whatever the tolerance, the nodes Slurm cannot give the run (down, or drained by someone other than
 * rdmakit, as the head node's sinfo said before: $RDMAKIT_SLURM_STATES) are left out the same way, named with what sinfo
 * said; the gate then keeps them out (an operator's drain keeps its reason).
 *
 *   node --import tsx components/validate/select.ts <vars.json> <preflight dir> <health dir> <override.json>
 *
 * The health expectation comes in $RDMAKIT_HEALTH_EXPECT (absent: health is not graded here), the tolerance in
 * $RDMAKIT_MAX_FAILED_NODES. Exit 0: go on (override.json written when nodes are left out, with the variables that
 * replace the plan's for the rest of the run: `-e @override.json` after the plan's); 1: stop before nccl-tests;
 * 2: an input that cannot be read. Each left-out node is said on stderr, one line each.
 */
import * as fs from "fs";
import { readPreflight, type PreflightReport } from "./preflight";
import { fillNp } from "./commands";
import { fillSrunNodes } from "./srun";
import { planPairRounds } from "./slow";
import { gradeHealthDir } from "../health/report";
import type { HealthExpectation, NodeHealth } from "../health/types";
import type { ValidationHost, ValidationVars } from "./component";
import { parseDrainStates } from "../slurm/gate";
import { readSinfoFile, SinfoError } from "../slurm/sinfo";

/** A node that failed, with the first thing it failed on (component first, as the Slurm gate's drain reason). */
export interface FailedNode {
    node: string;
    /**
     * "preflight" for a failed check or no result at all, "health" for a grade other than healthy, "scheduler" for a
     * node Slurm cannot give the run (unavailableNodes)
     */
    kind: "preflight" | "health" | "scheduler";
    why: string;
}

// sinfo(1) NODE STATE CODES: a node not responding (*), powered off or powering (~ # ! %), to be rebooted or rebooting
// (@ ^); and the states an administrator sets or Slurm cannot run a job in (fail, failing, invalid, unknown, future).
// Each state word is matched whole or followed by a flag character.
// `$` (a maintenance reservation) is left alone: the validation's own reservation is one (slurm-hold.sh, Flags=MAINT)
// and a run an interruption left behind still holds it. A node DOWN with rdmakit's reason whose slurmd answers (a
// replaced host drained before its first start, predrain.yml) is the hold's to resume (scontrol update State=RESUME
// returns a DOWN node to service), as before.
// source: https://slurm.schedmd.com/sinfo.html ("NODE STATE CODES"); https://slurm.schedmd.com/scontrol.html (RESUME)
const UNAVAILABLE_SUFFIX = /[*~#!%@^]/;
// The power states without a base state (slurm_protocol_defs.c node_state_string_compact: "pow_dn", "pow_up",
// "powered_dn", "powering_up", "powring_dn") are the flags ~ # ! % stand for, and "?" a state Slurm cannot name.
const UNAVAILABLE_STATE = /^(fail|failg|inval|unk|futr|pow_dn|pow_up|powered_dn|powering_up|powring_dn|\?)(?![a-z_])/;

/**
 * The plan's nodes Slurm cannot give the validation's job, from `sinfo -h -R -o '%n|%t|%E'` on the head node
 * (components/slurm/gate.ts parseDrainStates, untrusted text): drained or down for a reason that is not rdmakit's (an
 * operator's, or Slurm's own such as "Not responding": slurm-hold.sh resumes only rdmakit's), or, whatever the reason,
 * not responding, powered down or rebooting, or in a state that takes no job. Left
 * in, srun cannot allocate the whole node list, the all-node run fails naming no node, and the gate would drain every
 * node. Pure.
 */
export function unavailableNodes(sinfoText: string, hosts: readonly string[]): FailedNode[] {
    return parseDrainStates(sinfoText, hosts)
        .filter((d) => !d.reason.startsWith("rdmakit") || UNAVAILABLE_STATE.test(d.state) || UNAVAILABLE_SUFFIX.test(d.state))
        .map((d) => ({ node: d.node, kind: "scheduler", why: `Slurm: ${d.state}${d.reason ? `, ${d.reason}` : ""}` }));
}

export type Selection =
    | { action: "all" }
    | { action: "drop"; dropped: FailedNode[] }
    | { action: "stop"; failed: FailedNode[] };

/** Each host of the run that failed: preflight first (it stops a run), then health; in the run's order. Pure. */
export function failedNodes(hosts: readonly string[], preflight: PreflightReport, health: readonly NodeHealth[] | undefined): FailedNode[] {
    const pre = new Map(preflight.nodes.map((n) => [n.host, n]));
    const graded = new Map((health ?? []).map((h) => [h.node, h]));
    const out: FailedNode[] = [];
    for (const host of hosts) {
        const p = pre.get(host);
        const bad = p?.checks.find((c) => !c.ok);
        if (!p) out.push({ node: host, kind: "preflight", why: "preflight: no result (its per-node plays did not finish)" });
        else if (bad) out.push({ node: host, kind: "preflight", why: `preflight ${bad.check}: expected ${bad.expected}; seen ${bad.seen}` });
        const h = graded.get(host);
        if (p && !bad && h && h.verdict !== "healthy") {
            const f = h.findings[0];
            const why = f ? `${f.component}: ${f.message}` : h.unreadable[0] ? `${h.unreadable[0].file} ${h.unreadable[0].reason}`
                : `not checked: ${[...new Set(h.notChecked.map((c) => c.component))].join(", ")}`;
            out.push({ node: host, kind: "health", why: `health ${why}` });
        }
    }
    return out;
}

/**
 * The rule: no failed node, every node runs; up to `maxFailed`, the failed ones are left out; more, a failed
 * preflight stops the run and failed health grades alone leave every node in it (as without a tolerance). Pure.
 */
export function selectNodes(failed: readonly FailedNode[], maxFailed: number): Selection {
    if (failed.length === 0) return { action: "all" };
    if (failed.length <= maxFailed) return { action: "drop", dropped: [...failed] };
    return failed.some((f) => f.kind === "preflight") ? { action: "stop", failed: [...failed] } : { action: "all" };
}

/** What replaces the plan's variables for the rest of the run once `dropped` are left out. Pure. */
export type DropOverride = Pick<ValidationVars, "nccl_validate_hosts" | "nccl_validate_all_fixed_cmd" | "nccl_validate_all_sweep_cmd" | "nccl_validate_pair_rounds"> & {
    nccl_validate_dropped: string[];
    /** why each was left out, where the node's own results cannot say (Slurm could not give it: unavailableNodes) */
    nccl_validate_dropped_why?: Record<string, string>;
    /** the incast's plan names its hosts: it does not run on fewer (null: validate.yml skips it) */
    nccl_validate_incast: null;
    nccl_validate_slurm?: ValidationVars["nccl_validate_slurm"];
};

export function dropOverride(vars: ValidationVars, dropped: readonly string[], why: Record<string, string> = {}): DropOverride {
    const t = vars.nccl_validate_drop_templates;
    if (!t) throw new Error("the variables hold no nccl_validate_drop_templates (validationVars writes them with maxFailedNodes > 0 or under Slurm)");
    const gone = new Set(dropped);
    const hosts: ValidationHost[] = vars.nccl_validate_hosts.filter((h) => !gone.has(h.name));
    const names = hosts.map((h) => h.name);
    const index = new Map(names.map((n, i) => [n, i]));
    const np = hosts.length * vars.nccl_validate_gpus_per_node;
    const slurm = vars.nccl_validate_slurm;
    return {
        nccl_validate_dropped: [...dropped],
        ...(Object.keys(why).length ? { nccl_validate_dropped_why: { ...why } } : {}),
        nccl_validate_hosts: hosts,
        nccl_validate_all_fixed_cmd: fillNp(t.fixed_cmd, np),
        nccl_validate_all_sweep_cmd: fillNp(t.sweep_cmd, np),
        nccl_validate_pair_rounds: planPairRounds(names).map((round) => round.map(([a, b]): [number, number] => [index.get(a) as number, index.get(b) as number])),
        nccl_validate_incast: null,
        ...(slurm && t.srun_fixed_cmd && t.srun_sweep_cmd
            // the reservation keeps every node until the gate (a MAINT reservation may overlap an operator's own)
            ? { nccl_validate_slurm: { ...slurm, fixed_cmd: fillSrunNodes(t.srun_fixed_cmd, names), sweep_cmd: fillSrunNodes(t.srun_sweep_cmd, names) } } : {}),
    };
}

/** Reads the vars, results and grades, decides, writes the override; the exit status as the header says. */
export function selectMain(argv: string[], env: NodeJS.ProcessEnv = process.env, err: (line: string) => void = (l) => process.stderr.write(l + "\n")): 0 | 1 | 2 {
    const [varsFile, preflightDir, healthDir, outFile] = argv;
    if (!outFile) {
        err("usage: select.ts <vars.json> <preflight dir> <health dir> <override.json>");
        return 2;
    }
    const maxFailed = Number(env.RDMAKIT_MAX_FAILED_NODES ?? "0");
    if (!Number.isInteger(maxFailed) || maxFailed < 0) {
        err(`RDMAKIT_MAX_FAILED_NODES=${JSON.stringify(env.RDMAKIT_MAX_FAILED_NODES)}: must be an integer >= 0`);
        return 2;
    }
    let vars: ValidationVars;
    try {
        vars = JSON.parse(fs.readFileSync(varsFile, "utf8")) as ValidationVars;
    } catch (e) {
        err(`${varsFile}: cannot read the validation variables (${(e as Error).message})`);
        return 2;
    }
    if (!Array.isArray(vars.nccl_validate_hosts) || !vars.nccl_validate_drop_templates) {
        err(`${varsFile}: no nccl_validate_hosts or nccl_validate_drop_templates (validationVars writes them with maxFailedNodes > 0 or under Slurm)`);
        return 2;
    }
    // the nodes' own results count only with a tolerance (then the per-node plays ran first); without one they are not read
    const pre = maxFailed > 0 && fs.existsSync(preflightDir) ? readPreflight(preflightDir) : { nodes: [], badNodes: [] };
    if (typeof pre === "string") {
        err(pre);
        return 2;
    }
    let health: NodeHealth[] | undefined;
    if (maxFailed > 0 && env.RDMAKIT_HEALTH_EXPECT && fs.existsSync(healthDir)) {
        try {
            health = gradeHealthDir(healthDir, JSON.parse(env.RDMAKIT_HEALTH_EXPECT) as HealthExpectation);
        } catch (e) {
            err(`RDMAKIT_HEALTH_EXPECT: ${(e as Error).message}`);
            return 2;
        }
    }
    const hosts = vars.nccl_validate_hosts.map((h) => h.name);
    // the nodes Slurm cannot give the run (the head node's sinfo, read before: $RDMAKIT_SLURM_STATES) are left out
    // whatever the tolerance; the others' own failures count against it only where the per-node plays ran first
    const statesFile = env.RDMAKIT_SLURM_STATES;
    let away: FailedNode[] = [];
    try {
        if (statesFile && fs.existsSync(statesFile)) away = unavailableNodes(readSinfoFile(statesFile, "RDMAKIT_SLURM_STATES"), hosts);
    } catch (e) {
        // which nodes Slurm can give the run is not known: stop rather than guess
        if (!(e instanceof SinfoError)) throw e;
        err(`the head node's drain states were not read: ${e.message}; stopping before nccl-tests`);
        return 1;
    }
    const gone = new Set(away.map((a) => a.node));
    const sel = selectNodes(maxFailed > 0 ? failedNodes(hosts.filter((h) => !gone.has(h)), pre, health) : [], maxFailed);
    if (sel.action === "stop") {
        err(`${sel.failed.length} node(s) failed, more than cluster.validation.maxFailedNodes ${maxFailed}: stopping before nccl-tests`);
        return 1;
    }
    const dropped = [...away, ...(sel.action === "drop" ? sel.dropped : [])];
    if (dropped.length === 0) return 0;
    if (hosts.length - dropped.length < 2) {
        err(`${dropped.length} of ${hosts.length} node(s) left out (${dropped.map((d) => d.node).join(", ")}): fewer than two remain for the all-node runs; stopping before nccl-tests`);
        return 1;
    }
    fs.writeFileSync(outFile, JSON.stringify(dropOverride(vars, dropped.map((d) => d.node), Object.fromEntries(away.map((a) => [a.node, a.why])))) + "\n", { mode: 0o600 });
    // what a node (or the head node's sinfo) sent back, clipped to a line of its own
    for (const d of dropped) {
        const rule = d.kind === "scheduler" ? "Slurm cannot give it to the run" : `cluster.validation.maxFailedNodes ${maxFailed}`;
        err(`left out of the all-node runs (${rule}): ${d.node}: ${d.why.replace(/\p{Cc}/gu, " ").slice(0, 200)}`);
    }
    return 0;
}

if (require.main === module) process.exitCode = selectMain(process.argv.slice(2));
