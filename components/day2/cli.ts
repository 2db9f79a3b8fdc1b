/**
 * Day-2 verbs that read the operating state from the stack (read.ts), from any checkout:
 *   rdmakit status --stack <name> | --out <dir> [--json]
 *   rdmakit ssh --stack <name> | --out <dir> <node> [-- cmd...]
 *   rdmakit repair --stack <name> [--yes] [--max-replacements N] [--wait-minutes N] [--up-minutes N] [--ssh-key F]
 *   rdmakit repair --stack <name> | --out <dir> --dry-run
 *   rdmakit scale --stack <name> --nodes N [--yes] [--drain-minutes N] | --dry-run
 * Exit status: status 0 when no node fails on evidence, 1 when some does; repair 0 when every failing node was
 * repaired (or none fails), 1 when one still fails, 128 + n when signal n stopped it (after the step under way);
 * ssh: ssh's own; 2 a usage error (no stack, no state, an unknown node, a repair not confirmed).
 */
import type { Command } from "commander";
import { exitOnUsage, printOutput, type VerbOutput } from "../cli/verb";
import { readState, type StateSource } from "./read";
import { StateError, type OperatingState } from "./state";
import { DEFAULT_REPAIR_CAP, decisionFor, formatDecision, type RepairDecision } from "./repair";
import { formatStatus } from "./status";
import { runSsh } from "./ssh";
import * as readline from "node:readline";
import { executeRepairs } from "./execute";
import { CALL_TIMEOUT_MS, DEFAULT_UP_MINUTES, DEFAULT_WAIT_MINUTES, type LiveDeps, cloudOpsFor, confirmation, formatOutcomes, liveDeps, liveNodeOps, realSsh, repairStatus } from "./live";
import { cliJson, guardSignals, stoppedBySignal } from "./run";
import { signalStatus } from "../cli/child";
import { planScaleChange } from "./scale";
import { DEFAULT_DRAIN_MINUTES, formatScale, shrink } from "./scale-live";

interface SourceOptions extends StateSource { json?: boolean; dryRun?: boolean; maxReplacements?: string }

function load(verb: string, opts: StateSource, cwd?: string, env?: NodeJS.ProcessEnv): { state: OperatingState; from: string } | VerbOutput {
    try {
        return readState(opts, cwd, env);
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

export interface RepairOptions extends SourceOptions { yes?: boolean; waitMinutes?: string; upMinutes?: string; sshKey?: string }

/** A whole number >= min from a flag, or the usage message naming it. */
function wholeNumber(flag: string, v: string | undefined, dflt: number, min: number): number | string {
    if (v === undefined) return dflt;
    const n = Number(v);
    return Number.isInteger(n) && n >= min ? n : `${flag} ${JSON.stringify(v)}: a whole number >= ${min}`;
}

/** What the verb needs from its surroundings; tests give stubs. */
export interface RepairDeps extends Partial<LiveDeps> {
    /** stdin and stderr are a terminal a person answers at */
    interactive?: boolean;
    /** asks the question, resolves to the answer */
    ask?: (question: string) => Promise<string>;
    /** progress lines as the repair goes */
    progress?: (line: string) => void;
}

function askOnTerminal(question: string): Promise<string> {
    const rl = readline.createInterface({ input: process.stdin, output: process.stderr });
    return new Promise((resolve) => rl.question(question, (a) => { rl.close(); resolve(a); }));
}

/**
 * `rdmakit repair`: --dry-run prints the decision; without it the decision is carried out (live.ts) after --yes or a
 * typed "yes", refused (2) without a terminal. Exit 0: no node failed, or every failing node was replaced, proven
 * and resumed; 1: a node still fails (reported, drained, not replaced or failed its proof); 2: usage or refusal.
 */
export async function runRepair(opts: RepairOptions, deps: RepairDeps = {}): Promise<VerbOutput> {
    const bad = (msg: string): VerbOutput => ({ code: 2, stderr: `rdmakit repair: ${msg}\n` });
    const cap = wholeNumber("--max-replacements", opts.maxReplacements, DEFAULT_REPAIR_CAP, 0);
    const waitMinutes = wholeNumber("--wait-minutes", opts.waitMinutes, DEFAULT_WAIT_MINUTES, 1);
    const upMinutes = wholeNumber("--up-minutes", opts.upMinutes, DEFAULT_UP_MINUTES, 1);
    for (const v of [cap, waitMinutes, upMinutes]) if (typeof v === "string") return bad(v);
    if (!opts.dryRun && opts.stack === undefined) return bad("acting needs --stack NAME (the stack is updated); --out reads a state for --dry-run only");
    const cwd = deps.cwd ?? process.cwd();
    const env = deps.env ?? process.env;
    const got = load("repair", opts, cwd, env);
    if ("code" in got) return got;
    const d = decisionFor(got.state, cap as number);
    const plan = formatDecision(d, got.state);
    if (opts.dryRun) return { code: 0, stdout: plan };
    if (d.actions.some((a) => a.kind === "replace") && opts.sshKey === undefined && !env.RDMAKIT_SSH_PRIVATE_KEY && !deps.check) {
        return { code: 2, stdout: plan, stderr: "rdmakit repair: a replacement is proven by rdmakit check on the nodes: give --ssh-key FILE or set RDMAKIT_SSH_PRIVATE_KEY; nothing was changed\n" };
    }
    const interactive = deps.interactive ?? (!!process.stdin.isTTY && !!process.stderr.isTTY);
    const mode = confirmation(d, !!opts.yes, interactive);
    if (mode === "refuse") {
        return { code: 2, stdout: plan, stderr: "rdmakit repair: not run from a terminal and no --yes: nothing was changed. Run again with --yes to carry out the repair above\n" };
    }
    if (mode === "ask") {
        process.stdout.write(plan);
        const answer = await (deps.ask ?? askOnTerminal)(`Carry out this repair on stack ${got.state.stack}? Only 'yes' goes ahead: `);
        if (answer.trim() !== "yes") return { code: 2, stderr: "rdmakit repair: not confirmed: nothing was changed\n" };
    }
    const stack = opts.stack as string;
    const live = liveDeps(stack, got.state, { ...deps, cwd, env }, { waitMinutes: waitMinutes as number, upMinutes: upMinutes as number, sshKey: opts.sshKey });
    const canDrain = got.state.scheduler.type !== "none";
    const release = guardSignals();
    try {
        const r = await executeRepairs(d, got.state, { cloud: cloudOpsFor(got.state, live.run, live.wait), nodes: liveNodeOps(stack, got.state, live), canDrain });
        const sig = stoppedBySignal();
        const stopped = sig ? `rdmakit repair: stopped by ${sig} after the step under way; the steps after it were not run\n` : "";
        return { code: sig ? signalStatus(sig) : repairStatus(r.outcomes), stdout: (mode === "ask" ? "" : plan) + formatOutcomes(r.outcomes), ...(sig ? { stderr: stopped } : {}) };
    } finally {
        release();
    }
}

export interface ScaleOptions extends SourceOptions { nodes?: string; yes?: boolean; drainMinutes?: string }

/**
 * `rdmakit scale --nodes N`: --dry-run (or growing) prints the plan; shrinking drains the chosen nodes, waits until
 * they run no job and releases them (scale-live.ts), after --yes or a typed "yes". Exit 0 done (or nothing to do),
 * 1 the drain did not finish in time or a call failed (nothing released), 2 usage or not confirmed.
 */
export async function runScale(opts: ScaleOptions, deps: RepairDeps & { sleep?: (ms: number) => Promise<void>; intervalMs?: number } = {}): Promise<VerbOutput> {
    const bad = (msg: string): VerbOutput => ({ code: 2, stderr: `rdmakit scale: ${msg}\n` });
    const want = wholeNumber("--nodes", opts.nodes, NaN, 1);
    const drainMinutes = wholeNumber("--drain-minutes", opts.drainMinutes, DEFAULT_DRAIN_MINUTES, 1);
    if (opts.nodes === undefined) return bad("--nodes N is required (the node count to go to)");
    for (const v of [want, drainMinutes]) if (typeof v === "string") return bad(v);
    if (!opts.dryRun && opts.stack === undefined) return bad("acting needs --stack NAME; --out reads a state for --dry-run only");
    const cwd = deps.cwd ?? process.cwd();
    const env = deps.env ?? process.env;
    const got = load("scale", opts, cwd, env);
    if ("code" in got) return got;
    const plan = planScaleChange(got.state, want as number);
    const text = formatScale(got.state, want as number, plan);
    if (opts.dryRun || plan.kind !== "shrink") return { code: 0, stdout: text };
    const interactive = deps.interactive ?? (!!process.stdin.isTTY && !!process.stderr.isTTY);
    if (!opts.yes && !interactive) return { code: 2, stdout: text, stderr: "rdmakit scale: not run from a terminal and no --yes: nothing was changed\n" };
    if (!opts.yes) {
        process.stdout.write(text);
        const answer = await (deps.ask ?? askOnTerminal)(`Drain and release these nodes of stack ${got.state.stack}? Only 'yes' goes ahead: `);
        if (answer.trim() !== "yes") return { code: 2, stderr: "rdmakit scale: not confirmed: nothing was changed\n" };
    }
    const release = guardSignals();
    try {
        const r = await shrink(got.state, plan, want as number, {
            run: deps.run ?? cliJson(CALL_TIMEOUT_MS, env),
            ssh: deps.ssh ?? realSsh(got.state, env),
            sleep: deps.sleep ?? ((ms) => new Promise((res) => setTimeout(res, ms))),
            drainTimeoutMs: (drainMinutes as number) * 60_000,
            ...(deps.intervalMs !== undefined ? { intervalMs: deps.intervalMs } : {}),
        });
        const sig = stoppedBySignal();
        return { code: sig ? signalStatus(sig) : r.code, stdout: (opts.yes ? text : "") + r.lines.join("\n") + "\n" };
    } finally {
        release();
    }
}

function sourceOptions(cmd: Command): Command {
    return cmd
        .option("--stack <name>", "the stack, read through the Pulumi CLI from its backend (pulumi login / PULUMI_BACKEND_URL)")
        .option("--out <dir>", "instead: a folder with the state.json the last pulumi up wrote (out/<stack>)");
}

/** Adds `status`, `ssh`, `repair` and `scale`. */
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
        .option("--yes", "carry it out without asking (needed when not run from a terminal)")
        .option("--max-replacements <n>", `most nodes replaced in this run (default ${DEFAULT_REPAIR_CAP})`)
        .option("--wait-minutes <n>", `longest wait for a replacement instance in service (default ${DEFAULT_WAIT_MINUTES})`)
        .option("--up-minutes <n>", `longest pulumi up that provisions and validates the replacement (default ${DEFAULT_UP_MINUTES})`)
        .option("--ssh-key <file>", "SSH private key for the proof (rdmakit check; default: $RDMAKIT_SSH_PRIVATE_KEY)")))
        .action(async (opts: RepairOptions) => printOutput(await runRepair(opts)));
    exitOnUsage(sourceOptions(program
        .command("scale")
        .description("day 2: change the node count safely; shrinking drains the chosen nodes, waits until they run no job, then releases them for pulumi up")
        .requiredOption("--nodes <n>", "the node count to go to")
        .option("--dry-run", "print the plan, change nothing")
        .option("--yes", "carry it out without asking (needed when not run from a terminal)")
        .option("--drain-minutes <n>", `longest wait for the chosen nodes to finish their jobs (default ${DEFAULT_DRAIN_MINUTES})`)))
        .action(async (opts: ScaleOptions) => printOutput(await runScale(opts)));
}
