import * as fs from "fs";
import * as path from "path";
import { Command } from "commander";
import { redactSecrets, SpecError } from "../errors";
import { redactPemBlocks } from "../redact";
import { countByType, formatNcclAndThresholds, formatPlanSummary, OfflineResult, ProgramInputError, RuleBreakError, runProgramOffline, showUnknowns } from "../offline";
import { RDMA_CLUSTER_TOKEN } from "../cluster";
import { planCluster } from "../plan";
import { parseClusterSpec } from "../spec";
import { planArtifacts } from "../artifacts";
import { PACKAGE_ROOT } from "../assets";
import { programEntry, runTeamProgram, type ProgramRun } from "../program";
import { evaluatePolicies, verdictDetail, type PolicyVerdict } from "../../policies/evaluate";
import { formatSoftwareTable } from "../plan/software";
import { formatSchedulerSection } from "../slurm/summary";

const REPO = PACKAGE_ROOT;
/** With no arguments `rdmakit plan` plans the bundled AWS example, so a newcomer sees the kit work. */
export const DEFAULT_EXAMPLE = path.join(REPO, "examples", "aws-p5.yaml");

export interface PlanOptions {
    stack?: string;
    config?: string;
    out?: string;
    json?: boolean;
    /** a team's own Pulumi program (folder or entry file) instead of rdmakit's */
    program?: string;
}

/** Which stack file to read and what the stack is called. */
export function resolveStackFile(opts: PlanOptions, cwd = process.cwd()): { file: string; stack: string } {
    if (opts.stack && opts.config) throw new Error("give --stack or --config, not both");
    if (opts.stack) return { file: path.join(cwd, `Pulumi.${opts.stack}.yaml`), stack: opts.stack };
    const file = opts.config ? path.resolve(cwd, opts.config) : DEFAULT_EXAMPLE;
    const stack = path.basename(file).replace(/\.ya?ml$/, "").replace(/^Pulumi\./, "");
    return { file, stack };
}

/** Runs the plan; returns the exit status (0 ok, 1 a mandatory check failed, 2 invalid input). */
export async function runPlan(opts: PlanOptions, out: (s: string) => void = console.log, err: (s: string) => void = console.error): Promise<number> {
    if (opts.program !== undefined) return runProgramPlan(opts, out, err);
    const { file, stack } = resolveStackFile(opts);
    if (!fs.existsSync(file)) {
        err(`rdmakit plan: ${file} does not exist (give --config FILE, or --stack NAME for Pulumi.NAME.yaml here)`);
        return 2;
    }
    let result: OfflineResult;
    try {
        result = await runProgramOffline(file, stack, path.join(REPO, "index.ts"));
    } catch (e) {
        if (e instanceof SpecError || e instanceof ProgramInputError) {
            err(`rdmakit plan: ${path.relative(process.cwd(), file) || file}: ${e.message}`);
            return 2;
        }
        if (e instanceof RuleBreakError) {
            err(redactSecrets(`rdmakit plan: ${path.relative(process.cwd(), file) || file}: FAIL ${e.message}`));
            return 1;
        }
        throw e;
    }
    const outDir = path.resolve(opts.out ?? path.join("out", stack));
    const artifacts = planArtifacts(result);
    fs.mkdirSync(outDir, { recursive: true });
    for (const [name, text] of Object.entries(artifacts.files)) {
        fs.mkdirSync(path.dirname(path.join(outDir, name)), { recursive: true });
        fs.writeFileSync(path.join(outDir, name), text);
    }
    const planJson = {
        stack,
        stackFile: file,
        spec: result.spec,
        plan: result.plan,
        checks: artifacts.checks,
        resources: result.resources.map((r) => ({ ...r, inputs: showUnknowns(r.inputs) })),
        invokes: result.invokes.map((i) => ({ ...i, args: showUnknowns(i.args) })),
        artifacts: Object.keys(artifacts.files),
    };
    // plan.json keeps public keys (known_hosts is built from them), so only armoured blocks are cut from it; the spec's
    // strings have passed their grammars and the key-material test already (components/grammars.ts)
    const planParts = redactedJsonParts(planJson);
    writeParts(path.join(outDir, "plan.json"), [...planParts, "\n"]);
    if (opts.json) {
        out(planParts.join(""));
    } else {
        const extra = result.plan ? ["", ...formatSoftwareTable(result.plan.software), "", provisionModeLine(result.plan.provision)] : [];
        if (result.plan?.scheduler) extra.push("", ...formatSchedulerSection(result.plan.scheduler));
        extra.push("", "checks:");
        if (artifacts.checks.length === 0) extra.push("  none apply to this fabric");
        for (const c of artifacts.checks) extra.push(`  ${c.skipped ? "skip" : c.ok ? "ok  " : c.mandatory ? "FAIL" : "warn"} ${c.name}${c.detail ? ` — ${c.detail}` : ""}`);
        extra.push("", `wrote ${path.relative(process.cwd(), outDir) || "."}/: plan.json ${wroteNames(Object.keys(artifacts.files)).join(" ")}`);
        out(redactSecrets(formatPlanSummary(result, extra)));
    }
    return artifacts.checks.some((c) => !c.ok && c.mandatory) ? 1 : 0;
}

/**
 * `JSON.stringify(value, null, 2)` of an object, as pieces whose concatenation is that very text: each member is
 * stringified on its own, as the one member of an object (so at the indentation it has in the whole) and cut out of it.
 * A text with one character above U+00FF is two bytes a character in V8, and writing it is a conversion of every
 * character: plan.json's few such characters (the checks' names: "⇔", "≥") make the 22 MB text of 2,048 hosts a 45 MB
 * one, and its write ~90-140 ms of CPU; in pieces only the piece that holds them is, and the write takes ~40 ms.
 */
export function prettyJsonParts(value: Record<string, unknown>): string[] {
    const members: string[] = [];
    for (const key of Object.keys(value)) {
        // a member JSON leaves out (undefined, a function) leaves its object empty, as the whole's text leaves it out
        const one = JSON.stringify({ [key]: value[key] }, null, 2);
        if (one !== "{}") members.push(one.slice(2, -2)); // `{\n` … `\n}`
    }
    if (members.length === 0) return ["{}"];
    const parts = ["{\n", members[0]];
    for (const m of members.slice(1)) parts.push(",\n", m);
    parts.push("\n}");
    return parts;
}

/**
 * `redactPemBlocks(JSON.stringify(value, null, 2))` in pieces (prettyJsonParts): the pieces as they are when none holds
 * the opening armour line, else the whole text redacted, as one piece. The line cannot span two pieces: a piece ends with the last character of a
 * JSON value (a quote, a bracket, a digit, `e` or `l`) or is a separator, and none of those is in `-----BEGIN `.
 */
export function redactedJsonParts(value: Record<string, unknown>): string[] {
    const parts = prettyJsonParts(value);
    return parts.some((p) => p.includes("-----BEGIN ")) ? [redactPemBlocks(parts.join(""))] : parts;
}

/** Writes the pieces of a text to `file`, in order, as `fs.writeFileSync` writes the whole (created or truncated). */
function writeParts(file: string, parts: readonly string[]): void {
    const fd = fs.openSync(file, "w");
    try {
        for (const p of parts) fs.writeSync(fd, p);
    } finally {
        fs.closeSync(fd);
    }
}

/**
 * The artifacts' names as the summary says them: a file at the top by name, a folder once with how many files it got
 * (a 384-switch fabric writes 384 switch texts under switches/: one line naming each would be 12 KB).
 */
export function wroteNames(files: readonly string[]): string[] {
    const folders = new Map<string, number>();
    const names: string[] = [];
    for (const f of files) {
        const slash = f.indexOf("/");
        if (slash < 0) names.push(f);
        else {
            const dir = f.slice(0, slash + 1);
            if (!folders.has(dir)) names.push(dir);
            folders.set(dir, (folders.get(dir) ?? 0) + 1);
        }
    }
    return names.map((n) => (folders.has(n) ? `${n} (${folders.get(n)} file${folders.get(n) === 1 ? "" : "s"})` : n));
}

/** How `rdmakit plan` says where the node software runs (plan.provision.mode). */
export function provisionModeLine(p: { mode: string; forks: number }): string {
    return p.mode === "node-local"
        ? `node software: node-local (plan.provision.mode): each node runs site.yml on itself from the kit's bundle, ${p.forks} at once`
        : `node software: controller (plan.provision.mode): ansible-playbook here pushes every task, ${p.forks} forks`;
}

/** One line per verdict, as `rdmakit plan` prints them: FAIL (mandatory violation), warn, ok; n/a ones counted. */
export function formatVerdicts(verdicts: PolicyVerdict[]): string[] {
    const lines: string[] = [];
    const na = verdicts.filter((v) => v.notApplicable);
    for (const v of verdicts.filter((x) => !x.notApplicable)) {
        const state = v.violations.length && v.enforcementLevel === "mandatory" ? "FAIL" : v.ok ? "ok  " : "warn";
        const detail = verdictDetail(v);
        lines.push(`  ${state} ${v.policy} (${v.enforcementLevel})${detail ? ` — ${detail}` : ""}`);
    }
    if (lines.length === 0) lines.push("  none applies: nothing in this program is on an RDMA fabric");
    if (na.length > 0) lines.push(`  (${na.length} policies do not apply to anything here)`);
    return lines;
}

/**
 * `rdmakit plan --program <dir|file> [--config stack.yaml | --stack name]`: a team's program on the mock engine, and
 * the pack's verdicts on what it registered. 0: no mandatory violation; 1: a mandatory violation; 2: bad input.
 */
async function runProgramPlan(opts: PlanOptions, out: (s: string) => void, err: (s: string) => void): Promise<number> {
    if (opts.stack && opts.config) {
        err("rdmakit plan: give --stack or --config, not both");
        return 2;
    }
    let run: ProgramRun;
    try {
        const { dir } = programEntry(path.resolve(opts.program!));
        const stackFile = opts.config ? path.resolve(opts.config) : opts.stack ? path.join(dir, `Pulumi.${opts.stack}.yaml`) : undefined;
        if (stackFile && !fs.existsSync(stackFile)) {
            err(`rdmakit plan: ${stackFile} does not exist (the stack settings file for --program)`);
            return 2;
        }
        run = await runTeamProgram(opts.program!, stackFile);
    } catch (e) {
        if (e instanceof SpecError) {
            err(`rdmakit plan: ${e.message}`);
            return 2;
        }
        err(redactSecrets(`rdmakit plan: the program ${opts.program} failed on the mock engine: ${(e as Error).message ?? String(e)}`));
        return 2;
    }
    const verdicts = evaluatePolicies(run.resources, { stack: run.stack, project: run.project });
    if (opts.json) {
        out(JSON.stringify({ ...run, verdicts, resources: run.resources.map((r) => ({ ...r, inputs: showUnknowns(r.inputs) })) }, null, 2));
    } else {
        const lines = [`rdmakit plan — program ${path.relative(process.cwd(), run.program) || run.program} (project ${run.project}, stack ${run.stack}), offline on Pulumi's mock engine`, "", "resources:"];
        for (const [type, n] of countByType(run.resources)) lines.push(`  ${String(n).padStart(3)}  ${type}`);
        lines.push(`  ${String(run.resources.length).padStart(3)}  total`, "", "policies (the rdmakit pack, with the verdicts `pulumi preview --policy-pack` gives):");
        lines.push(...formatVerdicts(verdicts));
        lines.push(...rdmaClusterPlanLines(run));
        if (run.keyMissing) {
            lines.push("", "checks:", "  warn rdmakit:sshPrivateKey is not set (Ansible needs it during pulumi up) — pulumi config set --secret rdmakit:sshPrivateKey < ~/.ssh/id_ed25519");
        }
        out(lines.join("\n"));
    }
    return verdicts.some((v) => v.enforcementLevel === "mandatory" && v.violations.length > 0) ? 1 : 0;
}

/**
 * When the program registered an RdmaCluster and its stack file holds `rdmakit:cluster`: the software table, NCCL
 * environment and validation thresholds of that spec, as `rdmakit plan --config` prints them. Said to come from the
 * stack's value: a program may hand the component another spec.
 */
function rdmaClusterPlanLines(run: ProgramRun): string[] {
    if (!run.cluster || !run.resources.some((r) => r.type === RDMA_CLUSTER_TOKEN)) return [];
    try {
        const plan = planCluster(parseClusterSpec(run.cluster));
        return ["", "the RdmaCluster's plan, from the stack's rdmakit:cluster (what `rdmakit plan --config` shows):", "",
            ...formatSoftwareTable(plan.software), ...formatNcclAndThresholds(plan)];
    } catch (e) {
        if (e instanceof SpecError) return ["", `the stack's rdmakit:cluster could not be planned: ${e.message}`];
        throw e;
    }
}

export function registerPlan(program: Command): void {
    program
        .command("plan")
        .description("show what `pulumi up` would create, offline, on Pulumi's mock engine, with the policy pack's verdicts (default: examples/aws-p5.yaml)")
        .option("--stack <name>", "read Pulumi.<name>.yaml from the current directory")
        .option("--config <file>", "read this stack settings file")
        .option("--out <dir>", "where plan.json and the artifacts go (default: out/<stack>)")
        .option("--json", "print plan.json instead of the summary")
        .option("--program <dir|file>", "plan your own Pulumi program (TypeScript or JavaScript) instead, and print the policy pack's verdicts on it")
        .action(async (opts: PlanOptions) => {
            process.exitCode = await runPlan(opts);
        });
}
