/**
 * Day-2 verbs that read the operating state from the stack (read.ts), from any checkout:
 *   rdmakit status --stack <name> | --out <dir> [--json]
 *   rdmakit ssh --stack <name> | --out <dir> <node> [-- cmd...]
 *   rdmakit repair --stack <name> | --out <dir> --dry-run [--max-replacements N]
 * Exit status: status 0 when no node fails on evidence, 1 when some does; ssh: ssh's own; 2 a usage error (no stack,
 * no state, an unknown node).
 */
import type { Command } from "commander";
import { exitOnUsage, printOutput, type VerbOutput } from "../cli/verb";
import { readState, type StateSource } from "./read";
import { StateError, type OperatingState } from "./state";
import { DEFAULT_REPAIR_CAP, decideRepairs, formatDecision, type RepairDecision } from "./repair";
import { classifyFinding } from "./persistence";
import { formatStatus } from "./status";
import { runSsh } from "./ssh";

interface SourceOptions extends StateSource { json?: boolean; dryRun?: boolean; maxReplacements?: string }

/** The decision every verb shows: the stack's policy, the cap, the classification, the history the state carries. */
export function decisionFor(state: OperatingState, cap = DEFAULT_REPAIR_CAP): RepairDecision {
    return decideRepairs(state, { policy: state.repair, cap, classify: classifyFinding, history: [] });
}

function load(verb: string, opts: StateSource): { state: OperatingState; from: string } | VerbOutput {
    try {
        return readState(opts);
    } catch (e) {
        if (e instanceof StateError) return { code: 2, stderr: `rdmakit ${verb}: ${e.message}\n` };
        throw e;
    }
}

const failing = (d: RepairDecision): boolean => d.actions.length > 0;

export function runStatus(opts: SourceOptions, now = new Date()): VerbOutput {
    const got = load("status", opts);
    if ("code" in got) return got;
    const d = decisionFor(got.state);
    const stdout = opts.json ? JSON.stringify({ state: got.state, from: got.from, repair: d }, null, 2) + "\n" : formatStatus(got.state, got.from, d, now);
    return { code: failing(d) ? 1 : 0, stdout };
}

export function runRepair(opts: SourceOptions): VerbOutput {
    const cap = opts.maxReplacements === undefined ? DEFAULT_REPAIR_CAP : Number(opts.maxReplacements);
    if (!Number.isInteger(cap) || cap < 0) return { code: 2, stderr: `rdmakit repair: --max-replacements ${JSON.stringify(opts.maxReplacements)}: a whole number >= 0\n` };
    if (!opts.dryRun) {
        return { code: 2, stderr: "rdmakit repair: only --dry-run is built so far: it prints the decision pulumi up and repair take (docs/day2.md)\n" };
    }
    const got = load("repair", opts);
    if ("code" in got) return got;
    const d = decisionFor(got.state, cap);
    return { code: 0, stdout: formatDecision(d, got.state) };
}

function sourceOptions(cmd: Command): Command {
    return cmd
        .option("--stack <name>", "the stack, read through the Pulumi CLI from its backend (pulumi login / PULUMI_BACKEND_URL)")
        .option("--out <dir>", "instead: a folder with the state.json the last pulumi up wrote (out/<stack>)");
}

/** Adds `status`, `ssh` and `repair`. */
export function registerDay2(program: Command): void {
    exitOnUsage(sourceOptions(program
        .command("status")
        .description("day 2: nodes, verdicts and ages, drained nodes, the scheduler, what a repair would do; exit 0 all well, 1 a node fails, 2 usage"))
        .option("--json", "print the state and the repair decision as JSON"))
        .action((opts: SourceOptions) => printOutput(runStatus(opts)));
    exitOnUsage(sourceOptions(program
        .command("ssh")
        .description("day 2: ssh to a node through the stack's way in, with its pinned host keys; the key from your ssh-agent")
        .argument("<node>", "the node's name (rdmakit status lists them)")
        .argument("[command...]", "a command to run (after --)")))
        .action(async (node: string, command: string[], opts: SourceOptions) => {
            const got = load("ssh", opts);
            if ("code" in got) return printOutput(got);
            try {
                process.exitCode = await runSsh(got.state, node, command);
            } catch (e) {
                if (e instanceof StateError) return printOutput({ code: 2, stderr: `rdmakit ssh: ${e.message}\n` });
                throw e;
            }
        });
    exitOnUsage(sourceOptions(program
        .command("repair")
        .description("day 2: apply cluster.repair (report | drain | replace) to the nodes that fail on evidence")
        .option("--dry-run", "print what it would do (the same decision pulumi up takes), change nothing")
        .option("--max-replacements <n>", `most nodes replaced in this run (default ${DEFAULT_REPAIR_CAP})`)))
        .action((opts: SourceOptions) => printOutput(runRepair(opts)));
}
